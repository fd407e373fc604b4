//! The bodies Switchboard sends to an agent server, typed (serde): the create call of a
//! conversation start (the agent server's `StartConversationRequest`; reference
//! agent-server-webhooks §1, "Create body"). The bash call's body is `runtime.rs`'s
//! `BashCommand`. The implementation of the port (`switchboard-sandbox`'s client) serializes
//! them as they are.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::identity::redaction::MASK;

/// `POST /api/conversations`: the conversation the agent server creates. Holds the LLM key
/// and the request's secrets: never logged (`Debug` masks them).
#[derive(Clone, PartialEq, Serialize)]
pub struct StartConversationRequest {
    /// The conversation id Switchboard chose (hyphenated UUID).
    pub conversation_id: String,
    /// The agent: its LLM, tools and context, sent as `agent`; an ACP agent's settings, sent
    /// as `agent_settings` instead ([`AgentSpec`]'s serialization).
    #[serde(flatten)]
    pub agent: AgentSpec,
    /// Where it works.
    pub workspace: WorkspaceSpec,
    /// Whether the agent server titles the conversation itself (no title was given).
    pub autotitle: bool,
    /// The first user message (a `SendMessageRequest`-shaped object), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_message: Option<Value>,
    /// The most agent iterations, when limited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u64>,
    /// Tags, name → value; left out when empty.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub tags: Map<String, Value>,
    /// The request's secrets as sources the agent server resolves, name → source; left out
    /// when empty (issue 24 item 1).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub secrets: BTreeMap<String, SecretSource>,
    /// `{"kind": "ConfirmRisky"}` (the LLM analyzer on) or `{"kind": "AlwaysConfirm"}` when
    /// the starting member asked for confirmation (issues 21, 36); absent: the agent server's
    /// `NeverConfirm`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation_policy: Option<Value>,
    /// `{"kind": "LLMSecurityAnalyzer"}` when the member's `security_analyzer` is `llm`
    /// (OpenHands' default; issue 36).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security_analyzer: Option<Value>,
}

impl std::fmt::Debug for StartConversationRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartConversationRequest")
            .field("conversation_id", &self.conversation_id)
            .field("agent", &self.agent)
            .field("workspace", &self.workspace)
            .field("secrets", &self.secrets.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// The agent of a conversation: the SDK's `Agent` (`kind: Agent`), or, when `profile.acp` is
/// set (an ACP agent profile launched, issue 25), the agent server's ACP agent, which takes
/// from the rest only `mcp_config` and `agent_context`'s suffix.
///
/// Serialized as one entry of the create body (the request flattens it): `"agent": {kind,
/// llm, tools, agent_context: {system_message_suffix, disabled_skills}, mcp_config,
/// condenser, tool_concurrency_limit}` (empty parts left out), or, for ACP, `"agent_settings":
/// {agent_kind: "acp", acp_…, mcp_config, agent_context}`: the agent server builds the
/// `ACPAgent` from settings itself (`ACPAgentSettings.create_agent`), resolving the ACP
/// server's default command (or its pinned binary) when the profile names none; no LLM is
/// sent to an ACP agent, which makes its own model calls.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSpec {
    /// Always `Agent`.
    pub kind: &'static str,
    /// Its LLM.
    pub llm: LlmSpec,
    /// Its tools by name.
    pub tools: Vec<ToolSpec>,
    /// `agent_context.system_message_suffix`, when given.
    pub agent_context: Option<AgentContext>,
    /// The starting user's MCP servers (`mcp_config`, the SDK's shape), when set (issue 21).
    pub mcp_config: Option<Value>,
    /// What the launched agent profile adds (none without one).
    pub profile: ProfileParts,
}

/// The body of an agent server's `POST /api/conversations/{id}/switch_llm`: the LLM the
/// running conversation uses from its next step on (`Debug` masks the key).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SwitchLlmRequest {
    /// The new LLM, key included.
    pub llm: LlmSpec,
}

/// The LLM of an agent (the SDK's `LLM`).
#[derive(Clone, PartialEq, Serialize)]
pub struct LlmSpec {
    /// The model, LiteLLM's name (`openai/gpt-4o`).
    pub model: String,
    /// Always `agent`.
    pub usage_id: &'static str,
    /// Always 0: Switchboard does not retry behind the caller's back.
    pub num_retries: u32,
    /// The provider's base URL, when not the model's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The API key (never logged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// Streamed completions (`--llm-stream`); left out when off.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
}

impl std::fmt::Debug for LlmSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmSpec")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| MASK))
            .field("stream", &self.stream)
            .finish()
    }
}

/// A tool by name (`terminal`, `file_editor`, `task_tracker`, or what an agent profile's
/// `tools` names), with its parameters when the profile gave some (the SDK's `Tool`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: std::borrow::Cow<'static, str>,
    /// Its parameters; left out when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl ToolSpec {
    /// A built-in tool without parameters.
    pub fn named(name: &'static str) -> Self {
        ToolSpec {
            name: std::borrow::Cow::Borrowed(name),
            params: None,
        }
    }
}

