//! The member's own agent settings (`agent_settings_diff` of `POST /api/v1/settings`), checked
//! at save and made into the agent of a start that names no agent profile (issue 36;
//! docs/settings-fields.md), as OpenHands' `OpenHandsAgentSettings.create_agent` makes it from
//! a user's settings:
//! - `condenser`: the agent's condenser, by the agent profiles' rule
//!   ([`crate::agent_profile_fields::parse_condenser`]: absent, OpenHands' default summarizing
//!   condenser);
//! - `tool_concurrency_limit`: an integer ≥ 1 (absent: 1);
//! - `tools`: a list of `{name, params}` replacing the standard tools (absent or `null`: the
//!   standard ones);
//! - `agent_context.system_message_suffix`: text before the request's suffix;
//! - refused (422): `verification` with the critic on (the profiles' reason), an `agent` other
//!   than `CodeActAgent`, `agent_kind: "acp"` (an ACP agent starts from an agent profile).
//!
//! A diff is judged by its declaration (`diffs::AgentSettingsDiff`, whose schemas of these
//! fields are here); what is stored is then its merge into the stored settings, read again
//! at a start by the same rules.

use serde_json::{Map, Value, json};
use utoipa::openapi::Ref;
use utoipa::openapi::schema::{
    AnyOfBuilder, ArrayBuilder, Object, ObjectBuilder, Schema, SchemaType, Type,
};

use crate::agent_profile_fields::{AGENT_CLASS, AGENT_REFUSED, parse_condenser};
use crate::typed_body::fields::{self, JsonValueWithoutNul};

/// The words of an `agent_kind` other than `openhands` in a member's settings.
pub const ACP_REFUSED: &str = "agent_kind must be 'openhands' in a member's settings: an ACP \
    agent starts from an agent profile (POST /api/agent-profiles/{name})";

/// The member's agent as a start makes it: the parts their settings set.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberAgent {
    /// `agent_context.system_message_suffix`, when set.
    pub system_message_suffix: Option<String>,
    /// `tools` (`{name, params}` objects); `None`: the standard tools.
    pub tools: Option<Vec<Value>>,
    /// `condenser` as [`parse_condenser`] answers it (the defaults filled in).
    pub condenser: Value,
    /// `tool_concurrency_limit` (≥ 1).
    pub tool_concurrency_limit: u64,
}

