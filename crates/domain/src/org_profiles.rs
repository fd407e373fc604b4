//! An organization's LLM profiles and LLM provider connections (issue 25; what Agent Canvas
//! manages under `/api/organizations/{org}/profiles` and `/provider-connections` when an
//! organization is picked). Every member reads them (`view_org_settings`), owners and admins
//! change them (`edit_org_settings`). Keys are sealed, bound to the organization
//! ([`crate::org_defaults::OrgBinding`]), and never answered: `api_key_set` instead.
//!
//! A provider connection is a named LLM endpoint: a provider (`openai`, `anthropic`, …), an
//! optional base URL and a key (Agent Canvas's `ProviderConnection`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use switchboard_model::ValidationError;
use uuid::Uuid;

use crate::user_settings::refuse_nul_deep;
use crate::validation::{field, loc, missing, model_type, string_too_short, string_type};

/// The most provider connections an organization keeps; one more is a 409.
pub const MAX_CONNECTIONS: usize = 50;

/// A stored provider connection; its key sealed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredConnection {
    /// Stable id (a UUID).
    pub id: Uuid,
    /// Shown name.
    pub display_name: String,
    /// The provider (`openai`, …), as sent.
    pub provider: String,
    /// Its base URL, if any (`http(s)://`).
    pub base_url: Option<String>,
    /// The key, sealed.
    pub api_key_sealed: Option<String>,
    /// Created, seconds since the epoch.
    pub created_at: i64,
    /// Last change, seconds since the epoch.
    pub updated_at: i64,
}

impl StoredConnection {
    /// Agent Canvas's `ProviderConnection`: no key, `api_key_set`.
    pub fn view(&self) -> Value {
        json!({
            "id": self.id.to_string(),
            "display_name": self.display_name,
            "provider": self.provider,
            "base_url": self.base_url,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "api_key_set": self.api_key_sealed.is_some(),
        })
    }
}

/// A create or update body, read. `Debug` shows no key.
#[derive(Clone, Default, PartialEq)]
pub struct ConnectionInput {
    /// `display_name`, when sent.
    pub display_name: Option<String>,
    /// `provider`, when sent.
    pub provider: Option<String>,
    /// `base_url`: absent `None`, sent `Some` (`Some(None)` for null: none).
    pub base_url: Option<Option<String>>,
    /// `api_key`, when sent.
    pub api_key: Option<String>,
}

impl std::fmt::Debug for ConnectionInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionInput")
            .field("display_name", &self.display_name)
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .finish()
    }
}

/// Reads `CreateProviderConnectionRequest` (`create`: `display_name`, `provider` and
/// `api_key` required) or `UpdateProviderConnectionRequest` (each field optional; `api_key`
/// may not be null: a connection always keeps a key). Unknown fields are ignored.
///
/// # Errors
/// A 422 entry at `["body", …]`: not an object, a required field missing, a field not a
/// string (or empty), a base URL not `http(s)://`, a NUL.
pub fn parse_connection(body: &Value, create: bool) -> Result<ConnectionInput, ValidationError> {
    let root = loc(["body"]);
    let name = if create {
        "CreateProviderConnectionRequest"
    } else {
        "UpdateProviderConnectionRequest"
    };
    let Some(obj) = body.as_object() else {
        return Err(model_type(root, name, body));
    };
    refuse_nul_deep(body, &root)?;
    let text = |key: &str| -> Result<Option<String>, ValidationError> {
        match obj.get(key) {
            None if create => Err(missing(field(&root, key), body.clone())),
            None => Ok(None),
            Some(Value::String(s)) if s.is_empty() => {
                Err(string_too_short(field(&root, key), 1, s))
            }
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(string_type(field(&root, key), other)),
        }
    };
    let display_name = text("display_name")?;
    let provider = text("provider")?;
    let api_key = text("api_key")?;
    let base_url = match obj.get("base_url") {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::String(s)) if s.is_empty() => Some(None),
        Some(Value::String(s)) => {
            if !(s.starts_with("http://") || s.starts_with("https://")) {
                return Err(crate::validation::value_error(
                    field(&root, "base_url"),
                    "base_url must start with http:// or https://",
                    &json!(s),
                ));
            }
            Some(Some(s.clone()))
        }
        Some(other) => return Err(string_type(field(&root, "base_url"), other)),
    };
    Ok(ConnectionInput {
        display_name,
        provider,
        base_url,
        api_key,
    })
}

/// The organization's profile list (`ProfileListResponse`): `{profiles: [{name, model,
/// base_url, api_key_set}], active_profile}`.
pub fn org_profile_list(
    profiles: &[crate::user_settings::StoredProfile],
    active: Option<&str>,
) -> Value {
    let items: Vec<Value> = profiles
        .iter()
        .map(|p| {
            json!({"name": p.name, "model": p.config_str("model"),
                   "base_url": p.config_str("base_url"), "api_key_set": p.api_key_sealed.is_some()})
        })
        .collect();
    json!({"profiles": items, "active_profile": active})
}

/// A profile's LLM as answered: its configuration with `api_key` null.
pub fn answered_llm(config: &Map<String, Value>) -> Value {
    let mut llm = config.clone();
    llm.insert("api_key".into(), Value::Null);
    Value::Object(llm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_bodies() {
        let c = parse_connection(
            &json!({"display_name": "T", "provider": "openai", "api_key": "sk", "base_url": null}),
            true,
        )
        .unwrap();
        assert_eq!(c.base_url, Some(None));
        assert_eq!(c.api_key.as_deref(), Some("sk"));
        assert!(!format!("{c:?}").contains("sk\""));
        let u = parse_connection(&json!({"display_name": "U"}), false).unwrap();
        assert_eq!(u.api_key, None);
        for (bad, create) in [
            (json!({"display_name": "T", "provider": "openai"}), true),
            (json!([]), false),
            (json!({"api_key": null}), false),
            (json!({"base_url": "ftp://x"}), false),
            (json!({"provider": 3}), false),
            (json!({"display_name": ""}), false),
        ] {
            assert!(parse_connection(&bad, create).is_err(), "{bad}");
        }
    }
}
