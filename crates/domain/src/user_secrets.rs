//! Each user's custom secrets and git provider tokens in an organization (issue 21; OpenHands'
//! `/api/v1/secrets`): names and descriptions are shown, values never (except to the user's
//! own sandboxes, `GET /api/v1/sandboxes/{id}/settings/secrets/{name}`). Values and tokens are
//! stored sealed ([`crate::user_settings::Binding`]).

use serde_json::{Map, Value};
use switchboard_model::{ErrorType, ValidationError};

use crate::cursor::Keyset;
use crate::validation::{
    field, loc, missing, model_type, not_one_of, string_pattern_mismatch, string_type,
};

/// What a secret name must match: it becomes an environment variable of the agent and a path
/// segment of the sandbox route, so letters, digits, `_`, `.` and `-`, 1 to 128 (OpenHands
/// takes any string; a `/` there breaks its own lookup route).
pub const SECRET_NAME_PATTERN: &str = "^[A-Za-z0-9_.-]{1,128}$";

/// The longest secret value, in bytes (64 KiB).
pub const MAX_SECRET_VALUE_BYTES: usize = 64 * 1024;

/// The longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1000;

/// OpenHands' `ProviderType`.
pub const PROVIDER_TYPES: [&str; 7] = [
    "github",
    "gitlab",
    "bitbucket",
    "bitbucket_data_center",
    "forgejo",
    "azure_devops",
    "enterprise_sso",
];

/// A custom secret as stored: the value sealed.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSecret {
    /// Name ([`SECRET_NAME_PATTERN`]).
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// The value, sealed for [`crate::user_settings::Binding::CustomSecret`].
    pub value_sealed: String,
}

/// A custom secret as shown: name and description (OpenHands' `CustomSecretWithoutValue`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SecretMeta {
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
}

/// A git provider token as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredProviderToken {
    /// One of [`PROVIDER_TYPES`].
    pub provider: String,
    /// The host of a self-hosted provider (e.g. `gitlab.example.com`).
    pub host: Option<String>,
    /// The token, sealed for [`crate::user_settings::Binding::ProviderToken`]; `None` when
    /// only a host is kept.
    pub token_sealed: Option<String>,
}

/// The cursor of `GET /api/v1/secrets/search`: the last name of the page (names sort
/// bytewise).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretCursor(pub String);

impl Keyset for SecretCursor {
    const VERSION: &'static str = "s1";

    fn to_fields(&self) -> Vec<String> {
        vec![self.0.clone()]
    }

    fn from_fields(fields: &[&str]) -> Option<Self> {
        match fields {
            [name] if is_secret_name(name) => Some(SecretCursor((*name).to_owned())),
            _ => None,
        }
    }
}

/// Whether `name` is a valid secret name.
pub fn is_secret_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// A new secret (`POST /api/v1/secrets`, OpenHands' `CustomSecretCreate`). `Debug` shows no
/// value.
#[derive(Clone, PartialEq)]
pub struct NewSecret {
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// The value in the clear (sealed before it is stored).
    pub value: String,
}

impl std::fmt::Debug for NewSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewSecret")
            .field("name", &self.name)
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

fn object<'a>(body: &'a Value, model: &str) -> Result<&'a Map<String, Value>, ValidationError> {
    body.as_object()
        .ok_or_else(|| model_type(loc(["body"]), model, body))
}

fn name_field(obj: &Map<String, Value>, body: &Value) -> Result<String, ValidationError> {
    let at = loc(["body", "name"]);
    match obj.get("name") {
        None => Err(missing(at, body.clone())),
        Some(Value::String(s)) if is_secret_name(s) => Ok(s.clone()),
        Some(Value::String(s)) => Err(string_pattern_mismatch(at, SECRET_NAME_PATTERN, s)),
        Some(other) => Err(string_type(at, other)),
    }
}

fn description_field(obj: &Map<String, Value>) -> Result<Option<String>, ValidationError> {
    let at = loc(["body", "description"]);
    match obj.get("description") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            crate::validation::refuse_nul(|| at.clone(), s)?;
            if s.chars().count() > MAX_DESCRIPTION_CHARS {
                return Err(crate::validation::value_error(
                    at,
                    &format!("description is longer than {MAX_DESCRIPTION_CHARS} characters"),
                    &Value::String(s.clone()),
                ));
            }
            Ok(Some(s.clone()))
        }
        Some(other) => Err(string_type(at, other)),
    }
}

/// Reads `POST /api/v1/secrets`.
///
/// # Errors
/// A 422 entry: not an object, `name` missing or not a name, `value` missing, not a string,
/// empty, over [`MAX_SECRET_VALUE_BYTES`] or holding a NUL, `description` not a string.
pub fn parse_new_secret(body: &Value) -> Result<NewSecret, ValidationError> {
    let obj = object(body, "CustomSecretCreate")?;
    let name = name_field(obj, body)?;
    let description = description_field(obj)?;
    let at = loc(["body", "value"]);
    let value = match obj.get("value") {
        None => return Err(missing(at, body.clone())),
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(string_type(at, other)),
    };
    // The value is never echoed in an error.
    let masked = Value::String("**********".into());
    if value.is_empty() || value.len() > MAX_SECRET_VALUE_BYTES || value.contains('\0') {
        return Err(crate::validation::value_error(
            at,
            &format!(
                "value must be 1 to {MAX_SECRET_VALUE_BYTES} bytes of text without NUL characters"
            ),
            &masked,
        ));
    }
    Ok(NewSecret {
        name,
        description,
        value,
    })
}

