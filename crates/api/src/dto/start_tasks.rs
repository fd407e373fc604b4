//! Start tasks as OpenHands writes them (reference app-server §5.1
//! `AppConversationStartTask`, `AppConversationStartTaskPage`).

use serde::Serialize;
use serde_json::Value;
use switchboard_domain::conversations::start_tasks::StartTask;
use switchboard_domain::sandboxes::records::Page;
use switchboard_domain::time_input::format_rfc3339_micros;
use utoipa::ToSchema;

/// Where a start is.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StartTaskStatusName {
    /// Accepted.
    Working,
    /// Finding, starting or resuming the sandbox.
    WaitingForSandbox,
    /// Cloning the repository.
    PreparingRepository,
    /// Running `.openhands/setup.sh`.
    RunningSetupScript,
    /// OpenHands only (never written by Switchboard).
    SettingUpGitHooks,
    /// OpenHands only (never written by Switchboard).
    SettingUpSkills,
    /// Creating the conversation on the agent server.
    StartingConversation,
    /// Done.
    Ready,
    /// Failed (`detail` says why).
    Error,
}

/// A start task (OpenHands' `AppConversationStartTask`).
#[derive(Debug, Serialize, ToSchema)]
pub struct AppConversationStartTask {
    /// Task id (UUID).
    #[schema(format = Uuid)]
    pub id: String,
    /// Who started it (user UUID).
    #[schema(format = Uuid)]
    pub created_by_user_id: String,
    /// Where the start is.
    pub status: StartTaskStatusName,
    /// Why it failed (`ERROR`); secrets are masked.
    pub detail: Option<String>,
    /// The conversation, once `READY`.
    #[schema(format = Uuid)]
    pub app_conversation_id: Option<String>,
    /// The sandbox, once chosen.
    #[schema(format = Uuid)]
    pub sandbox_id: Option<String>,
    /// The sandbox's agent server, once running.
    pub agent_server_url: Option<String>,
    /// The start request as received (`secrets` values masked).
    #[schema(value_type = Object)]
    pub request: Value,
    /// Creation time (RFC 3339, UTC).
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Last change (RFC 3339, UTC).
    #[schema(format = DateTime)]
    pub updated_at: String,
}

impl From<&StartTask> for AppConversationStartTask {
    fn from(t: &StartTask) -> Self {
        use switchboard_domain::conversations::start_tasks::StartTaskStatus as S;
        AppConversationStartTask {
            id: t.id.to_string(),
            created_by_user_id: t.created_by_user_id.to_string(),
            status: match t.status {
                S::Working => StartTaskStatusName::Working,
                S::WaitingForSandbox => StartTaskStatusName::WaitingForSandbox,
                S::PreparingRepository => StartTaskStatusName::PreparingRepository,
                S::RunningSetupScript => StartTaskStatusName::RunningSetupScript,
                S::SettingUpGitHooks => StartTaskStatusName::SettingUpGitHooks,
                S::SettingUpSkills => StartTaskStatusName::SettingUpSkills,
                S::StartingConversation => StartTaskStatusName::StartingConversation,
                S::Ready => StartTaskStatusName::Ready,
                S::Error => StartTaskStatusName::Error,
            },
            detail: t.detail.clone(),
            app_conversation_id: t.app_conversation_id().map(|c| c.to_string()),
            sandbox_id: t.sandbox_id.map(|s| s.to_string()),
            agent_server_url: t.agent_server_url.clone(),
            request: t.request.clone(),
            created_at: format_rfc3339_micros(t.created_at),
            updated_at: format_rfc3339_micros(t.updated_at),
        }
    }
}

/// One page of a start-task search.
#[derive(Debug, Serialize, ToSchema)]
pub struct AppConversationStartTaskPage {
    /// The tasks.
    pub items: Vec<AppConversationStartTask>,
    /// The `page_id` of the next page; `null` on the last.
    pub next_page_id: Option<String>,
}

impl From<Page<StartTask>> for AppConversationStartTaskPage {
    fn from(p: Page<StartTask>) -> Self {
        AppConversationStartTaskPage {
            items: p.items.iter().map(AppConversationStartTask::from).collect(),
            next_page_id: p.next_page_id,
        }
    }
}
