//! The start request (reference app-server §5.1 `AppConversationStartRequest`), read strictly:
//! a field OpenHands does not define, or a value of the wrong shape, is a FastAPI-shaped 422
//! (issue 10; OpenHands ignores unknown fields). Fields OpenHands defines but Switchboard does
//! not act on (`processors`, `plugins`, `title`, `public`) are checked for
//! their shape, echoed in the task's `request`, and otherwise ignored (docs/API.md, App
//! conversations: start).

use serde_json::{Map, Value, json};
use switchboard_model::{ErrorType, LocItem, ValidationError};

use crate::conversations::app::{ConversationTrigger, GIT_PROVIDERS};
use crate::ids::{ConversationId, SandboxId, parse_uuid};
use crate::validation::{self, field, loc};

/// The fields of `AppConversationStartRequest`, in OpenHands' order.
pub const START_REQUEST_FIELDS: [&str; 22] = [
    "sandbox_id",
    "conversation_id",
    "initial_message",
    "system_message_suffix",
    "processors",
    "llm_model",
    "agent_profile_id",
    "selected_repository",
    "selected_branch",
    "git_provider",
    "suggested_task",
    "title",
    "trigger",
    "pr_number",
    "parent_conversation_id",
    "agent_type",
    "public",
    "plugins",
    "secrets",
    "sandbox_spec_id",
    "max_iterations",
    "tags",
];

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
}

impl StartRequest {
    /// The request as echoed in a task's `request`: every field, `secrets` with its names
    /// only (values replaced by `"**********"`).
    pub fn echo(&self, raw: &Value) -> Value {
        let mut out = Map::new();
        for key in START_REQUEST_FIELDS {
            let v = raw.get(key).cloned().unwrap_or(Value::Null);
            out.insert(key.to_owned(), v);
        }
        out.insert("pr_number".into(), json!(self.pr_number));
        out.insert("agent_type".into(), json!(self.agent_type));
        let masked: Map<String, Value> = self
            .secrets
            .keys()
            .map(|k| (k.clone(), json!("**********")))
            .collect();
        out.insert(
            "secrets".into(),
            if self.secrets.is_empty() && raw.get("secrets").is_none_or(Value::is_null) {
                Value::Null
            } else {
                Value::Object(masked)
            },
        );
        Value::Object(out)
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

// Over 100 lines, on purpose: one pass over OpenHands' AppConversationStartRequest, a match arm
// per field in the reference's order, so the rules read as the schema does (each arm is short;
// splitting them apart would scatter one table over many functions).
/// Reads a start request from the JSON body.
///
/// # Errors
/// A 422 entry at `["body", …]`: not an object, an unknown field (`extra_forbidden`), a value
/// of the wrong type, a bad UUID, enum or message. `Ok(Err(..))` for the 400 cases: a
/// `suggested_task` together with an `initial_message`.
pub fn parse_start_request(
    body: &Value,
) -> Result<Result<StartRequest, BadStartRequest>, ValidationError> {
    let root = loc(["body"]);
    let obj = body
        .as_object()
        .ok_or_else(|| validation::model_type(root.clone(), "AppConversationStartRequest", body))?;
    for (k, v) in obj {
        if !START_REQUEST_FIELDS.contains(&k.as_str()) {
            return Err(ValidationError::new(
                ErrorType::ExtraForbidden,
                field(&root, k),
                "Extra inputs are not permitted",
            )
            .with_input(v.clone()));
        }
    }
    let f = Fields { obj, root };
    // Judged in this order: the first malformed field is the one reported.
    let initial_message = match f.get("initial_message") {
        None => None,
        Some(m) => Some(check_message(m, &f.at("initial_message"))?),
    };
    let git_provider = f.one_of("git_provider", &GIT_PROVIDERS)?;
    let trigger = f.trigger()?;
    let agent_type = f
        .one_of("agent_type", &["default", "plan"])?
        .unwrap_or_else(|| "default".to_owned());
    let pr_number = f.pr_number()?;
    let public = f.public()?;
    let max_iterations = f.max_iterations()?;
    f.list("processors")?;
    f.list("plugins")?;
    let suggested_task = f.object("suggested_task")?;
    let request = StartRequest {
        sandbox_id: f.uuid("sandbox_id")?.map(SandboxId),
        conversation_id: f.uuid("conversation_id")?.map(ConversationId),
        initial_message,
        system_message_suffix: f.text("system_message_suffix")?,
        llm_model: f.text("llm_model")?,
        agent_profile_id: f.text("agent_profile_id")?,
        selected_repository: f.text("selected_repository")?,
        selected_branch: f.text("selected_branch")?,
        git_provider,
        suggested_task,
        title: f.text("title")?,
        trigger,
        pr_number,
        parent_conversation_id: f.uuid("parent_conversation_id")?.map(ConversationId),
        agent_type,
        public,
        secrets: f.string_map("secrets")?,
        sandbox_spec_id: f.text("sandbox_spec_id")?,
        max_iterations,
        tags: f.string_map("tags")?,
    };
    if request.suggested_task.is_some() && request.initial_message.is_some() {
        return Ok(Err(BadStartRequest(
            "Only one of suggested_task and initial_message may be given".to_owned(),
        )));
    }
    Ok(Ok(request))
}

/// The fields of a start body, each read by its type's rule with its 422 at
/// `["body", name]`; `null` reads as absent.
struct Fields<'a> {
    obj: &'a Map<String, Value>,
    root: Vec<LocItem>,
}

impl Fields<'_> {
    fn at(&self, k: &str) -> Vec<LocItem> {
        field(&self.root, k)
    }

