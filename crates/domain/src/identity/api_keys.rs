//! API keys: generation, hashing and the rules for using one (API.md, Identity), the body of
//! `POST /api/keys`, and how a key is shown to its owner.

use serde::Serialize;
use serde_json::Value;
use time::{Duration, OffsetDateTime};

use crate::identity::secrets::{random_secret, sha256_hex};
use crate::ids::{ApiKeyId, OrgId, UserId};
use crate::time_input::{format_rfc3339_micros, parse_datetime_value};
use crate::validation::loc;

/// The prefix of every Switchboard API key.
pub const API_KEY_PREFIX: &str = "sb_";
/// Random base62 characters after the prefix (43 characters ≈ 256 bits).
pub const API_KEY_RANDOM_CHARS: usize = 43;
/// `last_used_at` is written at most this often per key (API.md: at most once a minute).
pub const LAST_USED_DEBOUNCE: Duration = Duration::seconds(60);
/// How many leading characters of a key are kept in clear, to recognize it in listings.
pub const DISPLAY_PREFIX_CHARS: usize = 8;

/// A key name has 1 to this many characters (after trimming).
pub const MAX_KEY_NAME_CHARS: usize = 100;
/// A key name: no NUL, and at least one character that is not white space as Rust's `trim`
/// sees it (Unicode `White_Space`).
pub const KEY_NAME_PATTERN: &str = r"^[^\x00]*[^\x00\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\x00]*$";

/// The SHA-256 of an API key, hex encoded: the only form in which keys are stored.
///
/// Equality is constant-time ([`subtle`]): comparing a stored hash with a presented one takes
/// the same time wherever they differ (API.md, Reliability and security).
#[derive(Debug, Clone, Eq)]
pub struct ApiKeyHash(pub String);

impl PartialEq for ApiKeyHash {
    fn eq(&self, other: &Self) -> bool {
        crate::identity::secrets::ct_eq(&self.0, &other.0)
    }
}

impl std::hash::Hash for ApiKeyHash {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

/// A newly generated key: the secret (shown once) and what is stored.
#[derive(Debug, Clone)]
pub struct NewApiKey {
    /// `sb_` + 43 base62 characters from the operating system's CSPRNG.
    pub secret: String,
    /// Its SHA-256.
    pub hash: ApiKeyHash,
    /// Its first [`DISPLAY_PREFIX_CHARS`] characters, for listings.
    pub display_prefix: String,
}

/// Generates a key from the operating system's CSPRNG (`getrandom`), rejection-sampled so
/// every base62 character is equally likely.
///
/// # Panics
/// If the operating system has no randomness to give (nothing sensible can continue).
pub fn generate_api_key() -> NewApiKey {
    let secret = random_secret(API_KEY_PREFIX, API_KEY_RANDOM_CHARS);
    let hash = hash_api_key(&secret);
    let display_prefix = secret[..DISPLAY_PREFIX_CHARS].to_owned();
    NewApiKey {
        secret,
        hash,
        display_prefix,
    }
}

/// Hashes a presented key.
pub fn hash_api_key(secret: &str) -> ApiKeyHash {
    ApiKeyHash(sha256_hex(secret))
}

/// A stored API key (never the secret).
#[derive(Debug, Clone, PartialEq)]
pub struct ApiKeyRecord {
    /// Key id.
    pub id: ApiKeyId,
    /// The user the key acts for.
    pub user_id: UserId,
    /// The organization the key is bound to; `None` for an unbound key.
    pub org_id: Option<OrgId>,
    /// A name for humans.
    pub name: String,
    /// The first characters of the key.
    pub display_prefix: String,
    /// Creation time (UTC, microseconds).
    pub created_at: OffsetDateTime,
    /// Last successful use, written at most once a minute.
    pub last_used_at: Option<OffsetDateTime>,
    /// Expiry; the key is refused from this instant on.
    pub expires_at: Option<OffsetDateTime>,
    /// Revocation time; a revoked key is refused.
    pub revoked_at: Option<OffsetDateTime>,
}

/// Why a presented key is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRejection {
    /// The key expired.
    Expired,
    /// The key was revoked.
    Revoked,
}