/// The agent's context.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentContext {
    /// Appended to the system message.
    pub system_message_suffix: String,
}

/// The conversation's workspace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkspaceSpec {
    /// Its working directory in the sandbox.
    pub working_dir: String,
}

/// A secret the agent server resolves (`kind: StaticSecret`: the value itself).
#[derive(Clone, PartialEq, Serialize)]
pub struct SecretSource {
    /// Always `StaticSecret`.
    pub kind: &'static str,
    /// The secret's value as the request gave it.
    pub value: Value,
}

/// What an agent profile adds to the agent it launches (issue 25; made by
/// `services::agent_launch`): nothing by default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProfileParts {
    /// `agent_context.disabled_skills`: skill names the agent leaves out of whatever it loads
    /// (the profile's and the member's `disabled_skills`; issue 36).
    pub disabled_skills: Vec<String>,
    /// `agent_context.registered_marketplaces`: the member's and the organization's plugin
    /// marketplaces as the SDK's `MarketplaceRegistration` (`name`, `source`, `ref`,
    /// `repo_path`, `auto_load`); the agent loads the `auto_load` ones' plugins and skills at
    /// its start, and goes on without one it cannot fetch (issue 36).
    pub registered_marketplaces: Vec<Value>,
    /// `condenser`: how the agent condenses its history; `None`: no condenser.
    pub condenser: Option<CondenserSpec>,
    /// `tool_concurrency_limit`: the most tool calls the agent runs at once per step (≥ 1).
    pub tool_concurrency_limit: Option<u64>,
    /// An ACP agent's settings (`acp_server`, `acp_command` as a list, `acp_args`,
    /// `acp_model`, `acp_session_mode`, `acp_prompt_timeout`/`acp_startup_timeout` in
    /// seconds): the agent is then the agent server's ACP agent.
    pub acp: Option<Map<String, Value>>,
}

/// A condenser of the agent's history (the SDK's `LLMSummarizingCondenser`, with its own copy
/// of the agent's LLM, or `NoOpCondenser`). `Debug` masks the key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CondenserSpec {
    /// `LLMSummarizingCondenser` or `NoOpCondenser`.
    pub kind: &'static str,
    /// The summarizing LLM (usage `condenser`); none for `NoOpCondenser`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmSpec>,
    /// The condenser's settings: `max_size` and `keep_first` (events), `max_tokens` (left out
    /// when unset), `minimum_progress`, `hard_context_reset_max_retries`,
    /// `hard_context_reset_context_scaling`.
    #[serde(flatten)]
    pub settings: Map<String, Value>,
}

