//! `GET /api/v1/users/me`.

use serde::Serialize;
use serde_json::{Map, Value};
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
    /// OpenHands' `UserInfo.id`: the user id.
    pub id: String,
    /// OpenHands' `UserInfo` fields: the user's settings as `GET /api/v1/settings` answers
    /// them (`GETSettingsModel`), `mcp_config` (credentials masked), and with
    /// `expose_secrets=true` `llm_model`, `llm_api_key`, `llm_base_url`, `llm_profiles` (with
    /// keys), `mcp_config` unmasked.
    #[serde(flatten)]
    #[schema(value_type = switchboard_domain::user_settings::view::SettingsResponse)]
    pub info: Map<String, Value>,
}

impl MeResponse {
    /// The caller and their `UserInfo` fields (those already above are not repeated).
    pub fn with_info(me: MeView, info: Value) -> Self {
        let mut out = MeResponse::from(me);
        let mut info = match info {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        for own in [
            "user_id",
            "email",
            "name",
            "org_id",
            "org_name",
            "role",
            "permissions",
            "api_key_id",
            "api_key_org_id",
            "id",
        ] {
            info.remove(own);
        }
        out.info = info;
        out
    }
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
            id: m.user_id.to_string(),
            info: Map::new(),
        }
    }
}