/// Reads `PUT /api/v1/secrets/{name}` (OpenHands' `CustomSecretWithoutValue`): the new name
/// and description.
///
/// # Errors
/// As [`parse_new_secret`] for `name` and `description`.
pub fn parse_secret_update(body: &Value) -> Result<SecretMeta, ValidationError> {
    let obj = object(body, "CustomSecretWithoutValue")?;
    Ok(SecretMeta {
        name: name_field(obj, body)?,
        description: description_field(obj)?,
    })
}

/// One provider's entry of `POST /api/v1/secrets/git-providers`. `Debug` shows no token.
#[derive(Clone, PartialEq)]
pub struct ProviderTokenInput {
    /// One of [`PROVIDER_TYPES`].
    pub provider: String,
    /// The token; `None` keeps the stored one (OpenHands' rule).
    pub token: Option<String>,
    /// The host of a self-hosted provider.
    pub host: Option<String>,
}

impl std::fmt::Debug for ProviderTokenInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderTokenInput")
            .field("provider", &self.provider)
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

/// Reads `POST /api/v1/secrets/git-providers` (OpenHands' `POSTProviderModel`):
/// `provider_tokens` maps a provider to `{token, host, user_id}`; `mcp_config` is accepted and
/// ignored, as OpenHands does.
///
/// # Errors
/// A 422 entry: not an object, a provider that is not one of [`PROVIDER_TYPES`] (`enum`), an
/// entry that is not an object, a token or host that is not a string, a host that is not a
/// bare host name (`host[:port]`, no scheme or path), a NUL.
pub fn parse_provider_tokens(body: &Value) -> Result<Vec<ProviderTokenInput>, ValidationError> {
    let obj = object(body, "POSTProviderModel")?;
    let at = loc(["body", "provider_tokens"]);
    let tokens = match obj.get("provider_tokens") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(m)) => m,
        Some(other) => return Err(crate::validation::dict_type(at, other)),
    };
    let mut out = Vec::with_capacity(tokens.len());
    for (provider, entry) in tokens {
        let p = field(&at, provider);
        if !PROVIDER_TYPES.contains(&provider.as_str()) {
            return Err(not_one_of(
                ErrorType::Enum,
                p,
                &PROVIDER_TYPES,
                &Value::String(provider.clone()),
            ));
        }
        let Value::Object(e) = entry else {
            return Err(model_type(p, "ProviderToken", entry));
        };
        let text = |key: &str| -> Result<Option<String>, ValidationError> {
            let l = field(&p, key);
            match e.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) if s.is_empty() => Ok(None),
                Some(Value::String(s)) => {
                    crate::validation::refuse_nul(|| l.clone(), s)?;
                    Ok(Some(s.clone()))
                }
                Some(other) => Err(string_type(l, other)),
            }
        };
        let host = text("host")?;
        if let Some(h) = &host
            && !is_host(h)
        {
            return Err(crate::validation::value_error(
                field(&p, "host"),
                "host must be a host name with an optional port (no scheme, no path)",
                &Value::String(h.clone()),
            ));
        }
        out.push(ProviderTokenInput {
            provider: provider.clone(),
            token: text("token")?,
            host,
        });
    }
    Ok(out)
}

/// `host[:port]`: letters, digits, `.`, `-`, then an optional port.
fn is_host(h: &str) -> bool {
    let (name, port) = match h.rsplit_once(':') {
        Some((n, p)) => (n, Some(p)),
        None => (h, None),
    };
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-'))
        && port.is_none_or(|p| p.parse::<u16>().is_ok_and(|n| n > 0))
}

/// The name under which a provider's token is given to the agent server and listed to the
/// sandbox: `<provider>_token` (e.g. `github_token`), as OpenHands names them.
pub fn provider_secret_name(provider: &str) -> String {
    format!("{provider}_token")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_bodies() {
        let s = parse_new_secret(&json!({"name": "API_TOKEN", "value": "v1"})).unwrap();
        assert_eq!((s.name.as_str(), s.value.as_str()), ("API_TOKEN", "v1"));
        assert!(!format!("{s:?}").contains("v1"));
        for bad in [
            json!({"value": "v"}),
            json!({"name": "a/b", "value": "v"}),
            json!({"name": "a", "value": ""}),
            json!({"name": "a", "value": 3}),
            json!({"name": "a"}),
            json!({"name": "a", "value": "v", "description": 1}),
        ] {
            assert!(parse_new_secret(&bad).is_err(), "{bad}");
        }
        let e = parse_new_secret(&json!({"name": "a", "value": "x\u{0}secret"})).unwrap_err();
        assert!(!format!("{e:?}").contains("secret\""));
        assert_eq!(
            parse_secret_update(&json!({"name": "b", "description": "d"}))
                .unwrap()
                .name,
            "b"
        );
    }

    #[test]
    fn provider_bodies() {
        let t = parse_provider_tokens(&json!({"provider_tokens": {
            "github": {"token": "ghp_x"}, "gitlab": {"token": "", "host": "git.example.com:8443"}}}))
        .unwrap();
        assert_eq!(t.len(), 2);
        assert!(!format!("{t:?}").contains("ghp_x"));
        for bad in [
            json!({"provider_tokens": {"svn": {}}}),
            json!({"provider_tokens": {"github": "x"}}),
            json!({"provider_tokens": {"github": {"host": "https://x/y"}}}),
            json!({"provider_tokens": []}),
        ] {
            assert!(parse_provider_tokens(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cursors_round_trip() {
        let c = SecretCursor("A.b-c_1".into());
        assert_eq!(SecretCursor::decode(&c.encode()), Some(c));
        assert_eq!(SecretCursor::decode("zz"), None);
    }
}
