//! Confining process sandboxes (issue 18, "Process runtime"): each sandbox's agent server runs
//! under bubblewrap (`bwrap`, Debian package `bubblewrap`) in namespaces of its own, and, when
//! Switchboard runs as root, as a user of its own.
//!
//! What a confined sandbox sees (docs/ARCHITECTURE.md, "Process sandboxes"):
//!
//! - a root file system of its own (a tmpfs) holding `/usr`, `/etc` and the `/bin`, `/sbin`,
//!   `/lib*` links or directories of the host, read-only; its program's installation (e.g. a
//!   Python venv and the Python it links to) and the absolute paths in its command,
//!   read-only; the operator's local repositories (`--allow-local-repositories`), read-only;
//!   its own directory, read-write, at the same path as on the host, and its `workspace/`
//!   again at `/workspace` (OpenHands' convention, issue 31); a private `/tmp`,
//!   `/dev/shm` and `/dev` (null, zero, random, tty, pts), and a `/proc` of its own pid
//!   namespace;
//! - never Switchboard's data directory (database, `secret.key`, other sandboxes), nor the
//!   key files and database the operator names elsewhere ([`Bwrap::hidden`]): hidden under an
//!   empty tmpfs or `/dev/null` where a read-only tree would show them;
//! - its own pid, IPC, UTS (host name `sandbox`) and cgroup namespaces, and a network
//!   namespace of its own connected by `pasta` ([`network`], issue 33): the host's loopback
//!   services are out of its reach but for its webhook's port and `--sandbox-host-port`s; with
//!   `--sandbox-network host`, the host's network (every loopback service of the host).
//!
//! As root, `bwrap` builds that and `setpriv` (util-linux) then becomes the sandbox's user
//! (`--reuid`/`--regid`, no supplementary groups, no capabilities, `no_new_privs`) before the
//! agent server runs. Otherwise `bwrap` runs unprivileged in a user namespace of its own, as
//! Switchboard's user. Either way `setsid` (util-linux) starts `bwrap` in a session and process
//! group of its own, without Switchboard's controlling terminal: the group is `bwrap`, the
//! namespace's init (`bwrap`'s reaper) and whatever stays in it; the processes that leave it
//! (a daemonized `tmux` server) are found through the pid namespace, and all of them end when
//! the init does.

pub mod egress;
mod mounts;
pub mod network;
mod plan;

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub use mounts::{GITCONFIG, command_paths, under_workspace, write_etc};
pub use network::{NetworkPolicy, Pasta};
pub use plan::Plan;

use plan::is_executable;

use crate::uids::UidRange;

/// How long the start-time check of [`Bwrap::detect`] may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// How process sandboxes are confined (`--process-isolation`).
#[derive(Debug, Clone, Default)]
pub enum Isolation {
    /// Not at all (`--process-isolation none`, single-user): each sandbox a process group of
    /// Switchboard's user, seeing everything that user sees.
    #[default]
    None,
    /// In namespaces of its own with `bwrap` (`--process-isolation bwrap`, the default).
    Bwrap(Box<Bwrap>),
}

/// The `bwrap` confinement found usable on this machine ([`Bwrap::detect`]).
#[derive(Debug, Clone)]
pub struct Bwrap {
    /// The `bwrap` program.
    pub program: PathBuf,
    /// The `setsid` program (util-linux).
    pub setsid: PathBuf,
    /// Each sandbox as a user of its own (Switchboard is root); `None`: Switchboard's user,
    /// in a user namespace.
    pub users: Option<SandboxUsers>,
    /// Paths no sandbox may see even where a read-only tree holds them: Switchboard's data
    /// directory, the secret key and LLM key files, a SQLite database elsewhere.
    pub hidden: Vec<PathBuf>,
    /// Each sandbox in a network namespace of its own, connected by `pasta`
    /// (`--sandbox-network isolated`, the default); `None`: the host's network.
    pub network: Option<Pasta>,
}

