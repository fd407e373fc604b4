//! Request and response bodies as the API writes them and the OpenAPI document describes
//! them: the shared error and status bodies here, one module per resource. Request bodies are
//! described in `openapi::requests` (JSON Schema with every rule the parsers enforce).

mod app_conversations;
mod keys;
mod members;
mod org_settings;
mod sandboxes;
mod start_tasks;
mod user_settings;
mod users;
mod workspace;

pub use app_conversations::{
    AppConversationOut, AppConversationPage, ConversationWorkspace, SendMessageResponse,
};
pub use keys::{
    ApiKeyCreated, ApiKeyList, ApiKeyResponse, ApiKeyRevoked, LlmApiKeyResponse, ServiceHealth,
    ServiceKeyCreated,
};
pub use members::{AuditEntryResponse, AuditLogPage, OrgMemberPage, OrgMemberResponse};
pub use org_settings::{MarketplaceRegistration, OrgAppSettingsResponse};
pub use sandboxes::{
    ExposedUrl, SandboxInfo, SandboxPage, SandboxSpecInfo, SandboxSpecInfoPage, SandboxStatusName,
    StartSandboxRequest, Success,
};
pub use start_tasks::{
    AppConversationStartTask, AppConversationStartTaskPage, StartTaskStatusName,
};
pub use user_settings::{
    ActivateAgentProfileResponse, ActivateProfileResponse, CurrentKeyResponse, CustomSecretPage,
    EditResponse, OrgActivateProfileResponse, OrgMeResponse, OrgPage, OrgResponse,
    ProfileMutationResponse, SecretNameItem, SecretNamesResponse,
};
pub use users::MeResponse;
pub use workspace::{
    GetHooksResponse, HookDefinitionResponse, HookEventResponse, HookMatcherResponse,
    PendingMessageResponse, SkillResponse, SkillsResponse,
};

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// `{"detail": "message"}`: every error but 422.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Human-readable message.
    pub detail: String,
}

/// One FastAPI validation error entry.
#[derive(Debug, Serialize, ToSchema)]
pub struct ValidationErrorEntry {
    /// Where: `["body", "max_budget_per_task"]`, `["query", "limit"]`, `["header", "x-org-id"]`
    /// (strings and integer indices).
    #[schema(value_type = Vec<Value>)]
    pub loc: Vec<Value>,
    /// Message.
    pub msg: String,
    /// pydantic error type, e.g. `missing`, `json_invalid`, `value_error`.
    #[serde(rename = "type")]
    pub error_type: String,
    /// The offending input (any JSON value).
    #[schema(value_type = Value)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// Context, e.g. `{"ge": 0}`; only for some types.
    #[schema(value_type = Option<Object>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ctx: Option<Value>,
}

/// `{"detail": [entry, …]}`: a 422.
#[derive(Debug, Serialize, ToSchema)]
#[allow(clippy::upper_case_acronyms)]
pub struct HTTPValidationError {
    /// The entries.
    pub detail: Vec<ValidationErrorEntry>,
}

/// `GET /health`, `GET /ready`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Status {
    /// `ok`, `ready`, or (`/ready`) `degraded` while event appends are refused under the
    /// disk reserve (`--min-free-disk`: the replica still serves reads and deletes).
    pub status: String,
    /// What `degraded` means now: free bytes and the reserve.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}
