//! What the commands print: one JSON object per line on stdout.

use serde_json::Value;

/// Prints one JSON object on stdout.
pub fn print(v: Value) {
    println!("{v}");
}
