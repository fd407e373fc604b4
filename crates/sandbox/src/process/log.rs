//! The end of a sandbox's log for an error message, when a start fails before the sandbox
//! exists (its directory, and so its log, is removed then).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The most bytes read from the end of the log.
const TAIL_BYTES: u64 = 2048;
/// The most lines quoted.
const TAIL_LINES: usize = 8;

/// `; the last lines of its log:\n…` with the last lines of the log at `path` (never
/// followed: a sandbox owns its directory), or nothing when it is empty or unreadable.
pub(super) fn last_lines(path: &Path) -> String {
    let Ok(mut file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags_nofollow()
        .open(path)
    else {
        return String::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let from = len.saturating_sub(TAIL_BYTES);
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(from)).is_err() || file.read_to_end(&mut bytes).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
    if tail.is_empty() {
        String::new()
    } else {
        format!("; the last lines of its log:\n{tail}")
    }
}

/// `O_NOFOLLOW | O_NONBLOCK` on an open.
trait NoFollow {
    fn custom_flags_nofollow(&mut self) -> &mut Self;
}

impl NoFollow for std::fs::OpenOptions {
    fn custom_flags_nofollow(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(crate::logs::nofollow_nonblock())
    }
}
