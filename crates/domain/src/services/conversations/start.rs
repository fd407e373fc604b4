//! The start pipeline (spec §4.3, reference app-server §5.3): a start request becomes a
//! [`StartTask`] (`WORKING`, answered at once); the `conversation-start` job of any replica
//! claims it (`claims.rs`) and runs it on one of its workers: `WAITING_FOR_SANDBOX` →
//! `PREPARING_REPOSITORY` → `RUNNING_SETUP_SCRIPT` → `STARTING_CONVERSATION` → `READY`, each
//! step written to the task before it runs (and published to followers, `feed.rs`). Any
//! failure is `ERROR` with a redacted `detail`, and a sandbox the start created is deleted.
//!
//! The conversation row is created (or, when a webhook came first, completed) with the id
//! handed to the agent server *before* the create call, so the webhooks of its first events
//! find it and update it (docs/API.md, App conversations: start).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::conversations::Conversation;
use crate::conversations::repository;
use crate::conversations::sealed_start::{SealedStart, mask_credentials};
use crate::conversations::start_preferences::StartPreferences;
use crate::conversations::start_request::{StartRequest, parse_start_request};
use crate::conversations::start_tasks::{StartTask, StartTaskId, StartTaskStatus};
use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::identity::redaction::{redact, shorten};
use crate::ids::SandboxId;
use crate::llm_allow::ModelAllowList;
use crate::permissions::Permission;
use crate::ports::{ConversationStore, IdentityStore, StartTaskStore};
use crate::services::sandboxes::SandboxService;
use crate::time_input::now_micros;
use crate::validation::{self, loc};
pub use body::LlmConfig;

mod body;
mod claims;
mod clone;
mod feed;
mod grouping;
mod ids;
mod preferences;
mod relay;
mod secrets;
mod steps;

pub use feed::Follower;
use feed::StartFeed;

/// The most characters of a task's `detail`, once redacted (issue 24 item 1: redaction comes
/// first, so the cut never shows part of a secret).
const DETAIL_MAX_CHARS: usize = 1000;

/// Why a start without any LLM model is refused (or fails).
pub(super) const NO_MODEL: &str = "no LLM model: the request has no llm_model, the user's \
     settings and the organization's defaults none, and the server no --llm-model";

/// Limits of the pipeline's steps.
#[derive(Debug, Clone)]
pub struct StartTimeouts {
    /// How long a sandbox may take to be `RUNNING` (OpenHands: 120 s).
    pub sandbox: Duration,
    /// How long the clone may take.
    pub clone: Duration,
    /// How long `.openhands/setup.sh` may run (OpenHands: 600 s).
    pub setup_script: Duration,
    /// How long the agent server's create call may take.
    pub create: Duration,
    /// The longest wait between two reads of the sandbox's status while waiting for it: the
    /// record is read again at each launcher or reconciler pass (their wake-up), else after
    /// this.
    pub poll: Duration,
}

impl Default for StartTimeouts {
    fn default() -> Self {
        StartTimeouts {
            sandbox: Duration::from_secs(120),
            clone: Duration::from_secs(300),
            setup_script: Duration::from_secs(600),
            create: Duration::from_secs(60),
            poll: Duration::from_secs(1),
        }
    }
}

/// How a replica claims start tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartClaims {
    /// This replica's id, the same across its restarts (the binary keeps it in the data
    /// directory: `<data dir>/replica-id`), so that its start fails what its previous run
    /// left unfinished at once.
    pub replica: String,
    /// How long a claim holds without renewal; a replica renews its claims at every pass of
    /// its job (at most a third of this apart), so only a replica that ended (or stalled for
    /// this long) loses them.
    pub lease: Duration,
    /// The most starts this replica runs at once (each may block minutes on a sandbox, a
    /// clone, a setup script or the agent server); more wait for a worker, or for another
    /// replica.
    pub workers: usize,
}

impl Default for StartClaims {
    /// A fresh replica id, a 60 s lease and 32 workers.
    fn default() -> Self {
        StartClaims {
            replica: uuid::Uuid::new_v4().to_string(),
            lease: Duration::from_secs(60),
            workers: 32,
        }
    }
}

