//! Each user's custom secrets and git provider tokens in an organization (issue 21; OpenHands'
//! `/api/v1/secrets`): names and descriptions are shown, values never (except to the user's
//! own sandboxes, `GET /api/v1/sandboxes/{id}/settings/secrets/{name}`). Values and tokens are
//! stored sealed ([`crate::user_settings::Binding`]).

use serde_json::Value;
use switchboard_model::ValidationError;

use utoipa::openapi::schema::Object;

use crate::cursor::Keyset;
use crate::typed_body::fields;
use crate::validation::{NO_NUL_PATTERN, loc};

/// What a secret name must match: it becomes an environment variable of the agent and a path
/// segment of the sandbox route, so letters, digits, `_`, `.` and `-`, 1 to 128 (OpenHands
/// takes any string; a `/` there breaks its own lookup route).
pub const SECRET_NAME_PATTERN: &str = "^[A-Za-z0-9_.-]{1,128}$";

/// The longest secret value, in bytes (64 KiB).
pub const MAX_SECRET_VALUE_BYTES: usize = 64 * 1024;

/// The longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1000;

/// OpenHands' `ProviderType` (wire names lowercase).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ProviderType {
    /// GitHub.
    Github,
    /// GitLab.
    Gitlab,
    /// Bitbucket Cloud.
    Bitbucket,
    /// Bitbucket Data Center.
    BitbucketDataCenter,
    /// Forgejo.
    Forgejo,
    /// Azure DevOps.
    AzureDevops,
    /// An enterprise single sign-on provider.
    EnterpriseSso,
}

impl ProviderType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderType::Github => "github",
            ProviderType::Gitlab => "gitlab",
            ProviderType::Bitbucket => "bitbucket",
            ProviderType::BitbucketDataCenter => "bitbucket_data_center",
            ProviderType::Forgejo => "forgejo",
            ProviderType::AzureDevops => "azure_devops",
            ProviderType::EnterpriseSso => "enterprise_sso",
        }
    }
}

/// A git provider's host: empty (none), or letters, digits, `.` and `-` (1 to 253), then
/// optionally `:` and a port 1 to 65535 (an optional `+`, leading zeros: as Rust's `u16`
/// parser reads one).
pub const HOST_PATTERN: &str = r"^$|^[A-Za-z0-9.-]{1,253}(:\+?0*([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$";

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
    /// A [`ProviderType`]'s wire name.
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
                &Value::String(crate::identity::redaction::MASK.into()),
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

