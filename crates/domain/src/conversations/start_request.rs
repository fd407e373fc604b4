//! The start request (reference app-server §5.1 `AppConversationStartRequest`), read strictly:
//! a field OpenHands does not define, or a value of the wrong shape, is a FastAPI-shaped 422
//! (issue 10; OpenHands ignores unknown fields). Fields OpenHands defines but Switchboard does
//! not act on (`processors`, `plugins`, `title`, `public`) are checked for
//! their shape, echoed in the task's `request`, and otherwise ignored (docs/API.md, App
//! conversations: start).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use switchboard_model::{ErrorType, LocItem, ValidationError};
use utoipa::openapi::schema::{
    ArrayBuilder, Object, ObjectBuilder, Schema, SchemaType, Type,
};

use crate::conversations::app::{
    ConversationTrigger, GIT_PROVIDERS, MESSAGE_ITEM_WORDS, message_item_schema,
};
use crate::conversations::repository::{
    BRANCH_PATTERN, MAX_BRANCH_LEN, MAX_REPOSITORY_LEN, REPOSITORY_PATTERN,
};
use crate::ids::{ConversationId, SandboxId, parse_uuid};
use crate::typed_body::{RequestBody, fields};
use crate::validation::{self, loc};

/// `POST /api/v1/app-conversations`' body as sent (reference app-server §5.1
/// `AppConversationStartRequest`), read strictly: only its fields, each nullable (`null` reads
/// as absent), text without NUL, enums for `git_provider`, `trigger` and `agent_type`, a
/// `SendMessageRequest`-shaped `initial_message`. [`parse_start_request`] reads it into a
/// [`StartRequest`]; [`StartRequest::echo`] shows it back. Its fields in OpenHands' order.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(
    as = AppConversationStartRequest,
    description = "OpenHands' `AppConversationStartRequest`, read strictly: an unknown field or a value of the wrong shape is a 422. Switchboard also takes `sandbox_spec_id` (the spec of a new sandbox), `max_iterations` and `tags`. `secrets` are sealed at rest and never echoed."
)]
pub struct StartBody {
    #[serde(default)]
    #[schema(schema_with = nullable_uuid)]
    sandbox_id: Option<String>,
    #[serde(default)]
    #[schema(schema_with = nullable_uuid)]
    conversation_id: Option<String>,
    #[serde(default)]
    #[schema(schema_with = initial_message_schema)]
    initial_message: Option<Value>,
    #[serde(default)]
    #[schema(schema_with = fields::nullable_text)]
    system_message_suffix: Option<String>,
    #[serde(default)]
    #[schema(schema_with = nullable_list)]
    processors: Option<Value>,
    #[serde(default)]
    #[schema(schema_with = fields::nullable_text)]
    llm_model: Option<String>,
    #[serde(default)]
    #[schema(schema_with = fields::nullable_text)]
    agent_profile_id: Option<String>,
    #[serde(default)]
    #[schema(schema_with = repository_schema)]
    selected_repository: Option<String>,
    #[serde(default)]
    #[schema(schema_with = branch_schema)]
    selected_branch: Option<String>,
    #[serde(default)]
    #[schema(schema_with = git_provider_schema)]
    git_provider: Option<String>,
    #[serde(default)]
    #[schema(schema_with = nullable_object)]
    suggested_task: Option<Map<String, Value>>,
    #[serde(default)]
    #[schema(schema_with = fields::nullable_text)]
    title: Option<String>,
    #[serde(default)]
    #[schema(schema_with = trigger_schema)]
    trigger: Option<String>,
    #[serde(default)]
    #[schema(schema_with = pr_number_schema)]
    pr_number: Option<Vec<Value>>,
    #[serde(default)]
    #[schema(schema_with = nullable_uuid)]
    parent_conversation_id: Option<String>,
    #[serde(default)]
    #[schema(schema_with = agent_type_schema)]
    agent_type: Option<String>,
    #[serde(default)]
    public: Option<bool>,
    #[serde(default)]
    #[schema(schema_with = nullable_list)]
    plugins: Option<Value>,
    #[serde(default)]
    #[schema(schema_with = string_map)]
    secrets: Option<Map<String, Value>>,
    #[serde(default)]
    #[schema(schema_with = fields::nullable_text)]
    sandbox_spec_id: Option<String>,
    #[serde(default)]
    #[schema(schema_with = max_iterations_schema)]
    max_iterations: Option<Value>,
    #[serde(default)]
    #[schema(schema_with = string_map)]
    tags: Option<Map<String, Value>>,
}

fn nullable_uuid() -> Object {
    fields::nullable_string()
        .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
            utoipa::openapi::KnownFormat::Uuid,
        )))
        .pattern(Some(crate::UUID_PATTERN))
        .build()
}

fn nullable_list() -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .build()
}

fn nullable_object() -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
        .build()
}

/// An object of NUL-free strings, or `null`.
fn string_map() -> Object {
    nullable_object_builder()
        .additional_properties(Some(
            fields::string().pattern(Some(validation::NO_NUL_PATTERN)),
        ))
        .build()
}

fn nullable_object_builder() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
}

/// A string that is one of `values`, or `null` (an `enum` 422; a value of another type a
/// `string_type`).
fn nullable_enum<'a>(values: impl IntoIterator<Item = &'a str>) -> ObjectBuilder {
    fields::nullable_string().enum_values(Some(
        values.into_iter().map(Value::from).chain([Value::Null]),
    ))
}

fn git_provider_schema() -> Object {
    nullable_enum(GIT_PROVIDERS).build()
}

