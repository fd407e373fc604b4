//! Conversations' budgets (API.md, "Budgets"; [`crate::conversations::budget`]): the budget
//! a start fixed, and the one conditional write that stops a conversation once.

use time::OffsetDateTime;

use crate::conversations::budget::BudgetRecord;
use crate::error::StorageError;
use crate::ids::ConversationId;

/// The budget columns of the conversation record.
pub trait BudgetStore: Send + Sync {
    /// The conversation with its budget, whether it was stopped and its stored metrics; `None`
    /// for an unknown conversation. One row read.
    fn conversation_budget(&self, id: ConversationId)
    -> Result<Option<BudgetRecord>, StorageError>;

    /// Marks the conversation stopped by its budget at `now` (its `updated_at` too), only if
    /// it has a budget at most `cost`, is not marked yet and its stored run state is not
    /// `finished`: one conditional update, so that of concurrent callers (paths, replicas)
    /// exactly one gets `true` and stops it.
    fn mark_budget_reached(
        &self,
        id: ConversationId,
        cost: f64,
        now: OffsetDateTime,
    ) -> Result<bool, StorageError>;

    /// At most `limit` conversations marked stopped between `after` and `before` whose agent
    /// server last reported them `running` (a pause that did not take, or that a replica
    /// never sent), oldest mark first.
    fn budget_stops_running(
        &self,
        after: OffsetDateTime,
        before: OffsetDateTime,
        limit: u32,
    ) -> Result<Vec<ConversationId>, StorageError>;
}
