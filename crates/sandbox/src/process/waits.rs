//! How long the runtime waits for processes to change, and how it waits ([`wait_for`]).

use std::thread;
use std::time::{Duration, Instant};

/// How long delete waits for a group to vanish after SIGKILL.
pub(super) const KILL_WAIT: Duration = Duration::from_secs(5);
/// How long pause and resume wait for every process to show its new state.
pub(super) const SIGNAL_WAIT: Duration = Duration::from_secs(2);
/// How often a waiting operation looks at the processes again.
pub(super) const POLL: Duration = Duration::from_millis(10);

/// Polls `check` every [`POLL`] until it holds (true) or `limit` passes (false).
pub(super) fn wait_for(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(POLL);
    }
}