fn trigger_schema() -> Object {
    nullable_enum(ConversationTrigger::ALL.iter().map(|t| t.as_str())).build()
}

fn agent_type_schema() -> Object {
    nullable_enum(["default", "plan"])
        .default(Some(json!("default")))
        .build()
}

/// The repository to clone: the document states what a server that allows no local
/// repository takes; the start judges it against the server's own rules (a 422 at this field
/// before any sandbox starts), this body only refuses a NUL.
fn repository_schema() -> Object {
    fields::nullable_string()
        .max_length(Some(MAX_REPOSITORY_LEN))
        .pattern(Some(REPOSITORY_PATTERN))
        .description(Some("The repository to clone (issue 18, Repository sources): `owner/repo` (cloned from its `git_provider`'s public host, GitHub when none), an `https://` or `ssh://` URL, or `user@host:path`, in printable ASCII without spaces. A local path or `file://` URL is accepted besides only under a directory the server's operator allows (`--allow-local-repositories`; none by default, and this pattern describes such a server). Anything else is a 422 at this field, before any sandbox starts."))
        .extensions(Some(fields::accepts_more()))
        .build()
}

/// The branch to check out: judged by the start (as the repository is); this body only
/// refuses a NUL.
fn branch_schema() -> Object {
    fields::nullable_string()
        .max_length(Some(MAX_BRANCH_LEN))
        .pattern(Some(BRANCH_PATTERN))
        .description(Some("The branch to check out: a plain branch name, never anything git could read as an option."))
        .extensions(Some(fields::accepts_more()))
        .build()
}

/// Integers in `i64` (a whole number such as `3.0` is one; the range judged by the body's
/// check, as `int_type`).
fn pr_number_schema() -> Schema {
    let integer = ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(i64::MIN))
        .maximum(Some(i64::MAX))
        .extensions(Some(fields::accepts_more()));
    let list = ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(integer)
        .build();
    Schema::Array(list)
}

/// An integer over 0 (the bounds judged by the body's check: `greater_than` for 0, `int_type`
/// below or past `i64`).
fn max_iterations_schema() -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Integer, Type::Null]))
        .minimum(Some(1))
        .maximum(Some(i64::MAX))
        .extensions(Some(fields::accepts_more()))
        .build()
}

/// A `SendMessageRequest`-shaped first message: `role` `"user"` (default), `content` a list
/// of `{type:"text", text}` or `{type:"image", image_urls:[…]}` (an item of neither kind one
/// `value_error`; a NUL in a text its own entry), `run` a boolean (default `true`).
fn initial_message_schema() -> Object {
    let item = message_item_schema(
        fields::string().pattern(Some(validation::NO_NUL_PATTERN)),
        ArrayBuilder::new(),
        fields::value_error_words_nul_apart(MESSAGE_ITEM_WORDS),
    );
    let role = ObjectBuilder::new()
        .schema_type(SchemaType::AnyValue)
        .enum_values(Some([Value::from("user"), Value::Null]))
        .extensions(Some(fields::literal_mark()));
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
        .title(Some("SendMessageRequest"))
        .property("role", role)
        .property(
            "content",
            ArrayBuilder::new().schema_type(Type::Array).items(item),
        )
        .property(
            "run",
            ObjectBuilder::new()
                .schema_type(Type::Boolean)
                .default(Some(json!(true))),
        )
        .required("content")
        .additional_properties(Some(
            utoipa::openapi::schema::AdditionalProperties::FreeForm(false),
        ))
        .build()
}

impl RequestBody for StartBody {
    /// The integers' ranges, and a NUL in the repository or the branch (whose documented
    /// patterns the validator leaves to the start).
    fn check(&self) -> Result<(), Vec<ValidationError>> {
        let at = |k: &str| loc(["body", k]);
        for (key, text) in [
            ("selected_repository", &self.selected_repository),
            ("selected_branch", &self.selected_branch),
        ] {
            if let Some(t) = text {
                validation::refuse_nul(|| at(key), t).map_err(|e| vec![e])?;
            }
        }
        self.pr_numbers().map_err(|e| vec![e])?;
        self.max_iterations().map_err(|e| vec![e])?;
        Ok(())
    }
}

impl StartBody {
    /// `pr_number`, each an integer in `i64`.
    fn pr_numbers(&self) -> Result<Vec<i64>, ValidationError> {
        let list = self.pr_number.as_deref().unwrap_or_default();
        let mut numbers = Vec::with_capacity(list.len());
        for (i, v) in list.iter().enumerate() {
            let Some(n) = integral(v) else {
                let at = vec![
                    LocItem::from("body"),
                    LocItem::from("pr_number"),
                    LocItem::Index(i),
                ];
                return Err(int_type(at, v));
            };
            numbers.push(n);
        }
        Ok(numbers)
    }

    /// `max_iterations`: an integer over 0.
    fn max_iterations(&self) -> Result<Option<u64>, ValidationError> {
        let Some(v) = self.max_iterations.as_ref().filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let at = loc(["body", "max_iterations"]);
        match integral(v).and_then(|n| u64::try_from(n).ok()) {
            Some(0) => Err(validation::greater_than(at, 0, v)),
            Some(n) => Ok(Some(n)),
            None => Err(int_type(at, v)),
        }
    }
}

fn int_type(at: Vec<LocItem>, v: &Value) -> ValidationError {
    ValidationError::new(ErrorType::IntType, at, "Input should be a valid integer")
        .with_input(v.clone())
}

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
