//! The agent profile fields that become parts of the agent a start launches (issue 25), read
//! as the SDK reads them (software-agent-sdk 1.58.2, `openhands/sdk/profiles/agent_profile.py`
//! and `openhands/sdk/settings/model.py`): `condenser` (the SDK's `CondenserSettingsConfig`),
//! `verification` (`ProfileVerificationSettings`), `agent` and `acp_server`. Each reader
//! answers the value as stored: the known fields with the SDK's defaults filled in and
//! anything else left out (pydantic ignores unknown fields of these models), so what a
//! `GET` answers is what a start applies.
//!
//! Refused at save, with why (Switchboard's own rules, beyond the SDK's):
//! - `verification.critic_enabled: true`: the SDK's `APIBasedCritic` authenticates to its
//!   critic service (All-Hands' by default) with the agent's LLM key, and a profile holds no
//!   critic key of its own; Switchboard sends an LLM key only to the base URL of the party
//!   that set it (`services::start_settings`), so it does not start the critic.
//! - `agent` other than `CodeActAgent`: the agent server 1.58.2 builds one agent class, the
//!   SDK's `Agent` (its settings' `create_agent` never reads `agent`), so another name would
//!   be stored and not acted on.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use switchboard_model::{LocItem, ValidationError};
use utoipa::ToSchema;
use utoipa::openapi::schema::{Object, ObjectBuilder, Type};

use crate::typed_body::fields::{self, Whole};
use crate::typed_body::{self, RequestBody};
use crate::validation::refuse_nul_in;

/// The condenser kinds (the SDK's `CondenserKind`): `llm_summarizing` (the default) and `no_op`.
pub const CONDENSER_KINDS: [&str; 2] = ["llm_summarizing", "no_op"];

/// When the critic runs (the SDK's `CriticMode`).
pub const CRITIC_MODES: [&str; 2] = ["finish_and_message", "all_actions"];

/// The ACP servers a profile may name (the SDK's `ACPServerKind`); `custom` has no default
/// command, so it runs only with `acp_command`.
pub const ACP_SERVERS: [&str; 7] = [
    "claude-code",
    "codex",
    "gemini-cli",
    "kimi-code",
    "pi",
    "opencode",
    "custom",
];

/// The one agent class the agent server builds (the SDK's `Agent`, named `CodeActAgent` in
/// profiles and settings).
pub const AGENT_CLASS: &str = "CodeActAgent";

/// Why an `agent` other than [`AGENT_CLASS`] is refused (the module's text).
pub const AGENT_REFUSED: &str = "agent must be 'CodeActAgent': the agent server builds one \
    agent class, the SDK's Agent, whatever a profile names";

/// Why `verification.critic_enabled: true` is refused (the module's text).
pub const CRITIC_REFUSED: &str = "the critic is not started by this server: the SDK's \
    APIBasedCritic authenticates to its critic service with the agent's LLM key, and \
    Switchboard sends an LLM key only to the base URL of whoever set it (a profile holds no \
    critic key of its own)";

/// The SDK's `CondenserSettingsConfig`, as a profile or a member's settings give it:
/// `condenser_kind` one of [`CONDENSER_KINDS`], `enabled`, `max_size` an integer ≥ 20
/// (events), `max_tokens` an integer ≥ 1 or `null` (tokens), `keep_first` an integer ≥ 0
/// (events), `minimum_progress` a number in (0, 1), `hard_context_reset_max_retries` an
/// integer ≥ 1, `hard_context_reset_context_scaling` a number in (0, 1); the SDK's defaults for
/// what is absent. Other keys are ignored (pydantic ignores them); no NUL in them.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, ToSchema)]
#[schema(
    as = CondenserSettings,
    description = "How the agent condenses its history; absent or `null`: an enabled LLM summarizing condenser (240 events, the first 2 kept). `enabled: false`: none."
)]
pub struct CondenserSettings {
    /// `llm_summarizing` (the default) or `no_op`.
    #[serde(default = "llm_summarizing")]
    #[schema(schema_with = condenser_kind_schema)]
    condenser_kind: String,
    /// Whether it runs (default true).
    #[serde(default = "fields::yes")]
    #[schema(default = true)]
    enabled: bool,
    /// Events kept before a summary (default 240).
    #[serde(default = "whole::<240>")]
    #[schema(schema_with = at_least::<20>)]
    max_size: Whole,
    /// Tokens kept before a summary, or `null` (none).
    #[serde(default)]
    #[schema(schema_with = max_tokens_schema)]
    max_tokens: Option<Whole>,
    /// Events always kept at the start (default 2).
    #[serde(default = "whole::<2>")]
    #[schema(schema_with = at_least::<0>)]
    keep_first: Whole,
    /// The least a summary must shrink by (default 0.1).
    #[serde(default = "tenths::<1>")]
    #[schema(schema_with = fraction)]
    minimum_progress: f64,
    /// Retries of a hard context reset (default 5).
    #[serde(default = "whole::<5>")]
    #[schema(schema_with = at_least::<1>)]
    hard_context_reset_max_retries: Whole,
    /// How much a hard context reset keeps (default 0.8).
    #[serde(default = "tenths::<8>")]
    #[schema(schema_with = fraction)]
    hard_context_reset_context_scaling: f64,
    /// Any other key: ignored.
    #[serde(flatten, skip_serializing_if = "fields::always")]
    #[schema(schema_with = fields::others_without_nul)]
    others: Map<String, Value>,
}

