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

use serde_json::Value;
use time::OffsetDateTime;

use crate::ids::{ConversationId, OrgId, SandboxId, UserId, parse_uuid};
use crate::sandboxes::Sandbox;
use crate::validation::{self, loc};

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

/// The part of the agent server's `ConversationInfo` the conversations webhook reads (the
/// whole object is kept as metadata): `id`, a UUID ([`UUID_PATTERN`](crate::UUID_PATTERN));
/// `title` and `execution_status`, strings or `null`. Other keys are taken as they are.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, utoipa::ToSchema)]
#[schema(
    as = ConversationInfo,
    description = "The agent server's `ConversationInfo`: `id` is required; `title` and `execution_status` are read (a status OpenHands does not define is ignored), the LLM model from `agent.llm.model` and the metrics from `stats` (combined over its LLM usages; else `metrics`); the whole object is kept as the conversation's metadata, NUL included (the title column gets U+FFFD for each NUL). The same object twice changes nothing."
)]
pub struct ConversationInfoBody {
    /// The conversation (dashed or 32 hex digits).
    #[schema(schema_with = conversation_id_schema)]
    id: String,
    #[serde(default)]
    #[schema(schema_with = crate::typed_body::fields::nullable_string)]
    title: Option<String>,
    /// `idle`, `running`, `paused`, `waiting_for_confirmation`, `finished`, `error`, `stuck`,
    /// `deleting`, or a newer value (ignored).
    #[serde(default)]
    #[schema(schema_with = execution_status_schema)]
    execution_status: Option<String>,
}

impl crate::typed_body::RequestBody for ConversationInfoBody {}

fn conversation_id_schema() -> utoipa::openapi::schema::Object {
    crate::typed_body::fields::string()
        .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
            utoipa::openapi::KnownFormat::Uuid,
        )))
        .pattern(Some(crate::UUID_PATTERN))
        .description(Some("The conversation (dashed or 32 hex digits)."))
        .build()
}

fn execution_status_schema() -> utoipa::openapi::schema::Object {
    crate::typed_body::fields::nullable_string()
        .description(Some("`idle`, `running`, `paused`, `waiting_for_confirmation`, `finished`, `error`, `stuck`, `deleting` (the run state is kept and no conversation is created; the title, model and metrics are read), or a newer value (ignored)."))
        .build()
}

/// Reads a `ConversationInfo` through [`ConversationInfoBody`]: its id, title and run state
/// (an unknown run state left out), and the LLM model and metrics of [`RunDetails::of_info`]
/// (any other shape of theirs not reported).
///
/// # Errors
/// The first 422 entry at `["body", …]`: not an object, `id` missing or not a UUID string
/// (`uuid_parsing`), `title` or `execution_status` not a string.
pub fn parse_conversation_info(
    info: &Value,
) -> Result<ConversationInfo, switchboard_model::ValidationError> {
    let body: ConversationInfoBody = crate::typed_body::parse_one(info)?;
    let id = parse_uuid(&body.id)
        .map(ConversationId)
        .ok_or_else(|| validation::uuid_parsing(loc(["body", "id"]), &body.id))?;
    Ok(ConversationInfo {
        id,
        title: body.title,
        execution_status: body
            .execution_status
            .as_deref()
            .and_then(ExecutionStatus::parse),
        details: RunDetails::of_info(info),
    })
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
