//! Batch gets (`GET …?ids=…`): every resource's batch is one [`Batch`] (its name in the error
//! and its most ids), judged by [`Batch::check`] with the one error [`DomainError::TooManyIds`]
//! (400), before the ids' form, as OpenHands does (reference app-server §3.2, §4, §5.2).

use crate::error::DomainError;

/// The batch get of one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch {
    /// What is asked for, plural, as the error names it (`events`, `sandboxes`, …).
    pub what: &'static str,
    /// The most ids one batch may hold.
    pub max: usize,
}

impl Batch {
    /// Events of a conversation: at most 100 ([`crate::events::MAX_BATCH_GET`]).
    pub const EVENTS: Batch = Batch {
        what: "events",
        max: crate::events::MAX_BATCH_GET,
    };
    /// Sandboxes: at most 100 ([`crate::sandboxes::records::MAX_SANDBOX_BATCH`]).
    pub const SANDBOXES: Batch = Batch {
        what: "sandboxes",
        max: crate::sandboxes::records::MAX_SANDBOX_BATCH,
    };
    /// Sandbox specs: at most 100.
    pub const SANDBOX_SPECS: Batch = Batch {
        what: "sandbox specs",
        max: crate::sandboxes::records::MAX_SANDBOX_BATCH,
    };
    /// App conversations: at most 100
    /// ([`crate::conversations::app::MAX_APP_CONVERSATION_BATCH`]).
    pub const APP_CONVERSATIONS: Batch = Batch {
        what: "app conversations",
        max: crate::conversations::app::MAX_APP_CONVERSATION_BATCH,
    };
    /// Start tasks: at most 100 (issue 10).
    pub const START_TASKS: Batch = Batch {
        what: "start tasks",
        max: crate::conversations::app::MAX_APP_CONVERSATION_BATCH,
    };

    /// `Ok` when `got` ids fit in this batch.
    ///
    /// # Errors
    /// [`DomainError::TooManyIds`] when `got` is over [`Batch::max`].
    pub fn check(self, got: usize) -> Result<(), DomainError> {
        if got > self.max {
            return Err(DomainError::TooManyIds {
                what: self.what,
                max: self.max,
                got,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_batch_says_what_and_how_many() {
        assert!(Batch::EVENTS.check(100).is_ok());
        for (batch, text) in [
            (
                Batch::EVENTS,
                "Cannot request more than 100 events at once, got 101",
            ),
            (
                Batch::SANDBOXES,
                "Cannot request more than 100 sandboxes at once, got 101",
            ),
            (
                Batch::SANDBOX_SPECS,
                "Cannot request more than 100 sandbox specs at once, got 101",
            ),
            (
                Batch::APP_CONVERSATIONS,
                "Cannot request more than 100 app conversations at once, got 101",
            ),
            (
                Batch::START_TASKS,
                "Cannot request more than 100 start tasks at once, got 101",
            ),
        ] {
            assert_eq!(batch.check(101).unwrap_err().to_string(), text);
        }
    }
}
