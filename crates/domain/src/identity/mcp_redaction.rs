//! The credentials of an MCP configuration (OpenHands' `MCPConfig`: `sse_servers`,
//! `shttp_servers`, `stdio_servers`, or `mcpServers`), masked in every answer that shows one
//! (an organization's defaults, a member's own settings; issue 38), and kept through a
//! read-edit-write round trip.
//!
//! [`mask_mcp`] masks, at any depth:
//! - every value under `api_key`, `headers`, `env`, `token` or `authorization` (any case): `null`,
//!   a map's names kept (`{"headers": {"Authorization": null}}`);
//! - a string or number under any other name that [`looks_secret`] (`password`, `auth`,
//!   `client_secret`): `null`;
//! - in every string, the credentials of every URL in it ([`mask_url_secrets`]: the user part,
//!   the value of each query or fragment parameter whose name looks secret) as [`MASK`],
//!   scheme, host, path and other parameters kept;
//! - in an `args` list (a stdio server's command line): the argument after a flag whose name
//!   looks secret (`--api-key X`, `-token X`: `X`), and the value of `--flag=value`,
//!   `NAME=value` and `Name: value` when the name looks secret, as [`MASK`].
//!
//! [`keep_masked`] is the round trip's rule: what a reader got masked and sends back as it got
//! it means "keep the stored value", but only within the same server (same `name`, `url` and
//! `command`, compared masked), so a credential never moves to another server: a `null` under
//! a credential name, a string equal to the stored one masked, an `args` entry `**********`
//! after the same flag. A server whose name, URL or command changed gets what was sent (its
//! masked credentials are then sent again by whoever edits it); leaving a field out removes it.
//!
//! [`mcp_secret_values`] lists what [`mask_mcp`] hides, for redacting text that might echo a
//! configuration (a start's failure detail).

use serde_json::{Map, Value};

use crate::identity::redaction::{MASK, looks_secret, mask_url_secrets};

/// The names whose whole value is a credential: a map's values each `null`, anything else
/// `null` (the masking before issue 38, kept).
const CREDENTIAL_KEYS: [&str; 5] = ["api_key", "headers", "env", "token", "authorization"];

/// The fields that say which server an entry is: a masked credential is kept only when these
/// are unchanged.
const IDENTITY_KEYS: [&str; 3] = ["name", "url", "command"];

/// How a value is masked, by its name and the value stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// One of [`CREDENTIAL_KEYS`].
    Credential,
    /// A string or number under another secret-looking name.
    SecretScalar,
    /// A command line.
    Args,
    /// Anything else: masked within.
    Plain,
}

fn kind(key: &str, value: &Value) -> Kind {
    let lower = key.to_ascii_lowercase();
    if CREDENTIAL_KEYS.contains(&lower.as_str()) {
        Kind::Credential
    } else if lower == "args" && value.is_array() {
        Kind::Args
    } else if looks_secret(&lower) && (value.is_string() || value.is_number()) {
        Kind::SecretScalar
    } else {
        Kind::Plain
    }
}

/// An MCP configuration fit to show (any JSON value; the module's rules): credentials `null`
/// or [`MASK`], everything that says which server it is kept.
pub fn mask_mcp(value: &Value) -> Value {
    match value {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), mask_entry(k, v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(mask_mcp).collect()),
        Value::String(s) => Value::String(mask_url_secrets(s)),
        other => other.clone(),
    }
}

fn mask_entry(key: &str, value: &Value) -> Value {
    match (kind(key, value), value) {
        (Kind::Credential, Value::Object(inner)) => {
            Value::Object(inner.keys().map(|n| (n.clone(), Value::Null)).collect())
        }
        (Kind::Credential | Kind::SecretScalar, _) => Value::Null,
        (Kind::Args, Value::Array(items)) => Value::Array(mask_args(items)),
        _ => mask_mcp(value),
    }
}

/// A command line masked: a secret flag's next argument (unless it is a `--` flag itself),
/// inline secret values, URLs' credentials.
fn mask_args(items: &[Value]) -> Vec<Value> {
    let mut out = Vec::with_capacity(items.len());
    let mut value_next = false;
    for item in items {
        let masked = match item {
            Value::String(s) if value_next && !s.starts_with("--") => {
                value_next = false;
                out.push(Value::String(MASK.to_owned()));
                continue;
            }
            Value::String(s) => Value::String(mask_arg(s)),
            other => mask_mcp(other),
        };
        value_next = item.as_str().is_some_and(is_secret_flag);
        out.push(masked);
    }
    out
}

