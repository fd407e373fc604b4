//! API key bodies (API.md, Identity).

use serde::Serialize;
use switchboard_domain::{ApiKeyView, IssuedKey};
use utoipa::ToSchema;

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

/// `POST /api/service/users/{user_id}/orgs/{org_id}/api-keys` (OpenHands'
/// `CreateUserApiKeyResponse`, plus the key's `id` and `expires_at`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ServiceKeyCreated {
    /// The key itself, shown once: `sb_` and 43 base62 characters.
    pub key: String,
    /// The user it acts for.
    pub user_id: String,
    /// The organization it is bound to.
    pub org_id: String,
    /// Its name (the request's, trimmed).
    pub name: String,
    /// Its id, as `GET /api/keys` lists it (additive).
    #[schema(value_type = String, format = Uuid)]
    pub id: uuid::Uuid,
    /// When it expires, RFC 3339 (additive).
    pub expires_at: Option<String>,
}

impl From<IssuedKey> for ServiceKeyCreated {
    fn from(k: IssuedKey) -> Self {
        let view = ApiKeyView::from(&k.record);
        ServiceKeyCreated {
            key: k.secret,
            user_id: k.record.user_id.to_string(),
            org_id: k.record.org_id.map(|o| o.to_string()).unwrap_or_default(),
            name: view.name,
            id: view.id.0,
            expires_at: view.expires_at,
        }
    }
}

/// `GET /api/service/health`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ServiceHealth {
    /// Always `ok`.
    pub status: String,
    /// Whether `--service-api-key-file` was given.
    pub service_auth_configured: bool,
}

/// `GET /api/keys/llm/byor` (OpenHands' `LlmApiKeyResponse`).
#[derive(Debug, Serialize, ToSchema)]
pub struct LlmApiKeyResponse {
    /// The caller's own LLM key, or null when they stored none.
    pub key: Option<String>,
}
