//! Content blocks, messages, tool calls and the other nested models (SCHEMA.md §10).

use std::fmt;

use indexmap::IndexMap;
use serde::Serialize;

use crate::de::{ErrExt, FromJson, Loc, Res, between, expect_object, string_enum};
use crate::error::ErrorType;
use crate::json::Json;
use crate::macros::model;

string_enum! {
    /// The `type` tag of [`TextContent`]: always `"text"`.
    pub enum TextType: LiteralError { /// `"text"`
        Text = "text" }
}

string_enum! {
    /// The `type` tag of [`ImageContent`]: always `"image"`.
    pub enum ImageType: LiteralError { /// `"image"`
        Image = "image" }
}

string_enum! {
    /// The `type` tag of [`ThinkingBlock`]: always `"thinking"`.
    pub enum ThinkingType: LiteralError { /// `"thinking"`
        Thinking = "thinking" }
}

string_enum! {
    /// The `type` tag of [`RedactedThinkingBlock`]: always `"redacted_thinking"`.
    pub enum RedactedThinkingType: LiteralError { /// `"redacted_thinking"`
        RedactedThinking = "redacted_thinking" }
}

model! {
    /// A text block (SCHEMA.md §10, `extra=forbid`; the deprecated key `enable_truncation` is
    /// silently dropped, as the SDK drops it).
    pub struct TextContent {
        extra: forbid,
        deprecated: ["enable_truncation"],
        fields: {
            /// Whether the block is marked for prompt caching. Default `false`.
            cache_prompt: bool = default(false),
            /// Always `"text"` (default).
            content_type ["type"]: TextType = default(TextType::Text),
            /// The text. Required.
            text: String = req,
        }
    }
}

impl TextContent {
    /// A text block with `cache_prompt: false`.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent {
            cache_prompt: false,
            content_type: TextType::Text,
            text: text.into(),
        }
    }
}

model! {
    /// An image block (SCHEMA.md §10, unknown keys ignored).
    pub struct ImageContent {
        extra: ignore,
        fields: {
            /// Whether the block is marked for prompt caching. Default `false`.
            cache_prompt: bool = default(false),
            /// Always `"image"` (default).
            content_type ["type"]: ImageType = default(ImageType::Image),
            /// Image URLs (often `data:` URLs). Required.
            image_urls: Vec<String> = req,
        }
    }
}

/// `TextContent | ImageContent`, told apart by `type` (or, when `type` is absent, by the
/// presence of `image_urls` without `text`, as pydantic's smart union does).
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A text block.
    Text(TextContent),
    /// An image block.
    Image(ImageContent),
}

impl FromJson for Content {
    fn from_json(v: Json<'_>, loc: &Loc<'_>) -> Res<Self> {
        let pairs = expect_object(v, loc, "TextContent")?;
        let tag = pairs
            .iter()
            .rev()
            .find(|(k, _)| k == "type")
            .map(|(_, v)| v);
        let image = match tag {
            Some(Json::Str(t)) => t == "image",
            Some(_) => false,
            None => {
                pairs.iter().any(|(k, _)| k == "image_urls")
                    && !pairs.iter().any(|(k, _)| k == "text")
            }
        };
        if image {
            ImageContent::from_pairs(pairs, loc, |_, v| Ok(Some(v))).map(Content::Image)
        } else {
            TextContent::from_pairs(pairs, loc, |_, v| Ok(Some(v))).map(Content::Text)
        }
    }
}

impl Serialize for Content {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Content::Text(t) => t.serialize(s),
            Content::Image(i) => i.serialize(s),
        }
    }
}

model! {
    /// An extended-thinking block (SCHEMA.md §10, unknown keys ignored).
    pub struct ThinkingBlock {
        extra: ignore,
        fields: {
            /// Always `"thinking"` (default).
            block_type ["type"]: ThinkingType = default(ThinkingType::Thinking),
            /// The thinking text. Required.
            thinking: String = req,
            /// The provider's signature, if any.
            signature: Option<String> = opt,
        }
    }
}

