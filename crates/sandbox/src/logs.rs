//! Caps on sandbox log files (issue 13: "a sandbox process that floods its log … does not take
//! Switchboard down"). A process sandbox's stdout and stderr are appended to
//! [`LOG_FILE`] in its directory by the sandbox's own processes
//! (Switchboard holds no pipe, so sandboxes outlive a restart of Switchboard); without a cap a
//! sandbox that writes without end fills the disk Switchboard's data lives on.
//!
//! A trim is logrotate's `copytruncate`: the log's last [`KEEP_BYTES`] (from the first line
//! start in them) replace [`PREVIOUS_LOG_FILE`], then the log is truncated to empty. The
//! sandbox's processes write with `O_APPEND`, so they go on writing at the new end, and no
//! file descriptor of theirs is disturbed. What they write between the copy and the truncation
//! (microseconds) is lost; everything else is either in the log or in the previous log.
//!
//! The disk a sandbox's logs take is then at most the cap, plus [`KEEP_BYTES`], plus what it
//! writes between two trims (the binary trims every second).

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;

/// The log file (stdout and stderr, appended) in a sandbox's directory.
pub const LOG_FILE: &str = "agent-server.log";
/// Where a trim keeps the end of the log it truncated, in the sandbox's directory.
pub const PREVIOUS_LOG_FILE: &str = "agent-server.log.1";
/// The default cap on a sandbox's log file, in bytes (64 MiB).
pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// How much of a trimmed log's end is kept in [`PREVIOUS_LOG_FILE`], in bytes (1 MiB).
pub const KEEP_BYTES: u64 = 1024 * 1024;

/// One log over the cap that a pass trimmed, or tried to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trimmed {
    /// The log file.
    pub path: PathBuf,
    /// Its size when the trim began, in bytes.
    pub bytes: u64,
    /// Why it could not be trimmed (an I/O error's text); `None` when it was.
    pub error: Option<String>,
}

