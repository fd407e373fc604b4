//! An organization's LLM profiles and LLM provider connections (issue 25; what Agent Canvas
//! manages under `/api/organizations/{org}/profiles` and `/provider-connections` when an
//! organization is picked). Every member reads them (`view_org_settings`), owners and admins
//! change them (`edit_org_settings`). Keys are sealed, bound to the organization
//! ([`crate::org_defaults::OrgBinding`]), and never answered: `api_key_set` instead.
//!
//! A provider connection is a named LLM endpoint: a provider (`openai`, `anthropic`, …), an
//! optional base URL and a key (Agent Canvas's `ProviderConnection`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use switchboard_model::ValidationError;
use uuid::Uuid;

use utoipa::openapi::schema::Object;

use crate::typed_body::{self, RequestBody, fields};
use crate::user_settings::diffs::BASE_URL_PATTERN;
use crate::user_settings::own_llm::OwnLlm;
use crate::user_settings::profiles::connection_id;
use crate::validation::NO_NUL_PATTERN;

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
    pub fn view(&self) -> ProviderConnection {
        ProviderConnection {
            id: self.id,
            display_name: self.display_name.clone(),
            provider: self.provider.clone(),
            base_url: self.base_url.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            api_key_set: self.api_key_sealed.is_some(),
        }
    }
}

/// A provider connection as answered (Agent Canvas's `ProviderConnection`): never its key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ProviderConnection {
    /// Its id (a dashed UUID).
    #[schema(value_type = String, format = Uuid)]
    pub id: Uuid,
    /// Shown name.
    pub display_name: String,
    /// The provider (`openai`, `anthropic`, …), as sent.
    pub provider: String,
    /// Its base URL (`http(s)://`), or `null`: the provider's public endpoint.
    pub base_url: Option<String>,
    /// Created, seconds since the epoch.
    pub created_at: i64,
    /// Last change, seconds since the epoch.
    pub updated_at: i64,
    /// Whether a key is stored (sealed; never answered).
    pub api_key_set: bool,
}

/// `GET /api/organizations/{org_id}/provider-connections`' answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ProviderConnectionList {
    /// The organization's connections, oldest first.
    pub connections: Vec<ProviderConnection>,
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

/// `POST /api/organizations/{org_id}/provider-connections`' body (Agent Canvas'
/// `CreateProviderConnectionRequest`): `display_name`, `provider` and `api_key` required,
/// each at least one character; `base_url` optional. Other keys are ignored; no NUL in any
/// string or key.
// No `Debug`: it holds a key.
#[derive(Clone, PartialEq, Deserialize, utoipa::ToSchema)]
pub struct CreateProviderConnectionRequest {
    /// Shown name.
    #[schema(schema_with = fields::non_empty_text)]
    display_name: String,
    /// The provider (`openai`, `anthropic`, …).
    #[schema(schema_with = fields::non_empty_text)]
    provider: String,
    /// The key ([`connection_key_schema`]).
    #[schema(schema_with = connection_key_schema)]
    api_key: String,
    /// The base URL ([`connection_base_url_schema`]).
    #[serde(default, deserialize_with = "fields::present")]
    #[schema(schema_with = connection_base_url_schema)]
    base_url: Option<Option<String>>,
    /// Any other key: ignored.
    #[serde(flatten)]
    #[schema(schema_with = fields::others_without_nul)]
    others: Map<String, Value>,
}

/// `PATCH /api/organizations/{org_id}/provider-connections/{id}`'s body (Agent Canvas'
/// `UpdateProviderConnectionRequest`): each field optional, as
/// [`CreateProviderConnectionRequest`]'s; `api_key` may not be `null` (a connection always
/// keeps a key). Other keys are ignored; no NUL.
// No `Debug`: it holds a key.
#[derive(Clone, PartialEq, Deserialize, utoipa::ToSchema)]
pub struct UpdateProviderConnectionRequest {
    /// Shown name.
    #[serde(default)]
    #[schema(schema_with = fields::non_empty_text)]
    display_name: Option<String>,
    /// The provider.
    #[serde(default)]
    #[schema(schema_with = fields::non_empty_text)]
    provider: Option<String>,
    /// A new key ([`connection_key_schema`]).
    #[serde(default)]
    #[schema(schema_with = connection_key_schema)]
    api_key: Option<String>,
    /// The base URL ([`connection_base_url_schema`]).
    #[serde(default, deserialize_with = "fields::present")]
    #[schema(schema_with = connection_base_url_schema)]
    base_url: Option<Option<String>>,
    /// Any other key: ignored.
    #[serde(flatten)]
    #[schema(schema_with = fields::others_without_nul)]
    others: Map<String, Value>,
}

impl RequestBody for CreateProviderConnectionRequest {
    /// No NUL in the keys ignored.
    fn check(&self) -> Result<(), Vec<ValidationError>> {
        fields::check_others(&self.others)
    }
}

impl RequestBody for UpdateProviderConnectionRequest {
    /// No NUL in the keys ignored.
    fn check(&self) -> Result<(), Vec<ValidationError>> {
        fields::check_others(&self.others)
    }
}

