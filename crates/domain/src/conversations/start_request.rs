//! The start request (reference app-server §5.1 `AppConversationStartRequest`), read strictly:
//! a field OpenHands does not define, or a value of the wrong shape, is a FastAPI-shaped 422
//! (issue 10; OpenHands ignores unknown fields). Fields OpenHands defines but Switchboard does
//! not act on (`processors`, `plugins`, `title`, `public`) are checked for
//! their shape, echoed in the task's `request`, and otherwise ignored (docs/API.md, App
//! conversations: start).

use serde_json::{Map, Value, json};
use switchboard_model::ValidationError;

use crate::conversations::app::ConversationTrigger;
use crate::ids::{ConversationId, SandboxId, parse_uuid};
use crate::validation::{self, loc};

pub use super::start_body::StartBody;

/// A start request, read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StartRequest {
    /// Run in this sandbox (resumed when paused) instead of a warm or new one.
    pub sandbox_id: Option<SandboxId>,
    /// The conversation id to use (else a new one).
    pub conversation_id: Option<ConversationId>,
    /// The first user message (`{role:"user", content:[…], run}`), as sent.
    pub initial_message: Option<Value>,
    /// Appended to the agent's system prompt.
    pub system_message_suffix: Option<String>,
    /// The LLM model (else the server's default).
    pub llm_model: Option<String>,
    /// The starting user's agent profile to launch from, by id (issue 25).
    pub agent_profile_id: Option<String>,
    /// The repository to clone into the working directory: a URL, a local path or a
    /// `file://` URL.
    pub selected_repository: Option<String>,
    /// The branch to check out.
    pub selected_branch: Option<String>,
    /// The git provider.
    pub git_provider: Option<String>,
    /// A suggested task (generates the initial message; excludes `initial_message`).
    pub suggested_task: Option<Map<String, Value>>,
    /// Title (OpenHands: not used by the start).
    pub title: Option<String>,
    /// What started it.
    pub trigger: Option<ConversationTrigger>,
    /// Pull requests.
    pub pr_number: Vec<i64>,
    /// The parent conversation (must exist and be visible: else 400).
    pub parent_conversation_id: Option<ConversationId>,
    /// `default` or `plan`.
    pub agent_type: String,
    /// Shared publicly.
    pub public: Option<bool>,
    /// Secrets for the agent (name → value); sealed at rest, never echoed.
    pub secrets: Map<String, Value>,
    /// Switchboard: the sandbox spec of a new sandbox (else the default).
    pub sandbox_spec_id: Option<String>,
    /// Switchboard: the agent's iteration limit.
    pub max_iterations: Option<u64>,
    /// Switchboard: tags of the conversation (string → string).
    pub tags: Map<String, Value>,
    /// The body as sent (for [`Self::echo`]).
    pub sent: StartBody,
}

impl StartRequest {
    /// The request as echoed in a task's `request`: every field as sent (`null` when absent),
    /// `pr_number` and `agent_type` as read, `secrets` with its names only (values replaced by
    /// `"**********"`).
    pub fn echo(&self) -> Value {
        let mut out = serde_json::to_value(&self.sent).expect("a start body serializes");
        out["pr_number"] = json!(self.pr_number);
        out["agent_type"] = json!(self.agent_type);
        out["secrets"] = match &self.sent.secrets {
            None => Value::Null,
            Some(secrets) => Value::Object(
                secrets
                    .keys()
                    .map(|k| (k.clone(), json!("**********")))
                    .collect(),
            ),
        };
        out
    }

    /// The initial message text of a suggested task (reference app-server §5.3 step 2), or
    /// the request's own `initial_message`.
    pub fn effective_initial_message(&self) -> Option<Value> {
        if let Some(task) = &self.suggested_task {
            let s = |k: &str| task.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
            let issue = task
                .get("issue_number")
                .map(Value::to_string)
                .unwrap_or_default();
            let text = format!(
                "Please work on this task from {}: #{} {} ({})",
                s("repo"),
                issue,
                s("title"),
                s("task_type")
            );
            return Some(
                json!({"role": "user", "content": [{"type": "text", "text": text}], "run": true}),
            );
        }
        self.initial_message.clone()
    }
}

