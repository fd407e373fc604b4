//! Agent profiles (issue 25; the agent server's `/api/agent-profiles`, which OpenHands' cloud
//! serves with the same contract and which Agent Canvas uses to start conversations): named
//! agent launch specifications of a user in an organization, at most [`MAX_AGENT_PROFILES`],
//! one of them active. A profile names an LLM profile (`llm_profile_ref`) instead of holding
//! an LLM, so it holds no secret and is stored as it is (the SDK's `AgentProfile`, #4017).
//!
//! Two kinds, told apart by `agent_kind` (default `openhands`), each with its own fields and
//! no other (the SDK's `extra="forbid"`): [`OPENHANDS_FIELDS`] and [`ACP_FIELDS`], plus the
//! common [`COMMON_FIELDS`]. A profile keeps a stable `id` (a UUID, minted on its first save,
//! kept by saves and renames) and a `revision` that each save of an existing name bumps.
//! `condenser`, `verification`, `agent` and `acp_server` are read by
//! [`crate::agent_profile_fields`] (with the values refused there and why); what each field
//! does at a start is `services::agent_launch`'s table.

use serde_json::{Map, Value, json};
use switchboard_model::{ErrorType, LocItem, ValidationError};
use uuid::Uuid;

use crate::agent_profile_fields::{
    AGENT_CLASS, check_acp_server, check_agent_class, parse_condenser, parse_verification,
};
use crate::named_profiles::{Collection, Named};
use crate::user_settings::refuse_nul_deep;
use crate::validation::{
    bool_type, field, float_type, list_type, loc, missing, model_type, not_one_of,
    string_too_short, string_type,
};

/// The most agent profiles a user keeps in one organization; one more is a 409 (the agent
/// server's `MAX_AGENT_PROFILES`).
pub const MAX_AGENT_PROFILES: usize = 50;

/// Agent profiles as a collection: `Agent profile` in the messages, at most
/// [`MAX_AGENT_PROFILES`] (the agent server's words at the limit).
pub const AGENT_PROFILES: Collection = Collection {
    noun: "Agent profile",
    limit: MAX_AGENT_PROFILES,
    full: || {
        format!(
            "Agent profile limit reached ({MAX_AGENT_PROFILES}). Delete a profile before saving a new one."
        )
    },
};

/// A profile as a list answers it (the agent server's `AgentProfileInfo`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct AgentProfileInfo {
    /// Its id (a UUID), kept across saves and renames.
    pub id: String,
    /// Its name.
    pub name: String,
    /// `openhands` or `acp`.
    pub agent_kind: String,
    /// Its revision: 0 when created, one more at each save.
    pub revision: i64,
    /// The LLM profile it names (`openhands`), or `null`.
    #[schema(value_type = Option<String>)]
    pub llm_profile_ref: Value,
    /// The MCP servers it names, or `null`.
    #[schema(value_type = Option<Vec<String>>)]
    pub mcp_server_refs: Value,
}

/// `GET /api/agent-profiles`' answer (`AgentProfileListResponse`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct AgentProfileListResponse {
    /// The profiles, by name.
    pub profiles: Vec<AgentProfileInfo>,
    /// The active profile's id, or `null` (none is seeded).
    pub active_agent_profile_id: Option<String>,
}

/// `GET /api/agent-profiles/{name}`'s answer (`AgentProfileDetailResponse`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct AgentProfileDetailResponse {
    /// The profile's name.
    pub name: String,
    /// The whole profile (the SDK's `AgentProfile`: its kind's fields, `id`, `name`,
    /// `revision`, `agent_kind`, `schema_version`).
    #[schema(value_type = Object)]
    pub profile: Value,
}

/// The schema version profiles are stored at (the SDK's `AGENT_PROFILE_SCHEMA_VERSION`).
pub const SCHEMA_VERSION: i64 = 3;

/// The fields of every profile. `id`, `name` and `revision` are the server's: what a save
/// sends for them is ignored (the path names the profile).
pub const COMMON_FIELDS: [&str; 7] = [
    "schema_version",
    "id",
    "name",
    "revision",
    "agent_kind",
    "mcp_server_refs",
    "secret_refs",
];

