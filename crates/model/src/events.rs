//! Event kinds (SCHEMA.md §6) and the `Event` type that carries them.

use indexmap::IndexMap;

use crate::classification::{ErrorClassification, classify_error};
use crate::content::{
    AnyThinkingBlock, CriticResult, Message, MessageToolCall, ReasoningItemModel, SecurityRisk,
    TextContent,
};
use crate::de::{ErrExt, FromJson, Loc, Res, ge, string_enum};
use crate::error::ErrorType;
use crate::json::Json;
use crate::macros::model;
use crate::tools::ToolDefinition;
use crate::{Action, Observation};

string_enum! {
    /// Who produced an event (spec §2.1).
    pub enum Source: LiteralError {
        /// The agent.
        Agent = "agent",
        /// The user.
        User = "user",
        /// The environment (tools, runtime, conversation machinery).
        Environment = "environment",
        /// A hook.
        Hook = "hook",
    }
}

string_enum! {
    /// When a hook ran (spec §2.2 field rule 1).
    pub enum HookEventType: LiteralError {
        /// Before a tool runs.
        PreToolUse = "PreToolUse",
        /// After a tool ran.
        PostToolUse = "PostToolUse",
        /// When the user submits a prompt.
        UserPromptSubmit = "UserPromptSubmit",
        /// At session start.
        SessionStart = "SessionStart",
        /// At session end.
        SessionEnd = "SessionEnd",
        /// When the agent stops.
        Stop = "Stop",
    }
}

string_enum! {
    /// Who rejected an action (spec §6 rule 5).
    pub enum RejectionSource: LiteralError {
        /// The user, in confirmation mode.
        User = "user",
        /// A PreToolUse hook.
        Hook = "hook",
    }
}

/// A new uuid4, lowercase and hyphenated, as the SDK generates ids (SCHEMA.md §3).
pub fn new_event_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// `Condensation.forgotten_event_ids`: a Python `set[str]` (SCHEMA.md §5). Duplicates are
/// dropped (the first occurrence keeps its place); the SDK's output order depends on its hash
/// seed, ours is the input order.
fn string_set(v: Json<'_>, loc: &Loc<'_>) -> Res<Vec<String>> {
    match v {
        Json::Array(items) => {
            let mut out: Vec<String> = Vec::with_capacity(items.len());
            let mut seen = std::collections::HashSet::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                let s = String::from_json(item, &Loc::Index(loc, i))?;
                if seen.insert(s.clone()) {
                    out.push(s);
                }
            }
            Ok(out)
        }
        other => Err(loc.err_at(ErrorType::SetType, "Input should be a valid set", &other)),
    }
}

model! {
    /// A server-level failure: MCP connection, websocket or other infrastructure errors
    /// (`openhands.agent_server.models`; `source` required).
    pub struct ServerErrorEvent {
        extra: forbid,
        fields: {
            /// Error code, typically an exception type name. Required.
            code: String = req,
            /// Error detail. Required.
            detail: String = req,
        }
    }
}

model! {
    /// A tool call executed by an ACP server (`openhands.sdk.event.acp_tool_call`; default
    /// source `agent`).
    pub struct ACPToolCallEvent {
        extra: forbid,
        fields: {
            /// Tool call id. Required.
            tool_call_id: String = req,
            /// Title. Required.
            title: String = req,
            /// Status.
            status: Option<String> = opt,
            /// Tool kind.
            tool_kind: Option<String> = opt,
            /// Raw input, free-form.
            raw_input: Option<serde_json::Value> = opt,
            /// Raw output, free-form.
            raw_output: Option<serde_json::Value> = opt,
            /// Content items, free-form.
            content: Option<Vec<serde_json::Value>> = opt,
            /// Whether the call failed. Default `false`.
            is_error: bool = default(false),
        }
    }
}