/// Starts conversations: writes start tasks ([`begin`](Self::begin)) and hands out the job
/// that runs them ([`jobs`](Self::jobs)).
#[derive(Clone)]
pub struct ConversationStartService {
    tasks: Arc<dyn StartTaskStore>,
    conversations: Arc<dyn ConversationStore>,
    identity: Arc<dyn IdentityStore>,
    sandboxes: SandboxService,
    llm: LlmConfig,
    timeouts: StartTimeouts,
    claims: StartClaims,
    /// The tasks this replica runs now (their claims are renewed).
    running: Arc<Mutex<HashSet<StartTaskId>>>,
    /// Each write of a task this replica runs, for its followers (`stream-start`).
    feed: Arc<StartFeed>,
    /// The starting user's own settings and secrets (issue 21).
    personal: Option<crate::services::PersonalSettings>,
    /// The messages queued while a conversation starts, delivered at `READY` (issue 22).
    pending: Option<super::pending::PendingMessageService>,
    /// The operator's rule on models (`--llm-model-allow`; issue 36).
    allow: ModelAllowList,
    /// The LLM pass-through, for keys that are not the member's own (issue 38).
    relay: Option<crate::services::LlmRelayService>,
}

/// A failed step: the (already redacted) detail, and whether the sandbox should go.
struct Failure(String);

impl ConversationStartService {
    /// The service over the stores and the sandbox service, with no default LLM and the
    /// default claims (a replica id of its own).
    pub fn new(
        tasks: Arc<dyn StartTaskStore>,
        conversations: Arc<dyn ConversationStore>,
        identity: Arc<dyn IdentityStore>,
        sandboxes: SandboxService,
    ) -> Self {
        ConversationStartService {
            tasks,
            conversations,
            identity,
            sandboxes,
            llm: LlmConfig::default(),
            timeouts: StartTimeouts::default(),
            claims: StartClaims::default(),
            running: Arc::default(),
            feed: Arc::default(),
            personal: None,
            pending: None,
            allow: ModelAllowList::default(),
            relay: None,
        }
    }

    /// The same service refusing a start whose model `allow` does not allow (a request's
    /// `llm_model` with a 422, one chosen by precedence with a 400 before the task is written,
    /// or the task's `ERROR` when only the pipeline knows it: an agent profile's).
    #[must_use]
    pub fn with_model_allow(mut self, allow: ModelAllowList) -> Self {
        self.allow = allow;
        self
    }

    /// The same service, sending keys that are not the starting member's own through `relay`
    /// (issue 38).
    #[must_use]
    pub fn with_relay(mut self, relay: crate::services::LlmRelayService) -> Self {
        self.relay = Some(relay);
        self
    }

    /// Why the start may not use `model` (`--llm-model-allow`), or `None`.
    fn model_refusal(&self, model: &str) -> Option<String> {
        self.allow.refusal(model)
    }

    /// The same service claiming tasks as `claims` says (the replica's id, the lease, the
    /// workers).
    #[must_use]
    pub fn with_claims(mut self, claims: StartClaims) -> Self {
        self.claims = claims;
        self
    }

    /// The same service with this LLM configuration.
    #[must_use]
    pub fn with_llm(mut self, llm: LlmConfig) -> Self {
        self.llm = llm;
        self
    }

    /// The same service reading each starting user's settings and secrets (issue 21).
    #[must_use]
    pub fn with_personal(mut self, personal: crate::services::PersonalSettings) -> Self {
        self.personal = Some(personal);
        self
    }

    /// The LLM a start of `user` in `org` would use without `llm_model` or an agent profile
    /// (one rule with the start's: [`PersonalSettings::effective_llm`](crate::services::PersonalSettings::effective_llm));
    /// the operator's alone when the start reads no personal settings.
    ///
    /// # Errors
    /// A sealed value that does not open, storage.
    pub fn effective_llm(
        &self,
        org: crate::ids::OrgId,
        user: crate::ids::UserId,
    ) -> Result<crate::services::EffectiveLlm, DomainError> {
        match &self.personal {
            Some(p) => p.effective_llm(org, user, &self.llm),
            None => Ok(crate::services::EffectiveLlm {
                model: self.llm.model.clone(),
                base_url: self.llm.base_url.clone(),
                api_key_set: self.llm.api_key.is_some(),
                source: (self.llm.model.is_some()
                    || self.llm.base_url.is_some()
                    || self.llm.api_key.is_some())
                .then_some("operator"),
            }),
        }
    }

