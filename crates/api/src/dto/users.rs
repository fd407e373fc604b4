//! `GET /api/v1/users/me`.

use serde::Serialize;
use switchboard_domain::MeView;
use utoipa::ToSchema;

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
