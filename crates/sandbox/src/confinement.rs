//! What a sandbox can reach, as the operator asks (issue 18; docs/API.md, "What a sandbox can
//! reach"; `serve`'s flags, named in the messages): the confinement of process sandboxes
//! ([`Confinement`]: `--process-isolation`, `--sandbox-uid-range`, the network, the control
//! groups and workspace file systems), the egress rules of Docker sandboxes, the data
//! directory's mode, and the directories local repositories may be cloned from
//! (`--allow-local-repositories`). Each is checked on this machine before anything starts: a
//! confinement asked for that cannot hold here is an error saying why and what to do.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use switchboard_domain::sandboxes::specs::SandboxSpec;

use crate::confine::egress::Destination;
use crate::process::RUNTIME_NAME as PROCESS_RUNTIME;
use crate::{
    Bwrap, Cgroups, Isolation, NetworkPolicy, ProcessRuntime, SandboxGroups, UidRange,
    WorkspaceQuota,
};

/// How sandboxes are confined, as the operator asks (`serve`'s flags of the same names).
#[derive(Clone, Debug)]
pub struct Confinement {
    /// `--process-isolation bwrap` (else `none`: process sandboxes run unconfined).
    pub bwrap: bool,
    /// `--sandbox-uid-range`: the users process sandboxes run as (as root).
    pub uid_range: UidRange,
    /// `--sandbox-network isolated` (else `host`: the host's network, shared).
    pub isolated_network: bool,
    /// `--sandbox-host-port`: the host's loopback ports a sandbox may reach besides its
    /// webhook URL's.
    pub host_ports: Vec<u16>,
    /// `--sandbox-egress-allow`: destinations reachable although the rules would refuse them.
    pub egress_allow: Vec<Destination>,
    /// `--sandbox-egress-deny`: destinations refused besides the built-in ones.
    pub egress_deny: Vec<Destination>,
    /// `--sandbox-pids-limit`: processes per confined sandbox (0: no limit).
    pub pids_limit: u64,
    /// `--sandbox-workspace-mb`: the file system per confined process sandbox, MiB (0: none).
    pub workspace_mb: u64,
}

/// The process runtime under `<data_dir>/sandboxes`, confined as `asked`, and the canonical
/// `repositories` (`--allow-local-repositories`); the data directory made 0700 first. Hidden from sandboxes: the data directory, the secret key file and `hidden`.
/// Nothing is checked or warned when no spec of `specs` runs on the process runtime (their
/// own `runtime`, else `default_runtime`).
///
/// # Errors
/// See [`tighten_data_dir`], [`local_repositories`] and [`process_isolation`].
pub fn process_runtime(
    asked: &Confinement,
    repositories: &[PathBuf],
    specs: &[SandboxSpec],
    default_runtime: &str,
    data_dir: &Path,
    key_file: &Path,
    hidden: Vec<PathBuf>,
) -> Result<(Arc<ProcessRuntime>, Vec<PathBuf>)> {
    tighten_data_dir(data_dir)?;
    let repositories = local_repositories(repositories, data_dir)?;
    let mut hide = vec![data_dir.to_path_buf(), key_file.to_path_buf()];
    hide.extend(hidden);
    let isolation = process_isolation(asked, hide, uses_process_runtime(specs, default_runtime))?;
    let groups = sandbox_groups(asked, &isolation)?;
    let quota = workspace_quota(asked, &isolation)?;
    let mut runtime = ProcessRuntime::new(data_dir.join("sandboxes")).with_isolation(isolation);
    if let Some(groups) = groups {
        runtime = runtime.with_groups(groups);
    }
    if let Some(quota) = quota {
        runtime = runtime.with_workspace_quota(quota);
    }
    Ok((Arc::new(runtime), repositories))
}

/// A file system of `--sandbox-workspace-mb` per confined process sandbox: as root,
/// found or refused; not root or 0, none.
///
/// # Errors
/// As root, such file systems cannot be made here (the message says why and what to do).
fn workspace_quota(flags: &Confinement, isolation: &Isolation) -> Result<Option<WorkspaceQuota>> {
    if matches!(isolation, Isolation::None) || flags.workspace_mb == 0 {
        return Ok(None);
    }
    if !rustix::process::geteuid().is_root() {
        tracing::warn!(
            "not root: process sandboxes write on the data directory's file system, so one can \
             fill the disk Switchboard's database is on"
        );
        return Ok(None);
    }
    let quota = WorkspaceQuota::detect(flags.workspace_mb).map_err(|e| {
        anyhow::anyhow!(
            "each process sandbox gets a file system of its own of --sandbox-workspace-mb, and \
             none can be made here: {e}; pass --sandbox-workspace-mb 0 to have sandboxes write \
             on the data directory's file system"
        )
    })?;
    tracing::info!(
        size_mb = quota.size_mb,
        "each process sandbox's directory is a file system of its own"
    );
    Ok(Some(quota))
}