    /// The same service delivering the messages queued for a conversation while it starts
    /// when the start is `READY` (and dropping them when it fails).
    #[must_use]
    pub fn with_pending(mut self, pending: super::pending::PendingMessageService) -> Self {
        self.pending = Some(pending);
        self
    }

    /// The same service with these step limits.
    #[must_use]
    pub fn with_timeouts(mut self, timeouts: StartTimeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// The same service over another sandbox service (the binary's managed one).
    #[must_use]
    pub fn with_sandboxes(mut self, sandboxes: SandboxService) -> Self {
        self.sandboxes = sandboxes;
        self
    }

    /// Reads and checks a start request and writes its task, `WORKING` (reference §5.3
    /// steps 1–3). The conversation id is the request's or a new one.
    ///
    /// # Errors
    /// [`DomainError::Invalid`] (422) for a malformed body; [`DomainError::BadStartRequest`]
    /// (400) for a `suggested_task` with an `initial_message` or a parent conversation the
    /// caller does not see; [`DomainError::AlreadyExists`] (409) for a `conversation_id` of a
    /// conversation the caller sees (one they do not see is taken as unknown: the start gets
    /// a fresh id; issue 24 item 5); [`DomainError::SandboxesDisabled`] when this server runs
    /// no sandboxes; storage.
    pub fn begin(&self, ctx: &OrgContext, body: &Value) -> Result<StartTask, DomainError> {
        self.write_task(ctx, body, false)
    }

    /// As [`begin`](Self::begin), and a [`Follower`] of the task's snapshots (for
    /// `stream-start`), watching before the job can take it.
    ///
    /// # Errors
    /// As [`begin`](Self::begin).
    pub fn begin_followed(
        &self,
        ctx: &OrgContext,
        body: &Value,
    ) -> Result<(StartTask, Follower), DomainError> {
        let task = self.write_task(ctx, body, true)?;
        let follower = Follower::new(self.feed.clone(), self.tasks.clone(), task.clone());
        Ok((task, follower))
    }

    /// Checks the request, writes its task `WORKING` (watched in the feed first when
    /// `watched`) and wakes the job.
    fn write_task(
        &self,
        ctx: &OrgContext,
        body: &Value,
        watched: bool,
    ) -> Result<StartTask, DomainError> {
        let request = parse_start_request(body)?.map_err(|e| DomainError::BadStartRequest(e.0))?;
        self.allow
            .check_field(body.get("llm_model"), loc(["body", "llm_model"]))
            .map_err(|e| DomainError::Invalid(Box::new(e)))?;
        let m = self.sandboxes.managed_config()?;
        check_sources(&request, &m.settings.local_repositories)?;
        self.refuse_without_model(ctx, &request)?;
        if let Some(parent) = request.parent_conversation_id {
            let seen = self
                .conversations
                .conversation(parent)?
                .is_some_and(|c| sees(ctx, &c));
            if !seen {
                return Err(DomainError::BadStartRequest(format!(
                    "Parent conversation not found: {parent}"
                )));
            }
        }
        let conversation_id = self.chosen_conversation_id(ctx, request.conversation_id)?;
        let id = StartTaskId::new_random();
        let mut echo = request.echo();
        let sealed = SealedStart {
            secrets: request.secrets.clone(),
            request: mask_credentials(&mut echo).then(|| body.clone()),
        };
        let secrets_sealed =
            (!sealed.is_empty()).then(|| m.sealer.seal(&sealed.to_text(), &id.to_string()));
        let now = now_micros();
        let task = StartTask {
            id,
            org_id: ctx.org.id,
            created_by_user_id: ctx.principal.user_id,
            status: StartTaskStatus::Working,
            detail: None,
            conversation_id,
            sandbox_id: None,
            agent_server_url: None,
            request: echo,
            secrets_sealed,
            created_at: now,
            updated_at: now,
        };
        if watched {
            self.feed.watch(id);
        }
        if let Err(e) = self.tasks.insert_start_task(&task) {
            self.feed.unwatch(id);
            return Err(e.into());
        }
        if let Some(wake) = &m.wake {
            wake();
        }
        Ok(task)
    }

    /// Refuses a start that would have no LLM model at all (docs/API.md, "App conversations:
    /// start"), before its task is written or a sandbox started: none in the request, and
    /// none in what a start without `llm_model` would use (the user's settings, the
    /// organization's defaults, the operator's `--llm-model`). A start naming an agent profile
    /// is left to the pipeline, which reads the profile's; so is one whose settings cannot be
    /// read now (the pipeline says why).
    ///
    /// # Errors
    /// [`DomainError::BadStartRequest`] (400) saying what to set.
    fn refuse_without_model(
        &self,
        ctx: &OrgContext,
        request: &StartRequest,
    ) -> Result<(), DomainError> {
        if request.llm_model.as_deref().is_some_and(|m| !m.is_empty())
            || request.agent_profile_id.is_some()
        {
            return Ok(());
        }
        match self.effective_llm(ctx.org.id, ctx.principal.user_id) {
            Ok(llm) => match llm.model.as_deref() {
                None => Err(DomainError::BadStartRequest(NO_MODEL.into())),
                Some(m) => match self.model_refusal(m) {
                    Some(why) => Err(DomainError::BadStartRequest(format!(
                        "{why}: choose an allowed model in your settings or in the request's llm_model"
                    ))),
                    None => Ok(()),
                },
            },
            Err(_) => Ok(()),
        }
    }

    /// Runs the pipeline of a claimed task as its creator `ctx`, blocking until `READY` or
    /// `ERROR`; each write is published to the task's followers. Returns the final task.
    /// Never panics on a failed step: the failure is the task's `ERROR`.
    fn run(&self, ctx: &OrgContext, task: StartTask) -> StartTask {
        let mut run = Run {
            svc: self,
            ctx,
            task,
            created_sandbox: None,
            recorded_conversation: None,
            secrets: Vec::new(),
            prefs: StartPreferences::default(),
            grouped: false,
        };
        match run.steps() {
            Ok(()) => {
                if run.set(StartTaskStatus::Ready).is_ok()
                    && let Some(pending) = &self.pending
                {
                    pending.deliver(run.task.conversation_id);
                }
            }
            Err(Failure(detail)) => {
                let detail = shorten(&run.redact(&detail), DETAIL_MAX_CHARS);
                tracing::info!(task = %run.task.id, detail = %detail, "conversation start failed");
                // A sandbox this start created goes, unless another start joined it meanwhile
                // (sandbox grouping): then it is theirs to keep.
                if let Some(sandbox) = run.created_sandbox.take()
                    && self.alone_in(sandbox, run.task.conversation_id)
                    && let Err(e) = self.sandboxes.delete_sandbox_internal(sandbox)
                {
                    tracing::warn!(task = %run.task.id, sandbox = %sandbox, error = %e, "deleting the sandbox of a failed start failed");
                }
                // The agent server never took the conversation: no row of it stays.
                if let Some(id) = run.recorded_conversation.take()
                    && let Err(e) = self.tasks.forget_started_conversation(id)
                {
                    tracing::warn!(task = %run.task.id, conversation = %id, error = %e, "removing the conversation of a failed start failed");
                }
                run.task.detail = Some(detail);
                let _ = run.set(StartTaskStatus::Error);
                if let Some(pending) = &self.pending {
                    pending.discard(run.task.conversation_id);
                }
            }
        }
        run.task
    }
}

impl ConversationStartService {
    /// Whether no conversation but `conversation` holds `sandbox` (in it, or being started
    /// there); `false` when that cannot be read (the sandbox is kept).
    fn alone_in(&self, sandbox: SandboxId, conversation: crate::ids::ConversationId) -> bool {
        match self.tasks.others_in_sandbox(sandbox, conversation) {
            Ok(n) => n == 0,
            Err(e) => {
                tracing::warn!(sandbox = %sandbox, error = %e, "reading what holds a sandbox failed: it is kept");
                false
            }
        }
    }
}

/// One pipeline run.
struct Run<'a> {
    svc: &'a ConversationStartService,
    ctx: &'a OrgContext,
    task: StartTask,
    /// A sandbox this start created (deleted on failure).
    created_sandbox: Option<SandboxId>,
    /// The conversation row this start wrote, until the agent server took the conversation
    /// (removed on failure before that).
    recorded_conversation: Option<crate::ids::ConversationId>,
    /// Values to mask in a detail.
    secrets: Vec<String>,
    /// The starting member's preferences (read at the first step).
    prefs: StartPreferences,
    /// Whether the member's sandbox grouping strategy groups (`grouping.rs`): the start
    /// works in a folder of its own, in a joined sandbox or a new one.
    grouped: bool,
}

