//! Error classification: the small failure contract carried by error events, and the SDK's
//! mapping from an error's code and detail to it (SCHEMA.md §5: a `ConversationErrorEvent`
//! without a classification gets one derived by `classify_error()`).

use crate::de::string_enum;
use crate::macros::model;

string_enum! {
    /// Broad failure category (`FailureKind`, SCHEMA.md §4).
    pub enum FailureKind: Enum {
        /// Credentials rejected or missing.
        Auth = "auth",
        /// A usage quota or budget is exhausted.
        Quota = "quota",
        /// Rate limited.
        RateLimit = "rate_limit",
        /// Misconfiguration (model, provider, runtime).
        Config = "config",
        /// A transient infrastructure failure; retrying may help.
        Transient = "transient",
        /// An expected, agent-correctable outcome.
        AgentAction = "agent_action",
        /// A bug.
        Internal = "internal",
        /// Not classified.
        Unknown = "unknown",
    }
}

string_enum! {
    /// What the user should do about a failure (SCHEMA.md §4).
    pub enum UserAction: LiteralError {
        /// Nothing (the default).
        None = "none",
        /// Retry.
        Retry = "retry",
        /// Change settings.
        Settings = "settings",
    }
}

model! {
    /// Failure metadata of `AgentErrorEvent` and `ConversationErrorEvent` (SCHEMA.md §10,
    /// `extra=forbid`).
    pub struct ErrorClassification {
        extra: forbid,
        fields: {
            /// The failure category. Required.
            kind: FailureKind = req,
            /// Whether retrying may succeed. Required.
            retryable: bool = req,
            /// What the user should do. Default `"none"`.
            user_action: UserAction = default(UserAction::None),
            /// An opaque error id.
            error_id: Option<String> = opt,
        }
    }
}

impl ErrorClassification {
    /// A classification without an error id.
    pub fn new(kind: FailureKind, retryable: bool, user_action: UserAction) -> Self {
        ErrorClassification {
            kind,
            retryable,
            user_action,
            error_id: None,
        }
    }

    /// The default of `AgentErrorEvent.classification` when absent or null (SCHEMA.md §5):
    /// `{"kind": "unknown", "retryable": false, "user_action": "none"}`.
    pub fn unknown() -> Self {
        ErrorClassification::new(FailureKind::Unknown, false, UserAction::None)
    }
}

fn failure(kind: FailureKind, retryable: bool, user_action: UserAction) -> ErrorClassification {
    ErrorClassification::new(kind, retryable, user_action)
}

/// Codes whose class name alone decides, checked before the detail text.
const AUTHORITATIVE_CODES: &[(&[&str], FailureKind, bool, UserAction)] = &[
    (
        &["LLMAuthenticationError", "ACPAuthRequired"],
        FailureKind::Auth,
        false,
        UserAction::Settings,
    ),
    (
        &["LLMRateLimitError"],
        FailureKind::RateLimit,
        true,
        UserAction::Retry,
    ),
    (
        &["MaxBudgetReached"],
        FailureKind::Quota,
        false,
        UserAction::Settings,
    ),
    (
        &[
            "LLMBadRequestError",
            "ACPInitError",
            "ACPSpawnError",
            "ACPPromptError",
            "NotFoundError",
            "LibTmuxException",
        ],
        FailureKind::Config,
        false,
        UserAction::Settings,
    ),
    (
        &[
            "LLMContextWindowExceedError",
            "LLMMalformedConversationHistoryError",
        ],
        FailureKind::AgentAction,
        true,
        UserAction::Retry,
    ),
    (
        &["MaxIterationsReached", "ConversationOwnershipLostError"],
        FailureKind::AgentAction,
        false,
        UserAction::None,
    ),
    (
        &[
            "KeyError",
            "AssertionError",
            "PydanticSerializationError",
            "AttributeError",
            "TypeError",
        ],
        FailureKind::Internal,
        false,
        UserAction::None,
    ),
];

