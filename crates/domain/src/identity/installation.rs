//! The installation (docs/operations.md, "Replicas" and "Backup and restore"): one record per
//! database naming the installation and the key that seals its secrets.
//!
//! - Its **id** labels what the installation's runtimes make (Docker containers and volumes,
//!   Kubernetes pods, claims and secrets), so two installations sharing a daemon or a namespace
//!   never touch each other's. A database made before the record existed gets `sb-` and the
//!   key's id, the name its runtimes already used ([`legacy_id`]).
//! - Its **key fingerprint** is the fingerprint of the key the sealed values open with
//!   ([`Sealer::fingerprint`]). A server holding another key (a replica with a data directory
//!   of its own that made a key of its own) would seal new values that no other replica opens:
//!   it refuses to start ([`KeyVerdict::Other`]). `switchboard secrets rotate-key` changes the
//!   fingerprint in the transaction that re-seals the values.
//! - A **restore** that does not replace the original gives the copy a new id
//!   ([`restored_id`]) and detaches the copy's sandbox records from what the original runs, so
//!   the copy never adopts or stops the original's live sandboxes.

use time::OffsetDateTime;

use crate::identity::sealing::Sealer;

/// The installation's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installation {
    /// The installation id: `sb-` and 16 lowercase hex digits (or an id of the operator's).
    pub id: String,
    /// The fingerprint of the key sealing the database's secrets (16 lowercase hex digits).
    pub key_fingerprint: String,
    /// When the record was made (the first start of a server with this record's code), UTC.
    pub created_at: OffsetDateTime,
    /// The id of the installation this one was restored from, when it was given a new one.
    pub restored_from: Option<String>,
    /// When it was restored, UTC.
    pub restored_at: Option<OffsetDateTime>,
}

/// What the database says of a key (the outcome of
/// [`crate::Switchboard::check_installation_key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyVerdict {
    /// No record existed: this key's record was made now (or another replica's, made in the
    /// same instant with the same key).
    First(Installation),
    /// The record names this key.
    Same(Installation),
    /// The record names another key: the server must not start with this one.
    Other(Installation),
}

/// The id of a database that has no record yet: `sb-` and the key id, the id the Docker and
/// Kubernetes runtimes derived from the key before the record existed (so nothing they made
/// is orphaned).
pub fn legacy_id(sealer: &Sealer) -> String {
    format!("sb-{}", sealer.key_id())
}

/// A new installation id for a restored copy: `sb-` and 16 random lowercase hex digits.
///
/// # Panics
/// If the operating system has no randomness to give.
pub fn restored_id() -> String {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the OS random number generator failed");
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("sb-{hex}")
}

/// Whether `id` may name an installation: 1–63 characters of lowercase letters, digits and
/// `-`, starting with a letter or digit (a Docker label value and a Kubernetes label value
/// both take it).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 63
        && !id.starts_with('-')
        && !id.ends_with('-')
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::sealing::SECRET_KEY_BYTES;

    #[test]
    fn ids_are_label_values_and_restored_ones_differ() {
        let sealer = Sealer::new(&[3u8; SECRET_KEY_BYTES]);
        let legacy = legacy_id(&sealer);
        assert_eq!(legacy, format!("sb-{}", sealer.key_id()));
        assert!(valid_id(&legacy));
        let (a, b) = (restored_id(), restored_id());
        assert_ne!(a, b);
        assert!(valid_id(&a) && a.len() == 19, "{a}");
        for bad in ["", "-a", "a-", "Upper", "a b", &"x".repeat(64)] {
            assert!(!valid_id(bad), "{bad:?}");
        }
    }
}
