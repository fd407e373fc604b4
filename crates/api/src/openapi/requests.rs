//! The request bodies and shared parameters of the document, written as JSON Schema with every
//! rule the parsers enforce that JSON Schema can state (issue 7 §4), so that a request valid by
//! the document is accepted and one invalid by it is refused: lengths, patterns (NUL where a
//! column cannot hold it, marketplace names and sources), `exclusiveMinimum`, non-nullable
//! fields, the accepted date-time forms. What JSON Schema cannot state is in the descriptions
//! and in API.md (an expiry in the future beyond what the pattern allows, unique marketplace
//! names, a `page_id` returned by the service).
//!
//! Written as JSON rather than derived from Rust types: `not`, `anyOf` of strings, numbers and
//! `null`, and `patternProperties`-free exact patterns are beyond what the derive expresses.

use serde_json::{Map, Value, json};
use switchboard_domain::conversations::app::{ConversationTrigger, GIT_PROVIDERS};
use switchboard_domain::conversations::repository::{
    BRANCH_PATTERN, MAX_BRANCH_LEN, MAX_REPOSITORY_LEN, REPOSITORY_PATTERN,
};
use switchboard_domain::conversations::start_request::START_REQUEST_FIELDS;
use switchboard_domain::identity::api_keys::{KEY_NAME_PATTERN, MAX_KEY_NAME_CHARS};
pub use switchboard_domain::validation::NO_NUL_PATTERN;

use super::canvas_requests;

/// A date-time as the parsers take it (ISO-8601, naive = UTC), restricted to a plain form that
/// every accepted value generator can only produce valid instances of: years 1900 to 2999, days
/// 1 to 28, optional fraction (µs) and offset. The parsers accept more (any day, dates alone,
/// Unix seconds): see the descriptions.
pub const DATE_TIME_PATTERN: &str = r"^(19|2[0-9])[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?(Z|[+-](0[0-9]|1[0-3]):[0-5][0-9])?$";
/// As [`DATE_TIME_PATTERN`], in years 2100 to 2999: an instant surely in the future (an API
/// key's expiry must be).
pub const FUTURE_DATE_TIME_PATTERN: &str = r"^2[1-9][0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?(Z|[+-](0[0-9]|1[0-3]):[0-5][0-9])?$";
/// A marketplace name (after trimming): a letter, then letters, digits, `-`, `_`.
pub const MARKETPLACE_NAME_PATTERN: &str = r"^[a-zA-Z][a-zA-Z0-9_-]*$";
/// A marketplace source, one of: `github:owner/repo`; a git URL (`http(s)://`, `ssh://`,
/// `git://`, `git@`, an optional bare user name); a relative local path with no `..` segment.
pub const MARKETPLACE_SOURCE_PATTERNS: [&str; 3] = [
    r"^github:[a-zA-Z0-9_.-]+/[a-zA-Z0-9_.-]+$",
    r"^(https?://|ssh://|git://|git@)([A-Za-z0-9._~-]+@)?[A-Za-z0-9.-]+[:/][A-Za-z0-9._~/:-]*[A-Za-z0-9._~-]$",
    r"^[a-zA-Z0-9_][a-zA-Z0-9_.-]*(/([a-zA-Z0-9_-][a-zA-Z0-9_.-]*|\.([a-zA-Z0-9_-][a-zA-Z0-9_.-]*)?|\.\.[a-zA-Z0-9_.-]+)?)*$",
];
/// A UUID as every id parser takes it ([`switchboard_domain::parse_uuid`]): 32 hex digits, or
/// dashed `8-4-4-4-12`; either case. `format: uuid` alone states no form (validators need not
/// check formats), so a client or a generator that reads only the schema could take any string
/// for an id, and values such as `None` (a missing id copied into a path) for valid ones.
pub const UUID_PATTERN: &str = r"^([0-9a-fA-F]{32}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$";
/// What a `repo_path` must not match: absolute, `..` anywhere, a URL.
pub const REPO_PATH_REFUSED: &str = r"^/|\.\.|://";
/// Unix seconds of 1900-01-01 and 3000-01-01: the range of [`DATE_TIME_PATTERN`].
const UNIX_1900: i64 = -2_208_988_800;
const UNIX_3000: i64 = 32_503_680_000;
/// Unix seconds of 2100-01-01.
const UNIX_2100: i64 = 4_102_444_800;