/// Per-sandbox users: ids from `range`, taken on by `setpriv` inside the namespaces.
#[derive(Debug, Clone)]
pub struct SandboxUsers {
    /// `--sandbox-uid-range`.
    pub range: UidRange,
    /// The `setpriv` program (util-linux).
    pub setpriv: PathBuf,
    /// The `env` program (coreutils), which enters the working directory once the user is
    /// the sandbox's (root without capabilities may not enter a directory of mode 0700).
    pub env: PathBuf,
}

/// Why process sandboxes cannot be confined on this machine, with what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unconfinable(pub String);

impl Bwrap {
    /// Finds `bwrap` and `setsid` (and, as root, `setpriv` and `env`) on `PATH`, and checks
    /// that `bwrap` can confine a process here by running `true` the way sandboxes run.
    /// As root (effective uid 0) sandboxes get users from `range`; otherwise they share
    /// Switchboard's user in a user namespace. With a `network` policy (`--sandbox-network
    /// isolated`) and as root, each sandbox gets a network namespace of its own, connected by
    /// `pasta` ([`Pasta::detect`]; the check makes one too); `None`, or not root: the host's
    /// network ([`Bwrap::network`] says which).
    ///
    /// # Errors
    /// [`Unconfinable`] naming what is missing or what `bwrap` said, and what to do.
    pub fn detect(
        range: UidRange,
        hidden: Vec<PathBuf>,
        network: Option<NetworkPolicy>,
    ) -> Result<Self, Unconfinable> {
        let find = |name: &str, package: &str| {
            which(name).ok_or_else(|| {
                Unconfinable(format!(
                    "`{name}` is not installed (Debian package {package}); the process runtime \
                     confines every sandbox with bwrap. {}",
                    ALTERNATIVES
                ))
            })
        };
        let program = find("bwrap", "bubblewrap")?;
        let setsid = find("setsid", "util-linux")?;
        let users = if rustix::process::geteuid().is_root() {
            Some(SandboxUsers {
                range,
                setpriv: find("setpriv", "util-linux")?,
                env: find("env", "coreutils")?,
            })
        } else {
            None
        };
        // Not root, `bwrap --dev` nests the sandbox's user namespace in the one that owns its
        // network namespace, which no process stays in: `pasta`, as a normal user, has no way
        // into that network namespace, so sandboxes keep the host's network.
        let network = match users {
            Some(_) => network.map(Pasta::detect).transpose()?,
            None => None,
        };
        let bwrap = Bwrap {
            program,
            setsid,
            users,
            hidden,
            network,
        };
        bwrap.probe()?;
        Ok(bwrap)
    }

