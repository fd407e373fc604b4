//! The event log.

use time::OffsetDateTime;

use crate::conversations::{Conversation, ExecutionStatus, RunDetails};
use crate::error::StorageError;
use crate::events::{
    AppendOutcome, EventFilter, NewEvent, PositionedEvent, SearchQuery, StoredEvent,
};
use crate::ids::ConversationId;

/// One batch to append to a conversation's events.
#[derive(Debug, Clone, PartialEq)]
pub struct Append {
    /// The conversation, created with this org, owner and sandbox if it does not exist.
    pub conversation: Conversation,
    /// The events, in batch order.
    pub events: Vec<NewEvent>,
    /// The run state to set, when the batch implies one.
    pub status: Option<ExecutionStatus>,
    /// The LLM model and metrics to set, each when the batch reports it.
    pub details: RunDetails,
    /// The time of the append (the conversation's activity time).
    pub now: OffsetDateTime,
}

/// A stored event's id and canonical JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct EventPayload {
    /// The event id.
    pub event_id: String,
    /// Its canonical JSON.
    pub payload: String,
}

/// The event log of conversations.
pub trait EventStore: Send + Sync {
    /// Appends a batch in one transaction: creates the conversation if it does not exist (its
    /// org, owner and sandbox taken from [`Append::conversation`]), skips events whose id the
    /// conversation already has (and repeats within the batch), inserts the rest in order, and
    /// sets the run state to [`Append::status`] and the LLM model and metrics of
    /// [`Append::details`] when given. `Ok(None)` when the conversation
    /// exists in another organization, or was deleted through the API and not created again
    /// (nothing written). On PostgreSQL commit order equals
    /// `seq` order.
    fn append_events(&self, append: Append) -> Result<Option<AppendOutcome>, StorageError>;
    /// Up to `query.limit + 1` events in order, after `query.after` (keyset on `(ts, seq)`).
    fn search_events(
        &self,
        conversation: ConversationId,
        query: &SearchQuery,
    ) -> Result<Vec<StoredEvent>, StorageError>;
    /// How many events match.
    fn count_events(
        &self,
        conversation: ConversationId,
        filter: &EventFilter,
    ) -> Result<i64, StorageError>;
    /// The events with these ids (any order; missing ids absent).
    fn get_events(
        &self,
        conversation: ConversationId,
        ids: &[String],
    ) -> Result<Vec<EventPayload>, StorageError>;
    /// Up to `limit` events of the conversation with a position greater than `after`, in
    /// position order (API.md, Live delivery); `after = -1` starts at the first event. With
    /// `since`, only events whose instant is at or after it (`resend_mode=since`).
    fn events_after(
        &self,
        conversation: ConversationId,
        after: i64,
        since: Option<OffsetDateTime>,
        limit: u32,
    ) -> Result<Vec<PositionedEvent>, StorageError>;
    /// How many events the conversation has (its next event's position); 0 when unknown.
    /// One row read.
    fn event_count(&self, conversation: ConversationId) -> Result<i64, StorageError>;
}

/// Told after an append commits which conversations gained events, so that live subscribers
/// wake up (API.md, Live delivery). Implementations must not block.
pub trait AppendObserver: Send + Sync {
    /// `conversation` now has `event_count` events.
    fn appended(&self, conversation: ConversationId, event_count: i64);
    /// Notifications may have been lost (a reconnected listener): every subscriber should
    /// re-read from its last position.
    fn resync(&self);
}