/// A date-time as a string, Unix seconds or `null`, within `[from, to)` seconds and matching
/// `pattern` as a string.
fn date_time(pattern: &str, from: i64, to: i64, description: &str) -> Value {
    json!({
        "description": description,
        "anyOf": [
            {"type": "string", "pattern": pattern},
            {"type": "number", "minimum": from, "exclusiveMaximum": to},
            {"type": "null"},
        ],
    })
}

// Over 100 lines, on purpose: a declaration (one JSON Schema literal per request body), not logic.
/// The request body schemas, by component name.
pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        ("AppConversationStartRequest", start_request_schema()),
        (
            "ApiKeyCreate",
            json!({
                "type": "object",
                "description": "`POST /api/keys` body (other keys are ignored).",
                "required": ["name"],
                "properties": {
                    "name": {
                        "type": "string",
                        "description": format!("1 to {MAX_KEY_NAME_CHARS} characters, not all white space (trimmed), no NUL (U+0000)."),
                        "minLength": 1,
                        "maxLength": MAX_KEY_NAME_CHARS,
                        "pattern": KEY_NAME_PATTERN,
                    },
                    "expires_at": date_time(
                        FUTURE_DATE_TIME_PATTERN, UNIX_2100, UNIX_3000,
                        "Optional expiry, which must be in the future: RFC 3339 or naive ISO-8601 (UTC), a date, or Unix seconds; the schema gives years 2100 to 2999, the server takes any future instant.",
                    ),
                },
            }),
        ),
        (
            "MarketplaceRegistrationInput",
            json!({
                "type": "object",
                "description": "A marketplace entry as sent (other keys are ignored; `scope` is accepted and replaced by `org`). Names must be unique in the list (400 otherwise).",
                "required": ["name", "source"],
                "properties": {
                    "name": {"type": "string", "pattern": MARKETPLACE_NAME_PATTERN, "description": "A letter, then letters, digits, `-`, `_` (surrounding white space is trimmed)."},
                    "source": {
                        "description": "`github:owner/repo`, a git URL (`http(s)://`, `ssh://`, `git://`, `git@`; a bare user name at most), or a relative local path without `..` (surrounding white space is trimmed).",
                        "anyOf": MARKETPLACE_SOURCE_PATTERNS.map(|p| json!({"type": "string", "pattern": p})),
                    },
                    "ref": {"type": ["string", "null"], "description": "Git ref, or null."},
                    "repo_path": {
                        "type": ["string", "null"],
                        "description": "Relative path inside the repository: no leading `/`, no `..`, no `://`; or null.",
                        "not": {"type": "string", "pattern": REPO_PATH_REFUSED},
                    },
                    "auto_load": {"type": "boolean", "description": "Default false (`null` is refused)."},
                    "scope": {"enum": ["instance", "org", "personal", null], "description": "Ignored: always `org`."},
                },
            }),
        ),
        (
            "OrgAppSettingsUpdate",
            json!({
                "type": "object",
                "description": "`OrgAppSettingsUpdate`: every field optional; an absent field is left alone; other keys are ignored.",
                "properties": {
                    "enable_proactive_conversation_starters": {"type": "boolean", "description": "A boolean (`null` is refused)."},
                    "max_budget_per_task": {
                        "description": "A finite number > 0, or `null` to clear.",
                        "anyOf": [
                            {"type": "number", "exclusiveMinimum": 0, "maximum": f64::MAX},
                            {"type": "null"},
                        ],
                    },
                    "llm_monthly_budget": {
                        "description": "The organization's LLM budget in USD per calendar month (UTC): a finite number > 0, or `null` to clear. The LLM pass-through refuses the organization's requests once its recorded cost this month reaches it.",
                        "anyOf": [
                            {"type": "number", "exclusiveMinimum": 0, "maximum": f64::MAX},
                            {"type": "null"},
                        ],
                    },
                    "registered_marketplaces": {
                        "type": "array",
                        "items": {"$ref": "#/components/schemas/MarketplaceRegistrationInput"},
                        "description": "The whole list (replaces it; `null` is refused); names unique (400 otherwise). Needs `edit_org_settings`.",
                    },
                    "last_known_updated_at": date_time(
                        DATE_TIME_PATTERN, UNIX_1900, UNIX_3000,
                        "The `updated_at` last seen: RFC 3339 or naive ISO-8601 (UTC), a date, or Unix seconds. When given and not equal to the stored version: 409.",
                    ),
                },
            }),
        ),
        (
            "ConversationInfo",
            json!({
                "type": "object",
                "description": "The agent server's `ConversationInfo`: `id` is required; `title` and `execution_status` are read (a status OpenHands does not define is ignored), the LLM model from `agent.llm.model` and the metrics from `stats` (combined over its LLM usages; else `metrics`); the whole object is kept as the conversation's metadata, NUL included (the title column gets U+FFFD for each NUL). The same object twice changes nothing.",
                "required": ["id"],
                "properties": {
                    "id": {"type": "string", "format": "uuid", "pattern": UUID_PATTERN, "description": "The conversation (dashed or 32 hex digits)."},
                    "title": {"type": ["string", "null"]},
                    "execution_status": {"type": ["string", "null"], "description": "`idle`, `running`, `paused`, `waiting_for_confirmation`, `finished`, `error`, `stuck`, `deleting` (the run state is kept and no conversation is created; the title, model and metrics are read), or a newer value (ignored)."},
                },
            }),
        ),
    ]
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
const BODIES: [(&str, &str, &str); 5] = [
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
    ("/api/keys", "post", "ApiKeyCreate"),
    ("/api/organizations/app", "post", "OrgAppSettingsUpdate"),
    ("/api/v1/webhooks/conversations", "post", "ConversationInfo"),
];