/// A request that is well formed but asks for something impossible (answered 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadStartRequest(pub String);

/// Reads a start request from the JSON body, through [`StartBody`].
///
/// # Errors
/// The first 422 entry at `["body", …]`: not an object, an unknown field (`extra_forbidden`),
/// a value of the wrong type, a bad UUID, enum or message. `Ok(Err(..))` for the 400 cases: a
/// `suggested_task` together with an `initial_message`.
pub fn parse_start_request(
    body: &Value,
) -> Result<Result<StartRequest, BadStartRequest>, ValidationError> {
    let sent: StartBody = crate::typed_body::parse_one(body)?;
    let uuid = |key: &str, text: &Option<String>| match text {
        None => Ok(None),
        Some(s) => parse_uuid(s)
            .map(Some)
            .ok_or_else(|| validation::uuid_parsing(loc(["body", key]), s)),
    };
    let initial_message = sent
        .initial_message
        .as_ref()
        .filter(|m| !m.is_null())
        .map(|m| {
            json!({
                "role": "user",
                "content": m["content"],
                "run": m.get("run").and_then(Value::as_bool).unwrap_or(true),
            })
        });
    let request = StartRequest {
        sandbox_id: uuid("sandbox_id", &sent.sandbox_id)?.map(SandboxId),
        conversation_id: uuid("conversation_id", &sent.conversation_id)?.map(ConversationId),
        initial_message,
        system_message_suffix: sent.system_message_suffix.clone(),
        llm_model: sent.llm_model.clone(),
        agent_profile_id: sent.agent_profile_id.clone(),
        selected_repository: sent.selected_repository.clone(),
        selected_branch: sent.selected_branch.clone(),
        git_provider: sent.git_provider.clone(),
        suggested_task: sent.suggested_task.clone(),
        title: sent.title.clone(),
        trigger: sent.trigger.as_deref().and_then(ConversationTrigger::parse),
        pr_number: sent.pr_numbers()?,
        parent_conversation_id: uuid("parent_conversation_id", &sent.parent_conversation_id)?
            .map(ConversationId),
        agent_type: sent
            .agent_type
            .clone()
            .unwrap_or_else(|| "default".to_owned()),
        public: sent.public,
        secrets: sent.secrets.clone().unwrap_or_default(),
        sandbox_spec_id: sent.sandbox_spec_id.clone(),
        max_iterations: sent.max_iterations()?,
        tags: sent.tags.clone().unwrap_or_default(),
        sent,
    };
    if request.suggested_task.is_some() && request.initial_message.is_some() {
        return Ok(Err(BadStartRequest(
            "Only one of suggested_task and initial_message may be given".to_owned(),
        )));
    }
    Ok(Ok(request))
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_model::LocItem;

    fn err(body: Value) -> (String, Vec<LocItem>) {
        let e = parse_start_request(&body).unwrap_err();
        (e.error_type.as_str().to_owned(), e.loc)
    }

    #[test]
    fn reads_a_full_request_and_masks_secrets_in_the_echo() {
        let id = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b";
        let body = json!({
            "conversation_id": id,
            "initial_message": {"content": [{"type": "text", "text": "hi"}]},
            "llm_model": "openai/x", "selected_repository": "/tmp/r", "selected_branch": "main",
            "git_provider": "github", "trigger": "openhands_api", "pr_number": [3],
            "secrets": {"TOKEN": "s3cret"}, "public": true
        });
        let r = parse_start_request(&body).unwrap().unwrap();
        assert_eq!(r.conversation_id.unwrap().to_string(), id);
        assert_eq!(r.trigger, Some(ConversationTrigger::OpenhandsApi));
        assert_eq!(r.agent_type, "default");
        let echo = r.echo();
        assert!(!echo.to_string().contains("s3cret"), "{echo}");
        assert_eq!(echo["secrets"], json!({"TOKEN": "**********"}));
        assert_eq!(echo["initial_message"], body["initial_message"], "as sent");
        assert_eq!(echo["agent_type"], "default");
        assert!(echo["sandbox_id"].is_null() && echo["tags"].is_null());
        assert_eq!(echo.as_object().unwrap().len(), 22, "every field");
        let whole = parse_start_request(&json!({"max_iterations": 7.0}))
            .unwrap()
            .unwrap();
        assert_eq!(whole.echo()["max_iterations"], json!(7.0), "as sent");
    }

    #[test]
    fn integers_may_be_written_as_whole_numbers() {
        let r = parse_start_request(&json!({"pr_number": [3, 4.0], "max_iterations": 7.0}))
            .unwrap()
            .unwrap();
        assert_eq!((r.pr_number, r.max_iterations), (vec![3, 4], Some(7)));
        for body in [
            json!({"pr_number": [4.5]}),
            json!({"pr_number": [1e300]}),
            json!({"max_iterations": 1.5}),
            json!({"max_iterations": -1.0}),
        ] {
            assert_eq!(err(body.clone()).0, "int_type", "{body}");
        }
        assert_eq!(err(json!({"max_iterations": 0.0})).0, "greater_than");
    }

    #[test]
    fn refuses_unknown_and_malformed_fields_with_422_entries() {
        for (body, want, at) in [
            (json!([]), "model_type", vec!["body"]),
            (json!({"nope": 1}), "extra_forbidden", vec!["body", "nope"]),
            (
                json!({"conversation_id": "x"}),
                "uuid_parsing",
                vec!["body", "conversation_id"],
            ),
            (
                json!({"llm_model": 5}),
                "string_type",
                vec!["body", "llm_model"],
            ),
            (json!({"trigger": "fax"}), "enum", vec!["body", "trigger"]),
            (
                json!({"agent_type": "x"}),
                "enum",
                vec!["body", "agent_type"],
            ),
            (
                json!({"pr_number": ["a"]}),
                "int_type",
                vec!["body", "pr_number", "0"],
            ),
            (
                json!({"secrets": {"a": 1}}),
                "string_type",
                vec!["body", "secrets", "a"],
            ),
            (
                json!({"initial_message": {"content": "x"}}),
                "list_type",
                vec!["body", "initial_message", "content"],
            ),
            (
                json!({"initial_message": {"role": "agent", "content": []}}),
                "literal_error",
                vec!["body", "initial_message", "role"],
            ),
            (
                json!({"initial_message": [1]}),
                "model_type",
                vec!["body", "initial_message"],
            ),
            (
                json!({"initial_message": {"content": [{"type": "text", "text": "a\u{0}"}]}}),
                "string_pattern_mismatch",
                vec!["body", "initial_message", "content", "0", "text"],
            ),
            (
                json!({"initial_message": {"content": [{"type": "text"}]}}),
                "value_error",
                vec!["body", "initial_message", "content", "0"],
            ),
            (
                json!({"initial_message": {"content": [], "run": null}}),
                "bool_type",
                vec!["body", "initial_message", "run"],
            ),
            (
                json!({"selected_branch": "main\u{0}"}),
                "string_pattern_mismatch",
                vec!["body", "selected_branch"],
            ),
            (
                json!({"git_provider": 5}),
                "string_type",
                vec!["body", "git_provider"],
            ),
            (
                json!({"max_iterations": 0}),
                "greater_than",
                vec!["body", "max_iterations"],
            ),
        ] {
            let (ty, l) = err(body.clone());
            assert_eq!(ty, want, "{body}");
            let l: Vec<String> = l.iter().map(ToString::to_string).collect();
            assert_eq!(l, at, "{body}");
        }
    }

    #[test]
    fn suggested_task_with_initial_message_is_a_400() {
        let body = json!({"suggested_task": {"repo": "a/b"},
                          "initial_message": {"content": [{"type": "text", "text": "x"}]}});
        assert!(parse_start_request(&body).unwrap().is_err());
        let only_task = json!({"suggested_task": {"repo": "a/b", "title": "fix"}});
        let r = parse_start_request(&only_task).unwrap().unwrap();
        assert!(
            r.effective_initial_message()
                .unwrap()
                .to_string()
                .contains("fix")
        );
    }
}
