//! Each user's custom secrets and git provider tokens in an organization (issue 21; OpenHands'
//! `/api/v1/secrets`): names and descriptions are shown, values never (except to the user's
//! own sandboxes, `GET /api/v1/sandboxes/{id}/settings/secrets/{name}`). Values and tokens are
//! stored sealed ([`crate::user_settings::Binding`]).

use serde_json::{Map, Value};
use switchboard_model::{ErrorType, ValidationError};

use utoipa::openapi::schema::Object;

use crate::cursor::Keyset;
use crate::typed_body::fields;
use crate::validation::{NO_NUL_PATTERN, field, loc, model_type, not_one_of, string_type};

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

/// A custom secret's name and description, never its value (OpenHands'
/// `CustomSecretWithoutValue`); also the body that renames and re-describes one. Other keys
/// of a body are ignored.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[schema(as = CustomSecretWithoutValue)]
pub struct SecretMeta {
    /// Name ([`SECRET_NAME_PATTERN`]).
    #[schema(schema_with = secret_name_schema)]
    pub name: String,
    /// Description (at most [`MAX_DESCRIPTION_CHARS`] characters, no NUL).
    #[serde(default)]
    #[schema(schema_with = description_schema)]
    pub description: Option<String>,
}

impl crate::typed_body::RequestBody for SecretMeta {}

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

/// A secret name's schema: [`SECRET_NAME_PATTERN`].
fn secret_name_schema() -> Object {
    fields::text_matching(SECRET_NAME_PATTERN)
}

/// A secret value's schema: at least one character, no NUL, never echoed (`writeOnly`); its
/// bound in bytes is [`NewSecret`]'s own check.
fn secret_value_schema() -> Object {
    fields::string()
        .min_length(Some(1))
        .max_length(Some(MAX_SECRET_VALUE_BYTES))
        .pattern(Some(NO_NUL_PATTERN))
        .write_only(Some(true))
        .description(Some(format!(
            "1 to {MAX_SECRET_VALUE_BYTES} bytes of UTF-8 text without NUL (the schema can \
             bound only characters); sealed, never answered."
        )))
        .build()
}

/// A description's schema: text without NUL, at most [`MAX_DESCRIPTION_CHARS`] characters,
/// or `null`.
fn description_schema() -> Object {
    fields::nullable_string()
        .max_length(Some(MAX_DESCRIPTION_CHARS))
        .pattern(Some(NO_NUL_PATTERN))
        .build()
}

/// Whether `name` is a valid secret name.
pub fn is_secret_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// A new secret, or a new value and description for one of that name (OpenHands'
/// `CustomSecretCreate`). Other keys are ignored. The value is never shown again, nor echoed
/// in a validation error.
#[derive(Clone, PartialEq, serde::Deserialize, utoipa::ToSchema)]
#[schema(as = CustomSecretCreate)]
pub struct NewSecret {
    /// Name ([`SECRET_NAME_PATTERN`]).
    #[schema(schema_with = secret_name_schema)]
    pub name: String,
    /// The value in the clear (sealed before it is stored): 1 to [`MAX_SECRET_VALUE_BYTES`]
    /// bytes, no NUL.
    #[schema(schema_with = secret_value_schema)]
    pub value: String,
    /// Description (at most [`MAX_DESCRIPTION_CHARS`] characters, no NUL).
    #[serde(default)]
    #[schema(schema_with = description_schema)]
    pub description: Option<String>,
}

impl crate::typed_body::RequestBody for NewSecret {
    /// The value's bound in bytes (the schema bounds characters).
    fn check(&self) -> Result<(), Vec<ValidationError>> {
        if self.value.len() > MAX_SECRET_VALUE_BYTES {
            return Err(vec![crate::validation::value_error(
                loc(["body", "value"]),
                &format!("value must be at most {MAX_SECRET_VALUE_BYTES} bytes"),
                &Value::String("**********".into()),
            )]);
        }
        Ok(())
    }
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
        use crate::typed_body::parse;
        let s = parse::<NewSecret>(&json!({"name": "API_TOKEN", "value": "v1"})).unwrap();
        assert_eq!((s.name.as_str(), s.value.as_str()), ("API_TOKEN", "v1"));
        assert!(!format!("{s:?}").contains("v1"));
        for (bad, kind) in [
            (json!({"value": "v"}), "missing"),
            (
                json!({"name": "a/b", "value": "v"}),
                "string_pattern_mismatch",
            ),
            (json!({"name": "a", "value": ""}), "string_too_short"),
            (json!({"name": "a", "value": 3}), "string_type"),
            (json!({"name": "a"}), "missing"),
            (
                json!({"name": "a", "value": "v", "description": 1}),
                "string_type",
            ),
            (
                json!({"name": "a", "value": "v", "description": "d".repeat(1001)}),
                "string_too_long",
            ),
            (
                json!({"name": "a", "value": "\u{e9}".repeat(40_000)}),
                "value_error",
            ),
            (json!(["a"]), "model_type"),
        ] {
            let e = parse::<NewSecret>(&bad)
                .err()
                .unwrap_or_else(|| panic!("{bad}"));
            assert_eq!(e[0].error_type.as_str(), kind, "{bad}");
        }
        // A value is never echoed, whatever rule it breaks.
        for value in [
            json!("x\u{0}secret"),
            json!(""),
            json!("\u{e9}".repeat(40_000)),
        ] {
            let e = parse::<NewSecret>(&json!({"name": "a", "value": value})).unwrap_err();
            assert_eq!(e[0].input.as_deref(), Some(&json!("**********")), "{e:?}");
        }
        let both = parse::<NewSecret>(&json!({"description": 1})).unwrap_err();
        let at: Vec<String> = both.iter().map(|e| e.loc[1].to_string()).collect();
        assert_eq!(at, ["name", "value", "description"], "in field order");
        assert_eq!(
            parse::<SecretMeta>(&json!({"name": "b", "description": "d"}))
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
