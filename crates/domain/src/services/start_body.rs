//! The body of the agent server's create call of a conversation start (reference
//! agent-server-webhooks §1, "Create body"; docs/API.md, App conversations: start).

use serde_json::{Map, Value, json};

use crate::app_conversations::sealed_start::secret_sources;
use crate::app_conversations::start_request::StartRequest;
use crate::identity::redaction::MASK;
use crate::ids::ConversationId;

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
}

impl std::fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmConfig")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| MASK))
            .field("stream", &self.stream)
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

/// `conversation_id`, `agent` (`kind: Agent`, its `llm`, the terminal, file editor and task
/// tracker tools, `agent_context.system_message_suffix` when given), `workspace.working_dir`,
/// `autotitle` (unless a title was given), `initial_message`, `max_iterations`, `tags`, and
/// `secrets` as `StaticSecret` sources (issue 24 item 1). Holds the LLM key and the secrets:
/// never logged.
pub(super) fn create_body(b: &CreateBody<'_>) -> Value {
    let mut llm = json!({"model": b.model, "usage_id": "agent", "num_retries": 0});
    if let Some(url) = &b.llm.base_url {
        llm["base_url"] = json!(url);
    }
    if let Some(k) = &b.llm.api_key {
        llm["api_key"] = json!(k);
    }
    if b.llm.stream {
        llm["stream"] = json!(true);
    }
    let mut agent = json!({
        "kind": "Agent",
        "llm": llm,
        "tools": [{"name": "terminal"}, {"name": "file_editor"}, {"name": "task_tracker"}],
    });
    if let Some(suffix) = &b.request.system_message_suffix {
        agent["agent_context"] = json!({"system_message_suffix": suffix});
    }
    let mut body = json!({
        "conversation_id": b.id.to_string(),
        "agent": agent,
        "workspace": {"working_dir": b.workdir},
        "autotitle": b.request.title.is_none(),
    });
    if let Some(message) = b.request.effective_initial_message() {
        body["initial_message"] = message;
    }
    if let Some(n) = b.request.max_iterations {
        body["max_iterations"] = json!(n);
    }
    if !b.request.tags.is_empty() {
        body["tags"] = Value::Object(b.request.tags.clone());
    }
    if !b.secrets.is_empty() {
        body["secrets"] = secret_sources(b.secrets);
    }
    body
}
