//! The save body of an agent profile (`POST /api/agent-profiles/{name}`; the SDK's
//! `AgentProfile`, a union told apart by `agent_kind`): one typed body per kind,
//! [`OpenHandsAgentProfile`] (`agent_kind` `openhands`, the default) and [`AcpAgentProfile`]
//! (`acp`), each with its own fields and no other (the SDK's `extra="forbid"`), and
//! [`AgentProfile`], their union, for the document. [`read`] reads `agent_kind`, then the body
//! as that kind's type, as the SDK's `validate_agent_profile` does: an unversioned body is
//! taken as version 2 and brought to [`SCHEMA_VERSION`] (`acp_command` as a string is split
//! on whitespace into a list), missing fields get their defaults.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use switchboard_model::{ErrorType, ValidationError};
use utoipa::ToSchema;
use utoipa::openapi::schema::{
    AnyOfBuilder, ArrayBuilder, Object, ObjectBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr};

use crate::agent_profile_fields::{
    ACP_SERVERS, AGENT_CLASS, CondenserSettings, VerificationSettings,
};
use crate::agent_profiles::{AgentProfileInput, SCHEMA_VERSION};
use crate::typed_body::fields::{self, JsonValueWithoutNul, Whole};
use crate::typed_body::{self, RequestBody};
use crate::validation::{NO_NUL_PATTERN, field, loc, model_type, not_one_of, refuse_nul};

/// The kinds `agent_kind` names.
pub const AGENT_KINDS: [&str; 2] = ["openhands", "acp"];

/// An `openhands` profile (the SDK's `OpenHandsAgentProfile`): an agent of this server's
/// agent class on an LLM profile of the member's.
// Serialized, it is the body stored: `id`, `name`, `revision` and `agent_kind` left out.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = OpenHandsAgentProfile)]
pub struct OpenHandsAgentProfile {
    /// The version the body is written in, 1 to [`SCHEMA_VERSION`] (absent: 2).
    #[serde(default)]
    #[schema(schema_with = schema_version_schema)]
    schema_version: Option<Whole>,
    /// `openhands` (the default).
    #[serde(default, skip_serializing_if = "fields::always")]
    #[schema(schema_with = openhands_kind)]
    agent_kind: Option<String>,
    /// The server's: what is sent is ignored (the path names the profile).
    #[serde(default, skip_serializing_if = "fields::always")]
    #[schema(schema_with = ignored)]
    id: Option<Value>,
    /// The server's: ignored.
    #[serde(default, skip_serializing_if = "fields::always")]
    #[schema(schema_with = ignored)]
    name: Option<Value>,
    /// The server's: ignored.
    #[serde(default, skip_serializing_if = "fields::always")]
    #[schema(schema_with = ignored)]
    revision: Option<Value>,
    /// The MCP servers it names, or `null`.
    #[serde(default)]
    #[schema(schema_with = names)]
    mcp_server_refs: Option<Vec<String>>,
    /// The member's secrets it may use: a list is an allow-list, `null` all (Agent Canvas
    /// reads it).
    #[serde(default)]
    #[schema(schema_with = names)]
    secret_refs: Option<Vec<String>>,
    /// The LLM profile of the member's it runs on.
    #[schema(schema_with = fields::non_empty_text)]
    llm_profile_ref: String,
    /// The agent class: [`AGENT_CLASS`] only (another is one `value_error`, [`crate::agent_profile_fields::AGENT_REFUSED`]).
    #[serde(default = "agent_class")]
    #[schema(schema_with = agent_schema)]
    agent: String,
    /// The tools, each an object with a `name`, or `null` (the agent's own).
    #[serde(default)]
    #[schema(schema_with = tools_schema)]
    tools: Option<Vec<Map<String, Value>>>,
    /// Text appended to the system message, or `null`.
    #[serde(default)]
    #[schema(schema_with = fields::nullable_text)]
    system_message_suffix: Option<String>,
    /// Skills turned off (`null`: none).
    #[serde(default)]
    #[schema(schema_with = names)]
    disabled_skills: Option<Vec<String>>,
    /// The condenser, or `null` (the default).
    // Stored as `CondenserSettings::stored` makes it.
    #[serde(default, serialize_with = "CondenserSettings::serialize_stored")]
    condenser: Option<CondenserSettings>,
    /// The critic's settings (the critic off), or `null` (the defaults).
    #[serde(default)]
    verification: Option<VerificationSettings>,
    /// Whether the agent may start sub-agents (default false).
    #[serde(default)]
    #[schema(default = false)]
    enable_sub_agents: bool,
    /// Whether the agent may switch LLMs (default true).
    #[serde(default = "fields::yes")]
    #[schema(default = true)]
    enable_switch_llm_tool: bool,
    /// How many tools run at once, at least 1 (default 1).
    #[serde(default = "one")]
    #[schema(schema_with = concurrency_schema)]
    tool_concurrency_limit: Whole,
}

