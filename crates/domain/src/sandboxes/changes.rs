//! The sandbox service's change signal: who waits for a sandbox's status to change (the start
//! pipeline) sleeps on it instead of polling the store.

use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// A count of the launcher's and reconciler's passes and of the service's wake-ups (starts,
/// resumes, deletes), any of which may change a sandbox's status: who waits for a sandbox (the
/// start pipeline) waits on it instead of polling the store. Kept by the sandbox service.
#[derive(Default)]
pub struct Changes {
    count: Mutex<u64>,
    signal: Condvar,
}

impl Changes {
    /// Counts a change and wakes every waiter.
    pub fn notify(&self) {
        *self.count.lock().expect("change count poisoned") += 1;
        self.signal.notify_all();
    }

    /// The count now: read it before looking at the store, then [`Changes::wait_after`] it.
    pub fn seen(&self) -> u64 {
        *self.count.lock().expect("change count poisoned")
    }

    /// Waits until the count passes `seen` (at once when it has), at most `at_most`.
    pub fn wait_after(&self, seen: u64, at_most: Duration) {
        let count = self.count.lock().expect("change count poisoned");
        let _waited = self
            .signal
            .wait_timeout_while(count, at_most, |c| *c == seen)
            .expect("change count poisoned");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use super::*;

    #[test]
    fn a_waiter_wakes_at_the_next_change_and_not_for_an_old_one() {
        let changes = Arc::new(Changes::default());
        let seen = changes.seen();
        let notifier = changes.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            notifier.notify();
        });
        let started = Instant::now();
        changes.wait_after(seen, Duration::from_secs(30));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the change did not wake it"
        );
        t.join().unwrap();
        // A change counted before the wait began ends it at once.
        let started = Instant::now();
        changes.wait_after(seen, Duration::from_secs(30));
        assert!(started.elapsed() < Duration::from_secs(1));
        // With no change after `seen`, it waits out the bound.
        let seen = changes.seen();
        let started = Instant::now();
        changes.wait_after(seen, Duration::from_millis(50));
        assert!(started.elapsed() >= Duration::from_millis(50));
    }
}
