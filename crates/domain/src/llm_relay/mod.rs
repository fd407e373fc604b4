//! The LLM pass-through (issue 38; docs/API.md, "LLM pass-through"): a key that is not the
//! starting member's own (the organization's default or profile, a provider connection, the
//! operator's `--llm-*` key) never enters a sandbox. The start gives the agent server
//! Switchboard's address as the LLM's base URL and a per-conversation token as its key;
//! Switchboard checks the token, puts the real key where the provider expects it and forwards
//! the request, unchanged, to the base URL of whoever set the key, counting what the provider
//! reports it used.
//!
//! - [`LlmRoute`]: what a token opens, stored at start (only the token's SHA-256 is kept).
//! - [`providers`]: the public endpoint of a provider, for a key whose owner set no base URL.
//! - [`usage`]: the tokens and cost in an OpenAI or Anthropic answer, streamed or not.

pub mod providers;
pub mod usage;

use time::{Date, OffsetDateTime};

use crate::ids::{ConversationId, OrgId, SandboxId, UserId};

/// The prefix of a pass-through token (`sbl_` + 43 base62 characters).
pub const TOKEN_PREFIX: &str = "sbl_";

/// Base62 characters after [`TOKEN_PREFIX`] (about 256 bits).
pub const TOKEN_RANDOM_CHARS: usize = 43;

/// What a route is stored and found under: the token's SHA-256, lowercase hex (the token
/// itself is never stored, as API keys).
pub fn token_hash(token: &str) -> String {
    crate::identity::secrets::sha256_hex(token)
}

/// Where the agent's LLM client put the token, and so where the real key goes: the request is
/// otherwise forwarded as sent (the agent's own client formats it for its provider).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPlacement {
    /// `Authorization: Bearer <key>` (OpenAI and every OpenAI-compatible API).
    Bearer,
    /// `x-api-key: <key>` (Anthropic).
    XApiKey,
    /// `api-key: <key>` (Azure OpenAI).
    ApiKey,
    /// `x-goog-api-key: <key>` (Gemini).
    XGoogApiKey,
    /// The `key` query parameter (Gemini's REST API).
    QueryKey,
}

/// One conversation's way through the pass-through: what its token opens. Stored at start;
/// answered only while its sandbox is not deleted and its conversation exists.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmRoute {
    /// Hex SHA-256 of the token (the token itself is never stored).
    pub token_hash: String,
    /// The sandbox the token was given to.
    pub sandbox_id: SandboxId,
    /// The conversation whose LLM it is.
    pub conversation_id: ConversationId,
    /// The conversation's organization.
    pub org_id: OrgId,
    /// The member who started it.
    pub user_id: UserId,
    /// Where requests go: the key owner's base URL, else the provider's public endpoint
    /// ([`providers::public_endpoint`]), without a trailing `/`.
    pub upstream: String,
    /// The real key, sealed bound to [`token_hash`](Self::token_hash).
    pub api_key_sealed: String,
    /// Whose key it is: `organization` or `operator`.
    pub key_owner: String,
    /// The model the conversation was started with (LiteLLM's name), for usage rows.
    pub model: String,
    /// When it was stored, UTC.
    pub created_at: OffsetDateTime,
}

/// An [`LlmRoute`] as a request finds it, with what its budget checks need.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveRoute {
    /// The route.
    pub route: LlmRoute,
    /// The conversation's budget in USD (`conversations.max_budget_per_task`), if any.
    pub max_budget_per_task: Option<f64>,
    /// Whether the conversation was already stopped by its budget (`budget_reached_at`).
    pub budget_reached: bool,
}

/// What one forwarded request used, as the provider reported it, added to a conversation's
/// row of the day.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRecord {
    /// The organization billed.
    pub org_id: OrgId,
    /// The member whose conversation it was.
    pub user_id: UserId,
    /// The conversation.
    pub conversation_id: ConversationId,
    /// The UTC day of the request.
    pub day: Date,
    /// The model asked for (the route's).
    pub model: String,
    /// Requests (1 for one forwarded request).
    pub requests: u64,
    /// Prompt (input) tokens.
    pub input_tokens: u64,
    /// Completion (output) tokens.
    pub output_tokens: u64,
    /// Cost in USD the provider reported (0 when it reported none).
    pub cost_usd: f64,
}

/// How usage rows are summed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageGroup {
    /// One row per member.
    Member,
    /// One row per UTC day.
    Day,
}

/// A usage read: one organization's rows (or one member's), days `from..=to`, summed by
/// [`UsageGroup`].
#[derive(Debug, Clone, PartialEq)]
pub struct UsageQuery {
    /// The organization.
    pub org_id: OrgId,
    /// Only this member's rows, when set.
    pub user_id: Option<UserId>,
    /// First day, inclusive.
    pub from: Date,
    /// Last day, inclusive.
    pub to: Date,
    /// How rows are summed.
    pub group: UsageGroup,
}

/// One summed usage row: its member (grouped by member) or its day (grouped by day).
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRow {
    /// The member, when grouped by member.
    pub user_id: Option<UserId>,
    /// The day, when grouped by day.
    pub day: Option<Date>,
    /// Requests.
    pub requests: u64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Cost in USD.
    pub cost_usd: f64,
}
