//! App conversations as OpenHands writes them (reference app-server §5.1): `AppConversation`,
//! `AppConversationPage`, and the answer of send-message. Ids typed `OpenHandsUUID` there
//! (`id`, `parent_conversation_id`, `sub_conversation_ids`) are 32 hex digits; user and
//! sandbox ids are dashed.

use serde::Serialize;
use serde_json::{Map, Value};
use switchboard_domain::conversations::app::AppConversation;
use switchboard_domain::conversations::workspace::WORKING_DIR_TAG;
use switchboard_domain::sandboxes::records::Page;
use switchboard_domain::time_input::format_rfc3339_micros;
use utoipa::ToSchema;

use crate::sandbox_proxy::public::PublicUrls;

use super::SandboxStatusName;

/// An app conversation (OpenHands' `AppConversation`: the `AppConversationInfo` fields and
/// what Switchboard knows of its sandbox).
#[derive(Debug, Serialize, ToSchema)]
pub struct AppConversationOut {
    /// Conversation id (32 hex digits).
    pub id: String,
    /// Its creator (user UUID).
    #[schema(format = Uuid)]
    pub created_by_user_id: String,
    /// The sandbox it runs in (UUID); `null` when that sandbox's record is gone.
    #[schema(format = Uuid)]
    pub sandbox_id: Option<String>,
    /// The repository cloned for it.
    pub selected_repository: Option<String>,
    /// Its branch.
    pub selected_branch: Option<String>,
    /// `github`, `gitlab`, `bitbucket`, `bitbucket_data_center`, `forgejo`, `azure_devops`.
    pub git_provider: Option<String>,
    /// Title.
    pub title: Option<String>,
    /// What started it (`gui`, `openhands_api`, `resolver`, …).
    pub trigger: Option<String>,
    /// Pull request numbers.
    pub pr_number: Vec<i64>,
    /// The LLM model.
    pub llm_model: Option<String>,
    /// `openhands` (or `acp`).
    pub agent_kind: String,
    /// OpenHands' `MetricsSnapshot`, as last reported, its `max_budget_per_task` the
    /// conversation's budget (USD, fixed at its start) when it has one.
    #[schema(value_type = Option<Object>)]
    pub metrics: Option<Value>,
    /// The conversation it is a sub-conversation of (32 hex digits).
    pub parent_conversation_id: Option<String>,
    /// Its sub-conversations (32 hex digits), oldest first.
    pub sub_conversation_ids: Vec<String>,
    /// Shared publicly.
    pub public: Option<bool>,
    /// Tags (string to string).
    #[schema(value_type = Object)]
    pub tags: Map<String, Value>,
    /// Creation time (RFC 3339, UTC).
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Last change (RFC 3339, UTC).
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// The tag `acpserver` when `agent_kind` is `acp`, else `null`.
    pub acp_server: Option<String>,
    /// `{"id", "revision"}` from the tags `agentprofileid` and `agentprofilerevision`, else
    /// `null`.
    #[schema(value_type = Option<Object>)]
    pub launched_agent_profile: Option<Value>,
    /// Its sandbox's status from the last reconciliation (`MISSING` when gone).
    pub sandbox_status: SandboxStatusName,
    /// The run state its agent server last reported by webhook (`idle`, `running`,
    /// `paused`, `waiting_for_confirmation`, `finished`, `error`, `stuck`); `error` once its
    /// budget stopped it. No agent server is called.
    pub execution_status: Option<String>,
    /// `{agent server}/api/conversations/{id}` while the sandbox is `RUNNING`, the agent
    /// server as Switchboard shows it: on the sandbox's own port, a host of its own, or
    /// under Switchboard's public URL (API.md, Sandbox URLs).
    pub conversation_url: Option<String>,
    /// The sandbox's `X-Session-API-Key` while `RUNNING`, to the conversation's creator and
    /// the organization's admins and owners only; `null` otherwise.
    pub session_api_key: Option<String>,
    /// The conversation's workspace in its sandbox (`{"working_dir"}`, as the agent server
    /// names it), from the tag `workingdir` the start gave it; `null` for a conversation
    /// Switchboard did not start. Not an OpenHands field: Agent Canvas reads it for the
    /// Files tab and the git views.
    pub workspace: Option<ConversationWorkspace>,
}

