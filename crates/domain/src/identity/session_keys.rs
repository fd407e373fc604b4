//! Sandbox session keys: the `X-Session-API-Key` an agent server presents on the webhooks
//! (API.md, Event ingestion). Not API keys: their own prefix, their own hash type, and they
//! authenticate a sandbox, never a user.

use crate::identity::secrets::{random_secret, sha256_hex};

/// The prefix of every sandbox session key.
pub const SESSION_KEY_PREFIX: &str = "sbs_";
/// Random base62 characters after the prefix (43 characters ≈ 256 bits).
pub const SESSION_KEY_RANDOM_CHARS: usize = 43;

/// The SHA-256 of a session key, hex encoded: the only form in which session keys are stored.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionKeyHash(pub String);

impl SessionKeyHash {
    /// The hash of a presented session key.
    pub fn of(presented: &str) -> SessionKeyHash {
        SessionKeyHash(sha256_hex(presented))
    }
}

/// A newly generated session key: the secret (shown once) and what is stored.
#[derive(Debug, Clone)]
pub struct SessionKey {
    /// `sbs_` + 43 base62 characters from the operating system's CSPRNG.
    pub secret: String,
    /// Its SHA-256.
    pub hash: SessionKeyHash,
}

impl SessionKey {
    /// Generates a key from the operating system's CSPRNG.
    ///
    /// # Panics
    /// If the operating system has no randomness to give.
    pub fn generate() -> SessionKey {
        let secret = random_secret(SESSION_KEY_PREFIX, SESSION_KEY_RANDOM_CHARS);
        let hash = SessionKeyHash::of(&secret);
        SessionKey { secret, hash }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_keys_have_their_own_prefix_and_differ() {
        let a = SessionKey::generate();
        let b = SessionKey::generate();
        assert_ne!(a.secret, b.secret);
        assert_eq!(
            a.secret.len(),
            SESSION_KEY_PREFIX.len() + SESSION_KEY_RANDOM_CHARS
        );
        assert!(a.secret.starts_with("sbs_"));
        assert_eq!(a.hash, SessionKeyHash::of(&a.secret));
        assert_eq!(
            SessionKeyHash::of("abc").0,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
