//! The events a webhook batch carries, described by the agent SDK's own JSON Schema
//! (openhands-sdk 1.58.2, validation mode: the model crate's conformance corpus,
//! `schema/Event.json`), adjusted to what this server enforces (issue 7 §4):
//! - its `$defs` become components (`Event`, the union, and every model it references), each
//!   `$ref` rewritten;
//! - each discriminated union (`Event`, `Action`, `Observation`, …) is discriminated by `kind`,
//!   its mapping keyed by the `kind` values (the SDK's keys are Python class paths);
//! - `kind` is required wherever a model has one (the unions need it);
//! - an event's `id` holds no NUL (it is a column: API.md, NUL characters) and its `timestamp`
//!   follows the documented date-time pattern (the server takes any ISO-8601 instant, naive =
//!   UTC; the SDK writes naive ones);
//! - integers are bounded to 64 bits (the SDK's Python integers are not).
//!
//! The document stays readable: the operations name `Event`; the SDK's models sit under
//! components with the SDK's names and descriptions.

use serde_json::{Map, Value, json};
use switchboard_domain::validation::NO_NUL_PATTERN;

use super::requests::DATE_TIME_PATTERN;

/// The SDK's JSON Schema of an event (validation mode).
const SDK_EVENT_SCHEMA: &str =
    include_str!("../../../model/tests/fixtures/conformance/schema/Event.json");

/// The webhook that receives batches of events.
const EVENTS_WEBHOOK: &str = "/api/v1/webhooks/events/{conversation_id}";

/// Rewrites `#/$defs/X` references to components.
fn rewrite_refs(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref")
                && let Some(name) = r.strip_prefix("#/$defs/")
            {
                *r = format!("#/components/schemas/{name}");
            }
            map.values_mut().for_each(rewrite_refs);
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

/// The `kind` constant of model `name`, if it has one.
fn kind_of<'a>(defs: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    defs.get(name)?["properties"]["kind"]["const"].as_str()
}

/// Rebuilds every discriminator under `v` as `kind` → component, from its `oneOf` members.
fn rekey_discriminators(v: &mut Value, defs: &Map<String, Value>) {
    match v {
        Value::Object(map) => {
            if map.contains_key("discriminator")
                && let Some(Value::Array(members)) = map.get("oneOf")
            {
                let mut mapping = Map::new();
                for m in members {
                    if let Some(r) = m["$ref"].as_str() {
                        let name = r.rsplit('/').next().unwrap_or_default();
                        if let Some(kind) = kind_of(defs, name) {
                            mapping.insert(
                                kind.to_owned(),
                                Value::String(format!("#/components/schemas/{name}")),
                            );
                        }
                    }
                }
                map.insert(
                    "discriminator".into(),
                    json!({"propertyName": "kind", "mapping": mapping}),
                );
            }
            map.values_mut().for_each(|x| rekey_discriminators(x, defs));
        }
        Value::Array(items) => items.iter_mut().for_each(|x| rekey_discriminators(x, defs)),
        _ => {}
    }
}

/// Bounds every integer schema under `v` to 64 bits (keeping tighter bounds).
fn bound_integers(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map.get("type").and_then(Value::as_str) == Some("integer") {
                map.entry("minimum").or_insert(json!(i64::MIN));
                map.entry("maximum").or_insert(json!(i64::MAX));
            }
            map.values_mut().for_each(bound_integers);
        }
        Value::Array(items) => items.iter_mut().for_each(bound_integers),
        _ => {}
    }
}