/// The agent a start makes of the member's stored `agent_settings` (the module's list). A
/// stored value the rules no longer read is taken as absent (the default), so a start never
/// fails on it.
pub fn member_agent(settings: &Map<String, Value>) -> MemberAgent {
    let condenser = parse_condenser(settings.get("condenser"), &[])
        .or_else(|_| parse_condenser(None, &[]))
        .unwrap_or(Value::Null);
    MemberAgent {
        system_message_suffix: settings
            .get("agent_context")
            .and_then(|c| c.get("system_message_suffix"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
        tools: settings
            .get("tools")
            .and_then(Value::as_array)
            .filter(|t| {
                t.iter()
                    .all(|t| t.get("name").is_some_and(Value::is_string))
            })
            .cloned(),
        condenser,
        tool_concurrency_limit: settings
            .get("tool_concurrency_limit")
            .and_then(Value::as_u64)
            .filter(|n| *n >= 1)
            .unwrap_or(1),
    }
}

impl Default for MemberAgent {
    fn default() -> Self {
        member_agent(&Map::new())
    }
}

/// `agent`'s schema in a diff: [`AGENT_CLASS`] or `null`; another string is one
/// `value_error` ([`AGENT_REFUSED`]).
pub(super) fn agent_schema() -> Object {
    fields::nullable_string()
        .enum_values(Some([json!(AGENT_CLASS), Value::Null]))
        .description(Some("The one agent class the agent server builds."))
        .extensions(Some(fields::value_error_words(AGENT_REFUSED)))
        .build()
}

/// `agent_kind`'s schema in a diff: `openhands` or `null`; any other value one `value_error`
/// ([`ACP_REFUSED`]).
pub(super) fn agent_kind_schema() -> Schema {
    AnyOfBuilder::new()
        .item(fields::only("openhands"))
        .item(fields::null())
        .description(Some("An ACP agent starts from an agent profile."))
        .extensions(Some(fields::value_error_words(ACP_REFUSED)))
        .into()
}

/// `tool_concurrency_limit`'s schema in a diff: an integer ≥ 1 or `null`; any other value one
/// `value_error`.
pub(super) fn concurrency_schema() -> Schema {
    AnyOfBuilder::new()
        .item(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(1))
                .maximum(Some(i64::MAX)),
        )
        .item(fields::null())
        .extensions(Some(fields::value_error_words(
            "tool_concurrency_limit must be an integer of at least 1",
        )))
        .into()
}

/// `tools`' schema in a diff: a list or `null`; each item an object with a string `name` (and
/// optional `params`), any other item one `value_error` at it.
pub(super) fn tools_schema() -> Schema {
    let tool = fields::free_form_object()
        .title(Some("Tool"))
        .required("name")
        .property("name", fields::string())
        .property("params", Ref::from_schema_name(JsonValueWithoutNul::NAME));
    let item = AnyOfBuilder::new()
        .item(tool)
        .extensions(Some(fields::value_error_words(
            "a tool is an object with a name (and optional params)",
        )));
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(item)
        .into()
}

/// An empty diff's agent: OpenHands' defaults (for tests and documentation).
pub fn default_condenser() -> Value {
    parse_condenser(Some(&json!({})), &[]).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::user_settings::diffs::AgentDiff;
    use crate::validation::loc;
    use switchboard_model::ValidationError;

    fn check(diff: Value) -> Result<(), ValidationError> {
        AgentDiff::check(&diff, &loc(["body", "agent_settings_diff"]))
    }

    fn at(e: &ValidationError) -> Value {
        serde_json::to_value(e).unwrap()["loc"].clone()
    }

    #[test]
    fn fields_a_start_acts_on_are_checked_at_save() {
        assert!(
            check(
                json!({"condenser": {"max_size": 100}, "tool_concurrency_limit": 4,
            "tools": [{"name": "terminal"}], "agent": "CodeActAgent", "agent_kind": "openhands",
            "verification": {"critic_enabled": false}, "unknown": 1})
            )
            .is_ok()
        );
        let cases = [
            (
                json!({"condenser": {"max_size": 5}}),
                json!(["body", "agent_settings_diff", "condenser", "max_size"]),
            ),
            (
                json!({"verification": {"critic_enabled": true}}),
                json!([
                    "body",
                    "agent_settings_diff",
                    "verification",
                    "critic_enabled"
                ]),
            ),
            (
                json!({"agent": "PlannerAgent"}),
                json!(["body", "agent_settings_diff", "agent"]),
            ),
            (
                json!({"agent_kind": "acp"}),
                json!(["body", "agent_settings_diff", "agent_kind"]),
            ),
            (
                json!({"tool_concurrency_limit": 0}),
                json!(["body", "agent_settings_diff", "tool_concurrency_limit"]),
            ),
            (
                json!({"tools": [{"params": {}}]}),
                json!(["body", "agent_settings_diff", "tools", 0]),
            ),
            (
                json!({"tools": "terminal"}),
                json!(["body", "agent_settings_diff", "tools"]),
            ),
        ];
        for (diff, want) in cases {
            let e = check(diff.clone()).expect_err(&diff.to_string());
            let got = at(&e);
            assert!(
                got.as_array()
                    .unwrap()
                    .starts_with(want.as_array().unwrap()),
                "{diff}: {got}"
            );
        }
    }

    // One table of cases, one per refusal: long because rustfmt gives each case its lines.
    /// Each refusal is the entry the hand-written checks gave: the type, the place, the words
    /// (a NUL anywhere first, then the fields in their order).
    #[test]
    fn each_refusal_keeps_its_entry() {
        let kind = ACP_REFUSED;
        let limit = "tool_concurrency_limit must be an integer of at least 1";
        let tool = "a tool is an object with a name (and optional params)";
        let cases = [
            (json!(3), "model_type", json!([]), "AgentSettings"),
            (
                json!({"condenser": 3}),
                "model_type",
                json!(["condenser"]),
                "CondenserSettings",
            ),
            (
                json!({"agent": 3}),
                "string_type",
                json!(["agent"]),
                "string",
            ),
            (
                json!({"agent": "PlannerAgent"}),
                "value_error",
                json!(["agent"]),
                AGENT_REFUSED,
            ),
            (
                json!({"agent_kind": "acp"}),
                "value_error",
                json!(["agent_kind"]),
                kind,
            ),
            (
                json!({"agent_kind": 3}),
                "value_error",
                json!(["agent_kind"]),
                kind,
            ),
            (
                json!({"tool_concurrency_limit": "x"}),
                "value_error",
                json!(["tool_concurrency_limit"]),
                limit,
            ),
            (
                json!({"tool_concurrency_limit": 1.5}),
                "value_error",
                json!(["tool_concurrency_limit"]),
                limit,
            ),
            (
                json!({"tools": "terminal"}),
                "list_type",
                json!(["tools"]),
                "list",
            ),
            (
                json!({"tools": ["x"]}),
                "value_error",
                json!(["tools", 0]),
                tool,
            ),
            (
                json!({"tools": [{"name": 3}]}),
                "value_error",
                json!(["tools", 0]),
                tool,
            ),
            (json!({"llm": 3}), "model_type", json!(["llm"]), "LLM"),
            (
                json!({"mcp_config": 3}),
                "model_type",
                json!(["mcp_config"]),
                "MCPConfig",
            ),
            (
                json!({"tools": "x", "mcp_config": 3}),
                "model_type",
                json!(["mcp_config"]),
                "MCPConfig",
            ),
            (
                json!({"tools": "x", "mcp_config": 3, "agent": "\u{0}"}),
                "string_pattern_mismatch",
                json!(["agent"]),
                "pattern",
            ),
        ];
        for (diff, kind, under, words) in cases {
            let e =
                serde_json::to_value(check(diff.clone()).expect_err(&diff.to_string())).unwrap();
            let mut want = json!(["body", "agent_settings_diff"]);
            want.as_array_mut()
                .unwrap()
                .extend(under.as_array().unwrap().iter().cloned());
            assert_eq!((&e["type"], &e["loc"]), (&json!(kind), &want), "{diff}");
            assert!(e["msg"].as_str().unwrap().contains(words), "{diff}: {e}");
        }
        // A whole number sent as a float is taken and stored as the integer (pydantic's lax
        // mode).
        let two = json!({"tool_concurrency_limit": 2.0});
        assert!(check(two.clone()).is_ok());
        assert_eq!(
            AgentDiff::split(two).unwrap().diff["tool_concurrency_limit"],
            json!(2)
        );
    }

    #[test]
    fn the_stored_settings_make_the_agent() {
        let a = member_agent(
            json!({"condenser": {"max_size": 100}, "tool_concurrency_limit": 3,
            "tools": [{"name": "terminal", "params": null}],
            "agent_context": {"system_message_suffix": "be brief"}})
            .as_object()
            .unwrap(),
        );
        assert_eq!(a.condenser["max_size"], 100);
        assert_eq!(a.tool_concurrency_limit, 3);
        assert_eq!(a.tools.unwrap()[0]["name"], "terminal");
        assert_eq!(a.system_message_suffix.as_deref(), Some("be brief"));
        // Nothing set: OpenHands' default agent (the summarizing condenser, sequential tools).
        let d = MemberAgent::default();
        assert_eq!(d.condenser, default_condenser());
        assert_eq!(d.condenser["condenser_kind"], "llm_summarizing");
        assert_eq!(d.condenser["enabled"], true);
        assert_eq!(
            (d.tool_concurrency_limit, d.tools, d.system_message_suffix),
            (1, None, None)
        );
        // A stored value the rules no longer read is the default, not a failed start.
        let bad = member_agent(
            json!({"condenser": {"max_size": 1}, "tool_concurrency_limit": 0})
                .as_object()
                .unwrap(),
        );
        assert_eq!(
            (bad.condenser, bad.tool_concurrency_limit),
            (default_condenser(), 1)
        );
    }
}
