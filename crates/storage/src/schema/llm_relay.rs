//! The LLM pass-through's tables (issue 38; migration `2026-12-09-000001_llm_relay`), the same
//! on both backends.

use super::{conversations, sandboxes};

diesel::table! {
    /// What a conversation's pass-through token opens (only the token's SHA-256 is kept),
    /// answered while its sandbox is not deleted and its conversation exists; deleted with
    /// its conversation, sandbox, organization or member.
    llm_routes (token_hash) {
        /// Hex SHA-256 of the token.
        token_hash -> Text,
        /// The sandbox the token was given to.
        sandbox_id -> Text,
        /// The conversation whose LLM it is.
        conversation_id -> Text,
        /// The conversation's organization.
        org_id -> Text,
        /// The member who started it.
        user_id -> Text,
        /// Where requests go: a base URL without a trailing `/`.
        upstream -> Text,
        /// The real key, sealed bound to `token_hash`.
        api_key_sealed -> Text,
        /// Whose key it is: `organization` or `operator`.
        key_owner -> Text,
        /// The model the conversation was started with (LiteLLM's name).
        model -> Text,
        /// When it was stored, UTC.
        created_at -> Timestamp,
    }
}

diesel::table! {
    /// What forwarded requests used, as their providers reported it: one row per
    /// conversation, UTC day and model, added to by one upsert per request. Kept after the
    /// conversation or member is deleted; deleted with the organization.
    llm_usage (conversation_id, day, model) {
        /// The organization billed.
        org_id -> Text,
        /// The member whose conversation it was.
        user_id -> Text,
        /// The conversation (no foreign key: its usage outlives it).
        conversation_id -> Text,
        /// The UTC day of the requests (`YYYY-MM-DD` text on SQLite, `date` on PostgreSQL).
        day -> Date,
        /// The model asked for.
        model -> Text,
        /// Requests forwarded.
        requests -> BigInt,
        /// Prompt (input) tokens.
        input_tokens -> BigInt,
        /// Completion (output) tokens.
        output_tokens -> BigInt,
        /// Cost in USD the providers reported.
        cost_usd -> Double,
    }
}

diesel::allow_tables_to_appear_in_same_query!(llm_routes, sandboxes);
diesel::allow_tables_to_appear_in_same_query!(llm_routes, conversations);