/// The `X-Org-Id` header: a UUID, optional, never null.
fn org_header_schema() -> Value {
    json!({"type": "string", "format": "uuid"})
}

/// Adds the request schemas (these and [`canvas_requests`]') to `doc`'s components, points the operations' bodies at them,
/// gives every `X-Org-Id` parameter its UUID schema and every UUID in a path or a query its
/// [`UUID_PATTERN`].
pub fn apply(doc: &mut Value) {
    let schemas = doc["components"]["schemas"]
        .as_object_mut()
        .expect("the document has schemas");
    for (name, schema) in self::schemas()
        .into_iter()
        .chain(canvas_requests::schemas())
    {
        schemas.insert(name.to_owned(), schema);
    }
    sort(schemas);
    let bodies = BODIES.map(|(path, method, name)| (path, method, name, true));
    for (path, method, name, required) in bodies.into_iter().chain(canvas_requests::BODIES) {
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
    use switchboard_domain::settings::{is_valid_marketplace_source, is_valid_repo_path};
    use switchboard_domain::validation::NO_NUL_PATTERN;

    fn matches(pattern: &str, s: &str) -> bool {
        regex::Regex::new(pattern).unwrap().is_match(s)
    }

    /// The documented patterns say exactly what the server's rules say, on samples of every
    /// kind (the server's rules are the source).
    #[test]
    fn patterns_agree_with_the_rules() {
        for s in [
            "github:o/r",
            "github:o.x/r-y_z",
            "github:/r",
            "github:o/r/x",
            "https://h/p",
            "https://u@h/p.git",
            "https://u:p@h/p",
            "git@github.com:o/r.git",
            "ssh://h:22/x",
            "git://h/x",
            "http://h",
            "a",
            "a/b",
            "a/../b",
            "a/..",
            "a/...",
            "a/.x",
            "a/..x",
            "a//b",
            "a/.",
            "./a",
            "../a",
            "/a",
            "_x",
            "-x",
            "a b",
            "",
            "a:b",
            "ftp://h/p",
        ] {
            let documented = MARKETPLACE_SOURCE_PATTERNS.iter().any(|p| matches(p, s));
            assert_eq!(documented, is_valid_marketplace_source(s), "source {s:?}");
        }
        for s in [
            "a", "a/b", "/a", "a/../b", "..", "x://y", "a.b", "a:b", "", ".a",
        ] {
            assert_eq!(
                !matches(REPO_PATH_REFUSED, s),
                is_valid_repo_path(s),
                "repo_path {s:?}"
            );
        }
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
            let parsed =
                switchboard_domain::identity::api_keys::parse_new_key(&json!({ "name": s }));
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
