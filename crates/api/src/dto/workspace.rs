//! The workspace routes' answers (issue 22): skills, hooks, git changes and diffs (as the
//! agent server answers them), and OpenHands' `PendingMessageResponse`. The file list is a
//! plain list of strings.

use serde::Serialize;
use switchboard_domain::services::Queued;
use utoipa::ToSchema;

/// One skill (OpenHands' `SkillResponse`).
#[derive(Debug, Serialize, ToSchema)]
pub struct SkillResponse {
    /// Its name.
    pub name: String,
    /// `repo`, `knowledge` or `agentskills`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its text.
    pub content: String,
    /// The words that load it (knowledge skills).
    pub triggers: Vec<String>,
}

/// `GET …/skills`: `{"skills": [...]}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SkillsResponse {
    /// The skills of the user and of the workspace.
    pub skills: Vec<SkillResponse>,
}

/// One hook (OpenHands' `HookDefinitionResponse`).
#[derive(Debug, Serialize, ToSchema)]
pub struct HookDefinitionResponse {
    /// `command`, `prompt` or `agent`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The command run.
    pub command: Option<String>,
    /// Its time limit, seconds.
    pub timeout: i64,
    /// Whether it runs in the background.
    #[serde(rename = "async")]
    pub run_async: bool,
}

/// The hooks of one matcher (OpenHands' `HookMatcherResponse`).
#[derive(Debug, Serialize, ToSchema)]
pub struct HookMatcherResponse {
    /// The tool-name pattern (`*`: all).
    pub matcher: String,
    /// Its hooks.
    pub hooks: Vec<HookDefinitionResponse>,
}

/// The matchers of one event type (OpenHands' `HookEventResponse`).
#[derive(Debug, Serialize, ToSchema)]
pub struct HookEventResponse {
    /// `pre_tool_use`, `post_tool_use`, `user_prompt_submit`, `session_start`, `session_end`
    /// or `stop`.
    pub event_type: String,
    /// Its matchers.
    pub matchers: Vec<HookMatcherResponse>,
}

/// `GET …/hooks`: `{"hooks": [...]}` (OpenHands' `GetHooksResponse`).
#[derive(Debug, Serialize, ToSchema)]
pub struct GetHooksResponse {
    /// The event types with hooks.
    pub hooks: Vec<HookEventResponse>,
}

/// `POST /api/v1/conversations/{id}/pending-messages` (OpenHands' `PendingMessageResponse`).
#[derive(Debug, Serialize, ToSchema)]
pub struct PendingMessageResponse {
    /// The message's id.
    pub id: String,
    /// `true`: queued until the conversation is ready; `false`: it was ready and the message
    /// was delivered at once.
    pub queued: bool,
    /// Its position in the queue, 1-based (0 when delivered at once).
    pub position: u64,
}

impl From<Queued> for PendingMessageResponse {
    fn from(q: Queued) -> Self {
        PendingMessageResponse {
            id: q.id.to_string(),
            queued: q.queued,
            position: q.position,
        }
    }
}