/// An `acp` profile (the SDK's `ACPAgentProfile`): an ACP agent server (Claude Code, Codex, …)
/// run in the sandbox.
// Serialized, it is the body stored, as `OpenHandsAgentProfile`'s.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ACPAgentProfile)]
pub struct AcpAgentProfile {
    /// The version the body is written in, 1 to [`SCHEMA_VERSION`] (absent: 2).
    #[serde(default)]
    #[schema(schema_with = schema_version_schema)]
    schema_version: Option<Whole>,
    /// `acp`.
    #[serde(skip_serializing_if = "fields::always")]
    #[schema(schema_with = acp_kind, required = true)]
    agent_kind: String,
    /// The server's: ignored.
    #[serde(default, skip_serializing_if = "fields::always")]
    #[schema(schema_with = ignored)]
    id: Option<Value>,
    /// The server's: ignored.
    #[serde(default, skip_serializing_if = "fields::always")]
    #[schema(schema_with = ignored)]
    name: Option<Value>,
    /// The server's: ignored.
    #[serde(default, skip_serializing_if = "fields::always")]
    #[schema(schema_with = ignored)]
    revision: Option<Value>,
    /// The MCP servers it names, or `null`.
    #[serde(default)]
    #[schema(schema_with = names)]
    mcp_server_refs: Option<Vec<String>>,
    /// The member's secrets it may use (a list), or `null` (all).
    #[serde(default)]
    #[schema(schema_with = names)]
    secret_refs: Option<Vec<String>>,
    /// The ACP server, one of [`ACP_SERVERS`] (default `claude-code`; `custom` runs only
    /// with `acp_command`).
    #[serde(default = "claude_code")]
    #[schema(schema_with = acp_server_schema)]
    acp_server: String,
    /// The model the ACP server uses, or `null` (its own).
    #[serde(default)]
    #[schema(schema_with = fields::nullable_text)]
    acp_model: Option<String>,
    /// The ACP session mode, or `null`.
    #[serde(default)]
    #[schema(schema_with = fields::nullable_text)]
    acp_session_mode: Option<String>,
    /// Seconds a prompt may take, above 0 (default 1800).
    #[serde(default = "prompt_timeout")]
    #[schema(schema_with = timeout_schema)]
    acp_prompt_timeout: f64,
    /// Seconds the server may take to start, above 0 (default 90).
    #[serde(default = "startup_timeout")]
    #[schema(schema_with = timeout_schema)]
    acp_startup_timeout: f64,
    /// The command (argv), or `null` (the server's own); a string (version 2) is split on
    /// white space.
    #[serde(default)]
    #[schema(schema_with = command_schema)]
    acp_command: Option<Command>,
    /// Arguments added to the command, or `null`.
    #[serde(default)]
    #[schema(schema_with = names)]
    acp_args: Option<Vec<String>>,
}

/// `acp_command` as sent: argv, or (version 2) one line.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
enum Command {
    Argv(Vec<String>),
    Line(String),
}

/// The SDK's `AgentProfile`, for the document: one of the two kinds (`read` reads it).
#[derive(Deserialize, ToSchema)]
#[serde(untagged)]
#[schema(
    description = "The SDK's `AgentProfile`: `agent_kind` `openhands` (the default) or `acp`, each kind's fields only. The path names the profile; `id`, `name` and `revision` sent are ignored."
)]
pub enum AgentProfile {
    /// `agent_kind` `openhands` or none.
    OpenHands(Box<OpenHandsAgentProfile>),
    /// `agent_kind` `acp`.
    Acp(Box<AcpAgentProfile>),
}

impl RequestBody for OpenHandsAgentProfile {
    /// No NUL in the keys the condenser and the verification settings ignore.
    fn check(&self) -> Result<(), Vec<ValidationError>> {
        let root = loc(["body"]);
        let condenser = self.condenser.as_ref();
        let verification = self.verification.as_ref();
        condenser
            .map_or(Ok(()), |c| c.refuse_nul_at(&field(&root, "condenser")))
            .and_then(|()| {
                verification.map_or(Ok(()), |v| v.refuse_nul_at(&field(&root, "verification")))
            })
            .map_err(|e| vec![e])
    }
}

impl RequestBody for AcpAgentProfile {}

