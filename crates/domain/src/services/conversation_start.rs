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
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::app_conversations::repository;
use crate::app_conversations::sealed_start::{SealedStart, mask_credentials};
use crate::app_conversations::start_request::{StartRequest, parse_start_request};
use crate::app_conversations::start_tasks::{StartTask, StartTaskId, StartTaskStatus};
use crate::conversations::Conversation;
use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::identity::redaction::{MASK, mask_url_credentials, redact, shorten};
use crate::identity::session_keys::SessionKey;
use crate::ids::SandboxId;
use crate::ports::{ConversationStore, StartTaskStore, StartedConversation};
use crate::sandboxes::runtime::{AgentServerClient, BashCommand, SandboxStatus};
use crate::services::sandboxes::SandboxService;
use crate::services::start_body::{CreateBody, create_body};
use crate::time_input::now_micros;
use crate::validation::{self, loc};

mod ids;
mod secrets;

use ids::sees;

/// The most characters of a task's `detail`, once redacted (issue 24 item 1: redaction comes
/// first, so the cut never shows part of a secret).
const DETAIL_MAX_CHARS: usize = 1000;

/// The LLM every conversation gets unless the request names a model (issue 10: `--llm-model`,
/// `--llm-base-url`, `--llm-api-key-file` or `LLM_MODEL`, `LLM_BASE_URL`, `LLM_API_KEY`).
/// `Debug` never shows the key.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct LlmConfig {
    /// The default model, e.g. `openai/gpt-4o` (LiteLLM names).
    pub model: Option<String>,
    /// The provider's base URL, when not the model's default.
    pub base_url: Option<String>,
    /// The API key; never written to a response, a task detail or a log line.
    pub api_key: Option<String>,
    /// Ask the LLM to stream its completions (the agent SDK's `LLM.stream`): the agent
    /// server then emits `StreamingDeltaEvent`s, which live delivery relays as transient
    /// frames (issue 11; `--llm-stream`).
    pub stream: bool,
}

impl std::fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmConfig")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| MASK))
            .field("stream", &self.stream)
            .finish()
    }
}

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
    /// How often the sandbox's status is read while waiting.
    pub poll: Duration,
}

impl Default for StartTimeouts {
    fn default() -> Self {
        StartTimeouts {
            sandbox: Duration::from_secs(120),
            clone: Duration::from_secs(300),
            setup_script: Duration::from_secs(600),
            create: Duration::from_secs(60),
            poll: Duration::from_millis(20),
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
        }
    }

