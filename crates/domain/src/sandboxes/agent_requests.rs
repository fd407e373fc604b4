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
    /// The agent: its LLM, tools and context.
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
    /// `{"kind": "AlwaysConfirm"}` when the starting user asked for confirmation (issue 21).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation_policy: Option<Value>,
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

/// The agent of a conversation (`kind: Agent`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentSpec {
    /// Always `Agent`.
    pub kind: &'static str,
    /// Its LLM.
    pub llm: LlmSpec,
    /// Its tools by name.
    pub tools: Vec<ToolSpec>,
    /// `agent_context.system_message_suffix`, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_context: Option<AgentContext>,
    /// The starting user's MCP servers (`mcp_config`, the SDK's shape), when set (issue 21).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_config: Option<Value>,
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
}
