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
//! A diff is checked by itself (each field it sets); what is stored is then its merge into
//! the stored settings, read again at a start by the same rules.

use serde_json::{Map, Value, json};
use switchboard_model::{LocItem, ValidationError};
use utoipa::openapi::Ref;
use utoipa::openapi::schema::{
    AnyOfBuilder, ArrayBuilder, ObjectBuilder, Schema, SchemaType, Type,
};

use crate::agent_profile_fields::{
    AGENT_CLASS, CondenserSettings, VerificationSettings, check_agent_class, parse_condenser,
    parse_verification,
};
use crate::typed_body::fields::{self, JsonValueWithoutNul};
use crate::validation::{NO_NUL_PATTERN, field, list_type, string_type, value_error};

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

/// Checks the fields of an `agent_settings_diff` that a start acts on or refuses (the module's
/// list), at `at`.
///
/// # Errors
/// A 422 entry at the field.
pub fn check_agent_diff(diff: &Map<String, Value>, at: &[LocItem]) -> Result<(), ValidationError> {
    if let Some(v) = diff.get("condenser").filter(|v| !v.is_null()) {
        parse_condenser(Some(v), &field(at, "condenser"))?;
    }
    if let Some(v) = diff.get("verification").filter(|v| !v.is_null()) {
        parse_verification(Some(v), &field(at, "verification"))?;
    }
    match diff.get("agent") {
        None | Some(Value::Null) => {}
        Some(Value::String(name)) => check_agent_class(name, field(at, "agent"))?,
        Some(other) => return Err(string_type(field(at, "agent"), other)),
    }
    match diff.get("agent_kind") {
        None | Some(Value::Null) => {}
        Some(Value::String(k)) if k == "openhands" => {}
        Some(other) => {
            return Err(value_error(
                field(at, "agent_kind"),
                "agent_kind must be 'openhands' in a member's settings: an ACP agent starts from an agent profile (POST /api/agent-profiles/{name})",
                other,
            ));
        }
    }
    match diff.get("tool_concurrency_limit") {
        None | Some(Value::Null) => {}
        Some(v) if v.as_u64().is_some_and(|n| n >= 1) => {}
        Some(other) => {
            return Err(value_error(
                field(at, "tool_concurrency_limit"),
                "tool_concurrency_limit must be an integer of at least 1",
                other,
            ));
        }
    }
    match diff.get("tools") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, t) in items.iter().enumerate() {
                let mut l = field(at, "tools");
                l.push(LocItem::Index(i));
                if !t.get("name").is_some_and(Value::is_string) {
                    return Err(value_error(
                        l,
                        "a tool is an object with a name (and optional params)",
                        t,
                    ));
                }
            }
        }
        Some(other) => return Err(list_type(field(at, "tools"), other)),
    }
    Ok(())
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

/// The schemas of the fields [`check_agent_diff`] judges, by name, for the document
/// (`agent_settings_diff`'s properties beside `llm` and `mcp_config`).
pub fn member_agent_properties() -> Vec<(&'static str, Schema)> {
    let nullable_enum = |values: [Value; 2], description: &str| {
        ObjectBuilder::new()
            .schema_type(SchemaType::AnyValue)
            .enum_values(Some(values))
            .description(Some(description))
            .build()
    };
    let tool = fields::free_form_object()
        .required("name")
        .property("name", fields::text_matching(NO_NUL_PATTERN))
        .property("params", Ref::from_schema_name(JsonValueWithoutNul::NAME));
    vec![
        ("condenser", settings_object::<CondenserSettings>()),
        ("verification", settings_object::<VerificationSettings>()),
        (
            "agent",
            nullable_enum(
                [json!(AGENT_CLASS), Value::Null],
                "The one agent class the agent server builds.",
            )
            .into(),
        ),
        (
            "agent_kind",
            nullable_enum(
                [json!("openhands"), Value::Null],
                "An ACP agent starts from an agent profile.",
            )
            .into(),
        ),
        (
            "tool_concurrency_limit",
            fields::nullable_integer_from(1).into(),
        ),
        (
            "tools",
            ArrayBuilder::new()
                .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
                .items(tool)
                .build()
                .into(),
        ),
    ]
}

/// A settings object of the SDK (`T`'s schema, inline), or `null` (the defaults).
fn settings_object<T: utoipa::PartialSchema>() -> Schema {
    AnyOfBuilder::new()
        .item(T::schema())
        .item(fields::null())
        .build()
        .into()
}

/// An empty diff's agent: OpenHands' defaults (for tests and documentation).
pub fn default_condenser() -> Value {
    parse_condenser(Some(&json!({})), &[]).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::loc;

    fn check(diff: Value) -> Result<(), ValidationError> {
        check_agent_diff(
            diff.as_object().unwrap(),
            &loc(["body", "agent_settings_diff"]),
        )
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