    fn get(&self, k: &str) -> Option<&Value> {
        self.obj.get(k).filter(|v| !v.is_null())
    }

    /// A string without NUL.
    fn text(&self, k: &str) -> Result<Option<String>, ValidationError> {
        match self.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => {
                validation::refuse_nul(|| self.at(k), s)?;
                Ok(Some(s.clone()))
            }
            Some(other) => Err(validation::string_type(self.at(k), other)),
        }
    }

    /// A string that is one of `names` (an `enum` 422 otherwise).
    fn one_of(&self, k: &str, names: &[&str]) -> Result<Option<String>, ValidationError> {
        let value = self.text(k)?;
        if let Some(v) = &value
            && !names.contains(&v.as_str())
        {
            return Err(validation::not_one_of(
                ErrorType::Enum,
                self.at(k),
                names,
                &json!(v),
            ));
        }
        Ok(value)
    }

    /// A UUID, dashed or not.
    fn uuid(&self, k: &str) -> Result<Option<uuid::Uuid>, ValidationError> {
        match self.text(k)? {
            None => Ok(None),
            Some(s) => parse_uuid(&s)
                .map(Some)
                .ok_or_else(|| validation::uuid_parsing(self.at(k), &s)),
        }
    }

    /// An object.
    fn object(&self, k: &str) -> Result<Option<Map<String, Value>>, ValidationError> {
        match self.get(k) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m.clone())),
            Some(other) => Err(ValidationError::new(
                ErrorType::DictType,
                self.at(k),
                "Input should be a valid dictionary",
            )
            .with_input(other.clone())),
        }
    }

    /// A list.
    fn list(&self, k: &str) -> Result<Option<Vec<Value>>, ValidationError> {
        match self.get(k) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a.clone())),
            Some(other) => Err(validation::list_type(self.at(k), other)),
        }
    }

    /// An object of strings (empty when absent).
    fn string_map(&self, k: &str) -> Result<Map<String, Value>, ValidationError> {
        let m = self.object(k)?.unwrap_or_default();
        for (name, v) in &m {
            let at = || {
                let mut l = self.at(k);
                l.push(LocItem::from(name.as_str()));
                l
            };
            match v {
                Value::String(s) => validation::refuse_nul(at, s)?,
                other => return Err(validation::string_type(at(), other)),
            }
        }
        Ok(m)
    }

    /// `trigger`: one of [`ConversationTrigger`]'s names.
    fn trigger(&self) -> Result<Option<ConversationTrigger>, ValidationError> {
        let Some(t) = self.text("trigger")? else {
            return Ok(None);
        };
        ConversationTrigger::parse(&t).map(Some).ok_or_else(|| {
            let names: Vec<&str> = ConversationTrigger::ALL
                .iter()
                .map(|t| t.as_str())
                .collect();
            validation::not_one_of(ErrorType::Enum, self.at("trigger"), &names, &json!(t))
        })
    }

    /// `pr_number`: a list of integers.
    fn pr_number(&self) -> Result<Vec<i64>, ValidationError> {
        let mut numbers = Vec::new();
        for (i, v) in self
            .list("pr_number")?
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let mut at = self.at("pr_number");
            at.push(LocItem::Index(i));
            numbers.push(integral(v).ok_or_else(|| {
                ValidationError::new(ErrorType::IntType, at, "Input should be a valid integer")
                    .with_input(v.clone())
            })?);
        }
        Ok(numbers)
    }

    /// `public`: a boolean.
    fn public(&self) -> Result<Option<bool>, ValidationError> {
        match self.get("public") {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(validation::bool_type(self.at("public"), other)),
        }
    }

    /// `max_iterations`: an integer over 0.
    fn max_iterations(&self) -> Result<Option<u64>, ValidationError> {
        let Some(v) = self.get("max_iterations") else {
            return Ok(None);
        };
        match integral(v).and_then(|n| u64::try_from(n).ok()) {
            Some(0) => Err(validation::greater_than(self.at("max_iterations"), 0, v)),
            Some(n) => Ok(Some(n)),
            None => Err(ValidationError::new(
                ErrorType::IntType,
                self.at("max_iterations"),
                "Input should be a valid integer",
            )
            .with_input(v.clone())),
        }
    }
}