/// The components describing an event: `Event` (the union) first, then the SDK's models.
pub fn schemas() -> Vec<(String, Value)> {
    let mut root: Value = serde_json::from_str(SDK_EVENT_SCHEMA).expect("the SDK schema is JSON");
    let Some(Value::Object(mut defs)) = root.as_object_mut().and_then(|r| r.remove("$defs")) else {
        panic!("the SDK schema has $defs");
    };
    let events: Vec<String> = root["oneOf"]
        .as_array()
        .expect("the SDK schema is a union")
        .iter()
        .filter_map(|m| m["$ref"].as_str())
        .map(|r| r.rsplit('/').next().unwrap_or_default().to_owned())
        .collect();
    let snapshot = defs.clone();
    rekey_discriminators(&mut root, &snapshot);
    for def in defs.values_mut() {
        rekey_discriminators(def, &snapshot);
        if def["properties"]["kind"]["const"].is_string() {
            let required = def
                .as_object_mut()
                .expect("a model is an object")
                .entry("required")
                .or_insert_with(|| json!([]));
            if let Value::Array(r) = required
                && !r.contains(&json!("kind"))
            {
                r.push(json!("kind"));
            }
        }
        bound_integers(def);
    }
    // Tool definitions name their action and observation by kind; the SDK's schema leaves
    // them untyped, the server takes the known kinds (and the SDK's run-time ones, which the
    // document does not list).
    let kinds = |union: &str| -> Vec<Value> {
        defs[union]["discriminator"]["mapping"]
            .as_object()
            .map(|m| m.keys().map(|k| json!(k)).collect())
            .unwrap_or_default()
    };
    let (actions, observations) = (kinds("Action"), kinds("Observation"));
    assert!(!actions.is_empty() && !observations.is_empty());
    for def in defs.values_mut() {
        let Some(props) = def.get_mut("properties") else {
            continue;
        };
        if props.get("action_type").is_some() && props.get("kind").is_some() {
            props["action_type"] =
                json!({"type": "string", "enum": actions, "title": "Action Type"});
            props["observation_type"] = json!({
                "anyOf": [{"type": "string", "enum": observations}, {"type": "null"}],
                "default": null,
                "title": "Observation Type",
            });
        }
    }
    // Where the server is more lenient than the SDK's schema says, the document says what the
    // server takes (a value valid for the server must not be described as invalid):
    // - an MCP tool definition's `mcp_tool` is kept as the MCP object it is, only its `name`
    //   checked;
    // - a message's `content` may also be a string or `null` (the SDK's reader turns them into
    //   a list);
    // - `Condensation.forgotten_event_ids` is a set, repeats allowed on input.
    defs["MCPToolDefinition"]["properties"]["mcp_tool"] = json!({
        "type": "object",
        "description": "The MCP tool definition (kept as sent; `name` is required).",
        "required": ["name"],
        "properties": {"name": {"type": "string"}},
    });
    let content = defs["Message"]["properties"]["content"].take();
    defs["Message"]["properties"]["content"] = json!({
        "title": "Content",
        "anyOf": [content, {"type": "string"}, {"type": "null"}],
    });
    if let Some(ids) = defs["Condensation"]["properties"]["forgotten_event_ids"].as_object_mut() {
        ids.remove("uniqueItems");
    }
    for name in &events {
        let props = &mut defs[name]["properties"];
        props["id"]["pattern"] = json!(NO_NUL_PATTERN);
        props["id"]["description"] =
            json!("Unique event id (ULID/UUID): no NUL (U+0000); default: generated");
        props["timestamp"]["pattern"] = json!(DATE_TIME_PATTERN);
        props["timestamp"]["description"] = json!(
            "Event timestamp: ISO-8601, naive = UTC (the SDK writes naive ones); default: now"
        );
    }
    let mut root = root.as_object().cloned().unwrap_or_default();
    root.insert(
        "description".into(),
        json!("An agent-server event: the agent SDK's model (openhands-sdk 1.58.2), discriminated by `kind`; `StreamingDeltaEvent`s are accepted and not stored."),
    );
    let mut out = vec![("Event".to_owned(), Value::Object(root))];
    let mut all: Vec<(String, Value)> = defs.into_iter().collect();
    all.iter_mut().for_each(|(_, v)| rewrite_refs(v));
    rewrite_refs(&mut out[0].1);
    out.extend(all);
    out
}

/// Adds the event components to `doc` and describes the events webhook's body as an array of
/// `Event`.
pub fn apply(doc: &mut Value) {
    let schemas = doc["components"]["schemas"]
        .as_object_mut()
        .expect("the document has schemas");
    for (name, schema) in self::schemas() {
        assert!(
            schemas.insert(name.clone(), schema).is_none(),
            "component {name} defined twice"
        );
    }
    super::requests::sort(schemas);
    let op = &mut doc["paths"][EVENTS_WEBHOOK]["post"];
    assert!(op.is_object(), "no webhook operation");
    op["requestBody"]["content"]["application/json"]["schema"] = json!({
        "type": "array",
        "items": {"$ref": "#/components/schemas/Event"},
    });
    op["requestBody"]["required"] = Value::Bool(true);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdk_schema_is_adjusted() {
        let schemas: Map<String, Value> = schemas().into_iter().collect();
        let event = &schemas["Event"];
        assert_eq!(event["discriminator"]["propertyName"], "kind");
        assert_eq!(
            event["discriminator"]["mapping"]["MessageEvent"],
            "#/components/schemas/MessageEvent"
        );
        let message = &schemas["MessageEvent"];
        assert!(
            message["required"]
                .as_array()
                .unwrap()
                .contains(&json!("kind"))
        );
        assert_eq!(message["properties"]["id"]["pattern"], NO_NUL_PATTERN);
        assert_eq!(
            message["properties"]["llm_message"]["$ref"],
            "#/components/schemas/Message"
        );
        let text = serde_json::to_string(&schemas).unwrap();
        assert!(!text.contains("#/$defs/"));
        assert!(
            !text.contains("-Input__1"),
            "every mapping is keyed by kind"
        );
        assert_eq!(
            schemas["TokenEvent"]["properties"]["prompt_token_ids"]["items"]["maximum"],
            json!(i64::MAX)
        );
    }
}
