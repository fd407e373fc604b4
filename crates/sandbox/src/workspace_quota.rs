//! A file system of fixed size per process sandbox (issue 33, "a workspace quota"): the
//! sandbox's directory (its `workspace/`, its home, its log) is an ext4 file system of
//! `--sandbox-workspace-mb` in an image file of its own, mounted over the directory, so a
//! sandbox that fills it gets `ENOSPC` inside and Switchboard's database, on the data
//! directory's file system, keeps its room.
//!
//! The image is sparse (`<sandboxes root>/.images/<id>.ext4`, where no sandbox sees it): it
//! takes on the host only what the sandbox writes (about 4 MiB when made). `mkfs.ext4`
//! (Debian package `e2fsprogs`) makes it in about 10 ms; `mount -o loop` (util-linux) mounts it
//! `nosuid,nodev`. Delete unmounts it (lazily: a mount namespace that still holds it lets go
//! when its last process ends) and removes the image. Needs root and loop devices.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::confine::which_system;

/// The directory, under the sandboxes root, of the sandboxes' images (not a sandbox
/// directory: its name is no sandbox id).
pub const IMAGES_DIR: &str = ".images";

/// Each sandbox's directory a file system of its own, of `size_mb` MiB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceQuota {
    /// The size of each sandbox's file system, in MiB.
    pub size_mb: u64,
    mkfs: PathBuf,
    mount: PathBuf,
    umount: PathBuf,
}

impl WorkspaceQuota {
    /// Finds `mkfs.ext4`, `mount` and `umount`, and checks for loop devices.
    ///
    /// # Errors
    /// A message naming what is missing.
    pub fn detect(size_mb: u64) -> Result<Self, String> {
        let find = |name: &str, package: &str| {
            which_system(name)
                .ok_or_else(|| format!("`{name}` is not installed (Debian package {package})"))
        };
        if !Path::new("/dev/loop-control").exists() {
            return Err("no loop devices here (/dev/loop-control is missing)".into());
        }
        Ok(WorkspaceQuota {
            size_mb,
            mkfs: find("mkfs.ext4", "e2fsprogs")?,
            mount: find("mount", "mount")?,
            umount: find("umount", "mount")?,
        })
    }

    /// The image of sandbox `name`.
    pub fn image(sandboxes_root: &Path, name: &str) -> PathBuf {
        sandboxes_root.join(IMAGES_DIR).join(format!("{name}.ext4"))
    }

    /// Makes sandbox `name`'s file system and mounts it over `dir` (its directory, empty).
    ///
    /// # Errors
    /// A message with what failed (the image, `mkfs.ext4` or `mount`, and what it said).
    pub fn create(&self, sandboxes_root: &Path, name: &str, dir: &Path) -> Result<(), String> {
        let images = sandboxes_root.join(IMAGES_DIR);
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&images)
            .map_err(|e| format!("making {}: {e}", images.display()))?;
        let image = Self::image(sandboxes_root, name);
        let file =
            fs::File::create(&image).map_err(|e| format!("making {}: {e}", image.display()))?;
        file.set_len(self.size_mb.saturating_mul(1024 * 1024))
            .map_err(|e| format!("sizing {}: {e}", image.display()))?;
        drop(file);
        run(Command::new(&self.mkfs)
            .args([
                "-q",
                "-F",
                "-m",
                "0",
                "-E",
                "lazy_itable_init=1,lazy_journal_init=1",
            ])
            .arg(&image))?;
        run(Command::new(&self.mount)
            .args(["-o", "loop,nosuid,nodev", "-t", "ext4"])
            .arg(&image)
            .arg(dir))?;
        // Nothing of the file system's own in the sandbox's directory.
        let _ = fs::remove_dir(dir.join("lost+found"));
        Ok(())
    }

    /// Unmounts sandbox `name`'s file system from `dir` (if it is mounted there) and removes
    /// its image; both may already be gone.
    ///
    /// # Errors
    /// A message with what failed.
    pub fn remove(&self, sandboxes_root: &Path, name: &str, dir: &Path) -> Result<(), String> {
        if is_mount_point(dir) {
            run(Command::new(&self.umount).arg("--lazy").arg(dir))?;
        }
        match fs::remove_file(Self::image(sandboxes_root, name)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!("removing the image of {name}: {e}")),
        }
    }
}

/// Whether `dir` is the root of a mount (its device differs from its parent's).
fn is_mount_point(dir: &Path) -> bool {
    let (Ok(own), Some(Ok(parent))) = (fs::metadata(dir), dir.parent().map(fs::metadata)) else {
        return false;
    };
    own.dev() != parent.dev()
}

/// Runs `cmd`, its output kept for the error.
fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{:?} failed ({}): {}",
        cmd.get_program(),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}
