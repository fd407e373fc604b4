//! The shared parameters of the document, and the request bodies not yet declared as typed
//! bodies (`switchboard_domain::typed_body`, whose schemas the document derives), written as
//! JSON Schema with every rule their parsers enforce that JSON Schema can state (issue 7 §4), so
//! that a request valid by the document is accepted and one invalid by it is refused.

use serde_json::{Map, Value, json};
use switchboard_domain::conversations::app::{ConversationTrigger, GIT_PROVIDERS};
use switchboard_domain::conversations::repository::{
    BRANCH_PATTERN, MAX_BRANCH_LEN, MAX_REPOSITORY_LEN, REPOSITORY_PATTERN,
};
use switchboard_domain::conversations::start_request::START_REQUEST_FIELDS;
pub use switchboard_domain::validation::NO_NUL_PATTERN;

use super::{canvas_requests, settings_requests};

pub use switchboard_domain::UUID_PATTERN;
pub use switchboard_domain::time_input::DATE_TIME_PATTERN;

/// The request body schemas still written by hand, by component name.
pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![("AppConversationStartRequest", start_request_schema())]
}

/// `AppConversationStartRequest` (reference app-server §5.1) as
/// [`parse_start_request`](switchboard_domain::conversations::start_request::parse_start_request)
/// reads it: only its fields (`additionalProperties: false`), each nullable, text without NUL,
/// enums for `git_provider`, `trigger` and `agent_type`, a `SendMessageRequest`-shaped
/// `initial_message`. What JSON Schema cannot state (a `suggested_task` excludes an
/// `initial_message`; the parent must exist) is a 400 the operation documents.
fn start_request_schema() -> Value {
    let text = || json!({"type": ["string", "null"], "pattern": NO_NUL_PATTERN});
    let uuid = || json!({"anyOf": [{"type": "string", "format": "uuid", "pattern": UUID_PATTERN}, {"type": "null"}]});
    let string_map = || {
        json!({
            "type": ["object", "null"],
            "additionalProperties": {"type": "string", "pattern": NO_NUL_PATTERN},
        })
    };
    let triggers: Vec<Value> = ConversationTrigger::ALL
        .iter()
        .map(|t| json!(t.as_str()))
        .chain([Value::Null])
        .collect();
    let providers: Vec<Value> = GIT_PROVIDERS
        .iter()
        .map(|p| json!(p))
        .chain([Value::Null])
        .collect();
    let properties = json!({
        "sandbox_id": uuid(),
        "conversation_id": uuid(),
        "initial_message": {
            "anyOf": [
                {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["content"],
                    "properties": {
                        "role": {"enum": ["user", null]},
                        "content": {
                            "type": "array",
                            "items": {"anyOf": [
                                {"type": "object", "required": ["type", "text"], "properties": {"type": {"const": "text"}, "text": {"type": "string", "pattern": NO_NUL_PATTERN}}},
                                {"type": "object", "required": ["type", "image_urls"], "properties": {"type": {"const": "image"}, "image_urls": {"type": "array"}}},
                            ]},
                        },
                        "run": {"type": "boolean", "default": true},
                    },
                },
                {"type": "null"},
            ],
        },
        "system_message_suffix": text(),
        "processors": {"type": ["array", "null"]},
        "llm_model": text(),
        "agent_profile_id": text(),
        "selected_repository": {
            "type": ["string", "null"],
            "maxLength": MAX_REPOSITORY_LEN,
            "pattern": REPOSITORY_PATTERN,
            "description": "The repository to clone (issue 18, Repository sources): `owner/repo` (cloned from its `git_provider`'s public host, GitHub when none), an `https://` or `ssh://` URL, or `user@host:path`, in printable ASCII without spaces. A local path or `file://` URL is accepted besides only under a directory the server's operator allows (`--allow-local-repositories`; none by default, and this pattern describes such a server). Anything else is a 422 at this field, before any sandbox starts.",
        },
        "selected_branch": {
            "type": ["string", "null"],
            "maxLength": MAX_BRANCH_LEN,
            "pattern": BRANCH_PATTERN,
            "description": "The branch to check out: a plain branch name, never anything git could read as an option.",
        },
        "git_provider": {"enum": providers},
        "suggested_task": {"type": ["object", "null"]},
        "title": text(),
        "trigger": {"enum": triggers},
        "pr_number": {"type": ["array", "null"], "items": {"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX}},
        "parent_conversation_id": uuid(),
        "agent_type": {"enum": ["default", "plan", null], "default": "default"},
        "public": {"type": ["boolean", "null"]},
        "plugins": {"type": ["array", "null"]},
        "secrets": string_map(),
        "sandbox_spec_id": text(),
        "max_iterations": {"type": ["integer", "null"], "minimum": 1, "maximum": i64::MAX},
        "tags": string_map(),
    });
    debug_assert!(
        START_REQUEST_FIELDS
            .iter()
            .all(|f| properties.get(f).is_some())
    );
    json!({
        "type": "object",
        "description": "OpenHands' `AppConversationStartRequest`, read strictly: an unknown field or a value of the wrong shape is a 422. Switchboard also takes `sandbox_spec_id` (the spec of a new sandbox), `max_iterations` and `tags`. `secrets` are sealed at rest and never echoed.",
        "additionalProperties": false,
        "properties": properties,
    })
}

/// Which operation takes which body: `(path, method, schema name)`.
const BODIES: [(&str, &str, &str); 2] = [
    (
        "/api/v1/app-conversations",
        "post",
        "AppConversationStartRequest",
    ),
    (
        "/api/v1/app-conversations/stream-start",
        "post",
        "AppConversationStartRequest",
    ),
];

/// The `X-Org-Id` header: a UUID, optional, never null.
fn org_header_schema() -> Value {
    json!({"type": "string", "format": "uuid"})
}

/// Adds the request schemas (these and [`settings_requests`]') to `doc`'s components, points the operations' bodies at them,
/// gives every `X-Org-Id` parameter its UUID schema and every UUID in a path or a query its
/// [`UUID_PATTERN`].
pub fn apply(doc: &mut Value) {
    let schemas = doc["components"]["schemas"]
        .as_object_mut()
        .expect("the document has schemas");
    for (name, schema) in self::schemas()
        .into_iter()
        .chain(settings_requests::schemas())
        .chain(canvas_requests::schemas())
    {
        schemas.insert(name.to_owned(), schema);
    }
    sort(schemas);
    let bodies = BODIES.map(|(path, method, name)| (path, method, name, true));
    for (path, method, name, required) in bodies
        .into_iter()
        .chain(settings_requests::BODIES)
        .chain(canvas_requests::BODIES)
    {
        let op = &mut doc["paths"][path][method];
        assert!(op.is_object(), "no operation {method} {path}");
        op["requestBody"]["content"]["application/json"]["schema"] =
            json!({ "$ref": format!("#/components/schemas/{name}") });
        op["requestBody"]["required"] = Value::Bool(required);
    }
    for item in doc["paths"]
        .as_object_mut()
        .into_iter()
        .flat_map(|p| p.values_mut())
    {
        for op in item
            .as_object_mut()
            .into_iter()
            .flat_map(|o| o.values_mut())
        {
            let params = op.get_mut("parameters").and_then(Value::as_array_mut);
            for p in params.into_iter().flatten() {
                if p["name"] == "X-Org-Id" {
                    p["schema"] = org_header_schema();
                } else if p["in"] == "path" || p["in"] == "query" {
                    pattern_uuids(&mut p["schema"]);
                }
            }
        }
    }
}

/// Gives every `format: uuid` string in `schema` (nested in `anyOf`, `oneOf` or `items`)
/// [`UUID_PATTERN`]. The `X-Org-Id` header keeps `format` alone: its value is trimmed before it
/// is parsed, so the header takes more than the pattern says.
fn pattern_uuids(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if object.get("format").and_then(Value::as_str) == Some("uuid") {
        object
            .entry("pattern")
            .or_insert_with(|| Value::from(UUID_PATTERN));
    }
    for key in ["anyOf", "oneOf"] {
        for member in object
            .get_mut(key)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            pattern_uuids(member);
        }
    }
    if let Some(items) = object.get_mut("items") {
        pattern_uuids(items);
    }
}

/// Sorts a component map by name, as utoipa writes it.
pub(super) fn sort(map: &mut Map<String, Value>) {
    let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    map.extend(entries);
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_domain::identity::api_keys::KEY_NAME_PATTERN;
    use switchboard_domain::validation::NO_NUL_PATTERN;

    fn matches(pattern: &str, s: &str) -> bool {
        regex::Regex::new(pattern).unwrap().is_match(s)
    }

    /// The documented patterns say exactly what the server's rules say, on samples of every
    /// kind (the server's rules are the source).
    #[test]
    fn patterns_agree_with_the_rules() {
        for (s, ok) in [
            ("k", true),
            (" k ", true),
            (" ", false),
            ("\u{3000}\t", false),
            ("\u{1c}", true),
            ("k\u{0}", false),
            ("\u{feff}", true),
        ] {
            assert_eq!(matches(KEY_NAME_PATTERN, s), ok, "name {s:?}");
            let parsed = switchboard_domain::identity::api_keys::ApiKeyCreate::named(s);
            assert_eq!(parsed.is_ok(), ok, "name {s:?}");
        }
        for s in [
            "2026-11-23T10:00:00",
            "1999-01-28T23:59:59.123456Z",
            "2999-12-01T00:00:00-13:59",
        ] {
            assert!(matches(DATE_TIME_PATTERN, s), "{s}");
            assert!(
                switchboard_domain::time_input::parse_datetime(s).is_some(),
                "{s}"
            );
        }
        assert!(matches(NO_NUL_PATTERN, "ab") && !matches(NO_NUL_PATTERN, "a\u{0}"));
        for s in [
            "0ab2e2bb-c820-4933-8b28-222c9733efa0",
            "0AB2E2BB-C820-4933-8B28-222C9733EFA0",
            "0ab2e2bbc82049338b28222c9733efa0",
            "None",
            "",
            "{0ab2e2bb-c820-4933-8b28-222c9733efa0}",
            "urn:uuid:0ab2e2bb-c820-4933-8b28-222c9733efa0",
            "0ab2e2bb-c82049338b28-222c9733efa0",
            "0ab2e2bbc-820-4933-8b28-222c9733efa0",
            "0ab2e2bb-c820-4933-8b28-222c9733efa0\n",
            "0ab2e2bb-c820-4933-8b28-222c9733efg0",
        ] {
            assert_eq!(
                matches(UUID_PATTERN, s),
                switchboard_domain::parse_uuid(s).is_some(),
                "uuid {s:?}"
            );
        }
    }

    /// Every UUID a path or a query takes carries the pattern (a path id copied from a `null`
    /// is `None`, which `format` alone lets pass for valid).
    #[test]
    fn path_and_query_uuids_have_the_pattern() {
        let doc = crate::openapi::document();
        let mut seen = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                for p in op["parameters"].as_array().into_iter().flatten() {
                    let text = p["schema"].to_string();
                    if p["in"] != "header" && text.contains(r#""format":"uuid""#) {
                        assert!(
                            text.contains(UUID_PATTERN),
                            "{method} {path} {}: {text}",
                            p["name"]
                        );
                        seen += 1;
                    }
                }
            }
        }
        assert!(seen >= 10, "only {seen} UUID parameters");
    }
}
