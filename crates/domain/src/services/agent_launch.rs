//! What a start takes from the agent profile it names (issue 25), and how each field reaches
//! the agent server's create body ([`LaunchProfile::apply`]). The agent server 1.58.2
//! resolves its own profiles the same way (`openhands/sdk/profiles/resolver.py`,
//! `OpenHandsAgentSettings.create_agent`); Switchboard holds the profiles, so it resolves
//! them and sends the agent they make:
//!
//! | field | in the create body |
//! | --- | --- |
//! | `llm_profile_ref` | `agent.llm` (the user's level of the LLM precedence, `services::start_settings`) |
//! | `system_message_suffix` | before the request's in `agent.agent_context.system_message_suffix` |
//! | `tools` | `agent.tools` (null: the standard terminal, file editor and task tracker) |
//! | `enable_sub_agents` | `task_tool_set` added to the tools (the SDK's `SUB_AGENT_TOOL_NAME`) |
//! | `disabled_skills` | `agent.agent_context.disabled_skills` |
//! | `condenser` | `agent.condenser`: `LLMSummarizingCondenser` with the agent's LLM (usage `condenser`), `NoOpCondenser`, or none when `enabled` is false |
//! | `tool_concurrency_limit` | `agent.tool_concurrency_limit` |
//! | `mcp_server_refs`, `secret_refs` | the MCP servers and secrets kept (`services::start_settings`) |
//! | `verification` | nothing: the critic is refused at save ([`crate::agent_profile_fields`]), and the SDK builds no critic while it is off |
//! | `agent` | nothing: only `CodeActAgent` is accepted, the one agent the agent server builds |
//! | `enable_switch_llm_tool` | nothing (accepted, ignored): the SDK's `switch_llm` tool switches among the LLM profiles in the agent server's own store, which in a Switchboard sandbox holds none of the user's; a running conversation switches profiles through `POST /api/v1/app-conversations/{id}/switch_profile` |
//!
//! An `acp` profile launches the agent server's ACP agent: `agent_settings` with its
//! `acp_server`, `acp_command` (null: the server's default command for `acp_server`),
//! `acp_args`, `acp_model`, `acp_session_mode` and timeouts, the kept MCP servers and the
//! suffix; the ACP server's provider credential reaches it as one of the user's secrets (named
//! by the provider's variable, e.g. `ANTHROPIC_API_KEY`), as the SDK sends it.

use serde_json::{Map, Value, json};

use crate::agent_profile_body;
use crate::agent_profiles::StoredAgentProfile;
use crate::error::DomainError;
use crate::sandboxes::agent_requests::{AgentContext, AgentSpec, CondenserSpec, LlmSpec, ToolSpec};

/// The SDK's sub-agent delegation tool set (`SUB_AGENT_TOOL_NAME`), which `enable_sub_agents`
/// adds.
pub const SUB_AGENT_TOOL: &str = "task_tool_set";

/// The ACP fields sent as the ACP agent's settings.
const ACP_SENT: [&str; 7] = [
    "acp_server",
    "acp_command",
    "acp_args",
    "acp_model",
    "acp_session_mode",
    "acp_prompt_timeout",
    "acp_startup_timeout",
];

/// What a start takes from the agent profile it names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LaunchProfile {
    /// The profile's id (tag `agentprofileid`).
    pub id: String,
    /// Its revision at launch (tag `agentprofilerevision`).
    pub revision: i64,
    /// Its `system_message_suffix`.
    pub system_message_suffix: Option<String>,
    /// Its `tools` (`{name, params}` objects); `None`: the standard tools.
    pub tools: Option<Vec<Value>>,
    /// `enable_sub_agents`: [`SUB_AGENT_TOOL`] added to the tools.
    pub enable_sub_agents: bool,
    /// `disabled_skills`.
    pub disabled_skills: Vec<String>,
    /// `condenser`, as [`crate::agent_profile_fields::parse_condenser`] answers it.
    pub condenser: Value,
    /// `tool_concurrency_limit` (≥ 1).
    pub tool_concurrency_limit: u64,
    /// An `acp` profile's settings (`acp_server`, `acp_command`, `acp_args`, `acp_model`,
    /// `acp_session_mode`, `acp_prompt_timeout`, `acp_startup_timeout`; the command and the
    /// arguments as lists); `None` for an `openhands` profile.
    pub acp: Option<Map<String, Value>>,
}