model! {
    /// A condensation of the history (`openhands.sdk.event.condenser`; default source
    /// `environment`; spec §2.2 rule 10).
    pub struct Condensation {
        extra: forbid,
        fields: {
            /// Ids of events removed from the LLM's view: a set, duplicates dropped. Default `[]`.
            forgotten_event_ids: Vec<String> = default(Vec::new()) via string_set,
            /// The summary.
            summary: Option<String> = opt,
            /// Where the summary goes in the view; `>= 0`.
            summary_offset: Option<i64> = opt [ge::<Option<i64>>(0.0)],
            /// The LLM response that produced it. Required.
            llm_response_id: String = req,
        }
    }
}

model! {
    /// A request to condense the history (`openhands.sdk.event.condenser`; default source
    /// `environment`). No fields of its own.
    pub struct CondensationRequest {
        extra: forbid,
        fields: {}
    }
}

model! {
    /// A summary produced by a condenser (`openhands.sdk.event.condenser`; default source
    /// `environment`).
    pub struct CondensationSummaryEvent {
        extra: forbid,
        fields: {
            /// The summary. Required.
            summary: String = req,
        }
    }
}

model! {
    /// A conversation-level failure, not sent to the LLM; the run state becomes `error`
    /// (`openhands.sdk.event.conversation_error`; `source` required; spec §2.2 rule 6).
    pub struct ConversationErrorEvent {
        extra: forbid,
        fields: {
            /// Error code, typically an exception type name. Required.
            code: String = req,
            /// Error detail. Required.
            detail: String = req,
            /// Classification; when absent or null, derived from `code` and `detail` by
            /// [`classify_error`] (SCHEMA.md §5).
            classification: ErrorClassification = or_null(classify_error(&code, &detail)),
        }
    }
}

model! {
    /// A change of conversation state (`openhands.sdk.event.conversation_state`; default
    /// source `environment`; spec §6 rule 2).
    pub struct ConversationStateUpdateEvent {
        extra: forbid,
        fields: {
            /// The state field, e.g. `execution_status`, or `full_state`. Default: a new uuid4.
            key: String = default(new_event_id()),
            /// The serialized value, free-form. Default `{}`. An explicit `null` is kept and
            /// written as `null` (the SDK leaves it out and then reloads `{}`; writing it keeps
            /// write → read → write stable, in Python too).
            value: serde_json::Value = default(serde_json::Value::Object(serde_json::Map::new())),
        }
    }
}

model! {
    /// A hook ran (`openhands.sdk.event.hook_execution`; default source `hook`; spec §2.2
    /// rule 2).
    pub struct HookExecutionEvent {
        extra: forbid,
        fields: {
            /// When the hook ran. Required.
            hook_event_type: HookEventType = req,
            /// The hook command. Required.
            hook_command: String = req,
            /// The tool, for PreToolUse and PostToolUse hooks.
            tool_name: Option<String> = opt,
            /// Whether the hook succeeded. Required.
            success: bool = req,
            /// Whether the hook blocked the operation. Default `false`.
            blocked: bool = default(false),
            /// Exit code. Required.
            exit_code: i64 = req,
            /// Standard output. Default `""`.
            stdout: String = default(String::new()),
            /// Standard error. Default `""`.
            stderr: String = default(String::new()),
            /// Reason given by the hook.
            reason: Option<String> = opt,
            /// Context injected by the hook.
            additional_context: Option<String> = opt,
            /// Error message.
            error: Option<String> = opt,
            /// The guarded action's event id (PreToolUse, PostToolUse).
            action_id: Option<String> = opt,
            /// The message's event id (UserPromptSubmit).
            message_id: Option<String> = opt,
            /// The hook's input, free-form object.
            hook_input: Option<serde_json::Map<String, serde_json::Value>> = opt,
        }
    }
}

model! {
    /// LLM completion log data delivered over the websocket
    /// (`openhands.sdk.event.llm_completion_log`; default source `environment`).
    pub struct LLMCompletionLogEvent {
        extra: forbid,
        fields: {
            /// Log file name. Required.
            filename: String = req,
            /// JSON-encoded log text. Required.
            log_data: String = req,
            /// Model name. Default `"unknown"`.
            model_name: String = default("unknown".to_owned()),
            /// Usage id. Default `"default"`.
            usage_id: String = default("default".to_owned()),
        }
    }
}

