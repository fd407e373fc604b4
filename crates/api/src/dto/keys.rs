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