/// The fields of an `openhands` profile besides [`COMMON_FIELDS`] (the SDK's
/// `OpenHandsAgentProfile`).
pub const OPENHANDS_FIELDS: [&str; 10] = [
    "llm_profile_ref",
    "agent",
    "tools",
    "system_message_suffix",
    "disabled_skills",
    "condenser",
    "verification",
    "enable_sub_agents",
    "enable_switch_llm_tool",
    "tool_concurrency_limit",
];

/// The fields of an `acp` profile besides [`COMMON_FIELDS`] (the SDK's `ACPAgentProfile`).
pub const ACP_FIELDS: [&str; 7] = [
    "acp_server",
    "acp_model",
    "acp_session_mode",
    "acp_prompt_timeout",
    "acp_startup_timeout",
    "acp_command",
    "acp_args",
];

/// A stored agent profile.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredAgentProfile {
    /// Stable id (a UUID), kept across saves and renames; conversations record it.
    pub id: Uuid,
    /// Name, a profile name (`^[A-Za-z0-9._-]{1,64}$`), unique in its set.
    pub name: String,
    /// Bumped by each save of an existing name; 0 at creation.
    pub revision: i64,
    /// `openhands` or `acp`.
    pub agent_kind: String,
    /// The profile's other fields (defaults filled in), without `id`, `name`, `revision`.
    pub body: Map<String, Value>,
}

impl StoredAgentProfile {
    /// The whole profile as the SDK dumps it: the body with `id`, `name` and `revision`.
    pub fn document(&self) -> Value {
        let mut out = self.body.clone();
        out.insert("id".into(), json!(self.id.to_string()));
        out.insert("name".into(), json!(self.name));
        out.insert("revision".into(), json!(self.revision));
        out.insert("agent_kind".into(), json!(self.agent_kind));
        Value::Object(out)
    }

    /// The list entry (the agent server's `AgentProfileInfo`).
    pub fn summary(&self) -> AgentProfileInfo {
        let field = |key: &str| self.body.get(key).cloned().unwrap_or(Value::Null);
        AgentProfileInfo {
            id: self.id.to_string(),
            name: self.name.clone(),
            agent_kind: self.agent_kind.clone(),
            revision: self.revision,
            llm_profile_ref: field("llm_profile_ref"),
            mcp_server_refs: field("mcp_server_refs"),
        }
    }

    /// `body.<key>` as text.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.body.get(key)?.as_str()
    }

    /// `body.<key>` as a list of names, `None` when null or absent.
    pub fn names(&self, key: &str) -> Option<Vec<String>> {
        Some(
            self.body
                .get(key)?
                .as_array()?
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
        )
    }
}

/// One user's profiles in one organization, by name, and the active one's id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentProfileSet {
    /// The profiles, sorted by name.
    pub profiles: Vec<StoredAgentProfile>,
    /// The active profile's id (a pointer: activating changes nothing else).
    pub active_id: Option<Uuid>,
}

impl Named for StoredAgentProfile {
    fn name(&self) -> &str {
        &self.name
    }

    fn set_name(&mut self, name: &str) {
        name.clone_into(&mut self.name);
    }
}

impl AgentProfileSet {
    /// The profile named `name`.
    pub fn by_name(&self, name: &str) -> Option<&StoredAgentProfile> {
        Collection::find(&self.profiles, name)
    }

    /// The profile whose id is `id` (any text; not a UUID matches none).
    pub fn by_id(&self, id: &str) -> Option<&StoredAgentProfile> {
        let id = Uuid::parse_str(id).ok()?;
        self.profiles.iter().find(|p| p.id == id)
    }

    /// `AgentProfileListResponse`: `{profiles: [AgentProfileInfo…], active_agent_profile_id}`.
    pub fn list(&self) -> AgentProfileListResponse {
        AgentProfileListResponse {
            profiles: self
                .profiles
                .iter()
                .map(StoredAgentProfile::summary)
                .collect(),
            active_agent_profile_id: self.active_id.map(|i| i.to_string()),
        }
    }
}

