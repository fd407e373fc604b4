//! Conversations, one room (issue 20 item 2): here the conversation record the events and the
//! webhooks keep, its run state (OpenHands' `ConversationExecutionStatus`, spec §3) and the
//! agent server's `ConversationInfo` as the conversations webhook receives it (API.md, Event
//! ingestion); [`app`] OpenHands' view of a conversation (filters, sort orders, the PATCH and
//! send-message bodies, typed), [`start_tasks`] the start tasks,
//! [`start_request`] the start body's rules, [`sealed_start`] what a start keeps sealed and
//! [`repository`] the repository sources a start may clone; [`run_details`] the LLM model and
//! metrics an agent server reports; [`budget`] the budget a conversation stops at.

pub mod app;
pub mod budget;
pub mod provider_remote;
pub mod repository;
pub mod run_details;
pub mod sealed_start;
pub mod skill_sources;
pub mod start_preferences;
pub mod start_request;
pub mod start_tasks;
pub mod workspace;

use serde_json::{Map, Value};
use time::OffsetDateTime;

use crate::ids::{ConversationId, OrgId, SandboxId, UserId, parse_uuid};
use crate::sandboxes::Sandbox;
use crate::validation::{self, field, loc};

pub use run_details::RunDetails;

/// A conversation's run state: the values of OpenHands' `ConversationExecutionStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExecutionStatus {
    /// Waiting for a message.
    Idle,
    /// The agent is working.
    Running,
    /// Paused by the user (or interrupted).
    Paused,
    /// Waiting for the user to confirm an action.
    WaitingForConfirmation,
    /// The agent finished.
    Finished,
    /// Stopped on an error.
    Error,
    /// Detected as stuck.
    Stuck,
    /// Being deleted.
    Deleting,
}

impl ExecutionStatus {
    /// Every value, in OpenHands' declaration order.
    pub const ALL: [ExecutionStatus; 8] = [
        ExecutionStatus::Idle,
        ExecutionStatus::Running,
        ExecutionStatus::Paused,
        ExecutionStatus::WaitingForConfirmation,
        ExecutionStatus::Finished,
        ExecutionStatus::Error,
        ExecutionStatus::Stuck,
        ExecutionStatus::Deleting,
    ];

    /// The wire name, e.g. `waiting_for_confirmation`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionStatus::Idle => "idle",
            ExecutionStatus::Running => "running",
            ExecutionStatus::Paused => "paused",
            ExecutionStatus::WaitingForConfirmation => "waiting_for_confirmation",
            ExecutionStatus::Finished => "finished",
            ExecutionStatus::Error => "error",
            ExecutionStatus::Stuck => "stuck",
            ExecutionStatus::Deleting => "deleting",
        }
    }

    /// Parses a wire name; `None` for a value OpenHands does not define (an agent server
    /// newer than this service may send one: the caller leaves the run state as it is).
    pub fn parse(s: &str) -> Option<ExecutionStatus> {
        ExecutionStatus::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// A conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// Id.
    pub id: ConversationId,
    /// Organization.
    pub org_id: OrgId,
    /// Owner.
    pub owner_id: UserId,
    /// Sandbox it ran in.
    pub sandbox_id: Option<SandboxId>,
    /// Title.
    pub title: Option<String>,
    /// Run state, when known.
    pub execution_status: Option<ExecutionStatus>,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last change.
    pub updated_at: OffsetDateTime,
}

impl Conversation {
    /// A new conversation `id` run in `sandbox`: the sandbox's organization and owner, no
    /// title or run state yet, created and changed at `now`.
    pub fn in_sandbox(sandbox: &Sandbox, id: ConversationId, now: OffsetDateTime) -> Self {
        Conversation {
            id,
            org_id: sandbox.org_id,
            owner_id: sandbox.owner_id,
            sandbox_id: Some(sandbox.id),
            title: None,
            execution_status: None,
            created_at: now,
            updated_at: now,
        }
    }
}

/// What the conversations webhook takes from the agent server's `ConversationInfo`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationInfo {
    /// The conversation.
    pub id: ConversationId,
    /// Its title, when given.
    pub title: Option<String>,
    /// Its run state, when given and known (an unknown value is left out).
    pub execution_status: Option<ExecutionStatus>,
    /// Its LLM model and metrics, as far as it reports them ([`RunDetails::of_info`]).
    pub details: RunDetails,
}

/// Reads a `ConversationInfo` (a JSON object with a UUID `id`; `title` and `execution_status`
/// strings or `null` when present; the LLM model and metrics of [`RunDetails::of_info`], any
/// other shape of theirs not reported; other keys kept only as metadata).
///
/// # Errors
/// A 422 entry at `["body", …]`: not an object, `id` missing or not a UUID string, `title` or
/// `execution_status` not a string.
pub fn parse_conversation_info(
    info: &Value,
) -> Result<ConversationInfo, switchboard_model::ValidationError> {
    let root = loc(["body"]);
    let obj = info
        .as_object()
        .ok_or_else(|| validation::model_type(root.clone(), "ConversationInfo", info))?;
    let id = match obj.get("id") {
        Some(Value::String(s)) => parse_uuid(s)
            .map(ConversationId)
            .ok_or_else(|| validation::uuid_parsing(field(&root, "id"), s))?,
        Some(other) => return Err(validation::string_type(field(&root, "id"), other)),
        None => return Err(validation::missing(field(&root, "id"), info.clone())),
    };
    let text = |key: &str| optional_string(obj, &root, key);
    Ok(ConversationInfo {
        id,
        title: text("title")?,
        execution_status: text("execution_status")?
            .as_deref()
            .and_then(ExecutionStatus::parse),
        details: RunDetails::of_info(info),
    })
}

fn optional_string(
    obj: &Map<String, Value>,
    root: &[switchboard_model::LocItem],
    key: &str,
) -> Result<Option<String>, switchboard_model::ValidationError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(validation::string_type(field(root, key), other)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn statuses_round_trip_and_unknown_ones_are_not_errors() {
        for s in ExecutionStatus::ALL {
            assert_eq!(ExecutionStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(ExecutionStatus::parse("Running"), None);
        let id = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b";
        let info = parse_conversation_info(
            &json!({"id": id, "title": "t", "execution_status": "brand_new", "x": 1}),
        )
        .unwrap();
        assert_eq!(
            (info.title.as_deref(), info.execution_status),
            (Some("t"), None)
        );
        for (body, want) in [
            (json!([]), "model_type"),
            (json!({}), "missing"),
            (json!({"id": 5}), "string_type"),
            (json!({"id": "nope"}), "uuid_parsing"),
            (json!({"id": id, "title": 1}), "string_type"),
            (json!({"id": id, "execution_status": true}), "string_type"),
        ] {
            let e = parse_conversation_info(&body).unwrap_err();
            assert_eq!(e.error_type.as_str(), want, "{body}");
            assert!(e.input.is_some(), "{body}");
        }
    }
}
