//! The start pipeline (spec §4.3, reference app-server §5.3): a start request becomes a
//! [`StartTask`] (`WORKING`, answered at once), then, on a thread of the caller's choosing,
//! `WAITING_FOR_SANDBOX` → `PREPARING_REPOSITORY` → `RUNNING_SETUP_SCRIPT` →
//! `STARTING_CONVERSATION` → `READY`, each step written to the task before it runs. Any
//! failure is `ERROR` with a redacted `detail`, and a sandbox the start created is deleted.
//!
//! The conversation row is created (or, when a webhook came first, completed) with the id
//! handed to the agent server *before* the create call, so the webhooks of its first events
//! find it and update it (docs/API.md, App conversations: start).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::app_conversations::repository;
use crate::app_conversations::sealed_start::{SealedStart, mask_credentials};
use crate::app_conversations::start_request::{StartRequest, parse_start_request};
use crate::app_conversations::start_tasks::{StartTask, StartTaskId, StartTaskStatus};
use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::identity::redaction::{redact, shorten};
use crate::ids::SandboxId;
use crate::ports::{ConversationStore, StartTaskStore};
use crate::services::sandboxes::SandboxService;
pub use crate::services::start_body::LlmConfig;
use crate::time_input::now_micros;
use crate::validation::{self, loc};

mod ids;
mod secrets;
mod steps;

use ids::sees;

/// The most characters of a task's `detail`, once redacted (issue 24 item 1: redaction comes
/// first, so the cut never shows part of a secret).
const DETAIL_MAX_CHARS: usize = 1000;

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

/// Starts conversations.
#[derive(Clone)]
pub struct ConversationStartService {
    tasks: Arc<dyn StartTaskStore>,
    conversations: Arc<dyn ConversationStore>,
    sandboxes: SandboxService,
    llm: LlmConfig,
    timeouts: StartTimeouts,
    /// The starting user's own settings and secrets (issue 21).
    personal: Option<crate::services::PersonalSettings>,
}

/// A failed step: the (already redacted) detail, and whether the sandbox should go.
struct Failure(String);

impl ConversationStartService {
    /// The service over the stores and the sandbox service, with no default LLM.
    pub fn new(
        tasks: Arc<dyn StartTaskStore>,
        conversations: Arc<dyn ConversationStore>,
        sandboxes: SandboxService,
    ) -> Self {
        ConversationStartService {
            tasks,
            conversations,
            sandboxes,
            llm: LlmConfig::default(),
            timeouts: StartTimeouts::default(),
            personal: None,
        }
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
        let request = parse_start_request(body)?.map_err(|e| DomainError::BadStartRequest(e.0))?;
        let m = self.sandboxes.managed()?;
        check_sources(&request, &m.m.settings.local_repositories)?;
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
        let mut echo = request.echo(body);
        let sealed = SealedStart {
            secrets: request.secrets.clone(),
            request: mask_credentials(&mut echo).then(|| body.clone()),
        };
        let secrets_sealed =
            (!sealed.is_empty()).then(|| m.m.sealer.seal(&sealed.to_text(), &id.to_string()));
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
        self.tasks.insert_start_task(&task)?;
        Ok(task)
    }

    /// Runs the pipeline of a task [`begin`](Self::begin) wrote, blocking until `READY` or
    /// `ERROR`; `on_step` sees the task after every write (for `stream-start`). Returns the
    /// final task. Never panics on a failed step: the failure is the task's `ERROR`.
    pub fn run(
        &self,
        ctx: &OrgContext,
        task: StartTask,
        on_step: &dyn Fn(&StartTask),
    ) -> StartTask {
        let mut run = Run {
            svc: self,
            ctx,
            task,
            on_step,
            created_sandbox: None,
            secrets: Vec::new(),
        };
        let outcome = run.steps();
        match outcome {
            Ok(()) => {
                run.set(StartTaskStatus::Ready);
            }
            Err(Failure(detail)) => {
                let detail = shorten(&run.redact(&detail), DETAIL_MAX_CHARS);
                tracing::info!(task = %run.task.id, detail = %detail, "conversation start failed");
                if let Some(sandbox) = run.created_sandbox.take()
                    && let Err(e) = self.sandboxes.delete_sandbox_internal(sandbox)
                {
                    tracing::warn!(task = %run.task.id, sandbox = %sandbox, error = %e, "deleting the sandbox of a failed start failed");
                }
                run.task.detail = Some(detail);
                run.set(StartTaskStatus::Error);
            }
        }
        run.task
    }

    /// At server start: every task left unfinished by a previous run is set `ERROR` with a
    /// detail saying so (its pipeline thread is gone; resuming half-done clones or creates is
    /// not safe, and the client can start again), and a sandbox the start created itself (the
    /// request named none) is deleted. Returns how many were closed.
    ///
    /// # Errors
    /// Storage failures.
    pub fn recover_unfinished(&self) -> Result<usize, DomainError> {
        let open = self.tasks.unfinished_start_tasks()?;
        let n = open.len();
        for mut task in open {
            let was = task.status;
            task.status = StartTaskStatus::Error;
            task.detail = Some(format!(
                "Switchboard restarted while this start was {}; start the conversation again",
                was.as_str()
            ));
            task.updated_at = now_micros();
            self.tasks.update_start_task(&task)?;
            let named = task.request.get("sandbox_id").is_some_and(|v| !v.is_null());
            if let Some(sandbox) = task.sandbox_id.filter(|_| !named) {
                self.sandboxes.delete_sandbox_internal(sandbox)?;
            }
            tracing::info!(task = %task.id, was = was.as_str(), "unfinished start task closed at startup");
        }
        Ok(n)
    }
}

/// One pipeline run.
struct Run<'a> {
    svc: &'a ConversationStartService,
    ctx: &'a OrgContext,
    task: StartTask,
    on_step: &'a dyn Fn(&StartTask),
    /// A sandbox this start created (deleted on failure).
    created_sandbox: Option<SandboxId>,
    /// Values to mask in a detail.
    secrets: Vec<String>,
}

impl Run<'_> {
    fn set(&mut self, status: StartTaskStatus) {
        self.task.status = status;
        self.task.updated_at = now_micros().max(self.task.updated_at);
        if let Err(e) = self.svc.tasks.update_start_task(&self.task) {
            tracing::warn!(task = %self.task.id, error = %e, "writing a start task step failed");
        }
        (self.on_step)(&self.task);
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
        };
        assert!(!format!("{c:?}").contains("very-secret"));
    }
}
