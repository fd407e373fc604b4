//! The body of the agent server's create call of a conversation start (reference
//! agent-server-webhooks §1, "Create body"; docs/API.md, App conversations: start).

use serde_json::{Map, Value, json};

use crate::app_conversations::sealed_start::secret_sources;
use crate::app_conversations::start_request::StartRequest;
use crate::ids::ConversationId;
use crate::services::conversation_start::LlmConfig;

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