impl ApiKeyRecord {
    /// Whether the key may be used at `now`.
    pub fn check_usable(&self, now: OffsetDateTime) -> Result<(), KeyRejection> {
        if self.revoked_at.is_some() {
            return Err(KeyRejection::Revoked);
        }
        if self.expires_at.is_some_and(|e| e <= now) {
            return Err(KeyRejection::Expired);
        }
        Ok(())
    }

    /// Whether a use at `now` should be written to `last_used_at` (debounced).
    pub fn needs_touch(&self, now: OffsetDateTime) -> bool {
        self.last_used_at
            .is_none_or(|t| now - t >= LAST_USED_DEBOUNCE)
    }
}

/// An API key as shown to its owner (never the secret, except once at creation).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiKeyView {
    /// Key id.
    pub id: ApiKeyId,
    /// Name.
    pub name: String,
    /// The first characters of the key, to recognize it.
    pub prefix: String,
    /// Bound organization, or `null` for an unbound key.
    pub org_id: Option<OrgId>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339, or `null`.
    pub last_used_at: Option<String>,
    /// RFC 3339, or `null`.
    pub expires_at: Option<String>,
    /// Whether the key was revoked.
    pub revoked: bool,
}

impl From<&ApiKeyRecord> for ApiKeyView {
    fn from(k: &ApiKeyRecord) -> Self {
        ApiKeyView {
            id: k.id,
            name: k.name.clone(),
            prefix: k.display_prefix.clone(),
            org_id: k.org_id,
            created_at: format_rfc3339_micros(k.created_at),
            last_used_at: k.last_used_at.map(format_rfc3339_micros),
            expires_at: k.expires_at.map(format_rfc3339_micros),
            revoked: k.revoked_at.is_some(),
        }
    }
}

/// A new key: its record and the secret, shown once.
#[derive(Debug, Clone)]
pub struct IssuedKey {
    /// The stored record.
    pub record: ApiKeyRecord,
    /// The key itself.
    pub secret: String,
}

/// `POST /api/keys`' body (`ApiKeyCreate`; other keys are ignored): `name`, 1 to
/// [`MAX_KEY_NAME_CHARS`] characters, not all white space ([`KEY_NAME_PATTERN`]), no NUL
/// (API.md, NUL characters), trimmed ([`Self::name`]); `expires_at`, an optional date-time as
/// `last_known_updated_at` takes (whether it is in the future is judged when the key is issued).
#[derive(Debug, Clone, PartialEq, serde::Deserialize, utoipa::ToSchema)]
#[schema(as = ApiKeyCreate, description = "`POST /api/keys` body (other keys are ignored).")]
pub struct ApiKeyCreate {
    /// The name as sent.
    #[schema(schema_with = new_key_name_schema)]
    name: String,
    /// The expiry as sent (read by [`Self::expires_at`]).
    #[serde(default)]
    #[schema(schema_with = expiry_schema)]
    expires_at: Option<Value>,
}

impl crate::typed_body::RequestBody for ApiKeyCreate {
    /// The expiry reads as a date-time.
    fn check(&self) -> Result<(), Vec<switchboard_model::ValidationError>> {
        self.read_expiry().map(drop).map_err(|e| vec![e])
    }
}

impl ApiKeyCreate {
    /// A body of `name` alone (a key made by a signed-in page).
    ///
    /// # Errors
    /// The 422 entry of a bad name.
    pub fn named(name: &str) -> Result<Self, switchboard_model::ValidationError> {
        crate::typed_body::parse_one(&serde_json::json!({ "name": name }))
    }

    /// The name, trimmed.
    pub fn name(&self) -> &str {
        self.name.trim()
    }

    /// The expiry, if any.
    pub fn expires_at(&self) -> Option<OffsetDateTime> {
        self.read_expiry().ok().flatten()
    }

    fn read_expiry(&self) -> Result<Option<OffsetDateTime>, switchboard_model::ValidationError> {
        match &self.expires_at {
            None | Some(Value::Null) => Ok(None),
            Some(v) => parse_datetime_value(v, loc(["body", "expires_at"])).map(Some),
        }
    }
}

/// A new key's name: blank or too long is one `value_error`, a NUL its own entry.
fn new_key_name_schema() -> utoipa::openapi::schema::Object {
    key_name_schema(
        "",
        crate::typed_body::fields::value_error_words_nul_apart(&format!(
            "name must have 1 to {MAX_KEY_NAME_CHARS} characters"
        )),
    )
}