/// Trims every sandbox log under `sandboxes_root` (`<root>/<sandbox>/agent-server.log`) that
/// is larger than `max_bytes`, and returns those logs. A missing root is no log. A log that
/// cannot be trimmed is returned with its error and the pass goes on. A symbolic link in
/// place of a log is never followed.
///
/// # Errors
/// The root exists but cannot be listed.
pub fn trim_logs(sandboxes_root: &Path, max_bytes: u64) -> io::Result<Vec<Trimmed>> {
    let entries = match fs::read_dir(sandboxes_root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut trimmed = Vec::new();
    for entry in entries {
        let dir = entry?.path();
        let log = dir.join(LOG_FILE);
        // Not followed: a sandbox could swap its log for a link to another file.
        let Ok(meta) = fs::symlink_metadata(&log) else {
            continue;
        };
        if !meta.is_file() || meta.len() <= max_bytes {
            continue;
        }
        let error = trim(&log, &dir.join(PREVIOUS_LOG_FILE))
            .err()
            .map(|e| e.to_string());
        trimmed.push(Trimmed {
            path: log,
            bytes: meta.len(),
            error,
        });
    }
    Ok(trimmed)
}

/// `O_NOFOLLOW | O_NONBLOCK`, for `OpenOptionsExt::custom_flags`: a file of a sandbox's
/// directory, which the sandbox (its own user, when confined) may have replaced by a link to
/// another file or by a FIFO, is opened only when it is the file itself, and never waits.
pub fn nofollow_nonblock() -> i32 {
    i32::try_from((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits())
        .expect("O_NOFOLLOW | O_NONBLOCK fits an int")
}

/// Copies the end of `log` (from a line start, at most [`KEEP_BYTES`]) over `previous`, then
/// truncates `log`.
fn trim(log: &Path, previous: &Path) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nofollow_nonblock())
        .open(log)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    let len = meta.len();
    let from = len.saturating_sub(KEEP_BYTES);
    file.seek(SeekFrom::Start(from))?;
    let mut tail = Vec::with_capacity(usize::try_from(len - from).unwrap_or(0));
    (&mut file).take(len - from).read_to_end(&mut tail)?;
    let start = if from == 0 {
        0
    } else {
        tail.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1)
    };
    // Written beside, then renamed over: a reader of the previous log never sees half of it.
    // Made anew (O_EXCL): whatever the sandbox left under that name (a link to another file)
    // is removed, never written through.
    let staging = previous.with_extension("1.partial");
    match fs::remove_file(&staging) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    {
        let mut out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&staging)?;
        out.write_all(&tail[start..])?;
    }
    fs::rename(&staging, previous)?;
    file.set_len(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox_with_log(root: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let dir = root.join(name);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(LOG_FILE), bytes).unwrap();
        dir
    }

    #[test]
    fn only_logs_over_the_cap_are_trimmed_and_their_end_is_kept() {
        let root = tempfile::tempdir().unwrap();
        let mut big = Vec::new();
        let mut n = 0u64;
        while (big.len() as u64) < KEEP_BYTES * 3 {
            big.extend_from_slice(format!("line {n}\n").as_bytes());
            n += 1;
        }
        let flooded = sandbox_with_log(root.path(), "a", &big);
        let quiet = sandbox_with_log(root.path(), "b", b"hello\n");
        fs::create_dir_all(root.path().join("c")).unwrap(); // no log yet

        let trimmed = trim_logs(root.path(), KEEP_BYTES).unwrap();
        assert_eq!(
            trimmed,
            vec![Trimmed {
                path: flooded.join(LOG_FILE),
                bytes: big.len() as u64,
                error: None,
            }]
        );
        assert_eq!(fs::metadata(flooded.join(LOG_FILE)).unwrap().len(), 0);
        let kept = fs::read_to_string(flooded.join(PREVIOUS_LOG_FILE)).unwrap();
        assert!(kept.len() as u64 <= KEEP_BYTES && kept.len() as u64 > KEEP_BYTES - 32);
        assert!(kept.starts_with("line "), "kept from a line start");
        assert!(kept.ends_with(&format!("line {}\n", n - 1)), "kept the end");
        assert_eq!(fs::read(quiet.join(LOG_FILE)).unwrap(), b"hello\n");
        assert!(!quiet.join(PREVIOUS_LOG_FILE).exists());
        assert!(trim_logs(root.path(), KEEP_BYTES).unwrap().is_empty());
    }

    #[test]
    fn an_appending_writer_goes_on_at_the_new_end() {
        let root = tempfile::tempdir().unwrap();
        let dir = sandbox_with_log(root.path(), "a", b"");
        let mut writer = OpenOptions::new()
            .append(true)
            .open(dir.join(LOG_FILE))
            .unwrap();
        writer.write_all(&[b'x'; 4096]).unwrap();
        assert_eq!(trim_logs(root.path(), 1024).unwrap().len(), 1);
        writer.write_all(b"after\n").unwrap();
        assert_eq!(fs::read(dir.join(LOG_FILE)).unwrap(), b"after\n");
    }

    #[test]
    fn a_link_in_place_of_the_log_is_left_alone() {
        let root = tempfile::tempdir().unwrap();
        let outside = root.path().join("outside.txt");
        fs::write(&outside, vec![b'y'; 4096]).unwrap();
        let dir = root.path().join("sandboxes").join("a");
        fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join(LOG_FILE)).unwrap();
        assert!(
            trim_logs(&root.path().join("sandboxes"), 1024)
                .unwrap()
                .is_empty()
        );
        assert_eq!(fs::metadata(&outside).unwrap().len(), 4096);
    }

    #[test]
    fn a_link_left_as_the_staging_file_is_never_written_through() {
        let root = tempfile::tempdir().unwrap();
        let outside = root.path().join("outside.txt");
        fs::write(&outside, b"keep").unwrap();
        let dir = sandbox_with_log(root.path(), "a", &[b'z'; 4096]);
        std::os::unix::fs::symlink(&outside, dir.join("agent-server.log.1.partial")).unwrap();
        let trimmed = trim_logs(root.path(), 1024).unwrap();
        assert_eq!(trimmed.len(), 1);
        assert_eq!(trimmed[0].error, None);
        assert_eq!(fs::read(&outside).unwrap(), b"keep");
        assert_eq!(fs::read(dir.join(PREVIOUS_LOG_FILE)).unwrap().len(), 4096);
    }

    #[test]
    fn a_missing_root_has_no_logs() {
        let root = tempfile::tempdir().unwrap();
        assert!(trim_logs(&root.path().join("none"), 1).unwrap().is_empty());
    }
}
