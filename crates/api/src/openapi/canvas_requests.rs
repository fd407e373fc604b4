//! The request bodies of the routes Agent Canvas uses (issue 25), as JSON Schema with every
//! rule their parsers enforce that JSON Schema can state: the agent profile union (each kind's
//! fields only, `llm_profile_ref` required for `openhands`, the bounds), the provider
//! connection bodies (required fields on create, a key never null), and no NUL anywhere. What
//! it cannot state (a name already taken, the limits) is in the descriptions and API.md.

use serde_json::{Map, Value, json};
use switchboard_domain::agent_profile_fields::{ACP_SERVERS, AGENT_CLASS};
use switchboard_domain::agent_profiles::SCHEMA_VERSION;
use switchboard_domain::validation::NO_NUL_PATTERN;

use switchboard_domain::user_settings::agent_fields::{condenser_schema, verification_schema};
use switchboard_domain::user_settings::diffs::BASE_URL_PATTERN;

/// A schema the domain declares, as JSON.
fn as_json(schema: utoipa::openapi::schema::Schema) -> Value {
    serde_json::to_value(schema).expect("a schema serializes")
}

fn component(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// Text without NUL, at least one character.
fn text() -> Value {
    json!({"type": "string", "minLength": 1, "pattern": NO_NUL_PATTERN})
}

/// Text without NUL, or `null`.
fn nullable_text() -> Value {
    json!({"type": ["string", "null"], "pattern": NO_NUL_PATTERN})
}

/// A list of names without NUL, or `null`.
fn names() -> Value {
    json!({"type": ["array", "null"], "items": {"type": "string", "pattern": NO_NUL_PATTERN}})
}

/// The fields every agent profile takes (`id`, `name`, `revision` are ignored).
fn common(kind: &str) -> Map<String, Value> {
    let mut p = Map::new();
    p.insert("agent_kind".into(), json!({"enum": [kind]}));
    p.insert(
        "schema_version".into(),
        json!({"type": ["integer", "null"], "minimum": 1, "maximum": SCHEMA_VERSION}),
    );
    for ignored in ["id", "name", "revision"] {
        p.insert(ignored.into(), component("JsonValueWithoutNul"));
    }
    p.insert("mcp_server_refs".into(), names());
    p.insert("secret_refs".into(), names());
    p
}

fn openhands_profile() -> Value {
    let mut p = common("openhands");
    for (k, v) in [
        ("llm_profile_ref", text()),
        (
            "agent",
            json!({"enum": [AGENT_CLASS], "description": "The one agent class the agent server builds (the SDK's `Agent`)."}),
        ),
        (
            "tools",
            json!({"type": ["array", "null"], "items": {
                "type": "object", "required": ["name"],
                "properties": {"name": text(), "params": component("JsonValueWithoutNul")},
                "propertyNames": {"pattern": NO_NUL_PATTERN},
                "additionalProperties": component("JsonValueWithoutNul"),
            }}),
        ),
        ("system_message_suffix", nullable_text()),
        ("disabled_skills", names()),
        ("condenser", as_json(condenser_schema())),
        ("verification", as_json(verification_schema())),
        ("enable_sub_agents", json!({"type": "boolean"})),
        ("enable_switch_llm_tool", json!({"type": "boolean"})),
        (
            "tool_concurrency_limit",
            json!({"type": "integer", "minimum": 1, "maximum": i64::MAX}),
        ),
    ] {
        p.insert(k.into(), v);
    }
    json!({
        "type": "object",
        "title": "OpenHandsAgentProfile",
        "required": ["llm_profile_ref"],
        "properties": p,
        "additionalProperties": false,
    })
}

fn acp_profile() -> Value {
    let mut p = common("acp");
    let timeout = json!({"type": "number", "exclusiveMinimum": 0, "maximum": f64::MAX});
    for (k, v) in [
        ("acp_server", json!({"enum": ACP_SERVERS})),
        ("acp_model", nullable_text()),
        ("acp_session_mode", nullable_text()),
        ("acp_prompt_timeout", timeout.clone()),
        ("acp_startup_timeout", timeout),
        (
            "acp_command",
            json!({"anyOf": [{"type": "string", "pattern": NO_NUL_PATTERN}, names()]}),
        ),
        ("acp_args", names()),
    ] {
        p.insert(k.into(), v);
    }
    json!({
        "type": "object",
        "title": "ACPAgentProfile",
        "required": ["agent_kind"],
        "properties": p,
        "additionalProperties": false,
    })
}

fn connection(create: bool) -> Value {
    let required: Vec<&str> = if create {
        vec!["display_name", "provider", "api_key"]
    } else {
        vec![]
    };
    json!({
        "type": "object",
        "required": required,
        "properties": {
            "display_name": text(),
            "provider": text(),
            "api_key": {"type": "string", "minLength": 1, "pattern": NO_NUL_PATTERN, "description": "Sealed; never answered (`api_key_set`)."},
            "base_url": {"type": ["string", "null"], "pattern": BASE_URL_PATTERN},
        },
        "propertyNames": {"pattern": NO_NUL_PATTERN},
        "additionalProperties": component("JsonValueWithoutNul"),
    })
}

/// The schemas, by name.
pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        (
            "AgentProfile",
            json!({
                "description": "The SDK's `AgentProfile`: `agent_kind` `openhands` (the default) or `acp`, each kind's fields only. The path names the profile; `id`, `name` and `revision` sent are ignored.",
                "oneOf": [openhands_profile(), acp_profile()],
            }),
        ),
        ("CreateProviderConnectionRequest", connection(true)),
        ("UpdateProviderConnectionRequest", connection(false)),
    ]
}

/// Which operation takes which body: `(path, method, schema name, required)`.
pub const BODIES: [(&str, &str, &str, bool); 3] = [
    ("/api/agent-profiles/{name}", "post", "AgentProfile", true),
    (
        "/api/organizations/{org_id}/provider-connections",
        "post",
        "CreateProviderConnectionRequest",
        true,
    ),
    (
        "/api/organizations/{org_id}/provider-connections/{id}",
        "patch",
        "UpdateProviderConnectionRequest",
        true,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every body named in [`BODIES`] has a schema, and the document points at it.
    #[test]
    fn bodies_are_in_the_document() {
        let doc = crate::openapi::document();
        for (path, method, name, required) in BODIES {
            assert!(doc["components"]["schemas"][name].is_object(), "{name}");
            let body = &doc["paths"][path][method]["requestBody"];
            assert_eq!(
                body["content"]["application/json"]["schema"]["$ref"],
                format!("#/components/schemas/{name}"),
                "{method} {path}"
            );
            assert_eq!(body["required"], required, "{method} {path}");
        }
        let one_of = &doc["components"]["schemas"]["AgentProfile"]["oneOf"];
        assert_eq!(one_of[0]["required"], json!(["llm_profile_ref"]));
        assert_eq!(
            one_of[1]["properties"]["agent_kind"],
            json!({"enum": ["acp"]})
        );
    }
}