model! {
    /// A redacted extended-thinking block (SCHEMA.md §10, unknown keys ignored).
    pub struct RedactedThinkingBlock {
        extra: ignore,
        fields: {
            /// Always `"redacted_thinking"` (default).
            block_type ["type"]: RedactedThinkingType = default(RedactedThinkingType::RedactedThinking),
            /// Opaque provider data. Required.
            data: String = req,
        }
    }
}

/// `ThinkingBlock | RedactedThinkingBlock`, told apart by `type` (absent `type`: a block
/// with `data` and no `thinking` is redacted).
#[derive(Debug, Clone, PartialEq)]
pub enum AnyThinkingBlock {
    /// A thinking block.
    Thinking(ThinkingBlock),
    /// A redacted thinking block.
    Redacted(RedactedThinkingBlock),
}

impl FromJson for AnyThinkingBlock {
    fn from_json(v: Json<'_>, loc: &Loc<'_>) -> Res<Self> {
        let pairs = expect_object(v, loc, "ThinkingBlock")?;
        let tag = pairs
            .iter()
            .rev()
            .find(|(k, _)| k == "type")
            .map(|(_, v)| v);
        let redacted = match tag {
            Some(Json::Str(t)) => t == "redacted_thinking",
            Some(_) => false,
            None => {
                pairs.iter().any(|(k, _)| k == "data")
                    && !pairs.iter().any(|(k, _)| k == "thinking")
            }
        };
        if redacted {
            RedactedThinkingBlock::from_pairs(pairs, loc, |_, v| Ok(Some(v)))
                .map(AnyThinkingBlock::Redacted)
        } else {
            ThinkingBlock::from_pairs(pairs, loc, |_, v| Ok(Some(v)))
                .map(AnyThinkingBlock::Thinking)
        }
    }
}

impl Serialize for AnyThinkingBlock {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AnyThinkingBlock::Thinking(t) => t.serialize(s),
            AnyThinkingBlock::Redacted(r) => r.serialize(s),
        }
    }
}

/// Encrypted reasoning content: written to JSON as received, never shown by `Debug`
/// (spec §2.4: must not be logged or rendered). Read it with [`EncryptedContent::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct EncryptedContent(String);

impl EncryptedContent {
    /// Wraps a provider's encrypted payload.
    pub fn new(value: impl Into<String>) -> Self {
        EncryptedContent(value.into())
    }

    /// The payload, for forwarding to the provider that issued it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for EncryptedContent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EncryptedContent([redacted, {} bytes])", self.0.len())
    }
}

impl Serialize for EncryptedContent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl FromJson for EncryptedContent {
    fn from_json(v: Json<'_>, loc: &Loc<'_>) -> Res<Self> {
        match v {
            Json::Str(s) => Ok(EncryptedContent(s.into_owned())),
            // The payload is not echoed back in the error either.
            _ => Err(loc.err(ErrorType::StringType, "Input should be a valid string")),
        }
    }
}

model! {
    /// An OpenAI Responses API reasoning item (SCHEMA.md §10, unknown keys ignored).
    pub struct ReasoningItemModel {
        extra: ignore,
        fields: {
            /// The item id.
            id: Option<String> = opt,
            /// Summary texts. Default `[]`.
            summary: Vec<String> = default(Vec::new()),
            /// Reasoning texts.
            content: Option<Vec<String>> = opt,
            /// Encrypted reasoning, redacted in `Debug` output.
            encrypted_content: Option<EncryptedContent> = opt,
            /// The item status.
            status: Option<String> = opt,
        }
    }
}

string_enum! {
    /// Where a tool call came from (`MessageToolCall.origin`, SCHEMA.md §4).
    pub enum ToolCallOrigin: LiteralError {
        /// Chat Completions API.
        Completion = "completion",
        /// Responses API.
        Responses = "responses",
    }
}

model! {
    /// A tool call as the LLM produced it (SCHEMA.md §10, unknown keys ignored).
    pub struct MessageToolCall {
        extra: ignore,
        fields: {
            /// The tool call id. Required.
            id: String = req,
            /// The Responses API item id.
            responses_item_id: Option<String> = opt,
            /// The tool name. Required.
            name: String = req,
            /// The arguments as a JSON-encoded *string* (not an object). Required.
            arguments: String = req,
            /// `"completion"` or `"responses"`. Required.
            origin: ToolCallOrigin = req,
        }
    }
}