/// A save body, read: the kind and the body to store (defaults filled in, `id`, `name` and
/// `revision` left out).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentProfileInput {
    /// `openhands` or `acp`.
    pub agent_kind: String,
    /// What is stored besides the identity.
    pub body: Map<String, Value>,
}

/// Reads a save body (`POST /api/agent-profiles/{name}`), as the SDK's
/// `validate_agent_profile` does: an unversioned body is taken as version 2 and brought to
/// [`SCHEMA_VERSION`] (`acp_command` as a string is split on whitespace into a list), a field
/// of the other kind or unknown is refused, missing fields get their defaults.
///
/// # Errors
/// A 422 entry at `["body", …]`: not an object, an unknown `agent_kind`, a
/// `schema_version` that is not an integer from 1 to [`SCHEMA_VERSION`], an extra field, a
/// field of the wrong type, an `openhands` profile without `llm_profile_ref`, a NUL.
pub fn parse_agent_profile(body: &Value) -> Result<AgentProfileInput, ValidationError> {
    let root = loc(["body"]);
    let Some(obj) = body.as_object() else {
        return Err(model_type(root, "AgentProfile", body));
    };
    refuse_nul_deep(body, &root)?;
    let kind = match obj.get("agent_kind") {
        None => "openhands".to_owned(),
        Some(Value::String(k)) if k == "openhands" || k == "acp" => k.clone(),
        Some(other) => {
            return Err(not_one_of(
                ErrorType::LiteralError,
                field(&root, "agent_kind"),
                &["openhands", "acp"],
                other,
            ));
        }
    };
    let at = |k: &str| field(&root, k);
    let own: &[&str] = if kind == "acp" {
        &ACP_FIELDS
    } else {
        &OPENHANDS_FIELDS
    };
    for (k, v) in obj {
        if !COMMON_FIELDS.contains(&k.as_str()) && !own.contains(&k.as_str()) {
            return Err(ValidationError::new(
                ErrorType::ExtraForbidden,
                at(k),
                "Extra inputs are not permitted",
            )
            .with_input(v.clone()));
        }
    }
    match obj.get("schema_version") {
        None | Some(Value::Null) => {}
        Some(v) => match whole(v) {
            Some(n) if (1..=SCHEMA_VERSION).contains(&n) => {}
            Some(_) => {
                return Err(crate::validation::value_error(
                    at("schema_version"),
                    &format!("schema_version must be from 1 to {SCHEMA_VERSION}"),
                    v,
                ));
            }
            None => return Err(int_type(at("schema_version"), v)),
        },
    }
    let mut out = Map::new();
    out.insert("schema_version".into(), json!(SCHEMA_VERSION));
    out.insert(
        "mcp_server_refs".into(),
        opt_names(obj, "mcp_server_refs", &root)?,
    );
    // Agent Canvas reads it: a list is an allow-list of the user's secrets, null is all.
    out.insert("secret_refs".into(), opt_names(obj, "secret_refs", &root)?);
    if kind == "acp" {
        acp_fields(obj, &root, &mut out)?;
    } else {
        openhands_fields(obj, &root, &mut out)?;
    }
    Ok(AgentProfileInput {
        agent_kind: kind,
        body: out,
    })
}

