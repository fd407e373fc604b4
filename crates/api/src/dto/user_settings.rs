//! Bodies of each user's settings, profiles and secrets (issue 21), in OpenHands' shapes
//! (app server OpenAPI 1.11.0: `EditResponse`, `ProfileMutationResponse`,
//! `ActivateProfileResponse`, `CustomSecretPage`, `SecretNamesResponse`, …).

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// `{"message": …}` (OpenHands' `EditResponse`).
#[derive(Debug, Serialize, ToSchema)]
pub struct EditResponse {
    /// What was done.
    pub message: String,
}

/// A profile saved, deleted or renamed (OpenHands' `ProfileMutationResponse`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ProfileMutationResponse {
    /// The profile's name (the new one after a rename).
    pub name: String,
    /// What was done.
    pub message: String,
}

/// A profile activated (OpenHands' `ActivateProfileResponse`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ActivateProfileResponse {
    /// The profile's name.
    pub name: String,
    /// What was done.
    pub message: String,
    /// The model now in use.
    pub model: Option<String>,
}

/// An organization profile activated: its LLM (and key) is now the organization's default.
#[derive(Debug, Serialize, ToSchema)]
pub struct OrgActivateProfileResponse {
    /// What was done.
    pub message: String,
    /// The profile's name.
    pub name: String,
    /// The organization's default LLM now (`api_key` null, never the key).
    #[schema(value_type = Object)]
    pub llm: serde_json::Map<String, serde_json::Value>,
}

/// A page of secret names (OpenHands' `CustomSecretPage`).
#[derive(Debug, Serialize, ToSchema)]
pub struct CustomSecretPage {
    /// Names and descriptions, by name; never values.
    pub items: Vec<switchboard_domain::user_secrets::SecretMeta>,
    /// The next page's cursor, or null.
    pub next_page_id: Option<String>,
}

/// A name the sandbox may read (OpenHands' `SecretNameItem`).
#[derive(Debug, Serialize, ToSchema)]
pub struct SecretNameItem {
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
}

/// The names a sandbox may read (OpenHands' `SecretNamesResponse`).
#[derive(Debug, Serialize, ToSchema)]
pub struct SecretNamesResponse {
    /// The owner's custom secrets and provider tokens (`<provider>_token`).
    pub secrets: Vec<SecretNameItem>,
}

/// The key of this request (`GET /api/keys/current`).
#[derive(Debug, Serialize, ToSchema)]
pub struct CurrentKeyResponse {
    /// Key id.
    #[schema(value_type = String, format = Uuid)]
    pub id: uuid::Uuid,
    /// Its name.
    pub name: String,
    /// The effective organization of this request.
    #[schema(value_type = String, format = Uuid)]
    pub org_id: uuid::Uuid,
    /// The organization the key is bound to, or null.
    #[schema(value_type = Option<String>, format = Uuid)]
    pub bound_org_id: Option<uuid::Uuid>,
    /// The key's user.
    #[schema(value_type = String, format = Uuid)]
    pub user_id: uuid::Uuid,
    /// Always `api_key`.
    pub auth_type: String,
}

/// One organization of the caller.
#[derive(Debug, Serialize, ToSchema)]
pub struct OrgResponse {
    /// Id.
    #[schema(value_type = String, format = Uuid)]
    pub id: uuid::Uuid,
    /// Name.
    pub name: String,
    /// The caller's role there.
    pub role: String,
    /// Always false (Switchboard has no personal organizations).
    pub is_personal: bool,
    /// Always null (no billing).
    #[schema(value_type = Option<f64>)]
    pub credits: Option<Value>,
    /// RFC 3339.
    pub created_at: String,
}

/// The caller's organizations (OpenHands' `OrgPage` with `current_org_id`).
#[derive(Debug, Serialize, ToSchema)]
pub struct OrgPage {
    /// By name.
    pub items: Vec<OrgResponse>,
    /// Always null: one page.
    pub next_page_id: Option<String>,
    /// The caller's current (effective) organization.
    #[schema(value_type = String, format = Uuid)]
    pub current_org_id: uuid::Uuid,
}

/// The caller in one organization (OpenHands' `MeResponse` of `/api/organizations/{id}/me`).
#[derive(Debug, Serialize, ToSchema)]
pub struct OrgMeResponse {
    /// The organization.
    #[schema(value_type = String, format = Uuid)]
    pub org_id: uuid::Uuid,
    /// The caller.
    #[schema(value_type = String, format = Uuid)]
    pub user_id: uuid::Uuid,
    /// Their e-mail.
    pub email: String,
    /// Their role.
    pub role: String,
    /// The role's permissions, sorted.
    pub permissions: Vec<String>,
    /// `**********` when the caller stored an LLM key in this organization, else null
    /// (never the key).
    pub llm_api_key: Option<String>,
    /// Always null.
    pub llm_api_key_for_byor: Option<String>,
    /// Always `active`.
    pub status: String,
}

/// An agent profile activated (the agent server's `ActivateAgentProfileResponse`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ActivateAgentProfileResponse {
    /// The profile's id.
    pub id: String,
    /// What was done.
    pub message: String,
    /// Always false: activating moves the pointer and writes no settings.
    pub agent_settings_applied: bool,
}
