//! A confined start's preparation (issue 18, "Process runtime"): the sandbox's user id, its
//! directory and its workspace given to that user (mode 0700), its `/etc` overrides, and the
//! [`Plan`] `bwrap` runs (its `workspace/` also at `/workspace`, issue 31).

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use switchboard_domain::sandboxes::runtime::{LaunchSpec, RuntimeError};

use crate::confine::{self, Bwrap, Plan};
use crate::uids;

/// The directory of the sandboxes' `/etc` overrides, under the sandboxes root (not a sandbox
/// directory: its name is no sandbox id).
pub const ETC_DIR: &str = ".etc";

/// A user id taken for a start; given back when dropped (by then the sandbox's directory
/// belongs to it, which keeps it taken).
pub struct HeldUid<'a> {
    held: &'a Mutex<HashSet<u32>>,
    /// The id.
    pub id: u32,
}

impl Drop for HeldUid<'_> {
    fn drop(&mut self) {
        self.held.lock().expect("uid set poisoned").remove(&self.id);
    }
}

/// Takes a free id of the range of `bwrap`'s users for a start (see [`uids`]).
///
/// # Errors
/// [`RuntimeError::Launch`] when every id of the range is in use.
pub fn take_uid<'a>(
    bwrap: &Bwrap,
    sandboxes_root: &Path,
    held: &'a Mutex<HashSet<u32>>,
    sandbox: &switchboard_domain::SandboxId,
) -> Result<Option<HeldUid<'a>>, RuntimeError> {
    let Some(users) = &bwrap.users else {
        return Ok(None);
    };
    let mut taken = held.lock().expect("uid set poisoned");
    let used = uids::ids_in_use(users.range, sandboxes_root);
    // Where to start looking: from the sandbox's (random) id.
    let from = u64::from_le_bytes(sandbox.0.as_bytes()[..8].try_into().expect("8 bytes"));
    let id = uids::first_free(users.range, &used, &taken, from).ok_or_else(|| {
        RuntimeError::Launch(format!(
            "every user id of --sandbox-uid-range {} is in use",
            users.range
        ))
    })?;
    taken.insert(id);
    Ok(Some(HeldUid { held, id }))
}

/// Makes the working directory `cwd` and the project directory `project` inside
/// `sandbox_dir` and gives them (and everything between) to `uid`, the sandbox directory with
/// mode 0700.
///
/// # Errors
/// [`RuntimeError::Io`] when a directory cannot be made or given.
pub fn prepare_dirs(
    sandbox_dir: &Path,
    cwd: &Path,
    project: &Path,
    uid: Option<u32>,
) -> Result<(), RuntimeError> {
    for dir in [cwd, project] {
        fs::create_dir_all(dir).map_err(|e| io_error("creating", dir, &e))?;
    }
    fs::set_permissions(sandbox_dir, fs::Permissions::from_mode(0o700))
        .map_err(|e| io_error("setting the mode of", sandbox_dir, &e))?;
    let Some(id) = uid else {
        return Ok(());
    };
    let mut dirs = vec![sandbox_dir.to_path_buf()];
    for inner in [cwd, project] {
        let mut at = sandbox_dir.to_path_buf();
        for part in inner
            .strip_prefix(sandbox_dir)
            .unwrap_or(Path::new(""))
            .components()
        {
            at.push(part);
            dirs.push(at.clone());
        }
    }
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        std::os::unix::fs::chown(&dir, Some(id), Some(id))
            .map_err(|e| io_error("giving to the sandbox's user", &dir, &e))?;
    }
    Ok(())
}

/// The `/etc` overrides directory of sandbox `name`.
pub fn etc_dir(sandboxes_root: &Path, name: &str) -> PathBuf {
    sandboxes_root.join(ETC_DIR).join(name)
}

/// The plan of a confined start, with its `/etc` overrides (as root) and, when the operator
/// allows local repositories, the sandbox's `~/.gitconfig` written: `program` and `args` as
/// resolved by the caller (the port already appended), `env` the sandbox's environment.
///
/// # Errors
/// [`RuntimeError::Io`] when the overrides cannot be written; [`RuntimeError::Launch`] when
/// a path the sandbox must read is under `/workspace`, which its own workspace covers.
#[allow(clippy::too_many_arguments)]
pub fn plan(
    launch: &LaunchSpec,
    sandboxes_root: &Path,
    sandbox_dir: &Path,
    cwd: &Path,
    program: &Path,
    args: Vec<OsString>,
    env: &BTreeMap<String, String>,
    uid: Option<u32>,
) -> Result<Plan, RuntimeError> {
    let spec_args: Vec<String> = launch.spec.command.iter().skip(1).cloned().collect();
    let mut read_only = confine::command_paths(program, &spec_args, env.get("PATH").map(|s| &**s));
    read_only.extend(launch.local_repositories.iter().cloned());
    if let Some(covered) = confine::under_workspace(&read_only) {
        return Err(RuntimeError::Launch(format!(
            "{} is under /workspace, which every confined sandbox sees as its own workspace \
             (so the sandbox could not see it): keep the agent server's installation and the \
             local repositories elsewhere",
            covered.display()
        )));
    }
    let etc = match uid {
        Some(id) => {
            let dir = etc_dir(sandboxes_root, &launch.sandbox_id.to_string());
            confine::write_etc(&dir, id, sandbox_dir)
                .map_err(|e| io_error("writing the /etc overrides in", &dir, &e))?;
            Some(dir)
        }
        None => None,
    };
    if !launch.local_repositories.is_empty() {
        // In the sandbox's home, which is its own directory unless its spec says otherwise.
        let home = PathBuf::from(env.get("HOME").map_or("", |h| h.as_str()));
        if home.starts_with(sandbox_dir) && home.is_dir() {
            let file = home.join(".gitconfig");
            fs::write(&file, confine::GITCONFIG).map_err(|e| io_error("writing", &file, &e))?;
            if let Some(id) = uid {
                std::os::unix::fs::chown(&file, Some(id), Some(id))
                    .map_err(|e| io_error("giving to the sandbox's user", &file, &e))?;
            }
        }
    }
    let mut command = vec![program.as_os_str().to_os_string()];
    command.extend(args);
    Ok(Plan {
        sandbox_dir: sandbox_dir.to_path_buf(),
        workspace: Some(sandbox_dir.join(super::workspace::WORKSPACE_DIR)),
        cwd: cwd.to_path_buf(),
        command,
        read_only,
        etc,
        user: uid,
        join_groups: Vec::new(),
    })
}

/// A runtime error for an I/O failure of `action` on `path`.
pub(super) fn io_error(action: &str, path: &Path, error: &std::io::Error) -> RuntimeError {
    RuntimeError::Io(format!("{action} {}: {error}", path.display()))
}