fn openhands_fields(
    obj: &Map<String, Value>,
    root: &[LocItem],
    out: &mut Map<String, Value>,
) -> Result<(), ValidationError> {
    let at = |k: &str| field(root, k);
    match obj.get("llm_profile_ref") {
        None => return Err(missing(at("llm_profile_ref"), Value::Object(obj.clone()))),
        Some(Value::String(s)) if s.is_empty() => {
            return Err(string_too_short(at("llm_profile_ref"), 1, s));
        }
        Some(Value::String(s)) => {
            out.insert("llm_profile_ref".into(), json!(s));
        }
        Some(other) => return Err(string_type(at("llm_profile_ref"), other)),
    }
    let agent = text_or(obj, "agent", root, AGENT_CLASS)?;
    check_agent_class(&agent, at("agent"))?;
    out.insert("agent".into(), json!(agent));
    let tools = match obj.get("tools") {
        None | Some(Value::Null) => Value::Null,
        Some(Value::Array(items)) => {
            for (i, t) in items.iter().enumerate() {
                let mut here = at("tools");
                here.push(LocItem::Index(i));
                let Some(o) = t.as_object() else {
                    return Err(model_type(here, "Tool", t));
                };
                match o.get("name") {
                    Some(Value::String(n)) if !n.is_empty() => {}
                    Some(Value::String(n)) => {
                        return Err(string_too_short(field(&here, "name"), 1, n));
                    }
                    Some(other) => return Err(string_type(field(&here, "name"), other)),
                    None => return Err(missing(field(&here, "name"), t.clone())),
                }
            }
            Value::Array(items.clone())
        }
        Some(other) => return Err(list_type(at("tools"), other)),
    };
    out.insert("tools".into(), tools);
    let suffix = match obj.get("system_message_suffix") {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(s)) => json!(s),
        Some(other) => return Err(string_type(at("system_message_suffix"), other)),
    };
    out.insert("system_message_suffix".into(), suffix);
    let skills = opt_names(obj, "disabled_skills", root)?;
    out.insert(
        "disabled_skills".into(),
        if skills.is_null() { json!([]) } else { skills },
    );
    out.insert(
        "condenser".into(),
        parse_condenser(obj.get("condenser"), &at("condenser"))?,
    );
    out.insert(
        "verification".into(),
        parse_verification(obj.get("verification"), &at("verification"))?,
    );
    for (key, default) in [
        ("enable_sub_agents", false),
        ("enable_switch_llm_tool", true),
    ] {
        let v = match obj.get(key) {
            None => default,
            Some(Value::Bool(b)) => *b,
            Some(other) => return Err(bool_type(at(key), other)),
        };
        out.insert(key.into(), json!(v));
    }
    let limit = match obj.get("tool_concurrency_limit") {
        None => 1,
        Some(v) => match whole(v) {
            Some(n) if n >= 1 => n,
            Some(_) => {
                return Err(ValidationError::new(
                    ErrorType::GreaterThanEqual,
                    at("tool_concurrency_limit"),
                    "Input should be greater than or equal to 1",
                )
                .with_input(v.clone())
                .with_ctx(json!({"ge": 1})));
            }
            None => return Err(int_type(at("tool_concurrency_limit"), v)),
        },
    };
    out.insert("tool_concurrency_limit".into(), json!(limit));
    Ok(())
}

fn acp_fields(
    obj: &Map<String, Value>,
    root: &[LocItem],
    out: &mut Map<String, Value>,
) -> Result<(), ValidationError> {
    let at = |k: &str| field(root, k);
    let server = text_or(obj, "acp_server", root, "claude-code")?;
    check_acp_server(&server, at("acp_server"))?;
    out.insert("acp_server".into(), json!(server));
    for key in ["acp_model", "acp_session_mode"] {
        let v = match obj.get(key) {
            None | Some(Value::Null) => Value::Null,
            Some(Value::String(s)) => json!(s),
            Some(other) => return Err(string_type(at(key), other)),
        };
        out.insert(key.into(), v);
    }
    for (key, default) in [
        ("acp_prompt_timeout", 1800.0),
        ("acp_startup_timeout", 90.0),
    ] {
        let v = match obj.get(key) {
            None => default,
            Some(v) => match v.as_f64() {
                Some(n) if n > 0.0 => n,
                Some(_) => return Err(crate::validation::greater_than(at(key), 0, v)),
                None => return Err(float_type(at(key), v)),
            },
        };
        out.insert(key.into(), json!(v));
    }
    // Version 2 stored the command as one string; 3 as argv (the SDK's migration splits it).
    let command = match obj.get("acp_command") {
        Some(Value::String(s)) => {
            let tokens: Vec<&str> = s.split_whitespace().collect();
            if tokens.is_empty() {
                Value::Null
            } else {
                json!(tokens)
            }
        }
        _ => opt_names(obj, "acp_command", root)?,
    };
    out.insert("acp_command".into(), command);
    out.insert("acp_args".into(), opt_names(obj, "acp_args", root)?);
    Ok(())
}

