//! What one confined start runs ([`Plan`]), and whether a file is a program
//! ([`is_executable`]): shared by the launcher (`mod.rs`) and its mounts (`mounts.rs`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What one confined start runs: the sandbox's directory and its workspace, where the
/// command starts, the command, what it may read, and (as root) its user and its `/etc` overrides.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The sandbox's directory (read-write inside, same path).
    pub sandbox_dir: PathBuf,
    /// The directory seen read-write at `/workspace` inside (the sandbox's `workspace/`,
    /// issue 31), or none.
    pub workspace: Option<PathBuf>,
    /// The working directory of the command (inside `sandbox_dir`).
    pub cwd: PathBuf,
    /// The program (absolute) and its arguments.
    pub command: Vec<OsString>,
    /// Read-only inside, same path: [`super::command_paths`] and the local repositories.
    pub read_only: Vec<PathBuf>,
    /// A directory with `passwd` and `group` bound over `/etc`'s ([`super::write_etc`]).
    pub etc: Option<PathBuf>,
    /// The sandbox's user and group id (with [`super::Bwrap::users`]).
    pub user: Option<u32>,
    /// The `cgroup.procs` files of the sandbox's control groups ([`crate::cgroups`]): the
    /// launcher writes its pid to each before it becomes `bwrap`. Empty: no groups.
    pub join_groups: Vec<PathBuf>,
}

/// Whether `p` is a regular file someone may execute.
pub(crate) fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
