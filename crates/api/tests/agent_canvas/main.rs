//! Agent Canvas's own requests (issue 25), replayed from the fixtures captured from its
//! source (`fixtures/agent_canvas/`, `@openhands/agent-canvas` 1.20.0) against the real server
//! on both backends, with `Authorization: Bearer` as the client sends it: agent profiles
//! (`profiles.rs`), a start from one with the stand-in agent server (`start.rs`), and the
//! organization routes (`orgs.rs`); `relayed.rs` checks a start sending a key not the member's
//! own through the LLM pass-through.

mod orgs;
mod profiles;
mod relayed;
mod start;

use reqwest::Method;
use serde_json::Value;

/// A fixture file of `fixtures/agent_canvas/`.
pub fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/agent_canvas/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The request named `name` of a fixture.
pub fn request<'a>(fixture: &'a Value, name: &str) -> &'a Value {
    fixture["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no request {name} in the fixture"))
}

/// The fixture's path with `{placeholder}`s replaced.
pub fn path(req: &Value, subst: &[(&str, &str)]) -> String {
    let mut p = req["path"].as_str().unwrap().to_owned();
    for (k, v) in subst {
        p = p.replace(&format!("{{{k}}}"), v);
    }
    p
}

/// The fixture's method.
pub fn method(req: &Value) -> Method {
    Method::from_bytes(req["method"].as_str().unwrap().as_bytes()).unwrap()
}

/// The value at a `reads` entry (`a.b`, `items[].id` on the first item), ignoring the
/// comment after a space; `None` when a key on the way is absent.
pub fn read<'a>(body: &'a Value, field: &str) -> Option<&'a Value> {
    let field = field.split(' ').next().unwrap();
    let mut v = body;
    for part in field.split('.') {
        let (key, each) = match part.strip_suffix("[]") {
            Some(k) => (k, true),
            None => (part, false),
        };
        v = v.as_object()?.get(key)?;
        if each {
            v = v.as_array()?.first()?;
        }
    }
    Some(v)
}

/// Every field the client reads of this request's answer is there.
pub fn has_reads(req: &Value, body: &Value, what: &str) {
    for f in req["reads"].as_array().unwrap() {
        let f = f.as_str().unwrap();
        // `llm (or config)`, `llm (or model)`: either one.
        if f.contains("(or ") {
            let a = f.split(' ').next().unwrap();
            let b = f.split("(or ").nth(1).unwrap().split(')').next().unwrap();
            assert!(
                read(body, a).is_some() || read(body, b).is_some(),
                "{what}: neither {a} nor {b} in {body}"
            );
            continue;
        }
        assert!(read(body, f).is_some(), "{what}: no {f} in {body}");
    }
}