string_enum! {
    /// The role of a [`Message`] (SCHEMA.md §4).
    pub enum Role: LiteralError {
        /// A user message.
        User = "user",
        /// The system prompt.
        System = "system",
        /// An assistant (LLM) message.
        Assistant = "assistant",
        /// A tool result.
        Tool = "tool",
    }
}

/// `Message.content`: a list of blocks, a bare string (one text block) or `null` (no blocks),
/// as the SDK accepts (SCHEMA.md §5).
fn message_content(v: Json<'_>, loc: &Loc<'_>) -> Res<Vec<Content>> {
    match v {
        Json::Null => Ok(Vec::new()),
        Json::Str(s) => Ok(vec![Content::Text(TextContent::new(s.into_owned()))]),
        other => Vec::<Content>::from_json(other, loc),
    }
}

model! {
    /// An LLM message (SCHEMA.md §10; unknown and deprecated keys ignored).
    pub struct Message {
        extra: ignore,
        fields: {
            /// The role. Required.
            role: Role = req,
            /// Content blocks. Default `[]`; a bare string becomes one text block.
            content: Vec<Content> = default(Vec::new()) via message_content,
            /// Tool calls of an assistant message.
            tool_calls: Option<Vec<MessageToolCall>> = opt,
            /// The tool call a tool message answers.
            tool_call_id: Option<String> = opt,
            /// The tool name of a tool message.
            name: Option<String> = opt,
            /// Reasoning text of reasoning models.
            reasoning_content: Option<String> = opt,
            /// Extended-thinking blocks. Default `[]`.
            thinking_blocks: Vec<AnyThinkingBlock> = default(Vec::new()),
            /// Responses API reasoning item.
            responses_reasoning_item: Option<ReasoningItemModel> = opt,
        }
    }
}

model! {
    /// A critic's assessment (SCHEMA.md §10, unknown keys ignored). `message` is required
    /// but nullable and always written, as `null` if need be, so Python can reload it.
    pub struct CriticResult {
        extra: ignore,
        fields: {
            /// Score in `[0, 1]`. Required.
            score: f64 = req [between::<f64>(0.0, 1.0)],
            /// Explanation, or `null`. Required (may be `null`).
            message: Option<String> = req_nullable,
            /// Free-form metadata.
            metadata: Option<serde_json::Map<String, serde_json::Value>> = opt,
        }
    }
}

string_enum! {
    /// The LLM's assessment of an action's risk (SCHEMA.md §4; uppercase, case-sensitive).
    pub enum SecurityRisk: Enum {
        /// Not assessed (the default).
        Unknown = "UNKNOWN",
        /// Low risk.
        Low = "LOW",
        /// Medium risk.
        Medium = "MEDIUM",
        /// High risk.
        High = "HIGH",
    }
}

model! {
    /// Annotations describing a tool's behaviour, after MCP (SCHEMA.md §9, unknown keys ignored).
    pub struct ToolAnnotations {
        extra: ignore,
        fields: {
            /// A human-readable title.
            title: Option<String> = opt,
            /// The tool does not modify its environment. Default `false`.
            read_only_hint ["readOnlyHint"]: bool = default(false),
            /// The tool may perform destructive updates. Default `true`.
            destructive_hint ["destructiveHint"]: bool = default(true),
            /// Repeated calls have no additional effect. Default `false`.
            idempotent_hint ["idempotentHint"]: bool = default(false),
            /// The tool interacts with an open world. Default `true`.
            open_world_hint ["openWorldHint"]: bool = default(true),
        }
    }
}

model! {
    /// Metadata of a terminal command's output (SCHEMA.md §10, unknown keys ignored).
    pub struct CmdOutputMetadata {
        extra: ignore,
        fields: {
            /// Exit code; `-1` when unknown.
            exit_code: i64 = default(-1),
            /// Process id; `-1` when unknown.
            pid: i64 = default(-1),
            /// User name.
            username: Option<String> = opt,
            /// Host name.
            hostname: Option<String> = opt,
            /// Working directory.
            working_dir: Option<String> = opt,
            /// Python interpreter path.
            py_interpreter_path: Option<String> = opt,
            /// Prompt prefix. Default `""`.
            prefix: String = default(String::new()),
            /// Prompt suffix. Default `""`.
            suffix: String = default(String::new()),
        }
    }
}

