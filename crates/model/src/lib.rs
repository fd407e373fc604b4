//! # switchboard-model
//!
//! The event model of the OpenHands agent SDK (openhands-sdk 1.58.2) for Rust: every event
//! kind, every Action and Observation kind, content blocks, messages and tool calls, read
//! strictly and written exactly as the SDK persists them.
//!
//! ```
//! use switchboard_model::{Event, EventBody, EventKind};
//!
//! let text = r#"{"id":"e1","timestamp":"2026-11-21T09:08:18.014821","source":"user","kind":"PauseEvent"}"#;
//! let event = Event::from_json_str(text)?;
//! assert_eq!(event.kind(), EventKind::PauseEvent);
//! assert!(matches!(event.body, EventBody::PauseEvent(_)));
//! assert_eq!(event.to_json_string(), text);
//!
//! let err = Event::from_json_str(r#"{"source":"user","kind":"PauseEvent","extra":1}"#).unwrap_err();
//! assert_eq!(err.error_type.as_str(), "extra_forbidden");
//! assert_eq!(err.loc, ["extra".into()]);
//! # Ok::<(), switchboard_model::ValidationError>(())
//! ```
//!
//! ## Reading (SCHEMA.md §2, §5)
//! - `kind` selects the event, action or observation type; it may come anywhere in the object
//!   (the SDK writes it last). An unknown event kind is an error; an action or observation kind
//!   the SDK generates at run time is kept as an [`OpaqueModel`] ([`is_dynamic_kind`]).
//! - Unknown keys are rejected on events, actions, observations, `TextContent` and
//!   `ErrorClassification`, and ignored on the other nested models, as the SDK does.
//! - Errors are [`ValidationError`]s: a pydantic error type, a location path and a message.
//! - Stricter than the SDK: no coercion across JSON types (`"true"` is not a boolean, `"0"` is
//!   not an integer); see `de.rs` and the README for the list.
//!
//! ## Writing (SCHEMA.md §1)
//! Nulls left out, defaults written, fields in declaration order, `kind` last, non-ASCII raw,
//! floats in shortest round-trip form. `CriticResult.message` and `TerminalObservation.command`
//! are always written (as `null` if need be) so that Python can reload them, and an explicit
//! `ConversationStateUpdateEvent.value` of `null` is written as `null` so that it reloads as
//! `null` rather than `{}`.

mod de;
mod json;
mod macros;

pub mod actions;
mod classification;
mod content;
mod error;
mod events;
pub mod observations;
mod timestamp;
mod tools;
mod union;

pub use classification::{ErrorClassification, FailureKind, UserAction, classify_error};
pub use content::{
    AnyThinkingBlock, CmdOutputMetadata, Commit, Content, CriticResult, EncryptedContent,
    FileChange, FileChangeType, FileEntry, ImageContent, ImageType, Message, MessageToolCall,
    ReasoningItemModel, RedactedThinkingBlock, RedactedThinkingType, Role, SecurityRisk, TaskItem,
    TaskStatus, TextContent, TextType, ThinkingBlock, ThinkingType, ToolAnnotations,
    ToolCallOrigin,
};
pub use de::expected_list;
pub use error::{ErrorType, LocItem, ValidationError};
pub use events::*;
pub use timestamp::{format_naive, now_timestamp, parse_instant};
pub use tools::{ToolDefinition, ToolExtra, ToolKind};
pub use union::{OpaqueModel, is_dynamic_kind};

use actions::*;
use observations::*;

union::kind_union! {
    /// The `action` of an [`ActionEvent`] (SCHEMA.md §7): one of the 40 known kinds, or a
    /// run-time kind kept opaque.
    pub enum Action ("openhands.sdk.tool.schema.Action", "Action") {
        ApplyPatchAction, AskOracleAction, BrowserAction, BrowserClickAction, BrowserCloseTabAction,
        BrowserGetContentAction, BrowserGetStateAction, BrowserGetStorageAction, BrowserGoBackAction,
        BrowserListTabsAction, BrowserNavigateAction, BrowserScrollAction, BrowserSetStorageAction,
        BrowserStartRecordingAction, BrowserStopRecordingAction, BrowserSwitchTabAction,
        BrowserTypeAction, ClassifyAndSwitchLLMAction, ConsultTomAction, DelegateAction, EditAction,
        FileEditorAction, FinishAction, GlobAction, GrepAction, InvokeSkillAction,
        ListDirectoryAction, MCPToolAction, PlanningFileEditorAction, ReadFileAction,
        SleeptimeComputeAction, StartChildConversationAction, SwitchLLMAction, TaskAction,
        TaskTrackerAction, TerminalAction, ThinkAction, VisionInspectAction, WorkflowAction,
        WriteFileAction,
    }
}

union::kind_union! {
    /// The `observation` of an [`ObservationEvent`] (SCHEMA.md §8): one of the 27 known kinds,
    /// or a run-time kind kept opaque.
    pub enum Observation ("openhands.sdk.tool.schema.Observation", "Observation") {
        ApplyPatchObservation, AskOracleObservation, BrowserObservation,
        ClassifyAndSwitchLLMObservation, ClientToolObservation, ConsultTomObservation,
        DelegateObservation, EditObservation, FileEditorObservation, FinishObservation,
        GlobObservation, GrepObservation, InvokeSkillObservation, ListDirectoryObservation,
        MCPToolObservation, PlanningFileEditorObservation, ReadFileObservation,
        SleeptimeComputeObservation, StartChildConversationObservation, SwitchLLMObservation,
        TaskObservation, TaskTrackerObservation, TerminalObservation, ThinkObservation,
        VisionInspectObservation, WorkflowObservation, WriteFileObservation,
    }
}
