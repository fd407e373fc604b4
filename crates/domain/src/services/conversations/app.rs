//! App conversations, read and changed (spec §4.3; reference app-server §5.2): search,
//! count, batch get, PATCH, DELETE and send-message, with the visibility of design
//! "Conversations" (the owner, and callers holding `view_org_conversations`; anything else
//! is not found). The start pipeline is `conversation_start.rs`'s.

mod switch;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::batch::Batch;
use crate::conversations::app::{
    AppConversation, AppConversationFilter, AppConversationInfo, AppConversationPatch,
    AppConversationQuery, OrderedCursor, SendMessage, SortOrder,
};
use crate::conversations::budget;
use crate::cursor::Keyset;
use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::identity::session_keys::SessionKey;
use crate::ids::{ConversationId, SandboxId};
use crate::permissions::Permission;
use crate::ports::{AppConversationStore, DeletedConversation};
use crate::sandboxes::agent_requests::{LlmSpec, SwitchLlmRequest};
use crate::sandboxes::records::{Page, SandboxRecord};
use crate::sandboxes::runtime::{AgentServerError, SandboxStatus};
use crate::services::SandboxService;
use crate::time_input::now_micros;

/// How often a send-message waiting for a resumed sandbox looks at its status.
const RESUME_POLL: Duration = Duration::from_millis(50);

/// Reads, changes and deletes app conversations, and talks to their agent servers.
#[derive(Clone)]
pub struct AppConversationService {
    store: Arc<dyn AppConversationStore>,
    sandboxes: SandboxService,
}

/// What a send-message did (OpenHands' answer `{success, sandbox_status, message}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageSent {
    /// The sandbox's status after the call (`RUNNING`).
    pub sandbox_status: SandboxStatus,
    /// Whether the sandbox was paused and resumed first.
    pub resumed: bool,
}

impl AppConversationService {
    /// The service over the app-conversation store and the sandbox service (which must be
    /// the one running sandboxes, when this server does).
    pub fn new(store: Arc<dyn AppConversationStore>, sandboxes: SandboxService) -> Self {
        AppConversationService { store, sandboxes }
    }

    /// The owner only, unless the caller holds `view_org_conversations`.
    fn owner_filter(ctx: &OrgContext) -> Option<crate::ids::UserId> {
        (!ctx.role.grants(Permission::ViewOrgConversations)).then_some(ctx.principal.user_id)
    }

    /// One page of the conversations the caller sees in the effective organization, in
    /// `order` (keyset: a page continues exactly after the previous one while conversations
    /// are created).
    ///
    /// # Errors
    /// [`DomainError::Invalid`] when `after` was written by a search in another order;
    /// storage failures.
    pub fn search(
        &self,
        ctx: &OrgContext,
        filter: AppConversationFilter,
        order: SortOrder,
        after: Option<OrderedCursor>,
        limit: u32,
    ) -> Result<Page<AppConversation>, DomainError> {
        if let Some(a) = after
            && a.order != order
        {
            return Err(crate::validation::value_error(
                crate::validation::loc(["query", "page_id"]),
                "page_id was returned by a search in another sort_order",
                &Value::String(a.encode()),
            )
            .into());
        }
        // An UPDATED_AT walk keeps the instant its first page was read (API.md, "Paging while
        // conversations change").
        let as_of = order
            .by_updated()
            .then(|| after.map_or(Some(now_micros()), |a| a.as_of))
            .flatten();
        let mut rows = self.store.search_app_conversations(&AppConversationQuery {
            org: ctx.org.id,
            owner: Self::owner_filter(ctx),
            filter,
            order,
            after,
            as_of,
            limit: limit + 1,
        })?;
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let next_page_id = more
            .then(|| rows.last())
            .flatten()
            .map(|(r, at)| OrderedCursor::after(order, r, *at, as_of).encode());
        let rows = rows.into_iter().map(|(r, _)| r).collect();
        Ok(Page {
            items: self.views(ctx, rows)?,
            next_page_id,
        })
    }

    /// How many conversations the caller sees match `filter`.
    ///
    /// # Errors
    /// Storage failures.
    pub fn count(
        &self,
        ctx: &OrgContext,
        filter: AppConversationFilter,
    ) -> Result<u64, DomainError> {
        Ok(self.store.count_app_conversations(&AppConversationQuery {
            org: ctx.org.id,
            owner: Self::owner_filter(ctx),
            filter,
            order: SortOrder::default(),
            after: None,
            as_of: None,
            limit: 0,
        })?)
    }