impl Default for CmdOutputMetadata {
    /// The SDK's default: `{"exit_code": -1, "pid": -1, "prefix": "", "suffix": ""}`.
    fn default() -> Self {
        CmdOutputMetadata {
            exit_code: -1,
            pid: -1,
            username: None,
            hostname: None,
            working_dir: None,
            py_interpreter_path: None,
            prefix: String::new(),
            suffix: String::new(),
        }
    }
}

string_enum! {
    /// Status of a [`TaskItem`] (SCHEMA.md §4).
    pub enum TaskStatus: LiteralError {
        /// Not started (the default).
        Todo = "todo",
        /// In progress.
        InProgress = "in_progress",
        /// Finished.
        Done = "done",
    }
}

/// `TaskItem.status`, normalized as the SDK does (SCHEMA.md §4): case, spaces and hyphens
/// are ignored, and `pending`/`to_do` mean `todo`, `completed`/`complete` mean `done`.
fn task_status(v: Json<'_>, loc: &Loc<'_>) -> Res<TaskStatus> {
    if let Json::Str(s) = &v {
        let norm: String = s
            .trim()
            .chars()
            .map(|c| {
                if c == ' ' || c == '-' {
                    '_'
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect();
        let mapped = match norm.as_str() {
            "pending" | "to_do" => "todo",
            "completed" | "complete" => "done",
            other => other,
        };
        if let Some(status) = TaskStatus::from_name(mapped) {
            return Ok(status);
        }
    }
    TaskStatus::from_json(v, loc)
}

model! {
    /// One task of a task list (SCHEMA.md §10, unknown keys ignored).
    pub struct TaskItem {
        extra: ignore,
        fields: {
            /// Task title. Required.
            title: String = req,
            /// Notes. Default `""`.
            notes: String = default(String::new()),
            /// Status, normalized from the SDK's aliases. Default `todo`.
            status: TaskStatus = default(TaskStatus::Todo) via task_status,
        }
    }
}

/// A string that must parse as an ISO-8601 date or date-time (pydantic `datetime`); the
/// spelling received is kept.
fn datetime_string(v: Json<'_>, loc: &Loc<'_>) -> Res<String> {
    let s = String::from_json(v, loc)?;
    if crate::timestamp::parse_instant(&s).is_some() {
        Ok(s)
    } else {
        Err(loc
            .err(
                ErrorType::DatetimeFromDateParsing,
                "Input should be a valid datetime or date",
            )
            .with_input(serde_json::Value::String(s)))
    }
}

model! {
    /// One directory entry (SCHEMA.md §10, unknown keys ignored).
    pub struct FileEntry {
        extra: ignore,
        fields: {
            /// File name. Required.
            name: String = req,
            /// Path. Required.
            path: String = req,
            /// Whether it is a directory. Required.
            is_directory: bool = req,
            /// Size in bytes. Required.
            size: i64 = req,
            /// Modification time, an ISO-8601 date-time (validated, kept as received). Required.
            modified_time: String = req via datetime_string,
        }
    }
}

string_enum! {
    /// What a patch does to a file (SCHEMA.md §10 `FileChange.type`).
    pub enum FileChangeType: Enum {
        /// File added.
        Add = "add",
        /// File deleted.
        Delete = "delete",
        /// File updated.
        Update = "update",
    }
}

model! {
    /// One file change of a [`Commit`] (SCHEMA.md §10, unknown keys ignored).
    pub struct FileChange {
        extra: ignore,
        fields: {
            /// `add`, `delete` or `update`. Required.
            change_type ["type"]: FileChangeType = req,
            /// Content before.
            old_content: Option<String> = opt,
            /// Content after.
            new_content: Option<String> = opt,
            /// New path of a moved file.
            move_path: Option<String> = opt,
        }
    }
}

model! {
    /// The file changes of an applied patch, by path (SCHEMA.md §10, unknown keys ignored).
    pub struct Commit {
        extra: ignore,
        fields: {
            /// Changes by path, in input order. Default `{}`.
            changes: IndexMap<String, FileChange> = default(IndexMap::new()),
        }
    }
}
