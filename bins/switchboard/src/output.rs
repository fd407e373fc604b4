//! What the commands print: one JSON object per line on stdout; and how they read an id
//! argument (the domain's refusals as errors: [`switchboard_ops::domain`]).

use serde_json::Value;

/// Prints one JSON object on stdout.
pub fn print(v: Value) {
    println!("{v}");
}

/// A UUID argument (`--{what}`).
pub(crate) fn parse_id<T: std::str::FromStr>(s: &str, what: &str) -> anyhow::Result<T> {
    s.parse()
        .map_err(|_| anyhow::anyhow!("--{what}: not a UUID: {s}"))
}
