//! Pending messages (issue 22): messages queued for a conversation that is still starting,
//! taken by whoever delivers them (the start pipeline at `READY`, or the route itself when the
//! start finished while it queued).

use crate::conversations::workspace::PendingMessage;
use crate::error::StorageError;
use crate::ids::ConversationId;

/// The `pending_messages` table.
pub trait PendingMessageStore: Send + Sync {
    /// Queues `message` unless `max` are queued for its conversation already, in one write
    /// transaction. `Some(position)`, 1-based, when queued; `None` when full.
    fn queue_pending_message(
        &self,
        message: &PendingMessage,
        max: u64,
    ) -> Result<Option<u64>, StorageError>;
    /// Deletes and returns the conversation's queued messages, oldest first, in one write
    /// transaction: each message is taken by exactly one caller.
    fn take_pending_messages(
        &self,
        conversation: ConversationId,
    ) -> Result<Vec<PendingMessage>, StorageError>;
}