/// Phrases looked for in the lower-cased detail, in this order.
const DETAIL_TOKENS: &[(&[&str], FailureKind, bool, UserAction)] = &[
    (
        &[
            "invalid api key",
            "incorrect api key",
            "authentication required",
            "invalid bearer token",
            "invalid proxy server token",
            "unauthorized",
            "error code: 401",
            "status\": 401",
            "token_not_found",
            "api key is missing",
        ],
        FailureKind::Auth,
        false,
        UserAction::Settings,
    ),
    (
        &[
            "weekly usage limit",
            "daily quota",
            "session usage limit",
            "insufficient balance",
            "more credits",
            "budget has been exceeded",
        ],
        FailureKind::Quota,
        false,
        UserAction::Settings,
    ),
    (
        &["rate limit", "error code: 429", "status\": 429"],
        FailureKind::RateLimit,
        true,
        UserAction::Retry,
    ),
    (
        &[
            "provider not provided",
            "no models loaded",
            "does not support thinking",
            "model is no longer available",
            "model not found",
            "invalid params",
            "inactive_service",
            "powershell is not available",
        ],
        FailureKind::Config,
        false,
        UserAction::Settings,
    ),
    (
        &[
            "timeout",
            "connection error",
            "connection closed",
            "service temporarily unavailable",
            "bad gateway",
            "cloudflare",
            "cannot connect",
            "name or service not known",
            "error code: 5",
        ],
        FailureKind::Transient,
        true,
        UserAction::Retry,
    ),
    (
        &[
            "on_token callback",
            "duplicate tool names",
            "list_tools",
            "on_tools_changed",
            "surrogates not allowed",
        ],
        FailureKind::Internal,
        false,
        UserAction::None,
    ),
];

/// Generic wrapper codes, checked after the detail text.
const FALLBACK_TRANSIENT_CODES: &[&str] = &[
    "LLMServiceUnavailableError",
    "LLMTimeoutError",
    "ReadTimeout",
    "LLMNoResponseError",
    "MCPTimeoutError",
    "BadGatewayError",
    "HTTPStatusError",
    "RequestError",
    "CloudflareError",
    "OpenAIError",
    "APIError",
    "BaseLLMException",
    "AnthropicError",
    "OpenRouterException",
    "OllamaError",
];

/// Classifies a failure from its code (usually an exception class name) and detail text,
/// exactly as the SDK's `classify_error()` (openhands-sdk 1.58.2,
/// `openhands.sdk.event.error_classification`): authoritative codes first, then phrases in
/// the detail (lower-cased; the SDK case-folds, which differs only outside ASCII and the
/// phrases are ASCII), then generic wrapper codes as transient, else `unknown`.
pub fn classify_error(code: &str, detail: &str) -> ErrorClassification {
    for (codes, kind, retryable, action) in AUTHORITATIVE_CODES {
        if codes.contains(&code) {
            return failure(*kind, *retryable, *action);
        }
    }
    let text = detail.to_lowercase();
    for (tokens, kind, retryable, action) in DETAIL_TOKENS {
        if tokens.iter().any(|t| text.contains(t)) {
            return failure(*kind, *retryable, *action);
        }
    }
    if FALLBACK_TRANSIENT_CODES.contains(&code) {
        return failure(FailureKind::Transient, true, UserAction::Retry);
    }
    failure(FailureKind::Unknown, false, UserAction::None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(code: &str, detail: &str) -> (FailureKind, bool, UserAction) {
        let c = classify_error(code, detail);
        (c.kind, c.retryable, c.user_action)
    }

    #[test]
    fn code_wins_over_detail() {
        assert_eq!(
            kind(
                "LLMAuthenticationError",
                "Rate limit reached (error code: 429)"
            ),
            (FailureKind::Auth, false, UserAction::Settings)
        );
        assert_eq!(
            kind("KeyError", "timeout"),
            (FailureKind::Internal, false, UserAction::None)
        );
    }

    #[test]
    fn detail_decides_for_generic_codes() {
        assert_eq!(
            kind("APIError", "Unauthorized"),
            (FailureKind::Auth, false, UserAction::Settings)
        );
        assert_eq!(
            kind("APIError", "upstream timeout"),
            (FailureKind::Transient, true, UserAction::Retry)
        );
        assert_eq!(
            kind("APIError", "weird"),
            (FailureKind::Transient, true, UserAction::Retry)
        );
        assert_eq!(
            kind("RuntimeError", "d"),
            (FailureKind::Unknown, false, UserAction::None)
        );
        assert_eq!(
            kind("RuntimeError", "Error code: 503"),
            (FailureKind::Transient, true, UserAction::Retry)
        );
        assert_eq!(
            kind("X", "daily quota hit"),
            (FailureKind::Quota, false, UserAction::Settings)
        );
    }
}