/// An integer as pydantic reads one in lax mode: a JSON integer, or a number with no
/// fractional part (`3.0`; JSON Schema's `integer` includes it), within `i64`.
fn integral(v: &Value) -> Option<i64> {
    if let Some(n) = v.as_i64() {
        return Some(n);
    }
    let f = v.as_f64()?;
    // i64::MAX as f64 rounds up to 2^63, which is out of range: compare with < on the bound.
    (f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64).then_some(f as i64)
}

/// Checks a `SendMessageRequest`-shaped message: `role` `"user"` (default), `content` a
/// non-empty list of `{type:"text", text}` or `{type:"image", image_urls:[…]}`, `run` a bool.
fn check_message(m: &Value, at: &[LocItem]) -> Result<Value, ValidationError> {
    let obj = m
        .as_object()
        .ok_or_else(|| validation::model_type(at.to_vec(), "SendMessageRequest", m))?;
    for (k, v) in obj {
        if !["role", "content", "run"].contains(&k.as_str()) {
            return Err(ValidationError::new(
                ErrorType::ExtraForbidden,
                field(at, k),
                "Extra inputs are not permitted",
            )
            .with_input(v.clone()));
        }
    }
    match obj.get("role") {
        None | Some(Value::Null) => {}
        Some(Value::String(r)) if r == "user" => {}
        Some(other) => {
            return Err(validation::not_one_of(
                ErrorType::LiteralError,
                field(at, "role"),
                &["user"],
                other,
            ));
        }
    }
    if let Some(run) = obj.get("run")
        && !run.is_boolean()
    {
        return Err(validation::bool_type(field(at, "run"), run));
    }
    let content = match obj.get("content") {
        Some(Value::Array(a)) => a,
        Some(other) => return Err(validation::list_type(field(at, "content"), other)),
        None => return Err(validation::missing(field(at, "content"), m.clone())),
    };
    for (i, part) in content.iter().enumerate() {
        let mut pat = field(at, "content");
        pat.push(LocItem::Index(i));
        let kind = part.get("type").and_then(Value::as_str);
        let ok = match kind {
            Some("text") => part.get("text").is_some_and(Value::is_string),
            Some("image") => part.get("image_urls").is_some_and(Value::is_array),
            _ => false,
        };
        if !ok {
            return Err(validation::value_error(
                pat,
                "expected {\"type\":\"text\",\"text\":str} or {\"type\":\"image\",\"image_urls\":[str]}",
                part,
            ));
        }
        if let Some(t) = part.get("text").and_then(Value::as_str) {
            let mut tat = pat.clone();
            tat.push(LocItem::from("text"));
            validation::refuse_nul(|| tat, t)?;
        }
    }
    Ok(json!({
        "role": "user",
        "content": content,
        "run": obj.get("run").and_then(Value::as_bool).unwrap_or(true),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let echo = r.echo(&body).to_string();
        assert!(!echo.contains("s3cret"), "{echo}");
        assert!(echo.contains("TOKEN"));
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
