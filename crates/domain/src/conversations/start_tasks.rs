//! Start tasks (reference app-server §5.1 `AppConversationStartTask`, §5.3): one row per
//! start of a conversation, moved step by step by the start pipeline
//! (`services::conversations::start`) so a client polling it, or a restarted server,
//! sees where the start is.

use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::ids::{ConversationId, OrgId, SandboxId, UserId};

/// A start task's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StartTaskId(pub Uuid);

impl StartTaskId {
    /// A new random (v4) id.
    pub fn new_random() -> Self {
        StartTaskId(Uuid::new_v4())
    }
}

impl std::fmt::Display for StartTaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

impl std::str::FromStr for StartTaskId {
    type Err = crate::ids::InvalidId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        crate::ids::parse_uuid(s)
            .map(StartTaskId)
            .ok_or(crate::ids::InvalidId)
    }
}

/// Where a start is (reference app-server §5.1 `AppConversationStartTaskStatus`; wire names
/// uppercase). Switchboard passes through `WORKING`, `WAITING_FOR_SANDBOX`,
/// `PREPARING_REPOSITORY` (only with a repository), `RUNNING_SETUP_SCRIPT` (only when the
/// repository has `.openhands/setup.sh`), `STARTING_CONVERSATION` and `READY` or `ERROR`; the
/// git-hook and skill steps of OpenHands are not run (docs/API.md, App conversations: start)
/// but the names are known so rows written by a newer server still read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StartTaskStatus {
    /// Accepted, nothing done yet.
    Working,
    /// Finding, starting or resuming the sandbox.
    WaitingForSandbox,
    /// Cloning the repository.
    PreparingRepository,
    /// Running `.openhands/setup.sh`.
    RunningSetupScript,
    /// OpenHands: installing git hooks (not run by Switchboard).
    SettingUpGitHooks,
    /// OpenHands: loading skills (not run by Switchboard).
    SettingUpSkills,
    /// Creating the conversation on the agent server.
    StartingConversation,
    /// Done: the conversation runs.
    Ready,
    /// Failed; `detail` says why.
    Error,
}

impl StartTaskStatus {
    /// Every value, in OpenHands' declaration order.
    pub const ALL: [StartTaskStatus; 9] = [
        StartTaskStatus::Working,
        StartTaskStatus::WaitingForSandbox,
        StartTaskStatus::PreparingRepository,
        StartTaskStatus::RunningSetupScript,
        StartTaskStatus::SettingUpGitHooks,
        StartTaskStatus::SettingUpSkills,
        StartTaskStatus::StartingConversation,
        StartTaskStatus::Ready,
        StartTaskStatus::Error,
    ];

    /// The wire (and column) name, e.g. `WAITING_FOR_SANDBOX`.
    pub fn as_str(self) -> &'static str {
        match self {
            StartTaskStatus::Working => "WORKING",
            StartTaskStatus::WaitingForSandbox => "WAITING_FOR_SANDBOX",
            StartTaskStatus::PreparingRepository => "PREPARING_REPOSITORY",
            StartTaskStatus::RunningSetupScript => "RUNNING_SETUP_SCRIPT",
            StartTaskStatus::SettingUpGitHooks => "SETTING_UP_GIT_HOOKS",
            StartTaskStatus::SettingUpSkills => "SETTING_UP_SKILLS",
            StartTaskStatus::StartingConversation => "STARTING_CONVERSATION",
            StartTaskStatus::Ready => "READY",
            StartTaskStatus::Error => "ERROR",
        }
    }

    /// Parses a wire name; `None` for anything else.
    pub fn parse(s: &str) -> Option<StartTaskStatus> {
        StartTaskStatus::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// `READY` or `ERROR`: the task moves no more.
    pub fn is_final(self) -> bool {
        matches!(self, StartTaskStatus::Ready | StartTaskStatus::Error)
    }
}

/// A start task (reference app-server §5.1 `AppConversationStartTask`), one row of
/// `start_tasks`.
#[derive(Debug, Clone, PartialEq)]
pub struct StartTask {
    /// Id.
    pub id: StartTaskId,
    /// The organization the conversation belongs to (not on the wire).
    pub org_id: OrgId,
    /// Who asked.
    pub created_by_user_id: UserId,
    /// Where the start is.
    pub status: StartTaskStatus,
    /// Why it failed (`ERROR` only); never holds a secret.
    pub detail: Option<String>,
    /// The conversation's id, chosen when the task is created (the request's
    /// `conversation_id` or a new one); shown as `app_conversation_id` once `READY`.
    pub conversation_id: ConversationId,
    /// The sandbox, once found.
    pub sandbox_id: Option<SandboxId>,
    /// The sandbox's agent server, once running.
    pub agent_server_url: Option<String>,
    /// The start request as received, without its `secrets` values (echoed as `request`).
    pub request: Value,
    /// The request's `secrets`, sealed (never echoed); `None` when there were none.
    pub secrets_sealed: Option<String>,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last change.
    pub updated_at: OffsetDateTime,
}

impl StartTask {
    /// The `app_conversation_id` the API shows: the conversation id once `READY`.
    pub fn app_conversation_id(&self) -> Option<ConversationId> {
        (self.status == StartTaskStatus::Ready).then_some(self.conversation_id)
    }
}

/// The filters of the start-task search and count (reference app-server §5.2).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StartTaskFilter {
    /// `conversation_id__eq`.
    pub conversation_id_eq: Option<ConversationId>,
    /// `created_at__gte`.
    pub created_at_gte: Option<OffsetDateTime>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip_and_two_are_final() {
        for s in StartTaskStatus::ALL {
            assert_eq!(StartTaskStatus::parse(s.as_str()), Some(s));
        }
        let finals: Vec<_> = StartTaskStatus::ALL
            .into_iter()
            .filter(|s| s.is_final())
            .collect();
        assert_eq!(finals, [StartTaskStatus::Ready, StartTaskStatus::Error]);
        assert_eq!(StartTaskStatus::parse("ready"), None);
    }
}