impl LaunchProfile {
    /// The launch of `p`, its stored fields read again as a save reads them (so a profile
    /// stored before a rule was added is judged by it too).
    ///
    /// # Errors
    /// [`DomainError::BadRequest`] naming the profile: a field a save would refuse now (with
    /// the save's words), an `acp` profile with `acp_server` `custom` and no `acp_command`
    /// (there is no default command to run).
    pub fn of(p: &StoredAgentProfile) -> Result<Self, DomainError> {
        let parsed = agent_profile_body::read(&p.document()).map_err(|e| {
            DomainError::BadRequest(format!(
                "Agent profile '{}' cannot be launched: {e}; save it again with a valid value",
                p.name
            ))
        })?;
        let body = parsed.body;
        let names = |key: &str| -> Vec<String> {
            body.get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        let acp = (parsed.agent_kind == "acp").then(|| {
            let mut out = Map::new();
            for key in ACP_SENT {
                let v = body.get(key).cloned().unwrap_or(Value::Null);
                let v = match key {
                    "acp_command" | "acp_args" if v.is_null() => json!([]),
                    _ => v,
                };
                out.insert(key.into(), v);
            }
            out
        });
        if let Some(acp) = &acp
            && acp["acp_server"] == "custom"
            && acp["acp_command"].as_array().is_none_or(Vec::is_empty)
        {
            return Err(DomainError::BadRequest(format!(
                "Agent profile '{}' names acp_server 'custom' without acp_command: there is no default command to run",
                p.name
            )));
        }
        Ok(LaunchProfile {
            id: p.id.to_string(),
            revision: p.revision,
            system_message_suffix: body
                .get("system_message_suffix")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            tools: body.get("tools").and_then(Value::as_array).cloned(),
            enable_sub_agents: body.get("enable_sub_agents") == Some(&Value::Bool(true)),
            disabled_skills: names("disabled_skills"),
            condenser: body.get("condenser").cloned().unwrap_or(Value::Null),
            tool_concurrency_limit: body
                .get("tool_concurrency_limit")
                .and_then(Value::as_u64)
                .unwrap_or(1),
            acp,
        })
    }

    /// The conversation's tags naming the profile.
    pub fn tags(&self) -> [(&'static str, String); 2] {
        [
            ("agentprofileid", self.id.clone()),
            ("agentprofilerevision", self.revision.to_string()),
        ]
    }

    /// Whether the profile launches an ACP agent.
    pub fn is_acp(&self) -> bool {
        self.acp.is_some()
    }

    /// An ACP profile's `acp_model` (the model the conversation records; the ACP server
    /// picks its default when none).
    pub fn acp_model(&self) -> Option<String> {
        self.acp
            .as_ref()?
            .get("acp_model")?
            .as_str()
            .map(str::to_owned)
    }

    /// Applies the profile to `agent` (the module's table), after its LLM is chosen.
    pub fn apply(&self, agent: &mut AgentSpec) {
        if let Some(suffix) = &self.system_message_suffix {
            let joined = match agent.agent_context.take() {
                Some(c) => format!("{suffix}\n\n{}", c.system_message_suffix),
                None => suffix.clone(),
            };
            agent.agent_context = Some(AgentContext {
                system_message_suffix: joined,
            });
        }
        if let Some(acp) = &self.acp {
            agent.tools.clear();
            agent.profile.acp = Some(acp.clone());
            return;
        }
        if let Some(tools) = &self.tools {
            agent.tools = tools.iter().filter_map(tool_spec).collect();
        }
        if self.enable_sub_agents && !agent.tools.iter().any(|t| t.name == SUB_AGENT_TOOL) {
            agent.tools.push(ToolSpec::named(SUB_AGENT_TOOL));
        }
        agent
            .profile
            .disabled_skills
            .clone_from(&self.disabled_skills);
        agent.profile.condenser = condenser_spec(&self.condenser, &agent.llm);
        agent.profile.tool_concurrency_limit = Some(self.tool_concurrency_limit);
    }
}

/// A profile's `{name, params}` tool as the SDK's `Tool` (`params` left out when null).
fn tool_spec(t: &Value) -> Option<ToolSpec> {
    Some(ToolSpec {
        name: t.get("name")?.as_str()?.to_owned().into(),
        params: t.get("params").filter(|p| !p.is_null()).cloned(),
    })
}

/// The condenser the settings make for an agent on `llm` (the SDK's `build_condenser`):
/// `None` when `enabled` is false; `NoOpCondenser` for `no_op`; else an
/// `LLMSummarizingCondenser` on a copy of `llm` with usage `condenser` and the settings'
/// numbers (`max_tokens` left out when null: the SDK would take the model's input limit from
/// LiteLLM's tables, which Switchboard does not have; the condenser then counts events only).
pub fn condenser_spec(settings: &Value, llm: &LlmSpec) -> Option<CondenserSpec> {
    if settings.get("enabled") == Some(&Value::Bool(false)) {
        return None;
    }
    if settings.get("condenser_kind").and_then(Value::as_str) == Some("no_op") {
        return Some(CondenserSpec {
            kind: "NoOpCondenser",
            llm: None,
            settings: Map::new(),
        });
    }
    let mut numbers = Map::new();
    for key in [
        "max_size",
        "max_tokens",
        "keep_first",
        "minimum_progress",
        "hard_context_reset_max_retries",
        "hard_context_reset_context_scaling",
    ] {
        if let Some(v) = settings.get(key).filter(|v| !v.is_null()) {
            numbers.insert(key.into(), v.clone());
        }
    }
    Some(CondenserSpec {
        kind: "LLMSummarizingCondenser",
        llm: Some(LlmSpec {
            usage_id: "condenser",
            ..llm.clone()
        }),
        settings: numbers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent_profile_body;
    use crate::sandboxes::agent_requests::ProfileParts;

    fn stored(body: Value) -> StoredAgentProfile {
        let input = agent_profile_body::read(&body).unwrap();
        StoredAgentProfile {
            id: uuid::Uuid::new_v4(),
            name: "p".into(),
            revision: 2,
            agent_kind: input.agent_kind,
            body: input.body,
        }
    }

    fn agent() -> AgentSpec {
        AgentSpec {
            kind: "Agent",
            llm: LlmSpec {
                model: "openai/m".into(),
                usage_id: "agent",
                num_retries: 0,
                base_url: Some("http://llm.test/v1".into()),
                api_key: Some("k".into()),
                stream: false,
            },
            tools: ["terminal", "file_editor", "task_tracker"]
                .into_iter()
                .map(ToolSpec::named)
                .collect(),
            agent_context: Some(AgentContext {
                system_message_suffix: "from the request".into(),
            }),
            mcp_config: None,
            profile: ProfileParts::default(),
        }
    }

    #[test]
    fn an_openhands_profile_reaches_the_agent() {
        let p = stored(json!({
            "llm_profile_ref": "fast", "system_message_suffix": "Answer in French.",
            "enable_sub_agents": true, "disabled_skills": ["noisy"],
            "condenser": {"max_size": 60, "keep_first": 4}, "tool_concurrency_limit": 3,
        }));
        let launch = LaunchProfile::of(&p).unwrap();
        let mut a = agent();
        launch.apply(&mut a);
        let names: Vec<&str> = a.tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            ["terminal", "file_editor", "task_tracker", SUB_AGENT_TOOL]
        );
        assert_eq!(
            a.agent_context.unwrap().system_message_suffix,
            "Answer in French.\n\nfrom the request"
        );
        assert_eq!(a.profile.disabled_skills, ["noisy"]);
        assert_eq!(a.profile.tool_concurrency_limit, Some(3));
        let c = a.profile.condenser.unwrap();
        assert_eq!(c.kind, "LLMSummarizingCondenser");
        assert_eq!(
            (
                c.settings["max_size"].clone(),
                c.settings["keep_first"].clone()
            ),
            (json!(60), json!(4))
        );
        assert!(!c.settings.contains_key("max_tokens"));
        let llm = c.llm.unwrap();
        assert_eq!(
            (llm.usage_id, llm.model.as_str(), llm.api_key.as_deref()),
            ("condenser", "openai/m", Some("k"))
        );
        assert_eq!(launch.tags()[1], ("agentprofilerevision", "2".to_owned()));
    }

    #[test]
    fn defaults_tools_and_condenser_choices() {
        // Defaults: the SDK's summarizing condenser, one tool call at a time, no sub-agents.
        let launch = LaunchProfile::of(&stored(json!({"llm_profile_ref": "f"}))).unwrap();
        let mut a = agent();
        launch.apply(&mut a);
        assert_eq!(a.tools.len(), 3);
        assert_eq!(a.profile.tool_concurrency_limit, Some(1));
        let c = a.profile.condenser.unwrap();
        assert_eq!(
            (
                c.settings["max_size"].clone(),
                c.settings["keep_first"].clone()
            ),
            (json!(240), json!(2))
        );
        // Explicit tools replace the standard ones; sub-agents are added once.
        let p = stored(json!({"llm_profile_ref": "f", "enable_sub_agents": true,
            "tools": [{"name": "terminal", "params": {"x": 1}}, {"name": "task_tool_set"}]}));
        let mut a = agent();
        LaunchProfile::of(&p).unwrap().apply(&mut a);
        assert_eq!(
            a.tools,
            [
                ToolSpec {
                    name: "terminal".into(),
                    params: Some(json!({"x": 1}))
                },
                ToolSpec::named(SUB_AGENT_TOOL)
            ]
        );
        for (condenser, kind) in [
            (json!({"enabled": false}), None),
            (json!({"condenser_kind": "no_op"}), Some("NoOpCondenser")),
        ] {
            let p = stored(json!({"llm_profile_ref": "f", "condenser": condenser}));
            let mut a = agent();
            LaunchProfile::of(&p).unwrap().apply(&mut a);
            assert_eq!(a.profile.condenser.map(|c| c.kind), kind);
        }
    }

    #[test]
    fn an_acp_profile_launches_the_acp_agent() {
        let p = stored(json!({"agent_kind": "acp", "acp_server": "custom",
            "acp_command": ["python", "-c", "pass"], "acp_model": "echo-1"}));
        let launch = LaunchProfile::of(&p).unwrap();
        assert!(launch.is_acp());
        assert_eq!(launch.acp_model().as_deref(), Some("echo-1"));
        let mut a = agent();
        launch.apply(&mut a);
        let acp = a.profile.acp.unwrap();
        assert_eq!(acp["acp_command"], json!(["python", "-c", "pass"]));
        assert_eq!(acp["acp_args"], json!([]));
        assert_eq!(acp["acp_startup_timeout"], 90.0);
        assert!(a.tools.is_empty() && a.profile.condenser.is_none());
        // `custom` needs a command; a known server falls back to the agent server's default.
        let p = stored(json!({"agent_kind": "acp", "acp_server": "custom"}));
        let e = LaunchProfile::of(&p).unwrap_err();
        assert!(e.to_string().contains("acp_command"), "{e}");
        let p = stored(json!({"agent_kind": "acp"}));
        let acp = LaunchProfile::of(&p).unwrap().acp.unwrap();
        assert_eq!(
            (&acp["acp_server"], &acp["acp_command"]),
            (&json!("claude-code"), &json!([]))
        );
    }

    #[test]
    fn a_profile_stored_before_a_rule_is_judged_by_it() {
        let mut p = stored(json!({"llm_profile_ref": "f"}));
        p.body
            .insert("verification".into(), json!({"critic_enabled": true}));
        let e = LaunchProfile::of(&p).unwrap_err();
        assert!(
            matches!(&e, DomainError::BadRequest(m) if m.contains("Agent profile 'p'") && m.contains("critic")),
            "{e:?}"
        );
    }
}