model! {
    /// A tool call by the agent (`openhands.sdk.event.llm_convertible.action`; default source
    /// `agent`; spec §2.2 rules 3 to 5).
    pub struct ActionEvent {
        extra: forbid,
        fields: {
            /// The agent's thought. Required (may be empty).
            thought: Vec<TextContent> = req,
            /// Reasoning text.
            reasoning_content: Option<String> = opt,
            /// Thinking blocks. Default `[]`.
            thinking_blocks: Vec<AnyThinkingBlock> = default(Vec::new()),
            /// Responses API reasoning item.
            responses_reasoning_item: Option<ReasoningItemModel> = opt,
            /// The action; `None` when the tool call is not executable.
            action: Option<Action> = opt,
            /// Tool name. Required.
            tool_name: String = req,
            /// Tool call id. Required.
            tool_call_id: String = req,
            /// The tool call as the LLM produced it. Required.
            tool_call: MessageToolCall = req,
            /// Groups the actions of one LLM response. Required.
            llm_response_id: String = req,
            /// Risk assessment. Default `UNKNOWN`.
            security_risk: SecurityRisk = default(SecurityRisk::Unknown),
            /// Critic's assessment.
            critic_result: Option<CriticResult> = opt,
            /// Short summary.
            summary: Option<String> = opt,
        }
    }
}

model! {
    /// A message from the agent or the user (`openhands.sdk.event.llm_convertible.message`;
    /// `source` required).
    pub struct MessageEvent {
        extra: forbid,
        fields: {
            /// The LLM message. Required.
            llm_message: Message = req,
            /// The LLM response id (null when the source is not `agent`).
            llm_response_id: Option<String> = opt,
            /// Skills activated by this message. Default `[]`.
            activated_skills: Vec<String> = default(Vec::new()),
            /// Content added by agent context. Default `[]`.
            extended_content: Vec<TextContent> = default(Vec::new()),
            /// Origin of the message in multi-agent use.
            sender: Option<String> = opt,
            /// Critic's assessment.
            critic_result: Option<CriticResult> = opt,
        }
    }
}

model! {
    /// A tool-level error; the conversation can continue
    /// (`openhands.sdk.event.llm_convertible.observation`; default source `agent`).
    pub struct AgentErrorEvent {
        extra: forbid,
        fields: {
            /// Tool name. Required.
            tool_name: String = req,
            /// Tool call id. Required.
            tool_call_id: String = req,
            /// Error text. Required.
            error: String = req,
            /// Classification; when absent or null, `{"kind": "unknown", "retryable": false,
            /// "user_action": "none"}` (SCHEMA.md §5).
            classification: ErrorClassification = or_null(ErrorClassification::unknown()),
        }
    }
}

model! {
    /// A tool result (`openhands.sdk.event.llm_convertible.observation`; default source
    /// `environment`).
    pub struct ObservationEvent {
        extra: forbid,
        fields: {
            /// Tool name. Required.
            tool_name: String = req,
            /// Tool call id. Required.
            tool_call_id: String = req,
            /// The observation. Required.
            observation: Observation = req,
            /// The action's event id. Required.
            action_id: String = req,
            /// Content appended after the tool result. Default `[]`.
            extended_content: Vec<TextContent> = default(Vec::new()),
        }
    }
}

model! {
    /// An action rejected by the user or a hook
    /// (`openhands.sdk.event.llm_convertible.observation`; default source `environment`).
    pub struct UserRejectObservation {
        extra: forbid,
        fields: {
            /// Tool name. Required.
            tool_name: String = req,
            /// Tool call id. Required.
            tool_call_id: String = req,
            /// Why. Default `"User rejected the action"`.
            rejection_reason: String = default("User rejected the action".to_owned()),
            /// Who rejected it. Default `user`.
            rejection_source: RejectionSource = default(RejectionSource::User),
            /// The action's event id. Required.
            action_id: String = req,
        }
    }
}