    /// Runs `true` confined as a sandbox would be (as root: as the range's first user).
    fn probe(&self) -> Result<(), Unconfinable> {
        let truth = which("true").ok_or_else(|| Unconfinable("`true` is not on PATH".into()))?;
        let plan = Plan {
            sandbox_dir: PathBuf::new(),
            workspace: None,
            cwd: PathBuf::from("/"),
            command: vec![truth.into_os_string()],
            read_only: Vec::new(),
            etc: None,
            user: self.users.as_ref().map(|u| u.range.first),
            join_groups: Vec::new(),
        };
        let mut child = self
            .command(&plan)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Unconfinable(format!("cannot run {}: {e}", self.program.display())))?;
        let Some(status) = wait_within(&mut child, PROBE_TIMEOUT) else {
            return Err(Unconfinable(format!(
                "bwrap did not finish a confined `true` within {PROBE_TIMEOUT:?}"
            )));
        };
        if status.success() {
            return Ok(());
        }
        let said = stderr_of(&mut child);
        let why = if self.users.is_some() {
            "as root, bwrap needs to create mount, pid and network namespaces (a container \
             without CAP_SYS_ADMIN, or a seccomp profile refusing unshare, forbids it)"
                .to_owned()
        } else {
            format!(
                "not root, bwrap needs unprivileged user namespaces ({})",
                userns_settings()
            )
        };
        Err(Unconfinable(format!(
            "bwrap cannot confine a process on this machine: {why}; it said: {}. {ALTERNATIVES}",
            said.trim()
        )))
    }

    /// The command that runs `plan` confined: `setsid bwrap <namespaces> <mounts> -- …`;
    /// with control groups to join, `setsid sh -c <join> … -- bwrap …` (the shell writes its
    /// pid to each group's `cgroup.procs`, then becomes `bwrap`, so the sandbox's every
    /// process starts inside; exit status 125 when it cannot join).
    /// The caller sets its environment, standard streams and `Stdio`.
    pub fn command(&self, plan: &Plan) -> Command {
        let mut cmd = Command::new(&self.setsid);
        if !plan.join_groups.is_empty() {
            cmd.args(["/bin/sh", "-c", JOIN_GROUPS, "switchboard-join-groups"]);
            cmd.args(&plan.join_groups).arg("--");
        }
        cmd.arg(&self.program);
        if self.users.is_none() {
            cmd.arg("--unshare-user");
        }
        cmd.args([
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--hostname",
            "sandbox",
        ]);
        if self.network.is_some() {
            cmd.arg("--unshare-net");
        }
        cmd.args(mounts::mount_args(plan, &self.hidden));
        cmd.args(["--cap-drop", "ALL"]);
        match (&self.users, plan.user) {
            (Some(users), Some(id)) => {
                // Only what setpriv needs to become the sandbox's user; it drops them all.
                for cap in ["CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"] {
                    cmd.args(["--cap-add", cap]);
                }
                cmd.arg("--").arg(&users.setpriv);
                cmd.args([
                    format!("--reuid={id}"),
                    format!("--regid={id}"),
                    "--clear-groups".into(),
                    "--inh-caps=-all".into(),
                    "--bounding-set=-all".into(),
                    "--nnp".into(),
                    "--".into(),
                ]);
                cmd.arg(&users.env).arg("-C").arg(&plan.cwd).arg("--");
            }
            _ => {
                cmd.arg("--chdir").arg(&plan.cwd).arg("--");
            }
        }
        cmd.args(&plan.command);
        cmd
    }
}

/// The launcher's script when the sandbox has control groups: `$1`… the `cgroup.procs`
/// files up to `--`, then the command.
const JOIN_GROUPS: &str =
    r#"while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@""#;

/// What to do instead, said with every refusal.
const ALTERNATIVES: &str = "Install or enable it, run sandboxes in containers \
     (--sandbox-runtime docker, the runtime for untrusted multi-tenant use), or pass \
     --process-isolation none for a single-user Switchboard (every sandbox can then read \
     Switchboard's data directory, its secret key and every other sandbox)";

/// The kernel settings that allow or forbid unprivileged user namespaces, as found.
fn userns_settings() -> String {
    [
        "/proc/sys/kernel/unprivileged_userns_clone",
        "/proc/sys/user/max_user_namespaces",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    ]
    .iter()
    .filter_map(|p| {
        let v = std::fs::read_to_string(p).ok()?;
        let name = p.trim_start_matches("/proc/sys/").replace('/', ".");
        Some(format!("{name} = {}", v.trim()))
    })
    .collect::<Vec<_>>()
    .join(", ")
}

/// How `child` ended, waiting up to `limit`; `None` when it had not: it is then killed and
/// reaped.
pub(crate) fn wait_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// What an ended `child` wrote on its piped standard error.
pub(crate) fn stderr_of(child: &mut Child) -> String {
    let mut said = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut err, &mut said);
    }
    said
}

/// `name` found on `PATH`, else in `/usr/sbin` or `/sbin` (system programs such as `nft` and
/// `mkfs.ext4`, which a service's `PATH` may lack).
pub fn which_system(name: &str) -> Option<PathBuf> {
    which(name).or_else(|| {
        ["/usr/sbin", "/sbin"]
            .map(|d| PathBuf::from(d).join(name))
            .into_iter()
            .find(|p| is_executable(p))
    })
}

/// The host (an IPv6 literal without its brackets) and the port, if any, of a
/// `scheme://[userinfo@]host[:port][/…]` URL.
pub(crate) fn url_host_port(url: &str) -> Option<(&str, Option<&str>)> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']')?;
            Some((host, after.strip_prefix(':')))
        }
        None => Some(match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }),
    }
}

/// `name` found on this process's `PATH`, as an executable file.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}
