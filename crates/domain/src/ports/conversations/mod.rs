//! Conversations, one room (issue 20 item 2): the conversation record ([`ConversationStore`]),
//! app conversations ([`app`]), their start tasks ([`start_tasks`]), the messages queued
//! while a conversation starts ([`pending`]) and their budgets ([`budgets`]).

pub mod app;
pub mod budgets;
pub mod pending;
pub mod start_tasks;

use time::OffsetDateTime;

use crate::conversations::{Conversation, RunDetails};
use crate::error::StorageError;
use crate::ids::ConversationId;

/// Conversations (their events are the [`EventStore`](crate::ports::EventStore)'s).
pub trait ConversationStore: Send + Sync {
    /// A conversation.
    fn conversation(&self, id: ConversationId) -> Result<Option<Conversation>, StorageError>;
    /// Creates or updates a conversation from the agent server's `ConversationInfo`: title
    /// (when given), run state (when given), LLM model and metrics (each when reported) and
    /// the info itself as metadata. An info equal to the metadata stored changes nothing (its
    /// `updated_at` stays). `Ok(false)` when the conversation exists in another organization
    /// or for another owner, or was deleted through the API and not created again (nothing
    /// written: a late webhook never brings a deleted conversation back).
    fn upsert_conversation_info(
        &self,
        conversation: &Conversation,
        details: &RunDetails,
        metadata: &str,
        now: OffsetDateTime,
    ) -> Result<bool, StorageError>;
}