/// A connection's key: at least one character, no NUL, sealed and never answered
/// (`writeOnly`: never echoed in a 422 either).
fn connection_key_schema() -> Object {
    fields::string()
        .min_length(Some(1))
        .pattern(Some(NO_NUL_PATTERN))
        .write_only(Some(true))
        .description(Some("Sealed; never answered (`api_key_set`)."))
        .build()
}

/// A connection's base URL: `http://` or `https://` ([`BASE_URL_PATTERN`]), or `""` or
/// `null` for none (the provider's public endpoint); another value is one `value_error`.
fn connection_base_url_schema() -> Object {
    fields::nullable_string()
        .pattern(Some(BASE_URL_PATTERN))
        .extensions(Some(fields::value_error_words_nul_apart(
            "base_url must start with http:// or https://",
        )))
        .build()
}

impl ConnectionInput {
    /// Reads a create body ([`CreateProviderConnectionRequest`], `create`) or an update body
    /// ([`UpdateProviderConnectionRequest`]). A base URL sent as `""` reads as `null`.
    ///
    /// # Errors
    /// The first 422 entry of [`typed_body::parse`], at `["body", …]`.
    pub fn read(body: &Value, create: bool) -> Result<ConnectionInput, ValidationError> {
        let mut read = if create {
            let b = typed_body::parse_one::<CreateProviderConnectionRequest>(body)?;
            ConnectionInput {
                display_name: Some(b.display_name),
                provider: Some(b.provider),
                base_url: b.base_url,
                api_key: Some(b.api_key),
            }
        } else {
            let b = typed_body::parse_one::<UpdateProviderConnectionRequest>(body)?;
            ConnectionInput {
                display_name: b.display_name,
                provider: b.provider,
                base_url: b.base_url,
                api_key: b.api_key,
            }
        };
        if let Some(url) = &mut read.base_url {
            *url = url.take().filter(|u| !u.is_empty());
        }
        Ok(read)
    }
}

/// One LLM profile as a list answers it (the agent server's `ProfileInfo`), a member's or the
/// organization's. Never a key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ProfileInfo {
    /// Its name.
    pub name: String,
    /// Its LLM's `model`, when set.
    pub model: Option<String>,
    /// Its LLM's `base_url`, when set (none when linked to a provider connection).
    pub base_url: Option<String>,
    /// The provider connection whose key and base URL it uses, by id, when it names one.
    pub provider_connection_id: Option<String>,
    /// Whether the connection it names no longer exists (a start from it then fails).
    pub provider_connection_broken: bool,
    /// Whether a key is stored: its own, or its connection's.
    pub api_key_set: bool,
}

/// `GET …/profiles`' answer (`ProfileListResponse`), a member's or the organization's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ProfileListResponse {
    /// The profiles, by name.
    pub profiles: Vec<ProfileInfo>,
    /// The active profile's name (whose LLM is the member's settings' or the organization's
    /// default), or `null`.
    pub active_profile: Option<String>,
}

/// The profile list of `profiles` with `active` the active one's name, each item as
/// [`profile_item`] answers it with `connections`.
pub fn profile_list(
    profiles: &[crate::user_settings::StoredProfile],
    active: Option<&str>,
    connections: &[StoredConnection],
) -> ProfileListResponse {
    ProfileListResponse {
        profiles: profiles
            .iter()
            .map(|p| profile_item(p, connections))
            .collect(),
        active_profile: active.map(str::to_owned),
    }
}

/// One LLM profile as a list answers it. A profile linked to a provider connection of
/// `connections` has a key when the connection has one; `provider_connection_broken` is true
/// when the connection it names no longer exists.
pub fn profile_item(
    p: &crate::user_settings::StoredProfile,
    connections: &[StoredConnection],
) -> ProfileInfo {
    let id = connection_id(&p.config);
    let linked = id.map(|id| connections.iter().find(|c| c.id.to_string() == id));
    let api_key_set = match linked {
        Some(Some(c)) => c.api_key_sealed.is_some(),
        Some(None) => false,
        None => p.api_key_sealed.is_some(),
    };
    ProfileInfo {
        name: p.name.clone(),
        model: p.config_str("model").map(str::to_owned),
        base_url: p.config_str("base_url").map(str::to_owned),
        provider_connection_id: id.map(str::to_owned),
        provider_connection_broken: matches!(linked, Some(None)),
        api_key_set,
    }
}

/// `GET /api/organizations/{org_id}/profiles/{name}`'s answer: the profile's name, its LLM
/// (`api_key` null, never the key), and whether a key is stored (its own or its
/// connection's).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct OrgProfileDetail {
    /// The profile's name.
    pub name: String,
    /// Its LLM configuration (`model`, `base_url`, …; `api_key` null).
    #[schema(value_type = Object)]
    pub llm: Map<String, Value>,
    /// Whether a key is stored.
    pub api_key_set: bool,
}