impl Serialize for AgentSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        #[derive(Serialize)]
        struct Context<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            system_message_suffix: Option<&'a str>,
            #[serde(skip_serializing_if = "<[String]>::is_empty")]
            disabled_skills: &'a [String],
            #[serde(skip_serializing_if = "<[Value]>::is_empty")]
            registered_marketplaces: &'a [Value],
        }
        #[derive(Serialize)]
        struct Agent<'a> {
            kind: &'static str,
            llm: &'a LlmSpec,
            tools: &'a [ToolSpec],
            #[serde(skip_serializing_if = "Option::is_none")]
            agent_context: Option<Context<'a>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            mcp_config: Option<&'a Value>,
            #[serde(skip_serializing_if = "Option::is_none")]
            condenser: Option<&'a CondenserSpec>,
            #[serde(skip_serializing_if = "Option::is_none")]
            tool_concurrency_limit: Option<u64>,
        }
        #[derive(Serialize)]
        struct Acp<'a> {
            agent_kind: &'static str,
            #[serde(flatten)]
            settings: &'a Map<String, Value>,
            #[serde(skip_serializing_if = "Option::is_none")]
            mcp_config: Option<&'a Value>,
            #[serde(skip_serializing_if = "Option::is_none")]
            agent_context: Option<Context<'a>>,
        }
        let suffix = self
            .agent_context
            .as_ref()
            .map(|c| c.system_message_suffix.as_str());
        let markets = &self.profile.registered_marketplaces[..];
        let mut map = s.serialize_map(Some(1))?;
        if let Some(acp) = &self.profile.acp {
            let acp = Acp {
                agent_kind: "acp",
                settings: acp,
                mcp_config: self.mcp_config.as_ref(),
                agent_context: (suffix.is_some() || !markets.is_empty()).then_some(Context {
                    system_message_suffix: suffix,
                    disabled_skills: &[],
                    registered_marketplaces: markets,
                }),
            };
            map.serialize_entry("agent_settings", &acp)?;
        } else {
            let skills = &self.profile.disabled_skills;
            let agent = Agent {
                kind: self.kind,
                llm: &self.llm,
                tools: &self.tools,
                agent_context: (suffix.is_some() || !skills.is_empty() || !markets.is_empty())
                    .then_some(Context {
                        system_message_suffix: suffix,
                        disabled_skills: skills,
                        registered_marketplaces: markets,
                    }),
                mcp_config: self.mcp_config.as_ref(),
                condenser: self.profile.condenser.as_ref(),
                tool_concurrency_limit: self.profile.tool_concurrency_limit,
            };
            map.serialize_entry("agent", &agent)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn optional_parts_are_left_out_and_debug_hides_secrets() {
        let mut secrets = BTreeMap::new();
        secrets.insert(
            "TOKEN".to_owned(),
            SecretSource {
                kind: "StaticSecret",
                value: json!("s3cret-value"),
            },
        );
        let mut request = StartConversationRequest {
            conversation_id: "c".into(),
            agent: AgentSpec {
                kind: "Agent",
                llm: LlmSpec {
                    model: "m".into(),
                    usage_id: "agent",
                    num_retries: 0,
                    base_url: None,
                    api_key: Some("k3y-value".into()),
                    stream: false,
                },
                tools: vec![ToolSpec::named("terminal")],
                agent_context: None,
                mcp_config: None,
                profile: ProfileParts::default(),
            },
            workspace: WorkspaceSpec {
                working_dir: "/w".into(),
            },
            autotitle: true,
            initial_message: None,
            max_iterations: None,
            tags: Map::new(),
            secrets,
            confirmation_policy: None,
            security_analyzer: None,
        };
        let v = serde_json::to_value(&request).unwrap();
        assert_eq!(
            v["agent"]["llm"],
            json!({"model": "m", "usage_id": "agent", "num_retries": 0, "api_key": "k3y-value"})
        );
        assert_eq!(
            v["secrets"],
            json!({"TOKEN": {"kind": "StaticSecret", "value": "s3cret-value"}})
        );
        for absent in ["initial_message", "max_iterations", "tags"] {
            assert!(v.get(absent).is_none(), "{absent}: {v}");
        }
        let shown = format!("{request:?}");
        assert!(!shown.contains("k3y-value") && !shown.contains("s3cret-value"));
        request.secrets.clear();
        assert!(
            serde_json::to_value(&request)
                .unwrap()
                .get("secrets")
                .is_none()
        );
    }

    #[test]
    fn profile_parts_and_the_acp_agent() {
        let llm = LlmSpec {
            model: "m".into(),
            usage_id: "agent",
            num_retries: 0,
            base_url: None,
            api_key: Some("k3y-value".into()),
            stream: false,
        };
        let mut agent = AgentSpec {
            kind: "Agent",
            llm: llm.clone(),
            tools: vec![ToolSpec::named("terminal")],
            agent_context: None,
            mcp_config: None,
            profile: ProfileParts {
                disabled_skills: vec!["noisy".into()],
                condenser: Some(CondenserSpec {
                    kind: "LLMSummarizingCondenser",
                    llm: Some(LlmSpec {
                        usage_id: "condenser",
                        ..llm
                    }),
                    settings: json!({"max_size": 80}).as_object().unwrap().clone(),
                }),
                tool_concurrency_limit: Some(4),
                acp: None,
                registered_marketplaces: Vec::new(),
            },
        };
        let v = serde_json::to_value(&agent).unwrap();
        assert_eq!(
            v["agent"]["agent_context"],
            json!({"disabled_skills": ["noisy"]})
        );
        // The marketplaces join the context (issue 36).
        let market = json!({"name": "team", "source": "github:team/plugins", "ref": null,
                            "repo_path": null, "auto_load": true});
        agent.profile.registered_marketplaces = vec![market.clone()];
        let v = serde_json::to_value(&agent).unwrap();
        assert_eq!(
            v["agent"]["agent_context"],
            json!({"disabled_skills": ["noisy"], "registered_marketplaces": [market]})
        );
        agent.profile.registered_marketplaces.clear();
        assert_eq!(v["agent"]["tool_concurrency_limit"], 4);
        assert_eq!(v["agent"]["condenser"]["kind"], "LLMSummarizingCondenser");
        assert_eq!(v["agent"]["condenser"]["max_size"], 80);
        assert_eq!(v["agent"]["condenser"]["llm"]["usage_id"], "condenser");
        assert!(!format!("{agent:?}").contains("k3y-value"));
        // An ACP agent: its settings instead, no LLM, no key.
        agent.profile.acp = Some(
            json!({"acp_server": "custom", "acp_command": ["acp"]})
                .as_object()
                .unwrap()
                .clone(),
        );
        agent.agent_context = Some(AgentContext {
            system_message_suffix: "be brief".into(),
        });
        let v = serde_json::to_value(&agent).unwrap();
        assert!(v.get("agent").is_none(), "{v}");
        assert_eq!(
            v["agent_settings"],
            json!({"agent_kind": "acp", "acp_server": "custom", "acp_command": ["acp"],
                   "agent_context": {"system_message_suffix": "be brief"}})
        );
        assert!(!v.to_string().contains("k3y-value"));
    }
}
