//! The pull path's port (issue 19): what Switchboard reads back from an agent server it runs,
//! to repair what its webhooks did not deliver: the agent server's conversations and their
//! persisted events, in the order the agent server keeps them.
//!
//! The agent server's own API (reference agent-server-webhooks §1, "REST API"), every call with
//! the sandbox's `X-Session-API-Key`:
//! - `GET /api/conversations/count` and `GET /api/conversations/search` (`ConversationInfo`
//!   items, pages of up to 100 by `page_id`);
//! - `GET /api/conversations/{id}/events/count` (unfiltered: the length of its event log, read
//!   without loading an event) and `GET /api/conversations/{id}/events/search` (oldest first;
//!   `page_id` is the id of the first event of the page, which the previous page names as
//!   `next_page_id`; items as the agent server persisted them).

use std::time::Duration;

use serde_json::Value;

use crate::identity::session_keys::SessionKey;
use crate::ids::ConversationId;
use crate::sandboxes::agent_server_error::AgentServerError;

/// The most items one page of the agent server's searches holds (its `limit` is `1..=100`).
pub const AGENT_PAGE_LIMIT: u32 = 100;

/// One page of an agent server's search: its items as JSON, and the `page_id` of the next page
/// (`None`: this was the last).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentPage {
    /// The items, in the agent server's order.
    pub items: Vec<Value>,
    /// Where the next page starts; `None` at the end.
    pub next_page_id: Option<String>,
}

/// The agent server's reads that repair the event store (issue 19, "Pull path"). Blocking,
/// each call within `timeout`.
pub trait AgentServerEvents: Send + Sync {
    /// `GET {base_url}/api/conversations/count`: how many conversations the agent server has.
    ///
    /// # Errors
    /// Transport failures, a timeout, or an answer other than 200 with a number.
    fn count_conversations(
        &self,
        base_url: &str,
        key: &SessionKey,
        timeout: Duration,
    ) -> Result<u64, AgentServerError>;

    /// `GET {base_url}/api/conversations/search?limit=100[&page_id=…]`: one page of the agent
    /// server's `ConversationInfo`s, newest first.
    ///
    /// # Errors
    /// As [`AgentServerEvents::count_conversations`], or an answer that is not a page.
    fn search_conversations(
        &self,
        base_url: &str,
        key: &SessionKey,
        page_id: Option<&str>,
        timeout: Duration,
    ) -> Result<AgentPage, AgentServerError>;

    /// `GET {base_url}/api/conversations/{id}/events/count`: how many events the agent server
    /// persisted for the conversation. 404 (it does not know the conversation) is `Ok(0)`.
    ///
    /// # Errors
    /// As [`AgentServerEvents::count_conversations`].
    fn count_events(
        &self,
        base_url: &str,
        key: &SessionKey,
        conversation: ConversationId,
        timeout: Duration,
    ) -> Result<u64, AgentServerError>;

    /// `GET {base_url}/api/conversations/{id}/events/search?limit=…[&page_id=…]`: up to
    /// `limit` (at most [`AGENT_PAGE_LIMIT`]) of the conversation's events, oldest first,
    /// starting at the event whose id is `page_id` (included), else at the first. 404 is an
    /// empty last page.
    ///
    /// # Errors
    /// As [`AgentServerEvents::search_conversations`].
    fn search_events(
        &self,
        base_url: &str,
        key: &SessionKey,
        conversation: ConversationId,
        page_id: Option<&str>,
        limit: u32,
        timeout: Duration,
    ) -> Result<AgentPage, AgentServerError>;
}
