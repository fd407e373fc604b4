//! The body of the agent server's create call of a conversation start (reference
//! agent-server-webhooks §1, "Create body"; docs/API.md, App conversations: start).

use serde_json::{Map, Value};

use crate::conversations::start_request::StartRequest;
use crate::identity::redaction::MASK;
use crate::ids::ConversationId;
use crate::sandboxes::agent_requests::{
    AgentContext, AgentSpec, LlmSpec, ProfileParts, SecretSource, StartConversationRequest,
    ToolSpec, WorkspaceSpec,
};

/// The LLM every conversation gets unless the request names a model (issue 10: `--llm-model`,
/// `--llm-base-url`, `--llm-api-key-file` or `LLM_MODEL`, `LLM_BASE_URL`, `LLM_API_KEY`).
/// `Debug` never shows the key.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct LlmConfig {
    /// The default model, e.g. `openai/gpt-4o` (LiteLLM names).
    pub model: Option<String>,
    /// The provider's base URL, when not the model's default.
    pub base_url: Option<String>,
    /// The API key; never written to a response, a task detail or a log line.
    pub api_key: Option<String>,
    /// Ask the LLM to stream its completions (the agent SDK's `LLM.stream`): the agent
    /// server then emits `StreamingDeltaEvent`s, which live delivery relays as transient
    /// frames (issue 11; `--llm-stream`).
    pub stream: bool,
    /// Whose key [`api_key`](Self::api_key) is when it is not the starting member's own:
    /// `organization` (its default, an LLM profile of its, a provider connection) or
    /// `operator` (`--llm-*`). Such a key never enters a sandbox: the start sends it through
    /// the LLM pass-through ([`crate::services::LlmRelayService`]; issue 38).
    pub key_owner: Option<&'static str>,
}

impl LlmConfig {
    /// The operator's LLM (`--llm-model`, `--llm-base-url`, the key of `--llm-api-key-file` or
    /// `LLM_API_KEY`, `--llm-stream`): an empty model or base URL is none, and a key is the
    /// operator's ([`LlmConfig::key_owner`] `operator`).
    pub fn operator(
        model: Option<String>,
        base_url: Option<String>,
        api_key: Option<String>,
        stream: bool,
    ) -> LlmConfig {
        LlmConfig {
            model: model.filter(|m| !m.is_empty()),
            base_url: base_url.filter(|b| !b.is_empty()),
            key_owner: api_key.is_some().then_some("operator"),
            api_key,
            stream,
        }
    }
}

impl std::fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmConfig")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| MASK))
            .field("stream", &self.stream)
            .field("key_owner", &self.key_owner)
            .finish()
    }
}

/// What the create body is made of.
pub(super) struct CreateBody<'a> {
    /// The conversation id handed to the agent server.
    pub id: ConversationId,
    /// The request as sent.
    pub request: &'a StartRequest,
    /// The server's LLM configuration (base URL, key, streaming).
    pub llm: &'a LlmConfig,
    /// The model: the request's, else the server's.
    pub model: &'a str,
    /// The conversation's working directory in the sandbox.
    pub workdir: &'a str,
    /// The request's secrets, name → value.
    pub secrets: &'a Map<String, Value>,
}

/// The agent server's create request of a start: `conversation_id`, `agent` (`kind: Agent`,
/// its `llm`, the terminal, file editor and task tracker tools,
/// `agent_context.system_message_suffix` when given), `workspace.working_dir`, `autotitle`
/// (unless a title was given), `initial_message`, `max_iterations`, `tags`, and `secrets` as
/// `StaticSecret` sources (issue 24 item 1). The one place that decides what the agent server
/// is asked for (the LLM included). Holds the LLM key and the secrets: never logged.
pub(super) fn create_body(b: &CreateBody<'_>) -> StartConversationRequest {
    StartConversationRequest {
        conversation_id: b.id.to_string(),
        agent: AgentSpec {
            kind: "Agent",
            llm: LlmSpec {
                model: b.model.to_owned(),
                usage_id: "agent",
                num_retries: 0,
                base_url: b.llm.base_url.clone(),
                api_key: b.llm.api_key.clone(),
                stream: b.llm.stream,
            },
            tools: ["terminal", "file_editor", "task_tracker"]
                .into_iter()
                .map(ToolSpec::named)
                .collect(),
            agent_context: b
                .request
                .system_message_suffix
                .clone()
                .map(|suffix| AgentContext {
                    system_message_suffix: suffix,
                }),
            mcp_config: None,
            profile: ProfileParts::default(),
        },
        workspace: WorkspaceSpec {
            working_dir: b.workdir.to_owned(),
        },
        autotitle: b.request.title.is_none(),
        initial_message: b.request.effective_initial_message(),
        max_iterations: b.request.max_iterations,
        tags: b.request.tags.clone(),
        secrets: b
            .secrets
            .iter()
            .map(|(name, value)| {
                let source = SecretSource {
                    kind: "StaticSecret",
                    value: value.clone(),
                };
                (name.clone(), source)
            })
            .collect(),
        confirmation_policy: None,
        security_analyzer: None,
    }
}