/// Reads a save body: `agent_kind` (absent: `openhands`), then the body as that kind's
/// typed body; the stored body has its defaults filled in, `schema_version`
/// [`SCHEMA_VERSION`], no `id`, `name`, `revision` or `agent_kind`.
///
/// # Errors
/// The first 422 entry at `["body", …]`: not an object (`model_type` `AgentProfile`),
/// `agent_kind` not one of [`AGENT_KINDS`] (`literal_error`), then the kind's
/// ([`typed_body::parse`]).
pub fn read(body: &Value) -> Result<AgentProfileInput, ValidationError> {
    let root = loc(["body"]);
    let Some(obj) = body.as_object() else {
        return Err(model_type(root, "AgentProfile", body));
    };
    let Some(kind) = obj.get("agent_kind") else {
        return Ok(openhands(typed_body::parse_one(body)?));
    };
    match kind.as_str() {
        Some("openhands") => Ok(openhands(typed_body::parse_one(body)?)),
        Some("acp") => Ok(acp(typed_body::parse_one(body)?)),
        text => {
            let at = field(&root, "agent_kind");
            if let Some(text) = text {
                refuse_nul(|| at.clone(), text)?;
            }
            Err(not_one_of(ErrorType::LiteralError, at, &AGENT_KINDS, kind))
        }
    }
}

fn openhands(mut p: OpenHandsAgentProfile) -> AgentProfileInput {
    p.condenser.get_or_insert_default();
    p.verification.get_or_insert_default();
    p.disabled_skills.get_or_insert_default();
    p.schema_version = Some(Whole(SCHEMA_VERSION));
    stored("openhands", &p)
}

fn acp(mut p: AcpAgentProfile) -> AgentProfileInput {
    // Version 2 stored the command as one string; 3 as argv (the SDK's migration splits it).
    if let Some(Command::Line(line)) = &p.acp_command {
        let argv: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        p.acp_command = (!argv.is_empty()).then_some(Command::Argv(argv));
    }
    p.schema_version = Some(Whole(SCHEMA_VERSION));
    stored("acp", &p)
}

fn stored(kind: &str, profile: &impl Serialize) -> AgentProfileInput {
    let body = match serde_json::to_value(profile) {
        Ok(Value::Object(m)) => m,
        _ => unreachable!("a profile serializes as an object"),
    };
    AgentProfileInput {
        agent_kind: kind.to_owned(),
        body,
    }
}

fn agent_class() -> String {
    AGENT_CLASS.to_owned()
}

fn claude_code() -> String {
    ACP_SERVERS[0].to_owned()
}

fn one() -> Whole {
    Whole(1)
}

fn prompt_timeout() -> f64 {
    1800.0
}

fn startup_timeout() -> f64 {
    90.0
}

fn schema_version_schema() -> Object {
    fields::nullable_integer_from(1)
        .maximum(Some(SCHEMA_VERSION))
        .build()
}

fn openhands_kind() -> Object {
    fields::literal(&["openhands"], false)
}

fn acp_kind() -> Object {
    fields::literal(&["acp"], false)
}

fn ignored() -> Ref {
    Ref::from_schema_name(JsonValueWithoutNul::NAME)
}

/// A list of names without NUL, or `null`.
fn names() -> Schema {
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(fields::text_matching(NO_NUL_PATTERN))
        .into()
}

fn agent_schema() -> Object {
    fields::string()
        .pattern(Some(NO_NUL_PATTERN))
        .enum_values(Some([AGENT_CLASS]))
        .default(Some(json!(AGENT_CLASS)))
        .description(Some(
            "The one agent class the agent server builds (the SDK's `Agent`).",
        ))
        .extensions(Some(fields::value_error_words_nul_apart(
            crate::agent_profile_fields::AGENT_REFUSED,
        )))
        .build()
}

fn tools_schema() -> Schema {
    let tool = fields::free_form_object()
        .title(Some("Tool"))
        .required("name")
        .property("name", fields::non_empty_text())
        .property("params", Ref::from_schema_name(JsonValueWithoutNul::NAME));
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(tool)
        .into()
}

fn concurrency_schema() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(1))
        .maximum(Some(i64::MAX))
        .default(Some(json!(1)))
        .build()
}

fn acp_server_schema() -> Object {
    let mut s = fields::literal(&ACP_SERVERS, false);
    s.default = Some(json!(ACP_SERVERS[0]));
    s
}

fn timeout_schema() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Number)
        .exclusive_minimum(Some(0))
        .maximum(Some(f64::MAX))
        .build()
}

fn command_schema() -> RefOr<Schema> {
    AnyOfBuilder::new()
        .item(fields::text_matching(NO_NUL_PATTERN))
        .item(names())
        .into()
}

#[cfg(test)]
mod tests;
