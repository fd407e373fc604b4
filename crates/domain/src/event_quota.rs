//! Event storage quotas and the disk reserve (issue 33, "Caps per member, not per key" and
//! "Switchboard's own disk"): how much one conversation and one organization may store, and
//! what an append past them is told.
//!
//! The store enforces them inside the append's transaction (exact, whatever the replicas):
//! a batch that would take its conversation past [`EventQuota::max_events_per_conversation`]
//! or [`EventQuota::max_bytes_per_conversation`], or its organization past
//! [`EventQuota::max_bytes_per_org`], stores none of its events ([`AppendRefusal::Quota`]);
//! the conversation then gets one [`crate::events::quota_notice`] event, a `ConversationErrorEvent` that every
//! OpenHands client shows, saying which quota and what to do. A store whose database's
//! filesystem has less free space than the operator's reserve refuses every event append
//! ([`AppendRefusal::DiskReserve`]) and writes nothing, while reads and deletes go on. The
//! webhook answers either with 507 Insufficient Storage (API.md, Event ingestion).

use std::fmt;

/// [`EventQuota::max_events_per_conversation`] unless the operator says otherwise
/// (`--max-events-per-conversation`): OpenHands' long conversations hold a few thousand.
pub const DEFAULT_MAX_EVENTS_PER_CONVERSATION: i64 = 100_000;
/// [`EventQuota::max_bytes_per_conversation`] unless the operator says otherwise
/// (`--max-event-bytes-per-conversation`): 256 MiB of canonical event JSON.
pub const DEFAULT_MAX_BYTES_PER_CONVERSATION: i64 = 256 << 20;

/// How much event data may be stored; `None` is no limit. Bytes are those of the events'
/// canonical JSON (what the store keeps), counted once per stored event (a repeated id adds
/// nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventQuota {
    /// Events one conversation may hold.
    pub max_events_per_conversation: Option<i64>,
    /// Bytes one conversation's events may take.
    pub max_bytes_per_conversation: Option<i64>,
    /// Bytes the events of all of one organization's conversations may take (default: no
    /// limit; `--max-event-bytes-per-org`).
    pub max_bytes_per_org: Option<i64>,
}

impl Default for EventQuota {
    /// The documented defaults: [`DEFAULT_MAX_EVENTS_PER_CONVERSATION`],
    /// [`DEFAULT_MAX_BYTES_PER_CONVERSATION`], no limit per organization.
    fn default() -> Self {
        EventQuota {
            max_events_per_conversation: Some(DEFAULT_MAX_EVENTS_PER_CONVERSATION),
            max_bytes_per_conversation: Some(DEFAULT_MAX_BYTES_PER_CONVERSATION),
            max_bytes_per_org: None,
        }
    }
}

impl EventQuota {
    /// The quotas of `events` and `bytes` per conversation and `org_bytes` per organization
    /// (`--max-events-per-conversation`, `--max-event-bytes-per-conversation`,
    /// `--max-event-bytes-per-org`), each 0 for no limit (past `i64::MAX`: `i64::MAX`).
    pub fn from_counts(events: u64, bytes: u64, org_bytes: u64) -> EventQuota {
        let limit = |v: u64| (v > 0).then(|| i64::try_from(v).unwrap_or(i64::MAX));
        EventQuota {
            max_events_per_conversation: limit(events),
            max_bytes_per_conversation: limit(bytes),
            max_bytes_per_org: limit(org_bytes),
        }
    }

    /// No limit at all.
    pub const UNLIMITED: EventQuota = EventQuota {
        max_events_per_conversation: None,
        max_bytes_per_conversation: None,
        max_bytes_per_org: None,
    };

    /// The quota a batch of `events` events and `bytes` bytes would pass, given what its
    /// conversation holds (`conversation_events`, `conversation_bytes`) and its organization
    /// (`org_bytes`); `None` when it fits. Checked in this order: events, then bytes of the
    /// conversation, then the organization's bytes.
    pub fn exceeded_by(&self, held: Held, events: i64, bytes: i64) -> Option<QuotaExceeded> {
        use QuotaMeasure::{Bytes, Events};
        use QuotaScope::{Conversation, Organization};
        [
            (
                Conversation,
                Events,
                self.max_events_per_conversation,
                held.conversation_events,
                events,
            ),
            (
                Conversation,
                Bytes,
                self.max_bytes_per_conversation,
                held.conversation_bytes,
                bytes,
            ),
            (
                Organization,
                Bytes,
                self.max_bytes_per_org,
                held.org_bytes,
                bytes,
            ),
        ]
        .into_iter()
        .find_map(|(scope, measure, limit, used, adding)| {
            let limit = limit.filter(|l| adding > 0 && used.saturating_add(adding) > *l)?;
            Some(QuotaExceeded {
                scope,
                measure,
                limit,
                used,
            })
        })
    }
}

