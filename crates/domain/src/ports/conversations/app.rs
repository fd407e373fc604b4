//! App conversations: the conversation rows read, changed and deleted as OpenHands' app
//! conversations (reference app-server §5).

use time::OffsetDateTime;

use crate::conversations::app::{AppConversationInfo, AppConversationPatch, AppConversationQuery};
use crate::error::StorageError;
use crate::ids::{ConversationId, SandboxId};

/// What was deleted with a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeletedConversation {
    /// Its events.
    pub events: u64,
    /// Its start tasks.
    pub start_tasks: u64,
}

/// The app-conversation reads and writes of the `conversations` table.
pub trait AppConversationStore: Send + Sync {
    /// One page of a search: at most `query.limit` rows after `query.after`, in
    /// `query.order` with the id as the tie-break (same direction), so a page continues
    /// exactly after the previous one while conversations are created. `sub_conversation_ids`
    /// are filled. Each row comes with the instant it is listed at: its `created_at` or
    /// `updated_at`, or with `query.as_of` its `updated_at` as of then.
    fn search_app_conversations(
        &self,
        query: &AppConversationQuery,
    ) -> Result<Vec<(AppConversationInfo, OffsetDateTime)>, StorageError>;

    /// How many conversations match `query`'s organization, owner and filters (its order,
    /// position and limit are ignored).
    fn count_app_conversations(&self, query: &AppConversationQuery) -> Result<u64, StorageError>;

    /// The conversations with these ids that exist (any order; `sub_conversation_ids`
    /// filled).
    fn app_conversations_by_ids(
        &self,
        ids: &[ConversationId],
    ) -> Result<Vec<AppConversationInfo>, StorageError>;

    /// Applies `patch` to conversation `id` and sets its `updated_at` to `now` (or one
    /// microsecond after the stored value when the clock has not passed it); the conversation
    /// as it now is, `None` when it does not exist.
    fn patch_app_conversation(
        &self,
        id: ConversationId,
        patch: &AppConversationPatch,
        now: OffsetDateTime,
    ) -> Result<Option<AppConversationInfo>, StorageError>;

    /// Deletes conversation `id`, its events and its start tasks in one transaction, and
    /// records its deletion (kept 30 days) so that no later webhook or listing from an agent
    /// server creates it again; `None` when it does not exist.
    fn delete_app_conversation(
        &self,
        id: ConversationId,
    ) -> Result<Option<DeletedConversation>, StorageError>;

    /// How many conversations hold `sandbox`: those in it, and those whose unfinished start
    /// task is bound to it (being started there), each once.
    fn conversations_in_sandbox(&self, sandbox: SandboxId) -> Result<u64, StorageError>;
}