/// The SDK's `ProfileVerificationSettings` with the critic off: `critic_enabled` `false`
/// ([`CRITIC_REFUSED`]), `critic_mode` one of [`CRITIC_MODES`], `enable_iterative_refinement`,
/// `critic_threshold` a number from 0 to 1, `max_refinement_iterations` an integer ≥ 1,
/// `critic_server_url` and `critic_model_name` text or `null`; the SDK's defaults for what is
/// absent. Other keys are ignored; no NUL in them.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, ToSchema)]
#[schema(
    as = ProfileVerificationSettings,
    description = "The critic's settings. `critic_enabled` must be false: Switchboard does not start the critic, which authenticates to its critic service with the agent's LLM key."
)]
pub struct VerificationSettings {
    /// `false` only.
    #[serde(default)]
    #[schema(schema_with = critic_enabled_schema)]
    critic_enabled: bool,
    /// When the critic runs (default `finish_and_message`).
    #[serde(default = "finish_and_message")]
    #[schema(schema_with = critic_mode_schema)]
    critic_mode: String,
    /// Whether the agent refines its work on the critic's word (default false).
    #[serde(default)]
    #[schema(default = false)]
    enable_iterative_refinement: bool,
    /// The score under which the agent refines, 0 to 1 (default 0.6).
    #[serde(default = "tenths::<6>")]
    #[schema(schema_with = unit_interval)]
    critic_threshold: f64,
    /// Refinements at most (default 3).
    #[serde(default = "whole::<3>")]
    #[schema(schema_with = at_least::<1>)]
    max_refinement_iterations: Whole,
    /// The critic service's URL, or `null`.
    #[serde(default)]
    #[schema(schema_with = fields::nullable_text)]
    critic_server_url: Option<String>,
    /// The critic's model, or `null`.
    #[serde(default)]
    #[schema(schema_with = fields::nullable_text)]
    critic_model_name: Option<String>,
    /// Any other key: ignored.
    #[serde(flatten, skip_serializing_if = "fields::always")]
    #[schema(schema_with = fields::others_without_nul)]
    others: Map<String, Value>,
}

impl RequestBody for CondenserSettings {
    /// No NUL in the keys ignored.
    fn check(&self) -> Result<(), Vec<ValidationError>> {
        fields::check_others(&self.others)
    }
}

impl RequestBody for VerificationSettings {
    /// No NUL in the keys ignored.
    fn check(&self) -> Result<(), Vec<ValidationError>> {
        fields::check_others(&self.others)
    }
}

impl Default for CondenserSettings {
    /// The SDK's default: an enabled LLM summarizing condenser.
    fn default() -> Self {
        serde_json::from_value(json!({})).expect("every field has a default")
    }
}

impl Default for VerificationSettings {
    /// The SDK's defaults, the critic off.
    fn default() -> Self {
        serde_json::from_value(json!({})).expect("every field has a default")
    }
}

impl VerificationSettings {
    /// No NUL in the keys ignored, the settings being at `at`.
    ///
    /// # Errors
    /// `string_pattern_mismatch` at the NUL.
    pub fn refuse_nul_at(&self, at: &[LocItem]) -> Result<(), ValidationError> {
        refuse_nul_in(&self.others, at)
    }
}

impl CondenserSettings {
    /// No NUL in the keys ignored, the settings being at `at`.
    ///
    /// # Errors
    /// `string_pattern_mismatch` at the NUL.
    pub fn refuse_nul_at(&self, at: &[LocItem]) -> Result<(), ValidationError> {
        refuse_nul_in(&self.others, at)
    }

    /// `#[serde(serialize_with = …)]` for a condenser stored as [`Self::stored`] (`None`: the
    /// default's).
    ///
    /// # Errors
    /// The serializer's.
    pub fn serialize_stored<S: serde::Serializer>(
        condenser: &Option<CondenserSettings>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match condenser {
            Some(c) => c.stored().serialize(s),
            None => CondenserSettings::default().stored().serialize(s),
        }
    }

    /// The settings as stored and applied: the known fields (`no_op`: `condenser_kind` and
    /// `enabled` only).
    pub fn stored(&self) -> Value {
        let mut out = serde_json::to_value(self).unwrap_or(Value::Null);
        if self.condenser_kind != "llm_summarizing"
            && let Value::Object(m) = &mut out
        {
            m.retain(|k, _| k == "condenser_kind" || k == "enabled");
        }
        out
    }
}

