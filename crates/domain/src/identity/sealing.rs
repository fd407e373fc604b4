//! Secrets at rest (design: Sandboxes, Secrets): sandbox session keys are stored sealed with
//! XChaCha20-Poly1305 (crate `chacha20poly1305`) under the server's secret key
//! (`--secret-key-file`), so Switchboard can give a running sandbox's key to its creator
//! after a restart, while a copy of the database alone reveals nothing. Each sealed value is
//! bound to the record it belongs to (the associated data, e.g. the sandbox id): moved to
//! another row it does not open.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};

/// Bytes of a secret key (256 bits).
pub const SECRET_KEY_BYTES: usize = 32;
/// Bytes of an XChaCha20 nonce (192 bits: random nonces never repeat in practice).
const NONCE_BYTES: usize = 24;

/// Why a sealed value could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// Not hex of a nonce and a ciphertext.
    #[error("not a sealed value")]
    Malformed,
    /// Sealed under another key, for another record, or altered.
    #[error(
        "the sealed value does not open with this key (another key, another record, or altered)"
    )]
    Rejected,
}

/// The server's secret key and the cipher over it. `Debug` prints no key material.
#[derive(Clone)]
pub struct Sealer {
    cipher: XChaCha20Poly1305,
    key_id: String,
    fingerprint: String,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(***)")
    }
}

impl Sealer {
    /// A sealer over a 256-bit key.
    pub fn new(key: &[u8; SECRET_KEY_BYTES]) -> Self {
        use sha2::{Digest, Sha256};
        let digest = Sha256::new()
            .chain_update(b"switchboard key id\0")
            .chain_update(key)
            .finalize();
        let fingerprint: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        Sealer {
            cipher: XChaCha20Poly1305::new(Key::from_slice(key)),
            key_id: fingerprint.clone(),
            fingerprint,
        }
    }

    /// The key's own fingerprint: 16 lowercase hex digits of SHA-256 over a fixed prefix and
    /// the key, always of this key (unlike [`Sealer::key_id`], which a rotated key file sets to
    /// the first key's). The database records it ([`crate::identity::installation`]) so that a
    /// server holding another key refuses to start instead of sealing with it.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// A public name of the installation's key: 16 lowercase hex digits of SHA-256 over a
    /// fixed prefix and the key. It reveals nothing of the key, is the same wherever the same
    /// key is used (replicas sharing a database share the key), and differs between keys.
    /// After `switchboard secrets rotate-key` the key file carries the first key's id
    /// ([`Sealer::with_key_id`]), so the name outlives rotations. The Docker runtime's default
    /// installation id is derived from it (API.md, "Docker runtime").
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The same sealer known by `key_id` (the id a key file carries over a rotation: 16
    /// lowercase hex digits, checked by the caller).
    #[must_use]
    pub fn with_key_id(mut self, key_id: String) -> Self {
        self.key_id = key_id;
        self
    }

    /// A fresh random key from the operating system's CSPRNG.
    ///
    /// # Panics
    /// If the operating system has no randomness to give.
    pub fn generate_key() -> [u8; SECRET_KEY_BYTES] {
        let mut key = [0u8; SECRET_KEY_BYTES];
        getrandom::fill(&mut key).expect("the OS random number generator failed");
        key
    }

    /// `secret` sealed for the record named by `bound_to`: lowercase hex of a random 24-byte
    /// nonce followed by the ciphertext and its 16-byte tag.
    ///
    /// # Panics
    /// If the operating system has no randomness to give.
    pub fn seal(&self, secret: &str, bound_to: &str) -> String {
        let mut nonce = [0u8; NONCE_BYTES];
        getrandom::fill(&mut nonce).expect("the OS random number generator failed");
        let sealed = self
            .cipher
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: secret.as_bytes(),
                    aad: bound_to.as_bytes(),
                },
            )
            .expect("XChaCha20-Poly1305 encrypts any message of this size");
        let mut out = String::with_capacity((NONCE_BYTES + sealed.len()) * 2);
        for b in nonce.iter().chain(&sealed) {
            out.push_str(&format!("{b:02x}"));
        }
        out
    }

    /// The secret [`Sealer::seal`] sealed for `bound_to`.
    ///
    /// # Errors
    /// [`SealError::Malformed`] for text that is not a sealed value; [`SealError::Rejected`]
    /// for another key, another record, or an altered value.
    pub fn open(&self, sealed: &str, bound_to: &str) -> Result<String, SealError> {
        let bytes = from_hex(sealed).ok_or(SealError::Malformed)?;
        if bytes.len() < NONCE_BYTES + 16 {
            return Err(SealError::Malformed);
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_BYTES);
        let plain = self
            .cipher
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: bound_to.as_bytes(),
                },
            )
            .map_err(|_| SealError::Rejected)?;
        String::from_utf8(plain).map_err(|_| SealError::Rejected)
    }
}

/// Lowercase or uppercase hex to bytes; `None` for anything else.
pub fn from_hex(text: &str) -> Option<Vec<u8>> {
    let text = text.trim();
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ids_name_keys_without_revealing_them() {
        let key = [7u8; SECRET_KEY_BYTES];
        let a = Sealer::new(&key);
        assert_eq!(a.key_id(), Sealer::new(&key).key_id());
        assert_eq!(a.key_id().len(), 16);
        assert!(a.key_id().chars().all(|c| c.is_ascii_hexdigit()));
        assert!(!a.key_id().contains("0707"));
        assert_ne!(a.key_id(), Sealer::new(&[8u8; SECRET_KEY_BYTES]).key_id());
    }

    #[test]
    fn the_fingerprint_stays_the_keys_when_the_id_is_carried_over() {
        let a = Sealer::new(&[7u8; SECRET_KEY_BYTES]);
        let rotated = Sealer::new(&[8u8; SECRET_KEY_BYTES]).with_key_id(a.key_id().to_owned());
        assert_eq!(rotated.key_id(), a.key_id());
        assert_eq!(a.fingerprint(), a.key_id());
        assert_ne!(rotated.fingerprint(), a.fingerprint());
        assert_eq!(
            rotated.fingerprint(),
            Sealer::new(&[8u8; SECRET_KEY_BYTES]).fingerprint()
        );
    }

    #[test]
    fn seals_and_opens_only_for_the_same_key_and_record() {
        let sealer = Sealer::new(&Sealer::generate_key());
        let sealed = sealer.seal("sbs_secret", "record-1");
        assert!(!sealed.contains("sbs_secret"));
        assert_ne!(
            sealed,
            sealer.seal("sbs_secret", "record-1"),
            "random nonces"
        );
        assert_eq!(sealer.open(&sealed, "record-1").unwrap(), "sbs_secret");
        assert_eq!(sealer.open(&sealed, "record-2"), Err(SealError::Rejected));
        let other = Sealer::new(&Sealer::generate_key());
        assert_eq!(other.open(&sealed, "record-1"), Err(SealError::Rejected));
        let mut altered = sealed.clone().into_bytes();
        let last = altered.len() - 1;
        altered[last] = if altered[last] == b'0' { b'1' } else { b'0' };
        assert_eq!(
            sealer.open(std::str::from_utf8(&altered).unwrap(), "record-1"),
            Err(SealError::Rejected)
        );
        assert_eq!(sealer.open("zz", "record-1"), Err(SealError::Malformed));
        assert_eq!(sealer.open("abcd", "record-1"), Err(SealError::Malformed));
        assert_eq!(format!("{sealer:?}"), "Sealer(***)");
        assert_eq!(from_hex("0aFf"), Some(vec![10, 255]));
    }
}