/// `obj.<key>`: text, or `default` when absent.
fn text_or(
    obj: &Map<String, Value>,
    key: &str,
    root: &[LocItem],
    default: &str,
) -> Result<String, ValidationError> {
    match obj.get(key) {
        None => Ok(default.to_owned()),
        Some(Value::String(s)) if s.is_empty() => Err(string_too_short(field(root, key), 1, s)),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(string_type(field(root, key), other)),
    }
}

/// `obj.<key>`: a list of strings or null (absent: null).
fn opt_names(
    obj: &Map<String, Value>,
    key: &str,
    root: &[LocItem],
) -> Result<Value, ValidationError> {
    match obj.get(key) {
        None => Ok(Value::Null),
        Some(v) => opt_names_value(v, field(root, key)),
    }
}

fn opt_names_value(v: &Value, at: Vec<LocItem>) -> Result<Value, ValidationError> {
    match v {
        Value::Null => Ok(Value::Null),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                if !item.is_string() {
                    let mut here = at.clone();
                    here.push(LocItem::Index(i));
                    return Err(string_type(here, item));
                }
            }
            Ok(v.clone())
        }
        other => Err(list_type(at, other)),
    }
}

/// An integer, or a number with no fraction written as one (`2.0`, as pydantic's lax mode
/// takes it).
fn whole(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| f as i64)
    })
}

fn int_type(at: Vec<LocItem>, input: &Value) -> ValidationError {
    ValidationError::new(ErrorType::IntType, at, "Input should be a valid integer")
        .with_input(input.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_openhands_body_gets_its_defaults() {
        let p = parse_agent_profile(&json!({"llm_profile_ref": "fast", "id": "x", "name": "y"}))
            .unwrap();
        assert_eq!(p.agent_kind, "openhands");
        assert_eq!(p.body["agent"], "CodeActAgent");
        assert_eq!(p.body["tools"], Value::Null);
        assert_eq!(p.body["disabled_skills"], json!([]));
        assert_eq!(p.body["enable_switch_llm_tool"], true);
        assert_eq!(p.body["tool_concurrency_limit"], 1);
        assert_eq!(p.body["condenser"]["condenser_kind"], "llm_summarizing");
        assert_eq!(p.body["verification"]["critic_enabled"], false);
        assert_eq!(p.body["schema_version"], SCHEMA_VERSION);
        assert!(!p.body.contains_key("id") && !p.body.contains_key("name"));
    }

    #[test]
    fn an_acp_body_is_migrated_and_kept_apart() {
        let p = parse_agent_profile(&json!({"agent_kind": "acp", "acp_command": "npx -y acp"}))
            .unwrap();
        assert_eq!(p.body["acp_command"], json!(["npx", "-y", "acp"]));
        assert_eq!(p.body["acp_server"], "claude-code");
        assert_eq!(p.body["acp_prompt_timeout"], 1800.0);
        let mixed = json!({"agent_kind": "acp", "llm_profile_ref": "fast"});
        let e = parse_agent_profile(&mixed).unwrap_err();
        assert_eq!(e.error_type, ErrorType::ExtraForbidden);
    }

    #[test]
    fn bad_bodies() {
        for bad in [
            json!([]),
            json!({}),
            json!({"llm_profile_ref": ""}),
            json!({"llm_profile_ref": 3}),
            json!({"llm_profile_ref": "a", "agent_kind": "other"}),
            json!({"llm_profile_ref": "a", "tools": [{"params": {}}]}),
            json!({"llm_profile_ref": "a", "tool_concurrency_limit": 0}),
            json!({"llm_profile_ref": "a", "schema_version": 9}),
            json!({"llm_profile_ref": "a", "mcp_server_refs": [1]}),
            json!({"llm_profile_ref": "a", "surprise": 1}),
            json!({"agent_kind": "acp", "acp_prompt_timeout": 0}),
            json!({"agent_kind": "acp", "acp_server": "claude"}),
            json!({"llm_profile_ref": "a", "agent": "PlannerAgent"}),
            json!({"llm_profile_ref": "a", "condenser": {"max_size": 5}}),
            json!({"llm_profile_ref": "a", "verification": {"critic_enabled": true}}),
            json!({"llm_profile_ref": "a\u{0}"}),
        ] {
            assert!(parse_agent_profile(&bad).is_err(), "{bad}");
        }
    }
}
