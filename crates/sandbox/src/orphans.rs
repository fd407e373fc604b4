//! The grace period of the orphan sweeps (issue 12: "a Switchboard container with no record is
//! reported in the log and removed after a grace period"), shared by the runtimes that sweep:
//! which things have been seen without a record, since when, and which are due.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// When each orphan was first seen, across passes.
#[derive(Debug)]
pub struct OrphanClock {
    grace: Duration,
    first_seen: Mutex<HashMap<String, Instant>>,
}

impl OrphanClock {
    /// A clock making orphans due after `grace`.
    pub fn new(grace: Duration) -> Self {
        OrphanClock {
            grace,
            first_seen: Mutex::new(HashMap::new()),
        }
    }

    /// The grace period.
    pub fn grace(&self) -> Duration {
        self.grace
    }

    /// How often a pass should run: half the grace period, between 1 and 30 seconds.
    pub fn period(&self) -> Duration {
        (self.grace / 2).clamp(Duration::from_secs(1), Duration::from_secs(30))
    }

    /// One pass over the orphans seen now (`keys`, each naming one thing): those first seen
    /// now are logged with `what`; the keys seen for the grace period are returned, due for
    /// removal. Keys not seen in this pass are forgotten (their thing is gone or has a
    /// record again).
    pub fn pass(&self, keys: impl IntoIterator<Item = String>, what: &str) -> Vec<String> {
        let now = Instant::now();
        let mut seen = self.first_seen.lock().expect("orphan table poisoned");
        let mut still = HashMap::new();
        let mut due = Vec::new();
        for key in keys {
            let first = *seen.get(&key).unwrap_or(&now);
            if first == now {
                tracing::warn!(
                    orphan = %key, grace = ?self.grace,
                    "{what} of this installation has no sandbox record; it is removed after \
                     the grace period"
                );
            }
            if now.duration_since(first) >= self.grace {
                due.push(key.clone());
            }
            still.insert(key, first);
        }
        *seen = still;
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orphans_are_due_after_the_grace_and_forgotten_when_gone() {
        let clock = OrphanClock::new(Duration::from_millis(50));
        assert!(clock.pass(["a".to_owned()], "a pod").is_empty());
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(clock.pass(["a".to_owned(), "b".to_owned()], "a pod"), ["a"]);
        // A pass without `a` forgets it: seen again, it starts over.
        assert!(clock.pass(["b".to_owned()], "a pod").is_empty());
        assert!(clock.pass(["a".to_owned()], "a pod").is_empty());
        assert_eq!(
            OrphanClock::new(Duration::ZERO).period(),
            Duration::from_secs(1)
        );
        assert_eq!(
            OrphanClock::new(Duration::from_secs(300)).period(),
            Duration::from_secs(30)
        );
    }
}