/// `--api-key`, `-token`: a flag whose name looks secret and holds no value of its own.
fn is_secret_flag(arg: &str) -> bool {
    let name = arg.trim_start_matches('-');
    arg.starts_with('-') && !name.is_empty() && !name.contains('=') && looks_secret(name)
}

/// One argument masked: its inline secret value, else its URLs' credentials.
fn mask_arg(arg: &str) -> String {
    match inline_value_at(arg) {
        Some(at) => format!("{}{MASK}", &arg[..at]),
        None => mask_url_secrets(arg),
    }
}

/// Where the value of `--name=value`, `NAME=value` or `Name: value` starts, when the name
/// looks secret (`scheme://…` is a URL, not a `Name: value`).
fn inline_value_at(arg: &str) -> Option<usize> {
    static FORM: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = FORM.get_or_init(|| {
        regex::Regex::new(r"^(-{0,2}[A-Za-z_][A-Za-z0-9_.-]*)(=|:[ \t]*)(.)")
            .expect("a valid pattern")
    });
    let c = re.captures(arg)?;
    let value = c.get(3)?.start();
    if c[2].starts_with(':') && arg[value..].starts_with("//") {
        return None;
    }
    looks_secret(c[1].trim_start_matches('-')).then_some(value)
}

/// What to store when a client sends `sent` over the `stored` configuration: `sent`, with
/// each masked place that still shows exactly what [`mask_mcp`] showed of `stored` there
/// given back its stored value (the module's rule: same server only).
pub fn keep_masked(sent: &Value, stored: &Value) -> Value {
    match (sent, stored) {
        (Value::Object(s), Value::Object(old)) if same_server(s, old) => Value::Object(
            s.iter()
                .map(|(k, v)| {
                    let kept = match old.get(k) {
                        Some(o) => keep_entry(k, v, o),
                        None => v.clone(),
                    };
                    (k.clone(), kept)
                })
                .collect(),
        ),
        (Value::Array(s), Value::Array(old)) => Value::Array(keep_items(s, old)),
        (Value::String(s), Value::String(old)) if shows(old, s) => stored.clone(),
        _ => sent.clone(),
    }
}

/// Whether `sent` is a masked string and what [`mask_mcp`] shows of `old`.
fn shows(old: &str, sent: &str) -> bool {
    sent.contains(MASK) && mask_url_secrets(old) == sent
}

/// Whether two entries are the same server: their [`IDENTITY_KEYS`] equal, the stored ones
/// masked.
fn same_server(sent: &Map<String, Value>, old: &Map<String, Value>) -> bool {
    IDENTITY_KEYS
        .iter()
        .all(|k| sent.get(*k) == old.get(*k).map(|v| mask_entry(k, v)).as_ref())
}

fn keep_entry(key: &str, sent: &Value, old: &Value) -> Value {
    match (kind(key, old), sent, old) {
        (Kind::Credential | Kind::SecretScalar, _, _) if *sent == mask_entry(key, old) => {
            old.clone()
        }
        (Kind::Credential, Value::Object(s), Value::Object(o)) => Value::Object(
            s.iter()
                .map(|(n, v)| {
                    let kept = match (v, o.get(n)) {
                        (Value::Null, Some(ov)) => ov.clone(),
                        _ => v.clone(),
                    };
                    (n.clone(), kept)
                })
                .collect(),
        ),
        (Kind::Credential | Kind::SecretScalar, _, _) => sent.clone(),
        (Kind::Args, Value::Array(s), Value::Array(o)) => Value::Array(keep_args(s, o)),
        _ => keep_masked(sent, old),
    }
}

