//! Domain errors: what went wrong in domain terms. The API crate alone maps them to HTTP
//! statuses and bodies, in one table.

use switchboard_model::ValidationError;
use time::OffsetDateTime;

use crate::ids::OrgId;
use crate::permissions::Permission;
use crate::time_input::format_rfc3339_micros;

/// A failure of a storage adapter.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// A uniqueness constraint refused the write (e.g. an e-mail already registered).
    #[error("already exists: {0}")]
    UniqueViolation(String),
    /// A referenced row does not exist (e.g. a member of an unknown organization).
    #[error("referenced row not found: {0}")]
    ForeignKeyViolation(String),
    /// No connection could be had in time.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// Anything else.
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

/// Why an operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    /// No credentials were presented.
    #[error("Not authenticated")]
    NotAuthenticated,
    /// The presented API key is unknown.
    #[error("Invalid API key")]
    InvalidApiKey,
    /// The presented API key has expired.
    #[error("API key expired")]
    ApiKeyExpired,
    /// The presented API key was revoked.
    #[error("API key revoked")]
    ApiKeyRevoked,
    /// The key's user is disabled (issue 34): 401, whatever the key.
    #[error("User is disabled")]
    UserDisabled,
    /// The key is bound to another organization than the one requested (`X-Org-Id`).
    #[error("API key is not authorized for this organization")]
    KeyNotAuthorizedForOrg,
    /// The user is not a member of the organization acted on.
    #[error("User is not a member of this organization")]
    NotAMember,
    /// The user's role lacks a permission the operation requires.
    #[error("Requires {0} permission")]
    PermissionDenied(Permission),
    /// The user's role lacks a permission an optional part of the request requires
    /// (e.g. `registered_marketplaces` needs `edit_org_settings`, reference §1.6 rule 4).
    #[error("Missing required permission: {0}")]
    MissingPermission(Permission),
    /// The effective organization does not exist (any more).
    #[error("Current organization not found")]
    OrgNotFound,
    /// A user named by an operator does not exist.
    #[error("User not found")]
    UserNotFound,
    /// The API key does not exist or is not the caller's.
    #[error("API key not found")]
    ApiKeyNotFound,
    /// No `X-Session-API-Key` on a webhook.
    #[error("X-Session-API-Key header is required")]
    SessionKeyRequired,
    /// The session key matches no sandbox.
    #[error("Invalid session API key")]
    InvalidSessionKey,
    /// The conversation does not exist or belongs to another organization.
    #[error("Conversation not found")]
    ConversationNotFound,
    /// A batch get asked for more ids than its resource allows (400; reference app-server
    /// §3.2, §4, §5.2: events, sandboxes, sandbox specs, app conversations and start tasks
    /// all at most 100): judged before the ids' form, as OpenHands does.
    #[error("Cannot request more than {max} {what} at once, got {got}")]
    TooManyIds {
        /// What was asked for, plural (`events`, `sandboxes`, `sandbox specs`, …).
        what: &'static str,
        /// The most one batch may hold.
        max: usize,
        /// How many were asked for.
        got: usize,
    },
    /// The settings changed since the version the client sent (reference §1.6 rule 7).
    #[error(
        "Organization \"{org_id}\" was modified by another request. Expected version: {}, actual version: {}. Please refresh and retry.",
        format_rfc3339_micros(*.expected),
        format_rfc3339_micros(*.actual)
    )]
    StaleSettings {
        /// The organization.
        org_id: OrgId,
        /// The version the client sent.
        expected: OffsetDateTime,
        /// The stored version.
        actual: OffsetDateTime,
    },
    /// Marketplace names repeat (reference §1.6 rule 8); sorted.
    #[error("Duplicate marketplace name(s) not allowed: {}", .0.join(", "))]
    DuplicateMarketplaceNames(Vec<String>),
    /// The sandbox does not exist, is deleted, belongs to another organization, or is
    /// another member's seen by a member (design: Sandboxes; ids do not leak).
    #[error("Not Found")]
    SandboxNotFound,
    /// A start named a sandbox spec that is not configured (issue 9: 400 naming it; OpenHands
    /// answers 500).
    #[error("Unknown sandbox spec: {0:?}")]
    SandboxSpecNotFound(String),
    /// Pause or resume of a sandbox Switchboard does not run (design: Sandboxes).
    #[error(
        "Sandbox is not managed by Switchboard (registered with `switchboard sandboxes register`): it cannot be paused or resumed"
    )]
    SandboxNotManaged,
    /// Pause or resume of a sandbox whose process is gone or failed.
    #[error("Sandbox is {0}: only a STARTING, RUNNING or PAUSED sandbox can be paused or resumed")]
    SandboxNotRunnable(crate::sandboxes::runtime::SandboxStatus),
    /// A start would pass `--max-sandboxes-per-user` or `--max-sandboxes-per-org` (issue 18,
    /// Quotas: 409); the text says which quota and which sandboxes to delete.
    #[error("{0}")]
    SandboxQuotaExceeded(String),
    /// A sandbox runtime failed unexpectedly (logged; answered as an internal error).
    #[error("sandbox runtime failure: {0}")]
    Runtime(String),
    /// This server runs no sandboxes (built without a sandbox configuration).
    #[error("Sandboxes are not enabled on this server")]
    SandboxesDisabled,
    /// A request value breaks a rule (a 422 entry, `loc` starting with its source).
    #[error("{0}")]
    Invalid(Box<ValidationError>),
    /// Something to be created exists already.
    #[error("{0}")]
    AlreadyExists(String),
    /// A start request that is well formed but cannot be started (issue 10: 400, where
    /// OpenHands answers 500): a `suggested_task` with an `initial_message`, an unknown
    /// parent conversation, a conversation id already in use.
    #[error("{0}")]
    BadStartRequest(String),
    /// The storage failed.
    #[error("storage failure: {0}")]
    Storage(#[from] StorageError),
    /// The conversation's sandbox is gone (`MISSING`, or deleted): nothing can reach its
    /// agent server again (reference app-server §5.2: 410).
    #[error("Sandbox is MISSING: the conversation's agent server is gone")]
    ConversationSandboxMissing,
    /// The conversation's sandbox cannot take calls now: `ERROR`, not started again in
    /// time, or an agent server Switchboard has no URL or key for (reference app-server §5.2:
    /// 503).
    #[error("Sandbox is {0}: the conversation's agent server cannot be reached")]
    ConversationSandboxUnavailable(String),
    /// The conversation's sandbox is one Switchboard does not run (registered with
    /// `sandboxes register`: no agent server URL or session key), so Switchboard cannot send
    /// it anything: 409, a lasting state of the conversation, not a passing outage (API.md,
    /// App conversations).
    #[error(
        "The conversation's sandbox is not run by Switchboard (no agent server URL or key): messages cannot be sent through Switchboard"
    )]
    ConversationSandboxNotManaged,
    /// Keys and secrets cannot be stored or read: this server has no installation key
    /// (issue 21: 503).
    #[error("Secrets are not available on this server (no installation key)")]
    SecretsUnavailable,
    /// A named thing of the caller does not exist (issue 21: a profile, a secret): 404 with
    /// this text.
    #[error("{0}")]
    NotFound(String),
    /// A well-formed request that conflicts with what is stored where OpenHands answers 400
    /// (issue 21: renaming a secret to a taken name).
    #[error("{0}")]
    BadRequest(String),
    /// A sandbox route called with the session key of a sandbox that is not running
    /// (reference app-server §3.2: 401).
    #[error("Sandbox is not running")]
    SandboxNotRunning,
    /// A sandbox route called with the session key of another sandbox (reference app-server
    /// §3.2: 403).
    #[error("Session API key does not match sandbox")]
    SessionKeyMismatch,
    /// A request to a sandbox's services through Switchboard while the sandbox is not
    /// `RUNNING` (issue 22; API.md, Sandbox proxy: 409, resume it first).
    #[error(
        "Sandbox is {0}: its services are reachable only while it is RUNNING (resume it with POST /api/v1/sandboxes/{{id}}/resume)"
    )]
    SandboxNotReachable(crate::sandboxes::runtime::SandboxStatus),
    /// Switchboard did not send to a sandbox's agent server or exposed service because what
    /// listens there is not that sandbox, or nothing does (issue 33; 502 with this text).
    #[error("Switchboard did not reach the sandbox: {0}")]
    ListenerNotSandbox(String),
    /// An event append stored nothing: a quota or the disk reserve refused it (issue 33; 507
    /// Insufficient Storage with the refusal's text, [`crate::event_quota::AppendRefusal`]).
    #[error("{0}")]
    InsufficientStorage(crate::event_quota::AppendRefusal),
    /// The agent server failed a call (reference app-server §5.2: 502); the text names what
    /// failed, never a key.
    #[error("The agent server failed: {0}")]
    AgentServerFailed(String),
    /// A well-formed request that the conversation's state refuses now (409 with this text):
    /// a workspace read while its sandbox is not `RUNNING`, a pending message for a start that
    /// failed (issue 22).
    #[error("{0}")]
    Conflict(String),
    /// A conversation has [`MAX_PENDING_MESSAGES`](crate::conversations::workspace::MAX_PENDING_MESSAGES)
    /// messages queued already (OpenHands: 429).
    #[error("Too many pending messages. Maximum 10 messages per conversation.")]
    TooManyPendingMessages,
    /// Too many of something in flight on the server (429 with this text; issue 34: device
    /// logins).
    #[error("{0}")]
    TooManyRequests(String),
    /// A service route (`/api/service/...`) on a server without `--service-api-key-file`
    /// (OpenHands' answer without `AUTOMATIONS_SERVICE_KEY`: 503 with this text).
    #[error("Service authentication not configured")]
    ServiceAuthNotConfigured,
    /// A service route without `X-Service-API-Key` (401).
    #[error("X-Service-API-Key header is required")]
    ServiceKeyRequired,
    /// A service route with a wrong `X-Service-API-Key` (401).
    #[error("Invalid service API key")]
    InvalidServiceKey,
    /// Refused for a reason the text gives (403), where OpenHands answers its own words
    /// (a service key minted for a user outside the organization).
    #[error("{0}")]
    Forbidden(String),
}

impl From<ValidationError> for DomainError {
    fn from(e: ValidationError) -> Self {
        DomainError::Invalid(Box::new(e))
    }
}