/// Reads `condenser` at `at` ([`CondenserSettings`]; absent or `null`: the SDK's default, an
/// enabled LLM summarizing condenser) and answers it as stored ([`CondenserSettings::stored`]).
///
/// # Errors
/// The first 422 entry under `at`.
pub fn parse_condenser(v: Option<&Value>, at: &[LocItem]) -> Result<Value, ValidationError> {
    let empty = Value::Object(Map::new());
    let v = v.filter(|v| !v.is_null()).unwrap_or(&empty);
    let read: CondenserSettings = first(typed_body::parse_at(v, at))?;
    Ok(read.stored())
}

fn first<T>(read: Result<T, Vec<ValidationError>>) -> Result<T, ValidationError> {
    read.map_err(|mut e| e.swap_remove(0))
}

fn llm_summarizing() -> String {
    CONDENSER_KINDS[0].to_owned()
}

fn finish_and_message() -> String {
    CRITIC_MODES[0].to_owned()
}

fn whole<const N: i64>() -> Whole {
    Whole(N)
}

fn tenths<const N: u8>() -> f64 {
    f64::from(N) / 10.0
}

fn condenser_kind_schema() -> Object {
    fields::literal(&CONDENSER_KINDS, false)
}

fn critic_mode_schema() -> Object {
    fields::literal(&CRITIC_MODES, false)
}

fn critic_enabled_schema() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Boolean)
        .enum_values(Some([false]))
        .extensions(Some(fields::value_error_words(CRITIC_REFUSED)))
        .build()
}

/// An integer from `N` to `i64::MAX`.
fn at_least<const N: i64>() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(N))
        .maximum(Some(i64::MAX))
        .build()
}

fn max_tokens_schema() -> Object {
    fields::nullable_integer_from(1).build()
}

/// A number strictly between 0 and 1.
fn fraction() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Number)
        .exclusive_minimum(Some(0))
        .exclusive_maximum(Some(1))
        .build()
}

/// A number from 0 to 1.
fn unit_interval() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Number)
        .minimum(Some(0))
        .maximum(Some(1))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::{field, loc};

    #[test]
    fn condenser_defaults_and_bounds() {
        let at = loc(["body", "condenser"]);
        let d = parse_condenser(None, &at).unwrap();
        assert_eq!(
            d,
            json!({"condenser_kind": "llm_summarizing", "enabled": true, "max_size": 240,
                   "max_tokens": null, "keep_first": 2, "minimum_progress": 0.1,
                   "hard_context_reset_max_retries": 5,
                   "hard_context_reset_context_scaling": 0.8})
        );
        assert_eq!(parse_condenser(Some(&Value::Null), &at).unwrap(), d);
        // Unknown fields are dropped, whole numbers taken as integers; reading twice is the same.
        let c = parse_condenser(Some(&json!({"max_size": 80.0, "surprise": 1})), &at).unwrap();
        assert_eq!(
            (c["max_size"].clone(), c.get("surprise")),
            (json!(80), None)
        );
        assert_eq!(parse_condenser(Some(&c), &at).unwrap(), c);
        assert_eq!(
            parse_condenser(Some(&json!({"condenser_kind": "no_op"})), &at).unwrap(),
            json!({"condenser_kind": "no_op", "enabled": true})
        );
        for (bad, key) in [
            (json!({"max_size": 19}), "max_size"),
            (json!({"max_size": 2.5}), "max_size"),
            (json!({"max_tokens": 0}), "max_tokens"),
            (json!({"keep_first": -1}), "keep_first"),
            (json!({"minimum_progress": 1}), "minimum_progress"),
            (json!({"minimum_progress": 0}), "minimum_progress"),
            (json!({"enabled": "yes"}), "enabled"),
            (json!({"condenser_kind": "pipeline"}), "condenser_kind"),
        ] {
            let e = parse_condenser(Some(&bad), &at).unwrap_err();
            assert_eq!(e.loc, field(&at, key), "{bad}");
        }
        assert!(parse_condenser(Some(&json!([])), &at).is_err());
    }

    #[test]
    fn verification_refuses_the_critic() {
        let at = loc(["body", "verification"]);
        let read = |v: &Value| {
            crate::typed_body::parse_at::<VerificationSettings>(v, &at)
                .map(|s| serde_json::to_value(s).unwrap())
                .map_err(|mut e| e.swap_remove(0))
        };
        let v = read(&json!({})).unwrap();
        assert_eq!(v["critic_enabled"], false);
        assert_eq!(v["critic_mode"], "finish_and_message");
        assert_eq!(v["max_refinement_iterations"], 3);
        let e = read(&json!({"critic_enabled": true})).unwrap_err();
        assert_eq!(e.error_type, switchboard_model::ErrorType::ValueError);
        assert!(e.msg.contains("LLM key"), "{}", e.msg);
        for bad in [
            json!({"critic_threshold": 1.5}),
            json!({"critic_threshold": -0.1}),
            json!({"critic_mode": "never"}),
            json!({"max_refinement_iterations": 0}),
            json!({"critic_server_url": 3}),
        ] {
            assert!(read(&bad).is_err(), "{bad}");
        }
    }
}
