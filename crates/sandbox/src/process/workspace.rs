//! The layout of a process sandbox's directory that its workspace follows (issue 31): what
//! a confined sandbox sees at `/workspace`, and the host path of its project directory.

use std::path::{Path, PathBuf};

/// The directory in a sandbox's directory that holds its workspace: seen at `/workspace` in
/// a confined sandbox (issue 31), where the agent server (started in the sandbox's directory)
/// also keeps its `workspace/conversations` and `workspace/bash_events` by default, as
/// OpenHands' image keeps them in `/workspace`. The log and the sandbox's home files stay
/// outside it.
pub const WORKSPACE_DIR: &str = "workspace";
/// The project directory in [`WORKSPACE_DIR`] (`/workspace/project` inside).
pub const PROJECT_DIR: &str = "project";

/// The project directory of the sandbox whose directory is `sandbox_dir`, on the host:
/// `<sandbox_dir>/workspace/project`.
pub fn project_dir(sandbox_dir: &Path) -> PathBuf {
    sandbox_dir.join(WORKSPACE_DIR).join(PROJECT_DIR)
}
