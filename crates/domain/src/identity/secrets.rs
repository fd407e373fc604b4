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
