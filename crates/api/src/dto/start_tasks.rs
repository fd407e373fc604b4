//! Start tasks as OpenHands writes them (reference app-server §5.1
//! `AppConversationStartTask`, `AppConversationStartTaskPage`).

use serde::Serialize;
use serde_json::Value;
use switchboard_domain::conversations::start_tasks::StartTask;
use switchboard_domain::sandboxes::records::Page;
use switchboard_domain::time_input::format_rfc3339_micros;
use utoipa::ToSchema;

use crate::sandbox_proxy::public::PublicUrls;

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
    /// Task id: 32 hex digits (OpenHands' `OpenHandsUUID`); accepted in either form on input.
    pub id: String,
    /// Who started it (user UUID).
    #[schema(format = Uuid)]
    pub created_by_user_id: String,
    /// Where the start is.
    pub status: StartTaskStatusName,
    /// Why it failed (`ERROR`); secrets are masked.
    pub detail: Option<String>,
    /// The conversation, once `READY`: 32 hex digits, as the app conversation's `id`.
    pub app_conversation_id: Option<String>,
    /// The sandbox, once chosen.
    #[schema(format = Uuid)]
    pub sandbox_id: Option<String>,
    /// The sandbox's agent server, once running, through Switchboard:
    /// `<scheme>://<public host>:<port>` in the port form (the default), else
    /// `<public-url>/sandboxes/{sandbox_id}/agent_server` or a host of its own (API.md,
    /// Sandbox URLs).
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

impl AppConversationStartTask {
    /// The task as shown, its agent server URL written under `public`.
    pub fn present(t: &StartTask, public: PublicUrls<'_>) -> Self {
        use switchboard_domain::conversations::start_tasks::StartTaskStatus as S;
        AppConversationStartTask {
            id: t.id.0.simple().to_string(),
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
            app_conversation_id: t.app_conversation_id().map(|c| c.0.simple().to_string()),
            sandbox_id: t.sandbox_id.map(|s| s.to_string()),
            agent_server_url: match (&t.agent_server_url, t.sandbox_id) {
                (Some(url), Some(sandbox)) => Some(public.agent_server(url, sandbox)),
                (url, _) => url.clone(),
            },
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

impl AppConversationStartTaskPage {
    /// The page as shown (see [`AppConversationStartTask::present`]).
    pub fn present(p: Page<StartTask>, public: PublicUrls<'_>) -> Self {
        AppConversationStartTaskPage {
            items: p
                .items
                .iter()
                .map(|t| AppConversationStartTask::present(t, public))
                .collect(),
            next_page_id: p.next_page_id,
        }
    }
}