/// One provider's entry of `POST /api/v1/secrets/git-providers`. `Debug` shows no token.
#[derive(Clone, PartialEq)]
pub struct ProviderTokenInput {
    /// The provider's wire name.
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

/// A provider's token (`""` or `null`: keep the stored one) and the host of a self-hosted
/// provider (`host[:port]`, no scheme or path). Other keys (`user_id`) are ignored.
#[derive(Clone, PartialEq, serde::Deserialize, utoipa::ToSchema)]
pub struct ProviderToken {
    /// The token.
    #[serde(default)]
    #[schema(schema_with = token_schema)]
    pub token: Option<String>,
    /// The host.
    #[serde(default)]
    #[schema(schema_with = host_schema)]
    pub host: Option<String>,
}

/// A token: text without NUL or `null`, never echoed (`writeOnly`).
fn token_schema() -> Object {
    fields::nullable_string()
        .pattern(Some(NO_NUL_PATTERN))
        .write_only(Some(true))
        .build()
}

fn host_schema() -> Object {
    fields::nullable_string()
        .pattern(Some(HOST_PATTERN))
        .extensions(Some(fields::value_error_words(
            "host must be a host name with an optional port (no scheme, no path)",
        )))
        .build()
}

/// The body of `POST /api/v1/secrets/git-providers` (OpenHands' `POSTProviderModel`):
/// `provider_tokens` maps a provider to its token; the set sent replaces the set stored.
/// `mcp_config` and other keys are accepted and ignored, as OpenHands does.
#[derive(Clone, PartialEq, serde::Deserialize, utoipa::ToSchema)]
#[schema(as = POSTProviderModel)]
pub struct ProviderTokensRequest {
    /// The tokens by provider (`null`: none).
    #[serde(default)]
    pub provider_tokens: Option<std::collections::BTreeMap<ProviderType, ProviderToken>>,
}

impl crate::typed_body::RequestBody for ProviderTokensRequest {}

impl ProviderTokensRequest {
    /// The entries, a token or host of `""` read as none.
    pub fn into_inputs(self) -> Vec<ProviderTokenInput> {
        let given = |v: Option<String>| v.filter(|s| !s.is_empty());
        self.provider_tokens
            .into_iter()
            .flatten()
            .map(|(provider, t)| ProviderTokenInput {
                provider: provider.as_str().to_owned(),
                token: given(t.token),
                host: given(t.host),
            })
            .collect()
    }
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
        use crate::typed_body::parse;
        let tokens =
            |v: serde_json::Value| parse::<ProviderTokensRequest>(&v).map(|r| r.into_inputs());
        let t = tokens(json!({"provider_tokens": {
            "github": {"token": "ghp_x"}, "gitlab": {"token": "", "host": "git.example.com:8443"}}, "mcp_config": {}}))
        .unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(
            (t[1].provider.as_str(), t[1].token.as_deref()),
            ("gitlab", None)
        );
        assert!(!format!("{t:?}").contains("ghp_x"));
        assert!(tokens(json!({})).unwrap().is_empty());
        for (bad, kind) in [
            (json!({"provider_tokens": {"svn": {}}}), "enum"),
            (json!({"provider_tokens": {"github": "x"}}), "model_type"),
            (
                json!({"provider_tokens": {"github": {"host": "https://x/y"}}}),
                "value_error",
            ),
            (
                json!({"provider_tokens": {"github": {"host": 3}}}),
                "string_type",
            ),
            (
                json!({"provider_tokens": {"github": {"token": "a\u{0}"}}}),
                "string_pattern_mismatch",
            ),
            (json!({"provider_tokens": []}), "dict_type"),
        ] {
            let e = tokens(bad.clone()).err().unwrap_or_else(|| panic!("{bad}"));
            assert_eq!(e[0].error_type.as_str(), kind, "{bad}: {e:?}");
        }
        let e = tokens(json!({"provider_tokens": {"github": {"token": 5}}})).unwrap_err();
        assert_eq!(
            e[0].input.as_deref(),
            Some(&json!("**********")),
            "a token is never echoed"
        );
    }

    /// The host pattern takes exactly a host name with an optional port 1 to 65535.
    #[test]
    fn hosts() {
        use crate::typed_body::parse;
        for (host, ok) in [
            ("", true),
            ("git.example.com", true),
            ("h:1", true),
            ("h:65535", true),
            ("h:+0443", true),
            ("h:000080", true),
            ("h:0", false),
            ("h:65536", false),
            ("h:", false),
            (":80", false),
            ("https://h", false),
            ("h/x", false),
            ("a:b:80", false),
            ("h:-1", false),
            ("h:+", false),
            ("\u{e9}.com", false),
        ] {
            let body = json!({"provider_tokens": {"github": {"host": host}}});
            assert_eq!(
                parse::<ProviderTokensRequest>(&body).is_ok(),
                ok,
                "{host:?}"
            );
        }
    }

    #[test]
    fn provider_names_are_openhands() {
        let all = [
            ProviderType::Github,
            ProviderType::Gitlab,
            ProviderType::Bitbucket,
            ProviderType::BitbucketDataCenter,
            ProviderType::Forgejo,
            ProviderType::AzureDevops,
            ProviderType::EnterpriseSso,
        ];
        for p in all {
            let back: ProviderType = serde_json::from_value(json!(p.as_str())).unwrap();
            assert_eq!(back, p);
        }
    }

    #[test]
    fn cursors_round_trip() {
        let c = SecretCursor("A.b-c_1".into());
        assert_eq!(SecretCursor::decode(&c.encode()), Some(c));
        assert_eq!(SecretCursor::decode("zz"), None);
    }
}