impl Run<'_> {
    /// Writes `status` (and the task's other fields) and publishes the task to its
    /// followers. A task already final in the store (failed meanwhile by the restart rule,
    /// its claim having expired) or deleted ends the run: its stored state is published
    /// instead and the run stops.
    fn set(&mut self, status: StartTaskStatus) -> Result<(), Failure> {
        self.task.status = status;
        self.task.updated_at = now_micros().max(self.task.updated_at);
        match self.svc.tasks.update_start_task(&self.task) {
            Ok(true) => {}
            Ok(false) => {
                let stored = self.svc.tasks.start_tasks_by_ids(&[self.task.id]);
                if let Some(stored) = stored.ok().and_then(|mut t| t.pop()) {
                    self.svc.feed.publish(&stored);
                }
                return Err(Failure("the start task was closed meanwhile".into()));
            }
            Err(e) => {
                tracing::warn!(task = %self.task.id, error = %e, "writing a start task step failed");
            }
        }
        self.svc.feed.publish(&self.task);
        Ok(())
    }

    fn redact(&self, text: &str) -> String {
        redact(text, &self.secrets)
    }

    /// The last 300 characters of a command's error output, on one line, redacted before
    /// they are cut.
    fn tail(&self, stderr: &str) -> String {
        tail(&self.redact(stderr))
    }
}