model! {
    /// The system prompt and tools (`openhands.sdk.event.llm_convertible.system`; default
    /// source `agent`).
    pub struct SystemPromptEvent {
        extra: forbid,
        fields: {
            /// The system prompt. Required.
            system_prompt: TextContent = req,
            /// The tools. Required.
            tools: Vec<ToolDefinition> = req,
            /// Per-conversation context, sent as a second system content block.
            dynamic_context: Option<TextContent> = opt,
        }
    }
}

model! {
    /// A transient token delta, delivered live only and never stored
    /// (`openhands.sdk.event.streaming_delta`; default source `agent`; spec §6 rule 4).
    pub struct StreamingDeltaEvent {
        extra: forbid,
        fields: {
            /// Content delta.
            content: Option<String> = opt,
            /// Reasoning delta.
            reasoning_content: Option<String> = opt,
        }
    }
}

model! {
    /// Token ids of an LLM interaction, from vLLM (`openhands.sdk.event.token`; `source`
    /// required).
    pub struct TokenEvent {
        extra: forbid,
        fields: {
            /// Prompt token ids. Required.
            prompt_token_ids: Vec<i64> = req,
            /// Response token ids. Required.
            response_token_ids: Vec<i64> = req,
        }
    }
}

model! {
    /// The agent was interrupted; the run state becomes `paused`
    /// (`openhands.sdk.event.user_action`; default source `user`). No fields of its own.
    pub struct InterruptEvent {
        extra: forbid,
        fields: {}
    }
}

model! {
    /// The user paused the agent (`openhands.sdk.event.user_action`; default source `user`).
    /// No fields of its own.
    pub struct PauseEvent {
        extra: forbid,
        fields: {}
    }
}

model! {
    /// Risk levels a security analyzer assigned to pending actions
    /// (`openhands.sdk.event.security`; default source `environment`; SDK 1.58).
    pub struct SecurityAnalysisEvent {
        extra: forbid,
        fields: {
            /// The analyzer. Required.
            analyzer: String = req,
            /// The policy. Required.
            policy: String = req,
            /// Risk by action event id, in input order. Required.
            risks: IndexMap<String, SecurityRisk> = req,
            /// Details by action event id, free-form objects. Default `{}`.
            details: IndexMap<String, serde_json::Map<String, serde_json::Value>> = default(IndexMap::new()),
        }
    }
}

