//! What API keys and sandbox session keys share: secrets drawn from the operating system's
//! CSPRNG and stored only as their SHA-256.

use sha2::{Digest, Sha256};

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `prefix` followed by `random_chars` base62 characters from the operating system's CSPRNG
/// (`getrandom`), rejection-sampled so every character is equally likely.
///
/// # Panics
/// If the operating system has no randomness to give (nothing sensible can continue).
pub(crate) fn random_secret(prefix: &str, random_chars: usize) -> String {
    let len = prefix.len() + random_chars;
    let mut secret = String::with_capacity(len);
    secret.push_str(prefix);
    let mut buf = [0u8; 64];
    while secret.len() < len {
        getrandom::fill(&mut buf).expect("the OS random number generator failed");
        for b in buf {
            // 248 = 4 * 62: bytes at or above it would bias the distribution.
            if b < 248 && secret.len() < len {
                secret.push(BASE62[(b % 62) as usize] as char);
            }
        }
    }
    secret
}

/// The SHA-256 of a secret, lowercase hex (64 characters).
pub(crate) fn sha256_hex(secret: &str) -> String {
    let digest = Sha256::digest(secret.as_bytes());
    let mut hex = String::with_capacity(64);
    for b in digest {
        hex.push_str(&format!("{b:02x}"));
    }
    hex
}

/// Whether two secrets (or hashes of secrets) are equal, in time that depends only on their
/// lengths, never on where they differ (`subtle`). Every in-process comparison of a secret
/// goes through this; the database compares only SHA-256 digests (API.md, Reliability and
/// security).
pub fn ct_eq(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

#[cfg(test)]
mod ct_tests {
    use super::ct_eq;

    #[test]
    fn constant_time_equality_is_equality() {
        assert!(ct_eq("sb_abc", "sb_abc"));
        assert!(!ct_eq("sb_abc", "sb_abd"));
        assert!(!ct_eq("sb_abc", "sb_ab"));
        assert!(ct_eq("", ""));
    }
}