    /// The same service with this LLM configuration.
    #[must_use]
    pub fn with_llm(mut self, llm: LlmConfig) -> Self {
        self.llm = llm;
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

    fn steps(&mut self) -> Result<(), Failure> {
        let (request, secrets) = self.unsealed()?;
        let svc = self.svc;
        let m = svc
            .sandboxes
            .managed()
            .map_err(|e| Failure(e.to_string()))?;

        // WAITING_FOR_SANDBOX
        self.set(StartTaskStatus::WaitingForSandbox);
        let sandbox_id = match request.sandbox_id {
            Some(id) => {
                let record = svc
                    .sandboxes
                    .visible_sandbox(self.ctx, id)
                    .map_err(|_| Failure(format!("Sandbox not found: {id}")))?;
                if record.status == SandboxStatus::Paused {
                    svc.sandboxes
                        .resume_sandbox(self.ctx, id)
                        .map_err(|e| Failure(format!("resuming sandbox {id} failed: {e}")))?;
                }
                id
            }
            None => {
                let view = svc
                    .sandboxes
                    .start_sandbox(self.ctx, request.sandbox_spec_id.as_deref())
                    .map_err(|e| Failure(format!("starting a sandbox failed: {e}")))?;
                self.created_sandbox = Some(view.id);
                view.id
            }
        };
        self.task.sandbox_id = Some(sandbox_id);
        self.set(StartTaskStatus::WaitingForSandbox);
        let deadline = Instant::now() + svc.timeouts.sandbox;
        let record = loop {
            let record = svc
                .sandboxes
                .sandboxes
                .sandbox(sandbox_id)
                .map_err(|e| Failure(format!("reading sandbox {sandbox_id} failed: {e}")))?
                .ok_or_else(|| Failure(format!("sandbox {sandbox_id} was deleted")))?;
            match record.status {
                SandboxStatus::Running if record.agent_server_url.is_some() => break record,
                SandboxStatus::Error | SandboxStatus::Missing => {
                    return Err(Failure(format!(
                        "sandbox {sandbox_id} is {}",
                        record.status
                    )));
                }
                _ => {}
            }
            if Instant::now() >= deadline {
                return Err(Failure(format!(
                    "sandbox {sandbox_id} was not RUNNING within {} s",
                    svc.timeouts.sandbox.as_secs()
                )));
            }
            std::thread::sleep(svc.timeouts.poll);
        };
        let url = record.agent_server_url.clone().unwrap_or_default();
        let key = record
            .session_key_sealed
            .as_deref()
            .and_then(|s| m.m.sealer.open(s, &sandbox_id.to_string()).ok())
            .map(SessionKey::new)
            .ok_or_else(|| {
                Failure(format!(
                    "sandbox {sandbox_id} has no session key Switchboard can use (a registered agent server)"
                ))
            })?;
        self.secrets.push(key.expose().to_owned());
        self.task.agent_server_url = Some(url.clone());
        let client: &dyn AgentServerClient = m.m.client.as_ref();
        let bash = |command: String, cwd: Option<String>, timeout: Duration| {
            client.execute_bash(
                &url,
                &key,
                &BashCommand {
                    command,
                    cwd,
                    timeout_secs: timeout.as_secs().max(1),
                },
            )
        };

        // The working directory: the agent server's own directory, one folder per conversation.
        let home = bash("pwd".into(), None, Duration::from_secs(30))
            .map_err(|e| Failure(format!("the agent server's bash endpoint failed: {e}")))?;
        let home = home.stdout.trim().to_owned();
        if home.is_empty() {
            return Err(Failure(
                "the agent server did not report its directory".into(),
            ));
        }
        let workdir = format!(
            "{}/{}",
            home.trim_end_matches('/'),
            self.task.conversation_id.0.simple()
        );

        // PREPARING_REPOSITORY
        if let Some(repo) = &request.selected_repository {
            self.set(StartTaskStatus::PreparingRepository);
            // Checked when the start was asked for; again here, against the server's
            // settings now (issue 18, "Repository sources").
            let allowed = &m.m.settings.local_repositories;
            check_sources(&request, allowed)
                .map_err(|e| Failure(format!("the repository cannot be cloned: {e}")))?;
            let source = repository::clone_source(repo, request.git_provider.as_deref(), allowed)
                .map_err(|e| Failure(format!("the repository cannot be cloned: {e}")))?;
            let mut cmd = String::from("git clone --quiet");
            if let Some(branch) = &request.selected_branch {
                cmd.push_str(" --branch ");
                cmd.push_str(&quote(branch));
            }
            cmd.push_str(" -- ");
            cmd.push_str(&quote(&source));
            cmd.push(' ');
            cmd.push_str(&quote(&workdir));
            let out = bash(cmd, None, svc.timeouts.clone)
                .map_err(|e| Failure(format!("cloning the repository failed: {e}")))?;
            match out.exit_code {
                Some(0) => {}
                Some(code) => {
                    return Err(Failure(format!(
                        "cloning the repository failed (exit {code}): {}",
                        self.tail(&out.stderr)
                    )));
                }
                None => {
                    return Err(Failure(format!(
                        "cloning the repository took longer than {} s",
                        svc.timeouts.clone.as_secs()
                    )));
                }
            }
        } else {
            let out = bash(
                format!("mkdir -p -- {}", quote(&workdir)),
                None,
                Duration::from_secs(30),
            )
            .map_err(|e| Failure(format!("creating the working directory failed: {e}")))?;
            if out.exit_code != Some(0) {
                return Err(Failure(format!(
                    "creating the working directory failed: {}",
                    self.tail(&out.stderr)
                )));
            }
        }

        // RUNNING_SETUP_SCRIPT
        let has_setup = bash(
            "test -f .openhands/setup.sh && echo present".into(),
            Some(workdir.clone()),
            Duration::from_secs(30),
        )
        .map_err(|e| Failure(format!("looking for .openhands/setup.sh failed: {e}")))?;
        if has_setup.stdout.trim() == "present" {
            self.set(StartTaskStatus::RunningSetupScript);
            let out = bash(
                "bash .openhands/setup.sh".into(),
                Some(workdir.clone()),
                svc.timeouts.setup_script,
            )
            .map_err(|e| Failure(format!(".openhands/setup.sh failed: {e}")))?;
            match out.exit_code {
                Some(0) => {}
                Some(code) => {
                    return Err(Failure(format!(
                        ".openhands/setup.sh failed (exit {code}): {}",
                        self.tail(&out.stderr)
                    )));
                }
                None => {
                    return Err(Failure(format!(
                        ".openhands/setup.sh ran longer than {} s",
                        svc.timeouts.setup_script.as_secs()
                    )));
                }
            }
        }

        // STARTING_CONVERSATION
        self.set(StartTaskStatus::StartingConversation);
        let id = self.task.conversation_id;
        let now = now_micros();
        let model = request.llm_model.clone().or_else(|| svc.llm.model.clone());
        let started = StartedConversation {
            conversation: Conversation {
                id,
                org_id: self.task.org_id,
                owner_id: self.task.created_by_user_id,
                sandbox_id: Some(sandbox_id),
                title: Some(request.title.clone().unwrap_or_else(|| {
                    format!("Conversation {}", &id.0.simple().to_string()[..5])
                })),
                execution_status: None,
                created_at: now,
                updated_at: now,
            },
            selected_repository: request
                .selected_repository
                .as_deref()
                .map(mask_url_credentials),
            selected_branch: request.selected_branch.clone(),
            git_provider: request.git_provider.clone(),
            trigger: request.trigger.map(|t| t.as_str()),
            pr_number: json!(request.pr_number).to_string(),
            llm_model: model.clone(),
            parent_conversation_id: request.parent_conversation_id.map(|p| p.to_string()),
            public: request.public,
            tags: Value::Object(request.tags.clone()).to_string(),
        };
        let id = self.record_conversation(started, now)?;
        let Some(model) = model else {
            return Err(Failure(
                "no LLM model: the request has no llm_model and the server no --llm-model".into(),
            ));
        };
        let body = create_body(&CreateBody {
            id,
            request: &request,
            llm: &svc.llm,
            model: &model,
            workdir: &workdir,
            secrets: &secrets,
        });
        client
            .create_conversation(&url, &key, &body, svc.timeouts.create)
            .map_err(|e| Failure(format!("the agent server refused the conversation: {e}")))?;
        Ok(())
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
