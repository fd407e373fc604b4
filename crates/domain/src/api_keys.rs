//! API keys: generation, hashing and the rules for using one (API.md, Identity).

use sha2::{Digest, Sha256};
use time::{Duration, OffsetDateTime};

use crate::ids::{ApiKeyId, OrgId, UserId};

/// The prefix of every Switchboard API key.
pub const API_KEY_PREFIX: &str = "sb_";
/// Random base62 characters after the prefix (43 characters ≈ 256 bits).
pub const API_KEY_RANDOM_CHARS: usize = 43;
/// `last_used_at` is written at most this often per key (API.md: at most once a minute).
pub const LAST_USED_DEBOUNCE: Duration = Duration::seconds(60);
/// How many leading characters of a key are kept in clear, to recognize it in listings.
pub const DISPLAY_PREFIX_CHARS: usize = 8;

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The SHA-256 of a key, hex encoded: the only form in which keys are stored.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyHash(pub String);

/// A newly generated key: the secret (shown once) and what is stored.
#[derive(Debug, Clone)]
pub struct NewApiKey {
    /// `sb_` + 43 base62 characters from the operating system's CSPRNG.
    pub secret: String,
    /// Its SHA-256.
    pub hash: KeyHash,
    /// Its first [`DISPLAY_PREFIX_CHARS`] characters, for listings.
    pub display_prefix: String,
}

/// Generates a key from the operating system's CSPRNG (`getrandom`), rejection-sampled so
/// every base62 character is equally likely.
///
/// # Panics
/// If the operating system has no randomness to give (nothing sensible can continue).
pub fn generate_api_key() -> NewApiKey {
    generate_secret(API_KEY_PREFIX)
}

/// The prefix of sandbox session keys (`X-Session-API-Key`).
pub const SESSION_KEY_PREFIX: &str = "sbs_";

/// Generates a secret `prefix` + 43 base62 characters, as [`generate_api_key`] does.
///
/// # Panics
/// If the operating system has no randomness to give.
pub fn generate_secret(prefix: &str) -> NewApiKey {
    let mut secret = String::with_capacity(prefix.len() + API_KEY_RANDOM_CHARS);
    secret.push_str(prefix);
    let mut buf = [0u8; 64];
    while secret.len() < prefix.len() + API_KEY_RANDOM_CHARS {
        getrandom::fill(&mut buf).expect("the OS random number generator failed");
        for b in buf {
            // 248 = 4 * 62: bytes at or above it would bias the distribution.
            if b < 248 && secret.len() < prefix.len() + API_KEY_RANDOM_CHARS {
                secret.push(BASE62[(b % 62) as usize] as char);
            }
        }
    }
    let hash = hash_api_key(&secret);
    let display_prefix = secret[..DISPLAY_PREFIX_CHARS].to_owned();
    NewApiKey {
        secret,
        hash,
        display_prefix,
    }
}

/// Hashes a presented key.
pub fn hash_api_key(secret: &str) -> KeyHash {
    let digest = Sha256::digest(secret.as_bytes());
    let mut hex = String::with_capacity(64);
    for b in digest {
        hex.push_str(&format!("{b:02x}"));
    }
    KeyHash(hex)
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
}
