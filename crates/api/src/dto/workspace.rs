//! The workspace routes' answers (issue 22): a directory listing, skills, hooks, git changes
//! and diffs (as the agent server answers them), and OpenHands' `PendingMessageResponse`.

use serde::Serialize;
use switchboard_domain::conversations::workspace::{DirEntry, Listing};
use switchboard_domain::services::Queued;
use utoipa::ToSchema;

/// One entry of a directory.
#[derive(Debug, Serialize, ToSchema)]
pub struct WorkspaceEntry {
    /// Its name in the directory.
    pub name: String,
    /// Its absolute path in the sandbox.
    pub path: String,
    /// `file`, `directory`, `symlink` (not followed) or `other`.
    #[serde(rename = "type")]
    #[schema(pattern = "^(file|directory|symlink|other)$")]
    pub kind: String,
    /// Its size in bytes.
    pub size: u64,
}

/// `GET …/files`: a directory's entries in name order (bytewise).
#[derive(Debug, Serialize, ToSchema)]
pub struct WorkspaceListing {
    /// The directory's absolute path in the sandbox (symbolic links resolved).
    pub path: String,
    /// Its entries, at most 10 000.
    pub items: Vec<WorkspaceEntry>,
    /// Whether the directory holds more entries than listed.
    pub truncated: bool,
}

impl From<Listing> for WorkspaceListing {
    fn from(l: Listing) -> Self {
        WorkspaceListing {
            path: l.path,
            items: l.entries.into_iter().map(WorkspaceEntry::from).collect(),
            truncated: l.truncated,
        }
    }
}

impl From<DirEntry> for WorkspaceEntry {
    fn from(e: DirEntry) -> Self {
        WorkspaceEntry {
            name: e.name,
            path: e.path,
            kind: e.kind.as_str().to_owned(),
            size: e.size,
        }
    }
}

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