/// A key's name ([`KEY_NAME_PATTERN`], 1 to [`MAX_KEY_NAME_CHARS`] characters), described
/// after `what` and worded by `words` (a `value_error` annotation).
pub(crate) fn key_name_schema(
    what: &str,
    words: utoipa::openapi::extensions::Extensions,
) -> utoipa::openapi::schema::Object {
    crate::typed_body::fields::string()
        .description(Some(format!(
            "{what}1 to {MAX_KEY_NAME_CHARS} characters, not all white space (trimmed), no NUL (U+0000)."
        )))
        .min_length(Some(1))
        .max_length(Some(MAX_KEY_NAME_CHARS))
        .pattern(Some(KEY_NAME_PATTERN))
        .extensions(Some(words))
        .build()
}

fn expiry_schema() -> utoipa::openapi::schema::Schema {
    use crate::time_input::{FUTURE_DATE_TIME_PATTERN, UNIX_2100, UNIX_3000};
    crate::typed_body::fields::date_time(
        FUTURE_DATE_TIME_PATTERN,
        UNIX_2100,
        UNIX_3000,
        "Optional expiry, which must be in the future: RFC 3339 or naive ISO-8601 (UTC), a date, or Unix seconds; the schema gives years 2100 to 2999, the server takes any future instant.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_the_documented_shape_and_differ() {
        let a = generate_api_key();
        let b = generate_api_key();
        assert_ne!(a.secret, b.secret);
        assert_eq!(a.secret.len(), 3 + API_KEY_RANDOM_CHARS);
        assert!(a.secret.starts_with("sb_"));
        assert!(a.secret[3..].bytes().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(a.hash, hash_api_key(&a.secret));
        assert_eq!(a.hash.0.len(), 64);
        assert_eq!(
            hash_api_key("abc").0,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn usable_and_debounce_rules() {
        let now = OffsetDateTime::now_utc();
        let mut k = ApiKeyRecord {
            id: ApiKeyId::new_random(),
            user_id: UserId::new_random(),
            org_id: None,
            name: "k".into(),
            display_prefix: "sb_12345".into(),
            created_at: now,
            last_used_at: None,
            expires_at: None,
            revoked_at: None,
        };
        assert_eq!(k.check_usable(now), Ok(()));
        assert!(k.needs_touch(now));
        k.last_used_at = Some(now - Duration::seconds(59));
        assert!(!k.needs_touch(now));
        k.last_used_at = Some(now - Duration::seconds(60));
        assert!(k.needs_touch(now));
        k.expires_at = Some(now);
        assert_eq!(k.check_usable(now), Err(KeyRejection::Expired));
        k.revoked_at = Some(now);
        assert_eq!(k.check_usable(now), Err(KeyRejection::Revoked));
    }

    #[test]
    fn new_key_bodies() {
        use crate::typed_body::parse_one;
        use serde_json::json;
        let ok: ApiKeyCreate = parse_one(&json!({"name": "  ci  ", "expires_at": null})).unwrap();
        assert_eq!((ok.name(), ok.expires_at()), ("ci", None));
        let dated: ApiKeyCreate = parse_one(&json!({"name": "k", "expires_at": 0})).unwrap();
        assert_eq!(dated.expires_at(), Some(OffsetDateTime::UNIX_EPOCH));
        for (body, want) in [
            (json!([]), "model_type"),
            (json!({}), "missing"),
            (json!({"name": 1}), "string_type"),
            (json!({"name": " "}), "value_error"),
            (json!({"name": "x".repeat(101)}), "value_error"),
            (json!({"name": "x\u{0}"}), "string_pattern_mismatch"),
            (json!({"name": "\u{0}"}), "string_pattern_mismatch"),
            (
                json!({"name": "\u{0}", "more": 1}),
                "string_pattern_mismatch",
            ),
            (
                json!({"name": "x", "expires_at": "soon"}),
                "datetime_from_date_parsing",
            ),
        ] {
            assert_eq!(
                parse_one::<ApiKeyCreate>(&body)
                    .unwrap_err()
                    .error_type
                    .as_str(),
                want,
                "{body}"
            );
        }
    }
}