/// Checks `selected_repository` and `selected_branch`, each by its own rule (issue 18,
/// "Repository sources": [`repository::check`], [`repository::check_branch`]).
///
/// # Errors
/// [`DomainError::Invalid`], a 422 at the field, saying what is accepted.
fn check_sources(
    request: &StartRequest,
    allowed_local: &[std::path::PathBuf],
) -> Result<(), DomainError> {
    if let Some(branch) = &request.selected_branch {
        repository::check_branch(branch).map_err(|msg| {
            validation::value_error(loc(["body", "selected_branch"]), &msg, &json!(branch))
        })?;
    }
    if let Some(repo) = &request.selected_repository {
        repository::check(repo, allowed_local).map_err(|msg| {
            validation::value_error(loc(["body", "selected_repository"]), &msg, &json!(repo))
        })?;
    }
    Ok(())
}

/// Whether the caller sees the conversation (the project's visibility rule: its
/// organization's, and their own or `view_org_conversations`).
fn sees(ctx: &OrgContext, c: &Conversation) -> bool {
    c.org_id == ctx.org.id
        && (c.owner_id == ctx.principal.user_id
            || ctx.role.grants(Permission::ViewOrgConversations))
}

/// `s` quoted for a POSIX shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The last 300 characters of a command's error output, on one line.
fn tail(s: &str) -> String {
    let s = s.trim();
    let start = s.char_indices().rev().nth(299).map_or(0, |(i, _)| i);
    s[start..].replace('\n', " | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(quote("a'b"), r"'a'\''b'");
        assert_eq!(tail("x\ny"), "x | y");
    }

    #[test]
    fn llm_config_debug_hides_the_key() {
        let c = LlmConfig {
            model: Some("m".into()),
            base_url: None,
            api_key: Some("very-secret".into()),
            stream: false,
            key_owner: None,
        };
        assert!(!format!("{c:?}").contains("very-secret"));
    }
}
