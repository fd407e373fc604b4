//! The generic path against bodies declared here for the purpose: each rule a keyword, each
//! keyword worded as pydantic words it.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::{RequestBody, parse, parse_one};

#[derive(Debug, Deserialize, ToSchema, PartialEq)]
#[serde(deny_unknown_fields)]
struct Sample {
    #[schema(min_length = 2, max_length = 4)]
    name: String,
    #[serde(default)]
    #[schema(minimum = 1, maximum = 10)]
    count: Option<i64>,
    #[serde(default)]
    #[schema(exclusive_minimum = 0.0)]
    budget: Option<f64>,
    #[serde(default)]
    kind: Option<Kind>,
    #[serde(default)]
    inner: Option<Inner>,
    #[serde(default)]
    tags: Vec<Inner>,
    #[serde(default)]
    by_kind: BTreeMap<Kind, String>,
    #[serde(default)]
    #[schema(write_only)]
    secret: Option<String>,
}

impl RequestBody for Sample {}

#[derive(Debug, Deserialize, ToSchema, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Alpha,
    Beta,
}

#[derive(Debug, Deserialize, ToSchema, PartialEq)]
struct Inner {
    flag: bool,
}

fn errors(body: Value) -> Vec<Value> {
    parse::<Sample>(&body)
        .unwrap_err()
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

fn one(body: Value) -> Value {
    let mut all = errors(body);
    assert_eq!(all.len(), 1, "{all:?}");
    all.remove(0)
}

#[test]
fn a_valid_body_deserializes() {
    let s = parse_one::<Sample>(&json!({
        "name": "abc", "count": 3, "kind": "beta", "inner": {"flag": true},
        "tags": [{"flag": false}], "by_kind": {"alpha": "x"}, "secret": "s",
    }))
    .unwrap();
    assert_eq!(s.kind, Some(Kind::Beta));
    assert_eq!(s.tags, [Inner { flag: false }]);
}

#[test]
fn the_root_and_missing_fields() {
    assert_eq!(
        one(json!([1])),
        json!({"type": "model_type", "loc": ["body"], "msg": "Input should be a valid dictionary or instance of Sample", "input": [1]})
    );
    assert_eq!(
        one(json!({"count": 2})),
        json!({"type": "missing", "loc": ["body", "name"], "msg": "Field required", "input": {"count": 2}})
    );
}

#[test]
fn unknown_fields_are_refused_at_their_key() {
    assert_eq!(
        one(json!({"name": "ab", "x": 1})),
        json!({"type": "extra_forbidden", "loc": ["body", "x"], "msg": "Extra inputs are not permitted", "input": 1})
    );
}

#[test]
fn lengths_ranges_and_types() {
    let e = one(json!({"name": "a"}));
    assert_eq!(
        (e["type"].as_str(), &e["ctx"]),
        (Some("string_too_short"), &json!({"min_length": 2}))
    );
    let e = one(json!({"name": "abcde"}));
    assert_eq!(e["msg"], "String should have at most 4 characters");
    let e = one(json!({"name": "ab", "count": 11}));
    assert_eq!(
        (e["type"].as_str(), &e["ctx"]),
        (Some("less_than_equal"), &json!({"le": 10}))
    );
    let e = one(json!({"name": "ab", "count": 0}));
    assert_eq!(e["msg"], "Input should be greater than or equal to 1");
    let e = one(json!({"name": "ab", "budget": 0}));
    assert_eq!(e["type"], "greater_than");
    let e = one(json!({"name": "ab", "count": "3"}));
    assert_eq!(
        (e["type"].as_str(), e["msg"].as_str()),
        (Some("int_type"), Some("Input should be a valid integer"))
    );
    let e = one(json!({"name": 5}));
    assert_eq!(e["type"], "string_type");
}

#[test]
fn nested_models_enums_and_lists() {
    let e = one(json!({"name": "ab", "inner": 3}));
    assert_eq!(
        e["msg"],
        "Input should be a valid dictionary or instance of Inner"
    );
    let e = one(json!({"name": "ab", "inner": {"flag": "yes"}}));
    assert_eq!(
        (e["type"].as_str(), &e["loc"]),
        (Some("bool_type"), &json!(["body", "inner", "flag"]))
    );
    let e = one(json!({"name": "ab", "tags": [{"flag": true}, {}]}));
    assert_eq!(
        (e["type"].as_str(), &e["loc"]),
        (Some("missing"), &json!(["body", "tags", 1, "flag"]))
    );
    let e = one(json!({"name": "ab", "kind": "gamma"}));
    assert_eq!(
        (e["type"].as_str(), e["msg"].as_str()),
        (Some("enum"), Some("Input should be 'alpha' or 'beta'"))
    );
    let e = one(json!({"name": "ab", "tags": {}}));
    assert_eq!(e["type"], "list_type");
}

#[test]
fn a_key_outside_its_set_is_reported_at_the_key() {
    let e = one(json!({"name": "ab", "by_kind": {"gamma": "x"}}));
    assert_eq!(e["loc"], json!(["body", "by_kind", "gamma"]));
    assert_eq!(
        (e["type"].as_str(), &e["input"]),
        (Some("enum"), &json!("gamma"))
    );
}

#[test]
fn a_write_only_value_is_never_echoed() {
    let e = one(json!({"name": "ab", "secret": 42}));
    assert_eq!(
        (e["type"].as_str(), &e["input"]),
        (Some("string_type"), &json!("**********"))
    );
}

#[test]
fn every_error_in_field_order() {
    let all = errors(json!({"kind": 1, "count": "x", "zzz": 0}));
    let at: Vec<&str> = all.iter().map(|e| e["loc"][1].as_str().unwrap()).collect();
    assert_eq!(at, ["name", "count", "kind", "zzz"]);
}

#[test]
fn the_document_holds_what_the_body_names() {
    let doc = super::schema_document::<Sample>(vec![]);
    assert!(doc["components"]["schemas"]["Inner"].is_object());
    assert!(doc["components"]["schemas"]["Kind"].is_object());
    assert_eq!(doc["additionalProperties"], false);
}

/// A body of many unknown keys: an entry each, worded without a pass over the others per key
/// (one per location is kept through a map).
#[test]
fn many_unknown_keys_each_get_their_entry() {
    let mut body = serde_json::Map::new();
    body.insert("name".into(), json!("ab"));
    for i in 0..50_000 {
        body.insert(format!("k{i}"), json!(i));
    }
    let all = parse::<Sample>(&Value::Object(body)).unwrap_err();
    assert_eq!(all.len(), 50_000);
    assert!(
        all.iter()
            .all(|e| e.error_type.as_str() == "extra_forbidden")
    );
}

/// A body that keeps the keys it does not declare (a flattened map: the body's schema is the
/// `allOf` of theirs and its own), refuses a key whatever it holds, and documents a field its
/// check judges (`x-documentation-only`).
#[derive(Debug, Deserialize, ToSchema)]
struct Open {
    #[serde(default)]
    #[schema(maximum = 5)]
    n: Option<i64>,
    /// Never read: the schema refuses it.
    #[serde(default, rename = "old")]
    #[schema(schema_with = old_key)]
    _old: Option<Value>,
    #[serde(default)]
    #[schema(schema_with = free_text)]
    free: Option<Value>,
    #[serde(flatten)]
    #[schema(schema_with = super::fields::others_without_nul)]
    others: serde_json::Map<String, Value>,
}

fn old_key() -> utoipa::openapi::schema::Object {
    super::fields::refused("use new")
}

/// Documented as text; the check words its own failure.
fn free_text() -> utoipa::openapi::schema::Schema {
    super::fields::documentation_only(super::fields::string())
}

impl RequestBody for Open {
    fn check(&self) -> Result<(), Vec<switchboard_model::ValidationError>> {
        match &self.free {
            Some(v) if !v.is_string() => Err(vec![crate::validation::value_error(
                crate::validation::loc(["body", "free"]),
                "free is text",
                v,
            )]),
            _ => Ok(()),
        }
    }
}

fn open_errors(body: Value) -> Vec<Value> {
    parse::<Open>(&body)
        .unwrap_err()
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

#[test]
fn a_flattened_map_keeps_the_other_keys_and_the_fields_keep_their_rules() {
    let o = parse::<Open>(&json!({"n": 2, "x": {"y": 1}, "z": "a"})).unwrap();
    assert_eq!((o.n, o.others.len()), (Some(2), 2));
    assert_eq!(o.others["x"], json!({"y": 1}));
    let doc = super::schema_document::<Open>(vec![]);
    assert_eq!(doc["allOf"][0]["x-documentation-only"], true, "{doc}");
    let all = open_errors(json!({"old": 1, "n": 9}));
    let at: Vec<&Value> = all.iter().map(|e| &e["loc"]).collect();
    assert_eq!(at, [&json!(["body", "n"]), &json!(["body", "old"])]);
    assert_eq!(all[0]["type"], "less_than_equal");
    assert_eq!(
        (&all[1]["type"], &all[1]["msg"], &all[1]["input"]),
        (
            &json!("value_error"),
            &json!("Value error, use new"),
            &json!(1)
        )
    );
    assert_eq!(
        open_errors(json!([]))[0]["msg"],
        "Input should be a valid dictionary or instance of Open"
    );
}

#[test]
fn a_documentation_only_schema_is_judged_by_the_check() {
    assert!(parse::<Open>(&json!({"free": "text"})).is_ok());
    let e = open_errors(json!({"free": 3}));
    assert_eq!(
        (&e[0]["type"], &e[0]["msg"]),
        (&json!("value_error"), &json!("Value error, free is text"))
    );
}
