//! The LLM pass-through's routes and usage ([`crate::llm_relay`]; issue 38).

use time::Date;

use crate::error::StorageError;
use crate::ids::{ConversationId, OrgId};
use crate::llm_relay::{LiveRoute, LlmRoute, UsageQuery, UsageRecord, UsageRow};

/// Where pass-through routes and usage are kept.
pub trait LlmRelayStore: Send + Sync {
    /// Stores a route (a start's). A second route under the same token hash is a
    /// [`StorageError::UniqueViolation`]; a route of an unknown conversation or sandbox a
    /// [`StorageError::ForeignKeyViolation`].
    ///
    /// # Errors
    /// Those; the database failed.
    fn insert_llm_route(&self, route: &LlmRoute) -> Result<(), StorageError>;

    /// The route stored under `token_hash`, with its conversation's budget, only while its
    /// sandbox is not deleted (`deleted_at` null) and its conversation exists: one indexed
    /// read. `None` otherwise.
    ///
    /// # Errors
    /// The database failed.
    fn llm_route(&self, token_hash: &str) -> Result<Option<LiveRoute>, StorageError>;

    /// Adds `usage` to the row of its (conversation, day, model), creating it: one statement
    /// (an upsert that adds), so concurrent requests on several replicas all count.
    ///
    /// # Errors
    /// The database failed.
    fn add_llm_usage(&self, usage: &UsageRecord) -> Result<(), StorageError>;

    /// The rows of `query`, summed by its group: by member in member-id order, by day in
    /// day order. Days with no usage are absent.
    ///
    /// # Errors
    /// The database failed.
    fn llm_usage(&self, query: &UsageQuery) -> Result<Vec<UsageRow>, StorageError>;

    /// The cost in USD recorded for `org` on days `since` and later, only `conversation`'s
    /// when given (0 when none).
    ///
    /// # Errors
    /// The database failed.
    fn llm_cost(
        &self,
        org: OrgId,
        conversation: Option<ConversationId>,
        since: Date,
    ) -> Result<f64, StorageError>;
}
