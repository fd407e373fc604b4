//! Request and response bodies as the API writes them and the OpenAPI document describes them.

use serde::Serialize;
use serde_json::Value;
use switchboard_domain::settings::{Marketplace, MarketplaceScope, OrgAppSettings};
use switchboard_domain::time_input::format_rfc3339_micros;
use switchboard_domain::{ApiKeyView, IssuedKey, MeView};
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

/// A registered marketplace as returned: every key written, `scope` always `org`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct MarketplaceRegistration {
    /// Name: a letter, then letters, digits, `-`, `_`; unique in the list.
    pub name: String,
    /// `github:owner/repo`, a git URL, or a relative local path.
    pub source: String,
    /// Git ref, or null.
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    /// Path inside the repository, or null.
    pub repo_path: Option<String>,
    /// Load automatically.
    pub auto_load: bool,
    /// `instance`, `org` or `personal`; always `org` here.
    pub scope: String,
}

impl From<&Marketplace> for MarketplaceRegistration {
    fn from(m: &Marketplace) -> Self {
        MarketplaceRegistration {
            name: m.name.clone(),
            source: m.source.clone(),
            git_ref: m.git_ref.clone(),
            repo_path: m.repo_path.clone(),
            auto_load: m.auto_load,
            scope: match m.scope {
                MarketplaceScope::Instance => "instance",
                MarketplaceScope::Org => "org",
                MarketplaceScope::Personal => "personal",
            }
            .to_owned(),
        }
    }
}

/// `OrgAppSettingsResponse` (spec §2.5).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OrgAppSettingsResponse {
    /// Proactive conversation starters.
    pub enable_proactive_conversation_starters: bool,
    /// Per-task budget, or null.
    pub max_budget_per_task: Option<f64>,
    /// The organization's marketplaces, in the order given.
    pub registered_marketplaces: Vec<MarketplaceRegistration>,
    /// The settings version (RFC 3339, microseconds); echo it as `last_known_updated_at`.
    pub updated_at: String,
}

impl From<&OrgAppSettings> for OrgAppSettingsResponse {
    fn from(s: &OrgAppSettings) -> Self {
        OrgAppSettingsResponse {
            enable_proactive_conversation_starters: s.enable_proactive_conversation_starters,
            max_budget_per_task: s.max_budget_per_task,
            registered_marketplaces: s.registered_marketplaces.iter().map(Into::into).collect(),
            updated_at: format_rfc3339_micros(s.updated_at),
        }
    }
}

/// A marketplace entry as sent (unknown keys ignored; `scope` accepted and replaced by `org`).
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct MarketplaceRegistrationInput {
    /// Required. Trimmed.
    name: String,
    /// Required. Trimmed.
    source: String,
    /// Optional.
    #[schema(rename = "ref")]
    git_ref: Option<String>,
    /// Optional: relative, no `..`, no `://`.
    repo_path: Option<String>,
    /// Default false.
    auto_load: Option<bool>,
    /// `instance`, `org` or `personal`; ignored.
    scope: Option<String>,
}

/// `OrgAppSettingsUpdate`: every field optional; an absent field is left alone.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct OrgAppSettingsUpdate {
    /// A boolean (`null` is refused).
    enable_proactive_conversation_starters: Option<bool>,
    /// A finite number > 0, or `null` to clear.
    max_budget_per_task: Option<f64>,
    /// The whole list (replaces it; `null` is refused). Needs `edit_org_settings`.
    registered_marketplaces: Option<Vec<MarketplaceRegistrationInput>>,
    /// The `updated_at` last seen: RFC 3339, naive ISO-8601 (UTC), a date, or Unix seconds.
    /// When given and not equal to the stored version: 409.
    last_known_updated_at: Option<String>,
}

/// `POST /api/keys` body.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct ApiKeyCreate {
    /// 1 to 100 characters.
    name: String,
    /// Optional expiry in the future (same forms as `last_known_updated_at`).
    expires_at: Option<String>,
}

/// An API key, without its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKeyResponse {
    /// Key id.
    #[schema(value_type = String, format = Uuid)]
    pub id: uuid::Uuid,
    /// Name.
    pub name: String,
    /// First characters of the key.
    pub prefix: String,
    /// Bound organization, or null.
    #[schema(value_type = Option<String>, format = Uuid)]
    pub org_id: Option<uuid::Uuid>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339, or null.
    pub last_used_at: Option<String>,
    /// RFC 3339, or null.
    pub expires_at: Option<String>,
    /// Whether revoked.
    pub revoked: bool,
}

impl From<ApiKeyView> for ApiKeyResponse {
    fn from(v: ApiKeyView) -> Self {
        ApiKeyResponse {
            id: v.id.0,
            name: v.name,
            prefix: v.prefix,
            org_id: v.org_id.map(|o| o.0),
            created_at: v.created_at,
            last_used_at: v.last_used_at,
            expires_at: v.expires_at,
            revoked: v.revoked,
        }
    }
}

/// A new API key: the secret is shown here, once.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKeyCreated {
    /// The key record.
    #[serde(flatten)]
    pub key: ApiKeyResponse,
    /// The key itself: `sb_` and 43 base62 characters.
    pub api_key: String,
}

impl From<IssuedKey> for ApiKeyCreated {
    fn from(k: IssuedKey) -> Self {
        ApiKeyCreated {
            key: ApiKeyView::from(&k.record).into(),
            api_key: k.secret,
        }
    }
}

/// `GET /api/keys`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKeyList {
    /// The caller's keys usable in the effective organization, newest first.
    pub items: Vec<ApiKeyResponse>,
}

/// `DELETE /api/keys/{id}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKeyRevoked {
    /// Key id.
    #[schema(value_type = String, format = Uuid)]
    pub id: uuid::Uuid,
    /// Always true.
    pub revoked: bool,
}

/// `GET /api/v1/users/me`.
#[derive(Debug, Serialize, ToSchema)]
pub struct MeResponse {
    /// User id.
    #[schema(value_type = String, format = Uuid)]
    pub user_id: uuid::Uuid,
    /// E-mail.
    pub email: String,
    /// Display name.
    pub name: Option<String>,
    /// Effective organization.
    #[schema(value_type = String, format = Uuid)]
    pub org_id: uuid::Uuid,
    /// Its name.
    pub org_name: String,
    /// `owner`, `admin` or `member`.
    pub role: String,
    /// The role's permissions, sorted.
    pub permissions: Vec<String>,
    /// The API key of this request.
    #[schema(value_type = String, format = Uuid)]
    pub api_key_id: uuid::Uuid,
    /// The organization that key is bound to, or null.
    #[schema(value_type = Option<String>, format = Uuid)]
    pub api_key_org_id: Option<uuid::Uuid>,
}

impl From<MeView> for MeResponse {
    fn from(m: MeView) -> Self {
        MeResponse {
            user_id: m.user_id.0,
            email: m.email,
            name: m.name,
            org_id: m.org_id.0,
            org_name: m.org_name,
            role: m.role,
            permissions: m.permissions,
            api_key_id: m.api_key_id.0,
            api_key_org_id: m.api_key_org_id.map(|o| o.0),
        }
    }
}

/// `GET /health`, `GET /ready`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Status {
    /// `ok` or `ready`.
    pub status: String,
}