    /// The conversations with these ids, in request order: `None` for an unknown one or one
    /// the caller does not see.
    ///
    /// # Errors
    /// [`DomainError::TooManyIds`] over [`Batch::APP_CONVERSATIONS`]' most;
    /// storage failures.
    pub fn get(
        &self,
        ctx: &OrgContext,
        ids: &[ConversationId],
    ) -> Result<Vec<Option<AppConversation>>, DomainError> {
        Batch::APP_CONVERSATIONS.check(ids.len())?;
        let rows: Vec<AppConversationInfo> = self
            .store
            .app_conversations_by_ids(ids)?
            .into_iter()
            .filter(|i| visible(ctx, i))
            .collect();
        let found: HashMap<ConversationId, AppConversation> = self
            .views(ctx, rows)?
            .into_iter()
            .map(|v| (v.info.id, v))
            .collect();
        // An id asked twice is answered twice.
        Ok(ids.iter().map(|id| found.get(id).cloned()).collect())
    }

    /// Changes the fields `patch` sends (a cleared field is null); the conversation as it
    /// now is.
    ///
    /// # Errors
    /// [`DomainError::ConversationNotFound`] when the caller does not see it; storage.
    pub fn patch(
        &self,
        ctx: &OrgContext,
        id: ConversationId,
        patch: &AppConversationPatch,
    ) -> Result<AppConversation, DomainError> {
        self.visible(ctx, id)?;
        let info = self
            .store
            .patch_app_conversation(id, patch, now_micros())?
            .ok_or(DomainError::ConversationNotFound)?;
        Ok(self
            .views(ctx, vec![info])?
            .pop()
            .expect("one view per conversation"))
    }