/// A control group per confined process sandbox: as root, found or refused; not
/// root, none (warned: the limits are not enforced). Unconfined sandboxes get none.
///
/// # Errors
/// As root, the control groups cannot be set up here (the message says why).
fn sandbox_groups(flags: &Confinement, isolation: &Isolation) -> Result<Option<SandboxGroups>> {
    if matches!(isolation, Isolation::None) {
        return Ok(None);
    }
    if !rustix::process::geteuid().is_root() {
        tracing::warn!(
            "not root: process sandboxes get no control group, so their memory, CPU and \
             process limits are not enforced"
        );
        return Ok(None);
    }
    let cgroups = Cgroups::detect().map_err(|e| {
        anyhow::anyhow!(
            "process sandboxes need a control group each for their memory, CPU and process \
             limits, and none can be made here: {e}"
        )
    })?;
    tracing::info!(
        cgroups = ?cgroups,
        pids_limit = flags.pids_limit,
        "each process sandbox runs in a control group of its own"
    );
    Ok(Some(SandboxGroups {
        cgroups,
        pids_max: (flags.pids_limit > 0).then_some(flags.pids_limit),
    }))
}

/// Whether a spec runs on the process runtime (its own `runtime`, else `default_runtime`).
pub fn uses_process_runtime(specs: &[SandboxSpec], default_runtime: &str) -> bool {
    specs
        .iter()
        .any(|s| s.runtime.as_deref().unwrap_or(default_runtime) == PROCESS_RUNTIME)
}

/// How process sandboxes are confined. With `bwrap`, confinement (and, with an isolated
/// network, `pasta`) must work here (else the error says why and what to do); `hidden` are
/// the paths no sandbox may see. `in_use`: no spec runs on the process runtime, so nothing is
/// checked or warned.
///
/// # Errors
/// `bwrap` was asked for and cannot confine a process on this machine, or `pasta` is missing.
pub fn process_isolation(
    flags: &Confinement,
    hidden: Vec<PathBuf>,
    in_use: bool,
) -> Result<Isolation> {
    if !in_use {
        return Ok(Isolation::None);
    }
    if !flags.bwrap {
        tracing::warn!(
            "--process-isolation none: process sandboxes run unconfined as Switchboard's own \
             user and can read and change what it can (its database, its secret key, every \
             other sandbox); use it for a single-user Switchboard only"
        );
        return Ok(Isolation::None);
    }
    let cannot = |e| anyhow::anyhow!("the process runtime cannot confine sandboxes here: {e}");
    let network = if flags.isolated_network {
        Some(NetworkPolicy {
            host_ports: flags.host_ports.clone(),
            egress_allow: flags.egress_allow.clone(),
            egress_deny: flags.egress_deny.clone(),
        })
    } else {
        tracing::warn!(
            "--sandbox-network host: process sandboxes share the host's network and reach \
             every service on its loopback (its database, Redis, other sandboxes' agent servers)"
        );
        None
    };
    let bwrap = Bwrap::detect(flags.uid_range, hidden, network).map_err(cannot)?;
    if bwrap.network.is_none() && flags.isolated_network {
        tracing::warn!(
            "not root: process sandboxes share the host's network (a network of their own \
             needs Switchboard to run as root) and reach every service on its loopback"
        );
    }
    if let Some(pasta) = &bwrap.network {
        tracing::info!(
            host_ports = ?pasta.host_ports,
            "each process sandbox has a network of its own (pasta); it reaches the host's \
             loopback only at its webhook URL's port and these"
        );
    }
    match &bwrap.users {
        Some(users) => tracing::info!(
            uid_range = %users.range,
            "process sandboxes are confined by bwrap, each as a user of its own"
        ),
        None => tracing::info!(
            "process sandboxes are confined by bwrap in user namespaces, as Switchboard's user \
             (run Switchboard as root for a user per sandbox)"
        ),
    }
    Ok(Isolation::Bwrap(Box::new(bwrap)))
}

