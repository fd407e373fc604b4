//! What a confined sandbox holds of the host besides its processes (issue 33): its file system
//! of fixed size ([`crate::workspace_quota`]) and its control group ([`crate::cgroups`]),
//! made at start, and, with its directory and `/etc` overrides, removed when it is deleted.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use switchboard_domain::sandboxes::runtime::{LaunchSpec, RuntimeError};

use super::ProcessRuntime;
use super::confined::{self, io_error};

impl ProcessRuntime {
    /// Mounts the sandbox's own file system over `sandbox_dir` (still empty), when the
    /// runtime gives each one.
    ///
    /// # Errors
    /// [`RuntimeError::Launch`] with what failed.
    pub(super) fn mount_file_system(
        &self,
        launch: &LaunchSpec,
        sandbox_dir: &Path,
    ) -> Result<(), RuntimeError> {
        let Some(quota) = &self.workspace_quota else {
            return Ok(());
        };
        quota
            .create(
                &self.sandboxes_root,
                &launch.sandbox_id.to_string(),
                sandbox_dir,
            )
            .map_err(|e| {
                RuntimeError::Launch(format!("cannot make the sandbox's file system: {e}"))
            })
    }

    /// Makes the sandbox's control group, when the runtime gives each one: the `cgroup.procs`
    /// files its launcher joins (none without groups).
    ///
    /// # Errors
    /// [`RuntimeError::Launch`] with what failed.
    pub(super) fn make_group(&self, launch: &LaunchSpec) -> Result<Vec<PathBuf>, RuntimeError> {
        match &self.groups {
            Some(groups) => groups.create(&launch.sandbox_id.to_string(), launch.spec.limits),
            None => Ok(Vec::new()),
        }
    }

    /// Removes what a sandbox left, its processes having ended: its control group, its file
    /// system (unmounted, its image removed), its directory and its `/etc` overrides.
    ///
    /// # Errors
    /// The first part that could not be removed ([`RuntimeError::Io`]); the others are still
    /// tried.
    pub(super) fn remove_files(&self, dir: &Path) -> Result<(), RuntimeError> {
        let mut outcome = Ok(());
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        if let (Some(groups), Some(name)) = (&self.groups, &name) {
            outcome = outcome.and(groups.cgroups.remove(name).map_err(RuntimeError::Io));
        }
        if let (Some(quota), Some(name)) = (&self.workspace_quota, &name) {
            let unmounted = quota.remove(&self.sandboxes_root, name, dir);
            outcome = outcome.and(unmounted.map_err(RuntimeError::Io));
        }
        let etc = name.map(|name| confined::etc_dir(&self.sandboxes_root, &name));
        for path in [Some(dir.to_path_buf()), etc].into_iter().flatten() {
            match fs::remove_dir_all(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => outcome = outcome.and(Err(io_error("removing", &path, &e))),
            }
        }
        outcome
    }
}