    /// Deletes a conversation the caller sees: on its agent server first when its sandbox
    /// is `RUNNING` (an agent server that does not know it is fine), then its row, events and
    /// start tasks in one transaction, then its sandbox when it is one Switchboard runs and no
    /// other conversation uses it (the sandbox delete: tombstone now, process stopped in the
    /// background).
    ///
    /// # Errors
    /// [`DomainError::ConversationNotFound`]; [`DomainError::AgentServerFailed`] when the
    /// agent server's delete fails (nothing is deleted then); storage.
    pub fn delete(
        &self,
        ctx: &OrgContext,
        id: ConversationId,
    ) -> Result<DeletedConversation, DomainError> {
        let info = self.visible(ctx, id)?;
        let sandbox = match info.sandbox_id {
            Some(s) => self.sandboxes.sandboxes.sandbox(s)?,
            None => None,
        };
        if let Some(record) = &sandbox
            && record.status == SandboxStatus::Running
            && let Some((url, key)) = self.sandboxes.agent_target(record)?
        {
            let m = self.sandboxes.managed()?;
            m.m.client
                .delete_conversation(&url, &key, id)
                .map_err(agent_failed)?;
        }
        let deleted = self
            .store
            .delete_app_conversation(id)?
            .ok_or(DomainError::ConversationNotFound)?;
        if let Some(record) = sandbox
            && record.is_managed()
            && self.store.conversations_in_sandbox(record.id)? == 0
        {
            match self.sandboxes.delete_sandbox(ctx, record.id) {
                Ok(()) | Err(DomainError::SandboxNotFound) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(deleted)
    }

    /// Sends a user message to the conversation's agent server (`POST
    /// /api/conversations/{id}/events`). A `PAUSED` sandbox is resumed first, and a
    /// `STARTING` one waited for, up to the sandbox start timeout (a documented difference:
    /// OpenHands answers 409).
    ///
    /// # Errors
    /// [`DomainError::ConversationNotFound`]; [`DomainError::ConversationSandboxMissing`]
    /// (410) when its sandbox is `MISSING` or deleted;
    /// [`DomainError::ConversationSandboxUnavailable`] (503) when it is `ERROR` or did not
    /// become `RUNNING` in time; [`DomainError::ConversationSandboxNotManaged`] (409) when it
    /// is not one Switchboard runs (no URL or key);
    /// [`DomainError::AgentServerFailed`] (502) when the agent server fails;
    /// [`DomainError::Conflict`] (409) for `run: true` when the conversation is over its
    /// budget ([`budget::run_refusal`]; API.md, "Budgets"), before its sandbox is touched.
    pub fn send_message(
        &self,
        ctx: &OrgContext,
        id: ConversationId,
        message: &SendMessage,
    ) -> Result<MessageSent, DomainError> {
        if message.run {
            let info = self.visible(ctx, id)?;
            let why = budget::run_refusal(
                info.max_budget_per_task,
                info.budget_reached,
                info.metrics.as_ref(),
            );
            if let Some(why) = why {
                return Err(DomainError::Conflict(why));
            }
        }
        let (url, key, resumed) = self.running_agent(ctx, id)?;
        let body = json!({
            "role": "user",
            "content": message.content,
            "run": message.run,
        });
        let m = self.sandboxes.managed()?;
        m.m.client
            .send_message(&url, &key, id, &body)
            .map_err(agent_failed)?;
        Ok(MessageSent {
            sandbox_status: SandboxStatus::Running,
            resumed,
        })
    }

    /// Gives the running conversation another LLM (`POST /api/conversations/{id}/switch_llm`
    /// on its agent server, which uses it from the next step on); its sandbox resumed or waited
    /// for as [`AppConversationService::send_message`] does.
    ///
    /// # Errors
    /// As [`AppConversationService::send_message`].
    pub(super) fn switch_llm(
        &self,
        ctx: &OrgContext,
        id: ConversationId,
        llm: LlmSpec,
    ) -> Result<(), DomainError> {
        let (url, key, _) = self.running_agent(ctx, id)?;
        let m = self.sandboxes.managed()?;
        m.m.client
            .switch_llm(&url, &key, id, &SwitchLlmRequest { llm })
            .map_err(agent_failed)
    }

    /// Whether the caller sees the conversation (spec §4.3 visibility).
    ///
    /// # Errors
    /// [`DomainError::ConversationNotFound`] when not; storage.
    pub fn require_visible(&self, ctx: &OrgContext, id: ConversationId) -> Result<(), DomainError> {
        self.visible(ctx, id).map(|_| ())
    }

    /// The agent server of a conversation the caller sees, once its sandbox runs: a `PAUSED`
    /// sandbox resumed first, a `STARTING` one waited for (up to the start timeout). Answers
    /// the base URL, the session key and whether it was resumed.
    fn running_agent(
        &self,
        ctx: &OrgContext,
        id: ConversationId,
    ) -> Result<(String, SessionKey, bool), DomainError> {
        let info = self.visible(ctx, id)?;
        let Some(sandbox_id) = info.sandbox_id else {
            return Err(DomainError::ConversationSandboxMissing);
        };
        let mut record = self.sandbox_record(sandbox_id)?;
        let mut resumed = false;
        if record.status == SandboxStatus::Paused && record.is_managed() {
            match self.sandboxes.resume_sandbox(ctx, sandbox_id) {
                Ok(()) => resumed = true,
                Err(DomainError::SandboxNotFound) => {
                    return Err(DomainError::ConversationSandboxMissing);
                }
                Err(DomainError::SandboxNotRunnable(s)) => return Err(unusable(s)),
                Err(e) => return Err(e),
            }
            record = self.sandbox_record(sandbox_id)?;
        }
        if record.status == SandboxStatus::Starting {
            record = self.wait_running(sandbox_id)?;
        }
        if record.status != SandboxStatus::Running {
            return Err(unusable(record.status));
        }
        let Some((url, key)) = self.sandboxes.agent_target(&record)? else {
            return Err(DomainError::ConversationSandboxNotManaged);
        };
        Ok((url, key, resumed))
    }

    /// Where the conversation's own agent server listens while its sandbox is `RUNNING`: the
    /// agent server's base URL and the sandbox's session key (for `X-Session-API-Key`), used
    /// to relay its transient events (API.md, Live delivery). `None` when the conversation,
    /// its sandbox, the URL or the key is missing, or the sandbox does not run. No visibility
    /// check: callers have checked that the subscriber may read the conversation.
    ///
    /// # Errors
    /// A store failure.
    pub fn agent_endpoint(
        &self,
        id: ConversationId,
    ) -> Result<Option<(String, SessionKey)>, DomainError> {
        let Some(sandbox_id) = self
            .store
            .app_conversations_by_ids(&[id])?
            .into_iter()
            .next()
            .and_then(|i| i.sandbox_id)
        else {
            return Ok(None);
        };
        let Some(record) = self.sandboxes.sandboxes.sandbox(sandbox_id)? else {
            return Ok(None);
        };
        if record.status != SandboxStatus::Running {
            return Ok(None);
        }
        self.sandboxes.agent_target(&record)
    }

    /// The conversation if the caller sees it.
    fn visible(
        &self,
        ctx: &OrgContext,
        id: ConversationId,
    ) -> Result<AppConversationInfo, DomainError> {
        self.store
            .app_conversations_by_ids(&[id])?
            .into_iter()
            .find(|i| visible(ctx, i))
            .ok_or(DomainError::ConversationNotFound)
    }

    /// The sandbox's record; a deleted or unknown one is `MISSING`.
    fn sandbox_record(&self, id: SandboxId) -> Result<SandboxRecord, DomainError> {
        self.sandboxes
            .sandboxes
            .sandbox(id)?
            .ok_or(DomainError::ConversationSandboxMissing)
    }

    /// Waits until a starting sandbox is `RUNNING` (or anything but `STARTING`), up to the
    /// sandbox start timeout.
    fn wait_running(&self, id: SandboxId) -> Result<SandboxRecord, DomainError> {
        let timeout = self
            .sandboxes
            .managed()
            .map_or(Duration::from_secs(120), |m| {
                m.m.settings.policy.start_timeout
            });
        let deadline = Instant::now() + timeout;
        loop {
            let record = self.sandbox_record(id)?;
            if record.status != SandboxStatus::Starting {
                return Ok(record);
            }
            if Instant::now() >= deadline {
                return Err(DomainError::ConversationSandboxUnavailable(
                    "STARTING and did not become RUNNING in time".into(),
                ));
            }
            std::thread::sleep(RESUME_POLL);
        }
    }

    /// The conversations as the caller sees them, with their sandboxes' state.
    fn views(
        &self,
        ctx: &OrgContext,
        rows: Vec<AppConversationInfo>,
    ) -> Result<Vec<AppConversation>, DomainError> {
        let mut sandbox_ids: Vec<SandboxId> = rows.iter().filter_map(|r| r.sandbox_id).collect();
        sandbox_ids.sort_unstable();
        sandbox_ids.dedup();
        let sandboxes: HashMap<SandboxId, SandboxRecord> = self
            .sandboxes
            .sandboxes
            .sandboxes_by_ids(&sandbox_ids)?
            .into_iter()
            .map(|r| (r.id, r))
            .collect();
        let may_see_key = |info: &AppConversationInfo| {
            info.created_by_user_id == ctx.principal.user_id
                || ctx.role.grants(Permission::ViewOrgConversations)
        };
        Ok(rows
            .into_iter()
            .map(|info| {
                let sandbox = info.sandbox_id.and_then(|s| sandboxes.get(&s));
                let status = sandbox.map_or(SandboxStatus::Missing, |s| s.status);
                let running = status == SandboxStatus::Running;
                let conversation_url = sandbox
                    .filter(|_| running)
                    .and_then(|s| self.sandboxes.agent_url(s))
                    .map(|u| {
                        format!(
                            "{}/api/conversations/{}",
                            u.trim_end_matches('/'),
                            info.id.0.simple()
                        )
                    });
                let session_api_key = sandbox
                    .filter(|_| running && may_see_key(&info))
                    .and_then(|s| self.sandboxes.session_key(s));
                // The last run state reported, whatever the sandbox's state (API.md, "What a
                // conversation keeps after its sandbox"), or `error` once its budget stopped
                // it; its metrics with its budget (API.md, "Budgets").
                let mut info = info;
                info.metrics = budget::answered_metrics(info.metrics, info.max_budget_per_task);
                AppConversation {
                    execution_status: budget::answered_status(
                        info.execution_status,
                        info.budget_reached,
                    ),
                    sandbox_status: status,
                    conversation_url,
                    session_api_key,
                    info,
                }
            })
            .collect())
    }
}

/// Whether the caller sees the conversation: the effective organization's, and their own
/// unless they hold `view_org_conversations`.
pub(super) fn visible(ctx: &OrgContext, info: &AppConversationInfo) -> bool {
    info.org_id == ctx.org.id
        && (info.created_by_user_id == ctx.principal.user_id
            || ctx.role.grants(Permission::ViewOrgConversations))
}

/// The refusal for a sandbox that cannot take a message in `status`.
fn unusable(status: SandboxStatus) -> DomainError {
    match status {
        SandboxStatus::Missing => DomainError::ConversationSandboxMissing,
        other => DomainError::ConversationSandboxUnavailable(other.to_string()),
    }
}

/// An agent server's failure as the 502 detail: what failed, without URL or body (they may
/// carry the sandbox's internal address; never a key).
pub(super) fn agent_failed(e: AgentServerError) -> DomainError {
    tracing::warn!(error = %e, "an agent server call failed");
    DomainError::AgentServerFailed(match e {
        AgentServerError::Unreachable { .. } => "it did not answer".into(),
        AgentServerError::Local { .. } => "Switchboard could not call it now".into(),
        AgentServerError::Timeout { timeout, .. } => format!("no answer within {timeout:?}"),
        AgentServerError::BadAnswer { detail, .. } => {
            // `detail` starts with `HTTP <status>`; only that part is shown.
            detail
                .split(':')
                .next()
                .unwrap_or("unexpected answer")
                .to_owned()
        }
    })
}
