//! Validates JSONL event logs (one event per line) against the SDK's event model.
//!
//! ```text
//! cargo run -p switchboard-model --example validate -- [--canonical] FILE...   (or - for stdin)
//! ```
//!
//! Prints one line per invalid event, `FILE:LINE: {"type","loc","msg",...}` (a FastAPI-style
//! error entry), then a summary `N passed, M failed` with counts by kind. With `--canonical`,
//! writes every valid event in the SDK's persisted form to stdout instead of the summary by
//! kind. Exits 1 when any line is invalid.

use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};
use std::process::ExitCode;

use switchboard_model::Event;

fn main() -> ExitCode {
    let mut canonical = false;
    let mut inputs = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--canonical" => canonical = true,
            "-h" | "--help" => {
                eprintln!("usage: validate [--canonical] FILE... (- for stdin)");
                return ExitCode::SUCCESS;
            }
            _ => inputs.push(arg),
        }
    }
    if inputs.is_empty() {
        inputs.push("-".to_owned());
    }
    let (mut passed, mut failed) = (0usize, 0usize);
    let mut by_kind: BTreeMap<&'static str, usize> = BTreeMap::new();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    for input in &inputs {
        let reader: Box<dyn BufRead> = if input == "-" {
            Box::new(io::stdin().lock())
        } else {
            match std::fs::File::open(input) {
                Ok(f) => Box::new(io::BufReader::new(f)),
                Err(e) => {
                    eprintln!("{input}: {e}");
                    return ExitCode::from(2);
                }
            }
        };
        for (n, line) in reader.lines().enumerate() {
            let line = match line {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("{input}: {e}");
                    return ExitCode::from(2);
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            match Event::from_json_str(&line) {
                Ok(event) => {
                    passed += 1;
                    *by_kind.entry(event.kind_name()).or_default() += 1;
                    if canonical {
                        let _ = writeln!(out, "{}", event.to_json_string());
                    }
                }
                Err(err) => {
                    failed += 1;
                    let entry = serde_json::to_string(&err).unwrap_or_default();
                    let _ = writeln!(io::stderr(), "{input}:{}: {entry}", n + 1);
                }
            }
        }
    }
    if !canonical {
        for (kind, count) in &by_kind {
            let _ = writeln!(out, "{count:>7}  {kind}");
        }
    }
    let _ = writeln!(io::stderr(), "{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
