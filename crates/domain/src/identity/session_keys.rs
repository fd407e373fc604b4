//! Sandbox session keys: the `X-Session-API-Key` an agent server presents on the webhooks
//! (API.md, Event ingestion). Not API keys: their own prefix, their own hash type, and they
//! authenticate a sandbox, never a user.

use crate::identity::secrets::{random_secret, sha256_hex};

/// The prefix of every sandbox session key.
pub const SESSION_KEY_PREFIX: &str = "sbs_";
/// Random base62 characters after the prefix (43 characters ≈ 256 bits).
pub const SESSION_KEY_RANDOM_CHARS: usize = 43;

/// The SHA-256 of a session key, hex encoded: the only form in which session keys are stored.
///
/// Equality is constant-time ([`subtle`]): comparing a stored hash with a presented one takes
/// the same time wherever they differ (API.md, Reliability and security).
#[derive(Debug, Clone, Eq)]
pub struct SessionKeyHash(pub String);

impl PartialEq for SessionKeyHash {
    fn eq(&self, other: &Self) -> bool {
        crate::identity::secrets::ct_eq(&self.0, &other.0)
    }
}

impl std::hash::Hash for SessionKeyHash {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl SessionKeyHash {
    /// The hash of a presented session key.
    pub fn of(presented: &str) -> SessionKeyHash {
        SessionKeyHash(sha256_hex(presented))
    }
}

/// A sandbox session key (`X-Session-API-Key` of its agent server). `Debug` and `Display`
/// print `***`; [`SessionKey::expose`] gives the secret to the few places that need it (the
/// sandbox's environment, the answer to its creator, the sealed copy at rest).
#[derive(Clone, PartialEq, Eq)]
pub struct SessionKey(String);

impl SessionKey {
    /// Wraps an existing key (e.g. one decrypted from storage).
    pub fn new(secret: impl Into<String>) -> Self {
        SessionKey(secret.into())
    }

    /// A new key: `sbs_` + 43 base62 characters from the operating system's CSPRNG.
    ///
    /// # Panics
    /// If the operating system has no randomness to give.
    pub fn generate() -> SessionKey {
        SessionKey(random_secret(SESSION_KEY_PREFIX, SESSION_KEY_RANDOM_CHARS))
    }

    /// The secret itself.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Its SHA-256, the form the webhooks look it up by.
    pub fn hash(&self) -> SessionKeyHash {
        SessionKeyHash::of(&self.0)
    }
}

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKey(***)")
    }
}

impl std::fmt::Display for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_keys_have_their_own_prefix_and_differ() {
        let a = SessionKey::generate();
        let b = SessionKey::generate();
        assert_ne!(a.expose(), b.expose());
        assert_eq!(
            a.expose().len(),
            SESSION_KEY_PREFIX.len() + SESSION_KEY_RANDOM_CHARS
        );
        assert!(a.expose().starts_with("sbs_"));
        assert_eq!(a.hash(), SessionKeyHash::of(a.expose()));
        assert_eq!(format!("{a:?} {a}"), "SessionKey(***) ***");
        assert_eq!(
            SessionKeyHash::of("abc").0,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