/// `llm` (read from `config`, whose owner `owner` names, e.g. `LLM profile 'fast'`) through
/// the provider connection `config` names, as the agent server's `LLMProfileStore` resolves
/// it at use: the connection's base URL (none included) and key (`open` opens it) replace the
/// configuration's own. A connection that is not among `connections` (deleted) leaves no base
/// URL and no key and sets `broken` saying so; no other key stands in for it.
///
/// # Errors
/// `open`'s.
pub fn through_connection(
    llm: OwnLlm,
    config: &Map<String, Value>,
    connections: &[StoredConnection],
    owner: &str,
    open: impl FnOnce(&str) -> Result<Option<String>, crate::error::DomainError>,
) -> Result<OwnLlm, crate::error::DomainError> {
    let Some(id) = connection_id(config) else {
        return Ok(llm);
    };
    Ok(match connections.iter().find(|c| c.id.to_string() == id) {
        Some(c) => OwnLlm {
            base_url: c.base_url.clone(),
            api_key: match &c.api_key_sealed {
                Some(sealed) => open(sealed)?,
                None => None,
            },
            key_owner: Some("organization"),
            ..llm
        },
        None => OwnLlm {
            base_url: None,
            api_key: None,
            broken: Some(format!(
                "{owner} uses provider connection '{id}', which no longer exists (it was deleted): choose another connection for it in the LLM settings, or recreate the connection"
            )),
            ..llm
        },
    })
}

/// A profile's LLM as answered: its configuration with `api_key` null.
pub fn answered_llm(config: &Map<String, Value>) -> Map<String, Value> {
    let mut llm = config.clone();
    llm.insert("api_key".into(), Value::Null);
    llm
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn conn(key: Option<&str>) -> StoredConnection {
        StoredConnection {
            id: Uuid::new_v4(),
            display_name: "Team".into(),
            provider: "openai".into(),
            base_url: Some("https://conn.test/v1".into()),
            api_key_sealed: key.map(str::to_owned),
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn a_linked_llm_takes_its_connection_and_a_deleted_one_is_broken() {
        let c = conn(Some("sealed"));
        let own = OwnLlm {
            model: Some("m".into()),
            base_url: Some("https://own.test".into()),
            api_key: Some("own-key".into()),
            broken: None,
            key_owner: None,
        };
        // Not linked: unchanged, and `open` is not called.
        let plain = json!({"model": "m"}).as_object().unwrap().clone();
        let out = through_connection(own.clone(), &plain, std::slice::from_ref(&c), "P", |_| {
            panic!("nothing to open")
        })
        .unwrap();
        assert!(out == own);
        // Linked: the connection's base URL and key win over the profile's own.
        let linked = json!({"model": "m", "provider_connection_id": c.id.to_string()})
            .as_object()
            .unwrap()
            .clone();
        let out = through_connection(own.clone(), &linked, std::slice::from_ref(&c), "P", |s| {
            Ok(Some(format!("opened-{s}")))
        })
        .unwrap();
        assert_eq!(
            (
                out.model.as_deref(),
                out.base_url.as_deref(),
                out.api_key.as_deref()
            ),
            (
                Some("m"),
                Some("https://conn.test/v1"),
                Some("opened-sealed")
            )
        );
        assert_eq!(out.broken, None);
        // Deleted: no key at all, and why.
        let out = through_connection(own, &linked, &[], "LLM profile 'p'", |_| {
            panic!("nothing to open")
        })
        .unwrap();
        assert_eq!((out.base_url, out.api_key), (None, None));
        let why = out.broken.unwrap();
        assert!(
            why.starts_with("LLM profile 'p' uses provider connection")
                && why.contains("no longer exists"),
            "{why}"
        );
    }

    #[test]
    fn list_items_say_whether_the_connection_is_there() {
        let c = conn(Some("sealed"));
        let p = crate::user_settings::StoredProfile {
            name: "p".into(),
            config: json!({"model": "m", "provider_connection_id": c.id.to_string()})
                .as_object()
                .unwrap()
                .clone(),
            api_key_sealed: None,
        };
        let here = profile_item(&p, std::slice::from_ref(&c));
        assert_eq!(
            (here.provider_connection_broken, here.api_key_set),
            (false, true)
        );
        assert_eq!(here.provider_connection_id, Some(c.id.to_string()));
        let gone = profile_item(&p, &[]);
        assert_eq!(
            (gone.provider_connection_broken, gone.api_key_set),
            (true, false)
        );
    }

    #[test]
    fn connection_bodies() {
        let c = ConnectionInput::read(
            &json!({"display_name": "T", "provider": "openai", "api_key": "sk", "base_url": null}),
            true,
        )
        .unwrap();
        assert_eq!(c.base_url, Some(None));
        assert_eq!(c.api_key.as_deref(), Some("sk"));
        assert!(!format!("{c:?}").contains("sk\""));
        let u = ConnectionInput::read(&json!({"display_name": "U"}), false).unwrap();
        assert_eq!(u.api_key, None);
        for (bad, create) in [
            (json!({"display_name": "T", "provider": "openai"}), true),
            (json!([]), false),
            (json!({"api_key": null}), false),
            (json!({"base_url": "ftp://x"}), false),
            (json!({"provider": 3}), false),
            (json!({"display_name": ""}), false),
        ] {
            assert!(ConnectionInput::read(&bad, create).is_err(), "{bad}");
        }
    }
}