/// The egress rules of bridged Docker sandboxes (issue 33; docs/API.md, "Egress rules"): the
/// same lists as process sandboxes', loaded on the Docker host's bridge. `None`, with a
/// warning saying why, when they cannot hold: `--sandbox-network host`, host networking, not
/// root, or a daemon on another host (`DOCKER_HOST` not a unix socket).
///
/// # Errors
/// `nft` is missing where the rules would be loaded.
pub fn docker_egress(
    flags: &Confinement,
    network: crate::DockerNetwork,
) -> Result<Option<crate::docker::DockerEgress>> {
    let remote = std::env::var("DOCKER_HOST")
        .ok()
        .filter(|h| !h.is_empty() && !h.starts_with("unix://"));
    let why_not = if !flags.isolated_network {
        Some("--sandbox-network host".to_owned())
    } else if network == crate::DockerNetwork::Host {
        Some("--docker-network host".to_owned())
    } else if !rustix::process::geteuid().is_root() {
        Some("not root (the rules are loaded on the Docker host with nft)".to_owned())
    } else {
        remote.map(|h| format!("the Docker daemon is on another host ({h})"))
    };
    if let Some(why) = why_not {
        tracing::warn!(
            "{why}: Docker sandboxes' egress is not restricted; they reach the Docker host's \
             services, private networks and cloud metadata (169.254.169.254)"
        );
        return Ok(None);
    }
    let egress = crate::docker::DockerEgress::detect(
        flags.egress_allow.clone(),
        flags.egress_deny.clone(),
        flags.host_ports.clone(),
    )
    .map_err(|e| anyhow::anyhow!("the Docker runtime cannot restrict sandboxes' egress: {e}"))?;
    tracing::info!(
        host_ports = ?egress.host_ports,
        "Docker sandboxes' egress is restricted on the Docker host's bridge: no private, \
         link-local or reserved range, and of the host only the webhook URL's port and these"
    );
    Ok(Some(egress))
}

/// Makes `data_dir` mode 0700 when it is ours and others or the group may enter it: it holds
/// the database, the secret key and every sandbox's directory.
///
/// # Errors
/// Its mode cannot be read or set.
pub fn tighten_data_dir(data_dir: &Path) -> Result<()> {
    let meta = match std::fs::metadata(data_dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", data_dir.display())),
    };
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 && meta.uid() == rustix::process::geteuid().as_raw() {
        std::fs::set_permissions(data_dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("setting the mode of {} to 0700", data_dir.display()))?;
        tracing::info!(data_dir = %data_dir.display(), was = format!("{mode:o}"), "data directory set to mode 0700 (only Switchboard may enter it)");
    }
    Ok(())
}

/// The directories of `--allow-local-repositories`, canonical. Each must be a directory that
/// neither holds nor lies inside `data_dir` (sandboxes would read each other's work).
///
/// # Errors
/// A directory that does not exist, or overlaps the data directory.
pub fn local_repositories(dirs: &[PathBuf], data_dir: &Path) -> Result<Vec<PathBuf>> {
    let data = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    let mut out = Vec::new();
    for dir in dirs {
        let real = std::fs::canonicalize(dir)
            .with_context(|| format!("--allow-local-repositories {}", dir.display()))?;
        if !real.is_dir() {
            bail!(
                "--allow-local-repositories {}: not a directory",
                dir.display()
            );
        }
        if data.starts_with(&real) || real.starts_with(&data) {
            bail!(
                "--allow-local-repositories {}: it overlaps the data directory {} (sandboxes \
                 could clone each other's work)",
                dir.display(),
                data.display()
            );
        }
        out.push(real);
    }
    out.sort();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_repository_directories_must_not_overlap_the_data_directory() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        let repos = root.path().join("repos");
        std::fs::create_dir_all(data.join("inner")).unwrap();
        std::fs::create_dir_all(&repos).unwrap();
        let ok = local_repositories(&[repos.clone(), repos.clone()], &data).unwrap();
        assert_eq!(ok, vec![std::fs::canonicalize(&repos).unwrap()]);
        for bad in [
            root.path().to_path_buf(),
            data.join("inner"),
            root.path().join("none"),
        ] {
            assert!(
                local_repositories(std::slice::from_ref(&bad), &data).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_data_directory_is_made_private() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
        tighten_data_dir(&data).unwrap();
        let mode = std::fs::metadata(&data).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }
}
