//! A body type's JSON Schema document, as the validator reads it: the type's own schema at the
//! root, and every schema it names under `components.schemas` (where the OpenAPI document
//! keeps them, so the `$ref`s utoipa writes, `#/components/schemas/Name`, resolve in both).
//! And the walk from an instance location to the schema that judged it, used to word errors.

use serde_json::{Map, Value, json};
use switchboard_model::LocItem;
use utoipa::ToSchema;

/// The prefix of the references utoipa writes.
const COMPONENTS: &str = "#/components/schemas/";

/// The keyword marking a schema that states a subset of what the body accepts there (for
/// generated clients and fuzzers, which then only make valid values): the validator keeps
/// only its `type` (or takes any value when it has none), and [`RequestBody::check`](super::RequestBody::check) judges
/// the rest. `"x-accepts-more": true`.
pub const ACCEPTS_MORE_KEYWORD: &str = "x-accepts-more";

/// The keyword of a schema the validator takes any value for (see
/// [`super::fields::documentation_only`]).
pub(super) const DOCUMENTATION_ONLY_KEYWORD: &str = "x-documentation-only";

/// `document` as the validator judges it: every schema marked [`DOCUMENTATION_ONLY_KEYWORD`]
/// is `true` (any value); every schema marked [`ACCEPTS_MORE_KEYWORD`] is its `type`
/// alone (or `true` when it states none).
pub(super) fn as_judged(document: &Value) -> Value {
    let marked = |o: &serde_json::Map<String, Value>, k: &str| o.get(k) == Some(&Value::Bool(true));
    match document {
        Value::Object(o) if marked(o, DOCUMENTATION_ONLY_KEYWORD) => Value::Bool(true),
        Value::Object(o) if marked(o, ACCEPTS_MORE_KEYWORD) => match o.get("type") {
            Some(t) => json!({ "type": t }),
            None => Value::Bool(true),
        },
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, v)| (k.clone(), as_judged(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(as_judged).collect()),
        other => other.clone(),
    }
}

/// `T`'s schema document: its schema, with `components.schemas` holding the schemas it names
/// and `extra`, schemas named where the derive does not see them (`schema_with`).
///
/// # Panics
/// A derived schema that does not serialize (a bug in the type's declaration).
pub fn schema_document<T: ToSchema>(
    extra: Vec<(
        String,
        utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
    )>,
) -> Value {
    let mut named = extra;
    T::schemas(&mut named);
    let mut root = serde_json::to_value(T::schema()).expect("a derived schema serializes");
    let components: Map<String, Value> = named
        .into_iter()
        .map(|(name, s)| {
            let s = serde_json::to_value(s).expect("a derived schema serializes");
            (name, s)
        })
        .collect();
    if let Value::Object(o) = &mut root {
        o.insert("components".into(), json!({ "schemas": components }));
    }
    root
}

/// A schema reached by [`node_at`]: the schema itself, the component name it was reached
/// through when the last step was a `$ref`, and the schemas of that step it was reached
/// through (a `$ref`, an `Optional`'s `anyOf`), outermost first.
pub(super) struct Node<'a> {
    pub schema: &'a Value,
    pub component: Option<&'a str>,
    pub via: Vec<&'a Value>,
}

/// Follows `$ref`s, and of an `anyOf`/`oneOf` of `null` and one schema takes that schema.
fn resolve<'a>(document: &'a Value, mut schema: &'a Value) -> Node<'a> {
    let mut component = None;
    let mut via = Vec::new();
    for _ in 0..16 {
        if let Some(name) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix(COMPONENTS))
        {
            match document["components"]["schemas"].get(name) {
                Some(s) => {
                    via.push(schema);
                    schema = s;
                    component = Some(name);
                    continue;
                }
                None => break,
            }
        }
        let alternatives = schema
            .get("anyOf")
            .or_else(|| schema.get("oneOf"))
            .and_then(Value::as_array);
        // An `Optional` (`null` or one schema) is that schema; a real union stays itself.
        let mut not_null = alternatives
            .into_iter()
            .flatten()
            .filter(|s| s["type"] != "null");
        match (not_null.next(), not_null.next()) {
            (Some(s), None) => {
                via.push(schema);
                schema = s;
            }
            _ => break,
        }
    }
    Node {
        schema,
        component,
        via,
    }
}

/// `schema` and the members of its `allOf` (a struct with a flattened field is the `allOf` of
/// that field's schema and its own): the schemas whose keywords all apply to a value.
fn parts(schema: &Value) -> impl Iterator<Item = &Value> {
    let all_of = schema.get("allOf").and_then(Value::as_array);
    std::iter::once(schema).chain(all_of.into_iter().flatten())
}

/// The schema of property `key` of an object judged by `schema`: a declared property's, else
/// an `additionalProperties` schema.
fn property<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    parts(schema)
        .find_map(|s| s["properties"].get(key))
        .or_else(|| {
            parts(schema).find_map(|s| s.get("additionalProperties").filter(|a| a.is_object()))
        })
}

/// The schema judging the instance at `path` (keys and indexes from the body's root, as a
/// 422 entry's `loc` after its `body`).
pub(super) fn node_at<'a>(document: &'a Value, path: &[LocItem]) -> Node<'a> {
    let mut node = resolve(document, document);
    for step in path {
        let next = match step {
            LocItem::Key(k) => property(node.schema, k),
            LocItem::Index(_) => node.schema.get("items"),
        };
        let Some(next) = next else {
            return Node {
                schema: &Value::Null,
                component: None,
                via: Vec::new(),
            };
        };
        node = resolve(document, next);
    }
    node
}

/// The schema marked with `keyword` nearest to the value at `path`, on its way from the root
/// (the value's own schema first, then the `Optional` or `$ref` it was reached through, inner
/// first): how long the marked part of the path is, and the schema.
pub(super) fn nearest_marked<'a>(
    document: &'a Value,
    path: &[LocItem],
    keyword: &str,
) -> Option<(usize, &'a Value)> {
    (1..=path.len()).rev().find_map(|n| {
        let node = node_at(document, &path[..n]);
        std::iter::once(node.schema)
            .chain(node.via.into_iter().rev())
            .find(|s| s.get(keyword).is_some())
            .map(|s| (n, s))
    })
}

/// The position of property `key` among the root's declared properties (fields not declared
/// sort last), so entries come in the type's field order, as pydantic gives them.
pub(super) fn field_rank(document: &Value, key: &str) -> usize {
    let root = resolve(document, document);
    parts(root.schema)
        .filter_map(|s| s["properties"].as_object())
        .flat_map(|p| p.keys())
        .position(|name| name == key)
        .unwrap_or(usize::MAX)
}