/// Where a conversation's files are in its sandbox.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConversationWorkspace {
    /// The working directory, absolute.
    pub working_dir: String,
}

impl AppConversationOut {
    /// The conversation as shown, its `conversation_url` written under `public`.
    pub fn present(c: AppConversation, public: PublicUrls<'_>) -> Self {
        let i = c.info;
        let tag = |k: &str| i.tags.get(k).and_then(Value::as_str).map(str::to_owned);
        let workspace = tag(WORKING_DIR_TAG)
            .filter(|w| w.starts_with('/'))
            .map(|working_dir| ConversationWorkspace { working_dir });
        let acp_server = (i.agent_kind == "acp").then(|| tag("acpserver")).flatten();
        // The SDK's `LaunchedAgentProfile`: `{agent_profile_id, revision}`, the revision a
        // number (Agent Canvas drops the object otherwise).
        let launched_agent_profile = tag("agentprofileid").map(|id| {
            let revision = tag("agentprofilerevision")
                .and_then(|r| r.parse::<i64>().ok())
                .unwrap_or(0);
            serde_json::json!({ "agent_profile_id": id, "revision": revision })
        });
        AppConversationOut {
            id: i.id.0.simple().to_string(),
            created_by_user_id: i.created_by_user_id.to_string(),
            sandbox_id: i.sandbox_id.map(|s| s.to_string()),
            selected_repository: i.selected_repository,
            selected_branch: i.selected_branch,
            git_provider: i.git_provider,
            title: i.title,
            trigger: i.trigger.map(|t| t.as_str().to_owned()),
            pr_number: i.pr_number,
            llm_model: i.llm_model,
            agent_kind: i.agent_kind,
            metrics: i.metrics,
            parent_conversation_id: i.parent_conversation_id.map(|p| p.0.simple().to_string()),
            sub_conversation_ids: i
                .sub_conversation_ids
                .iter()
                .map(|s| s.0.simple().to_string())
                .collect(),
            public: i.public,
            tags: i.tags,
            created_at: format_rfc3339_micros(i.created_at),
            updated_at: format_rfc3339_micros(i.updated_at),
            acp_server,
            launched_agent_profile,
            sandbox_status: c.sandbox_status.into(),
            execution_status: c.execution_status.map(|s| s.as_str().to_owned()),
            conversation_url: match (c.conversation_url, i.sandbox_id) {
                (Some(url), Some(sandbox)) => Some(public.agent_server(&url, sandbox)),
                (url, _) => url,
            },
            session_api_key: c.session_api_key.map(|k| k.expose().to_owned()),
            workspace,
        }
    }
}

/// A page of app conversations (OpenHands' `AppConversationPage`).
#[derive(Debug, Serialize, ToSchema)]
pub struct AppConversationPage {
    /// The items.
    pub items: Vec<AppConversationOut>,
    /// The `page_id` of the next page; `null` on the last.
    pub next_page_id: Option<String>,
}

impl AppConversationPage {
    /// The page as shown (see [`AppConversationOut::present`]).
    pub fn present(p: Page<AppConversation>, public: PublicUrls<'_>) -> Self {
        AppConversationPage {
            items: p
                .items
                .into_iter()
                .map(|c| AppConversationOut::present(c, public))
                .collect(),
            next_page_id: p.next_page_id,
        }
    }
}

/// The answer of send-message (OpenHands' `{success, sandbox_status, message}`).
#[derive(Debug, Serialize, ToSchema)]
pub struct SendMessageResponse {
    /// `true`.
    pub success: bool,
    /// The sandbox's status after the call (`RUNNING`).
    pub sandbox_status: SandboxStatusName,
    /// `null`, or `Sandbox resumed` when a paused sandbox was resumed first.
    pub message: Option<String>,
}