/// Declares the event kinds once: `EventKind`, `EventBody` and their dispatch.
macro_rules! event_kinds {
    ($( $variant:ident = $wire:literal => $source:expr ),* $(,)?) => {
        string_enum! {
            /// The kind of an event: the values of the search filter `kind__eq` (spec §4.1) and
            /// `SecurityAnalysisEvent` (SDK 1.58), in spec order.
            pub enum EventKind: ValueError {
                $( #[doc = concat!("`", stringify!($variant), "`")] $variant = $wire, )*
            }
        }

        impl EventKind {
            /// The default `source` of this kind, or `None` where `source` is required
            /// (SCHEMA.md §6).
            pub fn default_source(self) -> Option<Source> {
                match self { $( EventKind::$variant => $source, )* }
            }
        }

        /// The kind-specific part of an event.
        #[derive(Debug, Clone, PartialEq)]
        pub enum EventBody {
            $( #[doc = concat!("A `", stringify!($variant), "`.")] $variant($variant), )*
        }

        impl EventBody {
            /// The kind of this body.
            pub fn kind(&self) -> EventKind {
                match self { $( EventBody::$variant(_) => EventKind::$variant, )* }
            }

            fn from_pairs<'a>(
                kind: EventKind,
                pairs: crate::de::Pairs<'a>,
                loc: &Loc<'_>,
                other: impl FnMut(&str, Json<'a>) -> Res<Option<Json<'a>>>,
            ) -> Res<Self> {
                match kind {
                    $( EventKind::$variant => $variant::from_pairs(pairs, loc, other).map(EventBody::$variant), )*
                }
            }

            fn serialize_fields<M: serde::ser::SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
                match self { $( EventBody::$variant(b) => b.serialize_fields(map), )* }
            }
        }

        $(
            impl From<$variant> for EventBody {
                fn from(b: $variant) -> Self {
                    EventBody::$variant(b)
                }
            }
        )*
    };
}

event_kinds! {
    ServerErrorEvent = "ServerErrorEvent" => None,
    ACPToolCallEvent = "ACPToolCallEvent" => Some(Source::Agent),
    Condensation = "Condensation" => Some(Source::Environment),
    CondensationRequest = "CondensationRequest" => Some(Source::Environment),
    CondensationSummaryEvent = "CondensationSummaryEvent" => Some(Source::Environment),
    ConversationErrorEvent = "ConversationErrorEvent" => None,
    ConversationStateUpdateEvent = "ConversationStateUpdateEvent" => Some(Source::Environment),
    HookExecutionEvent = "HookExecutionEvent" => Some(Source::Hook),
    LLMCompletionLogEvent = "LLMCompletionLogEvent" => Some(Source::Environment),
    ActionEvent = "ActionEvent" => Some(Source::Agent),
    MessageEvent = "MessageEvent" => None,
    AgentErrorEvent = "AgentErrorEvent" => Some(Source::Agent),
    ObservationEvent = "ObservationEvent" => Some(Source::Environment),
    UserRejectObservation = "UserRejectObservation" => Some(Source::Environment),
    SystemPromptEvent = "SystemPromptEvent" => Some(Source::Agent),
    StreamingDeltaEvent = "StreamingDeltaEvent" => Some(Source::Agent),
    TokenEvent = "TokenEvent" => None,
    InterruptEvent = "InterruptEvent" => Some(Source::User),
    PauseEvent = "PauseEvent" => Some(Source::User),
    SecurityAnalysisEvent = "SecurityAnalysisEvent" => Some(Source::Environment),
}

/// The reserved parent sentinel, forbidden as an event id (SCHEMA.md §3).
pub const ROOT_PARENT_ID: &str = "__root__";

/// The common fields of an event as read, before defaults.
#[derive(Default)]
pub(crate) struct RawCommon<'a> {
    id: Option<Json<'a>>,
    timestamp: Option<Json<'a>>,
    source: Option<Json<'a>>,
    parent_id: Option<Json<'a>>,
}

impl<'a> RawCommon<'a> {
    /// Takes the common keys (and `kind`) out of an event object.
    pub(crate) fn offer(&mut self, key: &str, value: Json<'a>) -> Res<Option<Json<'a>>> {
        match key {
            "id" => self.id = Some(value),
            "timestamp" => self.timestamp = Some(value),
            "source" => self.source = Some(value),
            "parent_id" => self.parent_id = Some(value),
            "kind" => {}
            _ => return Ok(Some(value)),
        }
        Ok(None)
    }

    /// Applies the common fields' types and defaults (SCHEMA.md §3, §6).
    pub(crate) fn finish(self, body: EventBody, loc: &Loc<'_>) -> Res<Event> {
        let id = match self.id {
            Some(v) => {
                let l = Loc::Key(loc, "id");
                let id = String::from_json(v, &l)?;
                if id == ROOT_PARENT_ID {
                    return Err(l
                        .err(
                            ErrorType::ValueError,
                            format!("Value error, Event id may not equal reserved sentinel '{ROOT_PARENT_ID}'"),
                        )
                        .with_input(serde_json::Value::String(id)));
                }
                id
            }
            None => new_event_id(),
        };
        let timestamp = match self.timestamp {
            Some(v) => String::from_json(v, &Loc::Key(loc, "timestamp"))?,
            None => crate::timestamp::now_timestamp(),
        };
        let source = match self.source {
            Some(v) => Source::from_json(v, &Loc::Key(loc, "source"))?,
            None => body
                .kind()
                .default_source()
                .ok_or_else(|| crate::de::missing(loc, "source"))?,
        };
        let parent_id = match self.parent_id {
            Some(v) => Option::<String>::from_json(v, &Loc::Key(loc, "parent_id"))?,
            None => None,
        };
        Ok(Event {
            id,
            timestamp,
            source,
            parent_id,
            body,
        })
    }
}

/// One conversation event (spec §2.1): the common fields and a kind-specific body.
///
/// Read with [`Event::from_json_str`] (strict, pydantic-style errors), written with
/// [`Event::to_json_string`] or any serde serializer in the SDK's persisted form: nulls left
/// out, defaults written, fields in declaration order, `kind` last (SCHEMA.md §1).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Event id: any string but `"__root__"`; generated as a lowercase uuid4 when absent.
    pub id: String,
    /// Timestamp as received (the SDK writes naive ISO-8601); generated as UTC now when
    /// absent. [`Event::timestamp_instant`] reads it as an instant.
    pub timestamp: String,
    /// Who produced the event; defaulted per kind ([`EventKind::default_source`]).
    pub source: Source,
    /// Parent event id in the conversation tree; `None` for a root or a legacy event.
    pub parent_id: Option<String>,
    /// The kind-specific fields.
    pub body: EventBody,
}

