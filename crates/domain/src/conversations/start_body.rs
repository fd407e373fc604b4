//! The start request's body as sent (reference app-server §5.1
//! `AppConversationStartRequest`): one typed-body declaration (issue 37) that gives the
//! OpenAPI schema, the 422s and the echo; [`super::start_request`] reads it into a
//! [`StartRequest`](super::start_request::StartRequest).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use switchboard_model::{ErrorType, LocItem, ValidationError};
use utoipa::openapi::schema::{ArrayBuilder, Object, ObjectBuilder, Schema, SchemaType, Type};

use crate::conversations::app::{
    ConversationTrigger, GIT_PROVIDERS, MESSAGE_ITEM_WORDS, message_item_schema,
};
use crate::conversations::repository::{
    BRANCH_PATTERN, MAX_BRANCH_LEN, MAX_REPOSITORY_LEN, REPOSITORY_PATTERN,
};
use crate::typed_body::{RequestBody, fields};
use crate::validation::{self, loc};

/// `POST /api/v1/app-conversations`' body as sent (reference app-server §5.1
/// `AppConversationStartRequest`), read strictly: only its fields, each nullable (`null` reads
/// as absent), text without NUL, enums for `git_provider`, `trigger` and `agent_type`, a
/// `SendMessageRequest`-shaped `initial_message`. [`parse_start_request`](super::start_request::parse_start_request) reads it into a
/// [`StartRequest`](super::start_request::StartRequest), whose `echo` shows it back. Its fields in OpenHands' order.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(
    as = AppConversationStartRequest,
    description = "OpenHands' `AppConversationStartRequest`, read strictly: an unknown field or a value of the wrong shape is a 422. Switchboard also takes `sandbox_spec_id` (the spec of a new sandbox), `max_iterations` and `tags`. `secrets` are sealed at rest and never echoed."
)]
pub struct StartBody {
    #[serde(default)]
    #[schema(schema_with = nullable_uuid)]
    pub(crate) sandbox_id: Option<String>,
    #[serde(default)]
    #[schema(schema_with = nullable_uuid)]
    pub(crate) conversation_id: Option<String>,
    #[serde(default)]
    #[schema(schema_with = initial_message_schema)]
    pub(crate) initial_message: Option<Value>,
    #[serde(default)]
    #[schema(schema_with = fields::nullable_text)]
    pub(crate) system_message_suffix: Option<String>,
    #[serde(default)]
    #[schema(schema_with = nullable_list)]
    pub(crate) processors: Option<Value>,
    #[serde(default)]
    #[schema(schema_with = fields::nullable_text)]
    pub(crate) llm_model: Option<String>,
    #[serde(default)]
    #[schema(schema_with = fields::nullable_text)]
    pub(crate) agent_profile_id: Option<String>,
    #[serde(default)]
    #[schema(schema_with = repository_schema)]
    pub(crate) selected_repository: Option<String>,
    #[serde(default)]
    #[schema(schema_with = branch_schema)]
    pub(crate) selected_branch: Option<String>,
    #[serde(default)]
    #[schema(schema_with = git_provider_schema)]
    pub(crate) git_provider: Option<String>,
    #[serde(default)]
    #[schema(schema_with = nullable_object)]
    pub(crate) suggested_task: Option<Map<String, Value>>,
    #[serde(default)]
    #[schema(schema_with = fields::nullable_text)]
    pub(crate) title: Option<String>,
    #[serde(default)]
    #[schema(schema_with = trigger_schema)]
    pub(crate) trigger: Option<String>,
    #[serde(default)]
    #[schema(schema_with = pr_number_schema)]
    pub(crate) pr_number: Option<Vec<Value>>,
    #[serde(default)]
    #[schema(schema_with = nullable_uuid)]
    pub(crate) parent_conversation_id: Option<String>,
    #[serde(default)]
    #[schema(schema_with = agent_type_schema)]
    pub(crate) agent_type: Option<String>,
    #[serde(default)]
    pub(crate) public: Option<bool>,
    #[serde(default)]
    #[schema(schema_with = nullable_list)]
    pub(crate) plugins: Option<Value>,
    #[serde(default)]
    #[schema(schema_with = string_map)]
    pub(crate) secrets: Option<Map<String, Value>>,
    #[serde(default)]
    #[schema(schema_with = fields::nullable_text)]
    pub(crate) sandbox_spec_id: Option<String>,
    #[serde(default)]
    #[schema(schema_with = max_iterations_schema)]
    pub(crate) max_iterations: Option<Value>,
    #[serde(default)]
    #[schema(schema_with = string_map)]
    pub(crate) tags: Option<Map<String, Value>>,
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
    pub(crate) fn pr_numbers(&self) -> Result<Vec<i64>, ValidationError> {
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
    pub(crate) fn max_iterations(&self) -> Result<Option<u64>, ValidationError> {
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
