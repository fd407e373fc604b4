//! What the commands print: one JSON object per line on stdout, and the domain's refusals as
//! errors; and how they read an id argument.

use serde_json::Value;
use switchboard_domain::DomainError;

/// Prints one JSON object on stdout.
pub fn print(v: Value) {
    println!("{v}");
}

/// The domain's refusal as the command's error (its message).
pub fn domain(e: DomainError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

/// A UUID argument (`--{what}`).
pub(crate) fn parse_id<T: std::str::FromStr>(s: &str, what: &str) -> anyhow::Result<T> {
    s.parse()
        .map_err(|_| anyhow::anyhow!("--{what}: not a UUID: {s}"))
}