impl Event {
    /// A new event with a generated id and timestamp and no parent.
    pub fn new(source: Source, body: impl Into<EventBody>) -> Self {
        Event {
            id: new_event_id(),
            timestamp: crate::timestamp::now_timestamp(),
            source,
            parent_id: None,
            body: body.into(),
        }
    }

    /// The event id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The timestamp string as received.
    pub fn timestamp(&self) -> &str {
        &self.timestamp
    }

    /// The timestamp as an instant (a value without offset is UTC); `None` when the string
    /// is not an ISO-8601 date-time (the SDK accepts any string here).
    pub fn timestamp_instant(&self) -> Option<time::OffsetDateTime> {
        crate::timestamp::parse_instant(&self.timestamp)
    }

    /// The event's kind.
    pub fn kind(&self) -> EventKind {
        self.body.kind()
    }

    /// The `kind` discriminator, e.g. `"ActionEvent"`.
    pub fn kind_name(&self) -> &'static str {
        self.body.kind().as_str()
    }

    /// The event's source.
    pub fn source(&self) -> Source {
        self.source
    }

    /// The parent event id.
    pub fn parent_id(&self) -> Option<&str> {
        self.parent_id.as_deref()
    }

    /// Parses one event from JSON text.
    ///
    /// # Errors
    /// A [`ValidationError`](crate::ValidationError): `json_invalid` for malformed JSON,
    /// `model_type` when it is not an object, `value_error` for an unknown `kind`, else the
    /// first field that breaks a rule, with its location.
    pub fn from_json_str(text: &str) -> Result<Event, crate::ValidationError> {
        let json = Json::parse(text).map_err(|e| crate::ValidationError::json_invalid(&e))?;
        Event::from_json(json, &Loc::Root).map_err(|e| *e)
    }

    /// Parses one event from UTF-8 JSON bytes; errors as [`Event::from_json_str`].
    pub fn from_slice(bytes: &[u8]) -> Result<Event, crate::ValidationError> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            crate::ValidationError::new(
                ErrorType::JsonInvalid,
                Vec::new(),
                format!("Invalid JSON: {e}"),
            )
        })?;
        Event::from_json_str(text)
    }

    /// Parses one event from a `serde_json::Value`; errors as [`Event::from_json_str`].
    pub fn from_value(value: &serde_json::Value) -> Result<Event, crate::ValidationError> {
        Event::from_json(Json::from_value(value), &Loc::Root).map_err(|e| *e)
    }

    /// Writes the event in the SDK's persisted form (compact, non-ASCII raw).
    pub fn to_json_string(&self) -> String {
        serde_json::to_string(self).expect("an event always serializes")
    }

    /// Appends the event in the SDK's persisted form to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        serde_json::to_writer(out, self).expect("writing to a Vec cannot fail")
    }
}