/// What a conversation and its organization hold before a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Held {
    /// The conversation's events.
    pub conversation_events: i64,
    /// The bytes of the conversation's events.
    pub conversation_bytes: i64,
    /// The bytes of the organization's events.
    pub org_bytes: i64,
}

/// Whose quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaScope {
    /// The conversation's own.
    Conversation,
    /// Its organization's (all its conversations together).
    Organization,
}

/// What a quota counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaMeasure {
    /// Events.
    Events,
    /// Bytes of canonical event JSON.
    Bytes,
}

/// A quota a batch would have passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaExceeded {
    /// Whose.
    pub scope: QuotaScope,
    /// Counting what.
    pub measure: QuotaMeasure,
    /// The limit.
    pub limit: i64,
    /// What was held before the batch.
    pub used: i64,
}

impl QuotaExceeded {
    /// The operator's flag that sets this quota.
    pub fn flag(&self) -> &'static str {
        match (self.scope, self.measure) {
            (QuotaScope::Conversation, QuotaMeasure::Events) => "--max-events-per-conversation",
            (QuotaScope::Conversation, QuotaMeasure::Bytes) => "--max-event-bytes-per-conversation",
            (QuotaScope::Organization, _) => "--max-event-bytes-per-org",
        }
    }
}

impl fmt::Display for QuotaExceeded {
    /// E.g. "this conversation holds 100000 events, its quota is 100000
    /// (--max-events-per-conversation); later events are not stored".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whose = match self.scope {
            QuotaScope::Conversation => "this conversation holds",
            QuotaScope::Organization => "this organization's conversations hold",
        };
        let what = match self.measure {
            QuotaMeasure::Events => "events",
            QuotaMeasure::Bytes => "bytes of events",
        };
        write!(
            f,
            "{whose} {} {what}, and the batch would pass its quota of {} ({}); later events \
             are not stored: start a new conversation, delete old ones, or ask the operator \
             to raise the quota",
            self.used,
            self.limit,
            self.flag()
        )
    }
}

/// Why an append stored nothing though its conversation may be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendRefusal {
    /// A quota would have been passed.
    Quota(QuotaExceeded),
    /// The database's filesystem has less free space than the operator's reserve
    /// (`--min-free-disk`).
    DiskReserve {
        /// Free bytes found.
        free: u64,
        /// The reserve, bytes.
        reserve: u64,
    },
}

impl fmt::Display for AppendRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppendRefusal::Quota(q) => write!(f, "Event quota exceeded: {q}"),
            AppendRefusal::DiskReserve { free, reserve } => write!(
                f,
                "Events are not stored while the database's disk has {free} bytes free, under \
                 the reserve of {reserve} bytes (--min-free-disk); reads and deletes go on"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotas_are_judged_in_order_and_only_when_adding() {
        let q = EventQuota {
            max_events_per_conversation: Some(10),
            max_bytes_per_conversation: Some(1000),
            max_bytes_per_org: Some(5000),
        };
        let held = Held {
            conversation_events: 9,
            conversation_bytes: 900,
            org_bytes: 4900,
        };
        assert_eq!(
            q.exceeded_by(held, 1, 100),
            None,
            "exactly at every limit fits"
        );
        let e = q.exceeded_by(held, 2, 10).unwrap();
        assert_eq!(
            (e.scope, e.measure, e.limit, e.used),
            (QuotaScope::Conversation, QuotaMeasure::Events, 10, 9)
        );
        let e = q.exceeded_by(held, 1, 101).unwrap();
        assert_eq!(
            (e.scope, e.measure),
            (QuotaScope::Conversation, QuotaMeasure::Bytes)
        );
        let org = Held {
            org_bytes: 4950,
            ..held
        };
        let e = q.exceeded_by(org, 1, 60).unwrap();
        assert_eq!(
            (e.scope, e.limit, e.used),
            (QuotaScope::Organization, 5000, 4950)
        );
        assert!(e.to_string().contains("--max-event-bytes-per-org"), "{e}");
        let full = Held {
            conversation_events: 10,
            conversation_bytes: 1000,
            org_bytes: 5000,
        };
        assert_eq!(
            q.exceeded_by(full, 0, 0),
            None,
            "a batch storing nothing passes nothing"
        );
        assert_eq!(
            EventQuota::UNLIMITED.exceeded_by(full, i64::MAX, i64::MAX),
            None
        );
    }
}
