//! Identifiers: UUIDs, accepted dashed or as 32 hex digits, written dashed lowercase
//! (API.md, Conventions).

use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

/// A UUID as [`parse_uuid`] takes it: 32 hex digits, or dashed `8-4-4-4-12`; either case.
/// `format: uuid` alone states no form (validators need not check formats), so a client or a
/// generator that reads only a schema could take any string for an id.
pub const UUID_PATTERN: &str = r"^([0-9a-fA-F]{32}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$";

/// Parses a UUID given dashed (`8-4-4-4-12`) or as 32 hex digits; other forms (braced, URN)
/// are refused.
pub fn parse_uuid(s: &str) -> Option<Uuid> {
    match s.len() {
        32 | 36 => Uuid::try_parse(s).ok(),
        _ => None,
    }
}

macro_rules! id_type {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A new random (v4) id.
            pub fn new_random() -> Self {
                $name(Uuid::new_v4())
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.hyphenated().fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = InvalidId;

            fn from_str(s: &str) -> Result<Self, InvalidId> {
                parse_uuid(s).map($name).ok_or(InvalidId)
            }
        }
    };
}

/// A string that is not a UUID in an accepted form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a UUID (dashed or 32 hex digits)")]
pub struct InvalidId;

id_type! {
    /// An organization id.
    OrgId
}
id_type! {
    /// A user id.
    UserId
}
id_type! {
    /// An API key id (not the secret).
    ApiKeyId
}

id_type! {
    /// A sandbox id.
    SandboxId
}
id_type! {
    /// A conversation id.
    ConversationId
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_dashed_and_simple_only() {
        let dashed = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b";
        let id: OrgId = dashed.parse().unwrap();
        assert_eq!(id.to_string(), dashed);
        assert_eq!(
            "6F1C2A3B4D5E4F608A7B9C0D1E2F3A4B".parse::<OrgId>().unwrap(),
            id
        );
        for bad in [
            "",
            "x",
            "{6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b}",
            "urn:uuid:6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b",
        ] {
            assert!(bad.parse::<OrgId>().is_err(), "{bad}");
        }
    }
}