/// The entries of a list (servers, URLs), each paired with an unused stored entry it can be:
/// the same server, or a string the stored one shows as; the same place first.
fn keep_items(sent: &[Value], old: &[Value]) -> Vec<Value> {
    let mut used = vec![false; old.len()];
    let mut out = Vec::with_capacity(sent.len());
    for (i, v) in sent.iter().enumerate() {
        let fits = |j: usize| {
            !used[j]
                && match (v, &old[j]) {
                    (Value::Object(s), Value::Object(o)) => same_server(s, o),
                    (Value::String(s), Value::String(o)) => shows(o, s),
                    _ => false,
                }
        };
        let j = if i < old.len() && fits(i) {
            Some(i)
        } else {
            (0..old.len()).find(|&j| fits(j))
        };
        out.push(match j {
            Some(j) => {
                used[j] = true;
                keep_masked(v, &old[j])
            }
            None => v.clone(),
        });
    }
    out
}

/// A command line: each masked argument given back the stored argument it shows, an argument
/// that is the mask alone only after the same flag.
fn keep_args(sent: &[Value], old: &[Value]) -> Vec<Value> {
    let shown = mask_args(old);
    let mut used = vec![false; old.len()];
    let mut out = Vec::with_capacity(sent.len());
    for (i, v) in sent.iter().enumerate() {
        if !v.as_str().is_some_and(|s| s.contains(MASK)) {
            out.push(v.clone());
            continue;
        }
        let alone = v.as_str() == Some(MASK);
        let fits = |j: usize| {
            !used[j]
                && shown[j] == *v
                && (!alone || (i > 0 && j > 0 && shown[j - 1] == sent[i - 1]))
        };
        let j = if i < old.len() && fits(i) {
            Some(i)
        } else {
            (0..old.len()).find(|&j| fits(j))
        };
        out.push(match j {
            Some(j) => {
                used[j] = true;
                old[j].clone()
            }
            None => v.clone(),
        });
    }
    out
}

/// Every credential [`mask_mcp`] hides in `config` (whole values; a URL's user part, and its
/// password alone), sorted, once each: for masking them in text that may echo the
/// configuration ([`crate::identity::redaction::redact`]).
pub fn mcp_secret_values(config: &Value) -> Vec<String> {
    let mut out = Vec::new();
    hidden(config, &mask_mcp(config), &mut out);
    out.sort();
    out.dedup();
    out
}

fn hidden(original: &Value, shown: &Value, out: &mut Vec<String>) {
    match (original, shown) {
        (_, Value::Null) => scalars(original, out),
        (Value::String(o), Value::String(s)) if o != s => hidden_parts(o, s, out),
        (Value::Object(o), Value::Object(s)) => {
            for (k, v) in o {
                if let Some(sv) = s.get(k) {
                    hidden(v, sv, out);
                }
            }
        }
        (Value::Array(o), Value::Array(s)) => {
            for (v, sv) in o.iter().zip(s) {
                hidden(v, sv, out);
            }
        }
        _ => {}
    }
}

/// Every string and number within `v`.
fn scalars(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => push_secret(s, out),
        Value::Number(n) => out.push(n.to_string()),
        Value::Object(m) => m.values().for_each(|x| scalars(x, out)),
        Value::Array(items) => items.iter().for_each(|x| scalars(x, out)),
        _ => {}
    }
}

/// The parts of `original` that became [`MASK`] in `shown` (the text between the parts kept);
/// the whole string when they cannot be told apart.
fn hidden_parts(original: &str, shown: &str, out: &mut Vec<String>) {
    let pieces: Vec<&str> = shown.split(MASK).collect();
    let Some(mut rest) = original.strip_prefix(pieces[0]) else {
        return push_secret(original, out);
    };
    let last = pieces.len() - 1;
    let mut found = Vec::new();
    for (n, piece) in pieces.iter().enumerate().skip(1) {
        let at = if n == last {
            rest.strip_suffix(piece).map(str::len)
        } else {
            rest.find(piece).filter(|_| !piece.is_empty())
        };
        let Some(at) = at else {
            return push_secret(original, out);
        };
        found.push(&rest[..at]);
        rest = &rest[(at + piece.len()).min(rest.len())..];
    }
    for secret in found {
        push_secret(secret, out);
    }
}

/// `secret`, and the password of a `user:password` alone.
fn push_secret(secret: &str, out: &mut Vec<String>) {
    if secret.is_empty() {
        return;
    }
    out.push(secret.to_owned());
    if let Some((_, password)) = secret.split_once(':')
        && !password.is_empty()
    {
        out.push(password.to_owned());
    }
}

#[cfg(test)]
#[path = "mcp_redaction_tests.rs"]
mod tests;