impl FromJson for Event {
    fn from_json(v: Json<'_>, loc: &Loc<'_>) -> Res<Self> {
        let pairs = crate::de::expect_object(v, loc, "Event")?;
        let kind = match crate::union::find_kind(&pairs) {
            Ok(k) => EventKind::from_name(k).ok_or_else(|| k.to_owned()),
            Err(shown) => Err(shown),
        }
        .map_err(|shown| {
            crate::union::unknown_kind(
                loc,
                &shown,
                "openhands.sdk.event.base.Event",
                EventKind::NAMES,
            )
        })?;
        let mut common = RawCommon::default();
        let body = EventBody::from_pairs(kind, pairs, loc, |k, v| common.offer(k, v))?;
        common.finish(body, loc)
    }
}

impl serde::Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("timestamp", &self.timestamp)?;
        map.serialize_entry("source", &self.source)?;
        if let Some(p) = &self.parent_id {
            map.serialize_entry("parent_id", p)?;
        }
        self.body.serialize_fields(&mut map)?;
        map.serialize_entry("kind", self.kind_name())?;
        map.end()
    }
}

impl<'de> serde::Deserialize<'de> for Event {
    /// Reads an event through any serde deserializer with the same rules as
    /// [`Event::from_json_str`]; the error is the [`ValidationError`](crate::ValidationError)'s
    /// text.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let json = Json::deserialize_from(d)?;
        Event::from_json(json, &Loc::Root).map_err(serde::de::Error::custom)
    }
}

/// Parses a JSON array of events (a webhook batch), all or nothing.
///
/// # Errors
/// The first invalid event's error, its location prefixed with the event's index
/// (`[3, "action", "command"]`); `list_type` when the document is not an array.
pub fn parse_event_batch(text: &str) -> Result<Vec<Event>, crate::ValidationError> {
    let json = Json::parse(text).map_err(|e| crate::ValidationError::json_invalid(&e))?;
    Vec::<Event>::from_json(json, &Loc::Root).map_err(|e| *e)
}

/// A page of events (`openhands.agent_server.models.EventPage`): `next_page_id` is always
/// written, as `null` on the last page.
#[derive(Debug, Clone, PartialEq)]
pub struct EventPage {
    /// The events of the page.
    pub items: Vec<Event>,
    /// The cursor of the next page, `None` on the last page.
    pub next_page_id: Option<String>,
}

impl EventPage {
    /// Parses an `EventPage` document (unknown keys ignored).
    ///
    /// # Errors
    /// As [`Event::from_json_str`], with locations under `["items", i]`.
    pub fn from_json_str(text: &str) -> Result<EventPage, crate::ValidationError> {
        let json = Json::parse(text).map_err(|e| crate::ValidationError::json_invalid(&e))?;
        EventPage::from_json(json).map_err(|e| *e)
    }

    fn from_json(json: Json<'_>) -> Res<EventPage> {
        let pairs = crate::de::expect_object(json, &Loc::Root, "EventPage")?;
        let (mut items, mut next) = (None, None);
        for (k, v) in pairs {
            match &*k {
                "items" => items = Some(v),
                "next_page_id" => next = Some(v),
                _ => {}
            }
        }
        let items = match items {
            Some(v) => Vec::<Event>::from_json(v, &Loc::Key(&Loc::Root, "items"))?,
            None => return Err(crate::de::missing(&Loc::Root, "items")),
        };
        let next_page_id = match next {
            Some(v) => Option::<String>::from_json(v, &Loc::Key(&Loc::Root, "next_page_id"))?,
            None => None,
        };
        Ok(EventPage {
            items,
            next_page_id,
        })
    }
}

impl serde::Serialize for EventPage {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("items", &self.items)?;
        map.serialize_entry("next_page_id", &self.next_page_id)?;
        map.end()
    }
}
