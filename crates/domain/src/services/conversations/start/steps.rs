//! The steps of one pipeline run, one function each: the sandbox (named, resumed or started),
//! the wait until it runs, the agent server's working directory, the repository (`clone.rs`),
//! the setup script and the conversation itself. Each writes its status to the task before it acts.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::body::{CreateBody, create_body};
use super::{Failure, Run, quote};
use crate::conversations::Conversation;
use crate::conversations::start_request::StartRequest;
use crate::conversations::start_tasks::StartTaskStatus;
use crate::conversations::workspace::WORKING_DIR_TAG;
use crate::error::DomainError;
use crate::identity::redaction::mask_url_credentials;
use crate::identity::session_keys::SessionKey;
use crate::ids::{ConversationId, SandboxId};
use crate::ports::StartedConversation;
use crate::sandboxes::records::SandboxRecord;
use crate::sandboxes::runtime::{
    AgentServerClient, AgentServerError, BashCommand, BashOutcome, RuntimeHandle, SandboxStatus,
};
use crate::sandboxes::settings::ManagedSandboxes;
use crate::services::StartSettings;
use crate::time_input::now_micros;

/// The time a short command (`pwd`, `mkdir`, `test -f`) may take in the sandbox.
pub(super) const SHORT_COMMAND: Duration = Duration::from_secs(30);

/// The sandbox's agent server, as the run talks to it.
pub(super) struct Agent<'m> {
    pub(super) url: String,
    pub(super) key: SessionKey,
    pub(super) client: &'m dyn AgentServerClient,
    /// The LLM pass-through's URL as this sandbox reaches it (issue 38).
    pub(super) llm_proxy_url: String,
}

impl Agent<'_> {
    /// Runs `command` in the sandbox (in `cwd`, else the agent server's directory) for at
    /// most `timeout` (at least a second).
    pub(super) fn bash(
        &self,
        command: String,
        cwd: Option<String>,
        timeout: Duration,
    ) -> Result<BashOutcome, AgentServerError> {
        self.client.execute_bash(
            &self.url,
            &self.key,
            &BashCommand {
                command,
                cwd,
                timeout_secs: timeout.as_secs().max(1),
            },
        )
    }
}

impl Run<'_> {
    /// The whole pipeline after `WORKING`: each step in turn, the first failure ends it.
    pub(super) fn steps(&mut self) -> Result<(), Failure> {
        let (request, secrets) = self.unsealed()?;
        self.prefs = self.start_preferences()?;
        let svc = self.svc;
        let m = svc
            .sandboxes
            .managed_config()
            .map_err(|e| Failure(e.to_string()))?;
        self.set(StartTaskStatus::WaitingForSandbox)?;
        let sandbox_id = self.sandbox(&request)?;
        self.task.sandbox_id = Some(sandbox_id);
        self.set(StartTaskStatus::WaitingForSandbox)?;
        let record = self.wait_for_sandbox(sandbox_id)?;
        let agent = self.agent(m, &record, sandbox_id)?;
        let joined = request.sandbox_id.is_some() || self.grouped;
        let workdir = self.workdir(&agent, &record, joined)?;
        match &request.selected_repository {
            Some(repo) => {
                self.configure_git_identity(&agent, &self.prefs, None);
                self.clone_repository(&agent, m, &request, repo, &workdir)?;
            }
            None => {
                self.make_workdir(&agent, &workdir)?;
                self.configure_git_identity(&agent, &self.prefs, Some(&workdir));
            }
        }
        self.run_setup_script(&agent, &workdir)?;
        self.set(StartTaskStatus::StartingConversation)?;
        self.start_conversation(&agent, &request, &secrets, sandbox_id, &workdir)
    }

    /// `WAITING_FOR_SANDBOX`: the sandbox the request names (resumed when paused), else one
    /// of the member's own that their grouping strategy joins (`grouping.rs`), else a new one
    /// of its spec, bound to the task as it is created (deleted again if the start fails).
    fn sandbox(&mut self, request: &StartRequest) -> Result<SandboxId, Failure> {
        if request.sandbox_id.is_none()
            && let Some(id) = self.grouped_sandbox(request)?
        {
            return Ok(id);
        }
        let sandboxes = &self.svc.sandboxes;
        if let Some(id) = request.sandbox_id {
            let record = sandboxes
                .visible_sandbox(self.ctx, id)
                .map_err(|_| Failure(format!("Sandbox not found: {id}")))?;
            if record.status == SandboxStatus::Paused {
                sandboxes
                    .resume_sandbox(self.ctx, id)
                    .map_err(|e| Failure(format!("resuming sandbox {id} failed: {e}")))?;
            }
            return Ok(id);
        }
        // The request's spec, else the member's default (`default_sandbox_spec_id`).
        let spec = request
            .sandbox_spec_id
            .as_deref()
            .or(self.prefs.default_spec.as_deref());
        let view = sandboxes
            .start_sandbox_for(self.ctx, spec, Some(self.task.id))
            .map_err(|e| match (&e, &request.sandbox_spec_id) {
                (DomainError::SandboxSpecNotFound(id), None) => Failure(format!(
                    "starting a sandbox failed: the default sandbox spec '{id}' of your settings (default_sandbox_spec_id) is not one of this server's; choose another in your settings or name sandbox_spec_id"
                )),
                _ => Failure(format!("starting a sandbox failed: {e}")),
            })?;
        self.created_sandbox = Some(view.id);
        Ok(view.id)
    }

    /// Waits until the sandbox is `RUNNING` with an agent server URL, at most the sandbox
    /// timeout; `ERROR`, `MISSING` or deleted ends the start at once. The record is read again
    /// after each launcher or reconciler pass (their wake-up), or after `poll` without one.
    fn wait_for_sandbox(&self, sandbox_id: SandboxId) -> Result<SandboxRecord, Failure> {
        let svc = self.svc;
        let deadline = Instant::now() + svc.timeouts.sandbox;
        loop {
            let seen = svc.sandboxes.changes_seen();
            let record = svc
                .sandboxes
                .sandbox_record(sandbox_id)
                .map_err(|e| Failure(format!("reading sandbox {sandbox_id} failed: {e}")))?
                .ok_or_else(|| Failure(format!("sandbox {sandbox_id} was deleted")))?;
            match record.status {
                SandboxStatus::Running if record.agent_server_url.is_some() => return Ok(record),
                SandboxStatus::Error | SandboxStatus::Missing => {
                    return Err(Failure(match &record.status_message {
                        Some(why) => format!("sandbox {sandbox_id} is {}: {why}", record.status),
                        None => format!("sandbox {sandbox_id} is {}", record.status),
                    }));
                }
                _ => {}
            }
            if Instant::now() >= deadline {
                return Err(Failure(format!(
                    "sandbox {sandbox_id} was not RUNNING within {} s",
                    svc.timeouts.sandbox.as_secs()
                )));
            }
            svc.sandboxes.wait_for_change(seen, svc.timeouts.poll);
        }
    }

    /// The running sandbox's agent server: its URL and session key (opened with the sealer;
    /// the key joins the values masked in a detail), once its runtime confirmed that the
    /// listener there is the sandbox's.
    fn agent<'m>(
        &mut self,
        m: &'m ManagedSandboxes,
        record: &SandboxRecord,
        sandbox_id: SandboxId,
    ) -> Result<Agent<'m>, Failure> {
        let url = record.agent_server_url.clone().unwrap_or_default();
        // Nothing is sent (the LLM key, secrets, git tokens) to a listener that is not this
        // sandbox's (issue 33).
        self.svc
            .sandboxes
            .verify_listener(record, &url)
            .map_err(|e| Failure(e.to_string()))?;
        let key = record
            .session_key_sealed
            .as_deref()
            .and_then(|s| m.sealer.open(s, &sandbox_id.to_string()).ok())
            .map(SessionKey::new)
            .ok_or_else(|| {
                Failure(format!(
                    "sandbox {sandbox_id} has no session key Switchboard can use (a registered agent server)"
                ))
            })?;
        self.secrets.push(key.expose().to_owned());
        self.task.agent_server_url = Some(url.clone());
        let llm_proxy_url = self
            .svc
            .sandboxes
            .llm_proxy_url_of(record)
            .map_err(|e| Failure(e.to_string()))?;
        Ok(Agent {
            url,
            key,
            client: m.client.as_ref(),
            llm_proxy_url,
        })
    }

    /// The working directory (issue 31; docs/API.md, "The conversation's working
    /// directory"): the sandbox's project directory as its runtime names it
    /// ([`RuntimeHandle::project_dir`]: `/workspace/project`, as OpenHands' sandboxes), with
    /// one folder per conversation below it when the conversation `joined` a sandbox that
    /// already ran, or its member's sandbox grouping strategy groups (OpenHands' grouped
    /// sandboxes: conversations sharing one stay apart). A
    /// sandbox whose handle names none (started before, or registered) keeps what Switchboard
    /// did before: the agent server's own directory, one folder per conversation.
    fn workdir(
        &self,
        agent: &Agent<'_>,
        record: &SandboxRecord,
        joined: bool,
    ) -> Result<String, Failure> {
        let conversation = self.task.conversation_id.0.simple();
        let project = record
            .handle
            .as_deref()
            .and_then(|h| RuntimeHandle::from_json(h).ok())
            .and_then(|h| h.project_dir)
            .filter(|p| p.starts_with('/'));
        if let Some(project) = project {
            let project = project.trim_end_matches('/');
            return Ok(if joined {
                format!("{project}/{conversation}")
            } else {
                project.to_owned()
            });
        }
        let home = agent
            .bash("pwd".into(), None, SHORT_COMMAND)
            .map_err(|e| Failure(format!("the agent server's bash endpoint failed: {e}")))?;
        let home = home.stdout.trim().to_owned();
        if home.is_empty() {
            return Err(Failure(
                "the agent server did not report its directory".into(),
            ));
        }
        Ok(format!("{}/{conversation}", home.trim_end_matches('/')))
    }

    /// Without a repository: an empty working directory.
    fn make_workdir(&self, agent: &Agent<'_>, workdir: &str) -> Result<(), Failure> {
        let out = agent
            .bash(
                format!("mkdir -p -- {}", quote(workdir)),
                None,
                SHORT_COMMAND,
            )
            .map_err(|e| Failure(format!("creating the working directory failed: {e}")))?;
        if out.exit_code != Some(0) {
            return Err(Failure(format!(
                "creating the working directory failed: {}",
                self.tail(&out.stderr)
            )));
        }
        Ok(())
    }

    /// `RUNNING_SETUP_SCRIPT`, when the working directory holds `.openhands/setup.sh`.
    fn run_setup_script(&mut self, agent: &Agent<'_>, workdir: &str) -> Result<(), Failure> {
        let has_setup = agent
            .bash(
                "test -f .openhands/setup.sh && echo present".into(),
                Some(workdir.to_owned()),
                SHORT_COMMAND,
            )
            .map_err(|e| Failure(format!("looking for .openhands/setup.sh failed: {e}")))?;
        if has_setup.stdout.trim() != "present" {
            return Ok(());
        }
        self.set(StartTaskStatus::RunningSetupScript)?;
        let timeout = self.svc.timeouts.setup_script;
        let out = agent
            .bash(
                "bash .openhands/setup.sh".into(),
                Some(workdir.to_owned()),
                timeout,
            )
            .map_err(|e| Failure(format!(".openhands/setup.sh failed: {e}")))?;
        self.finished(
            &out,
            ".openhands/setup.sh failed",
            &format!(
                ".openhands/setup.sh ran longer than {} s",
                timeout.as_secs()
            ),
        )
    }

    /// A command's outcome: exit 0 is `Ok`; another exit is `failed` with the code and the
    /// end of its error output; none (it ran out of time) is `overran`.
    pub(super) fn finished(
        &self,
        out: &BashOutcome,
        failed: &str,
        overran: &str,
    ) -> Result<(), Failure> {
        match out.exit_code {
            Some(0) => Ok(()),
            Some(code) => Err(Failure(format!(
                "{failed} (exit {code}): {}",
                self.tail(&out.stderr)
            ))),
            None => Err(Failure(overran.to_owned())),
        }
    }

    /// `STARTING_CONVERSATION`: the conversation row written (with the id handed to the agent
    /// server), then the agent server's create call.
    fn start_conversation(
        &mut self,
        agent: &Agent<'_>,
        request: &StartRequest,
        secrets: &Map<String, Value>,
        sandbox_id: SandboxId,
        workdir: &str,
    ) -> Result<(), Failure> {
        let svc = self.svc;
        let id = self.task.conversation_id;
        let now = now_micros();
        // The starting user's LLM, MCP, confirmation and secrets (issue 21).
        let personal = match &svc.personal {
            Some(p) => p
                .for_start(
                    self.task.org_id,
                    self.task.created_by_user_id,
                    request.llm_model.as_deref(),
                    &svc.llm,
                    request.agent_profile_id.as_deref(),
                )
                .map_err(|e| match e {
                    DomainError::NotFound(m) | DomainError::BadRequest(m) => Failure(m),
                    e => Failure(format!("reading the user's settings failed: {e}")),
                })?,
            None => StartSettings {
                llm: svc.llm.clone(),
                ..StartSettings::default()
            },
        };
        self.secrets.extend(personal.secret_values());
        // An ACP agent's model is its profile's `acp_model`, the ACP server's own (none: the
        // server's default), which `--llm-model-allow` does not judge: no LLM of Switchboard's
        // is sent to it (docs/API.md, "Agent profiles").
        let acp = personal.launch.as_ref().filter(|l| l.is_acp());
        let model = match acp {
            Some(l) => l.acp_model(),
            None => request
                .llm_model
                .clone()
                .or_else(|| personal.llm.model.clone()),
        };
        let mut started = self.started_conversation(request, id, sandbox_id, model.clone(), now);
        // Switchboard's own tags: the working directory (shown as `workspace.working_dir`) and
        // the agent profile launched, over any the request gave under the same names.
        let mut tags = request.tags.clone();
        tags.insert(
            WORKING_DIR_TAG.to_owned(),
            Value::String(workdir.to_owned()),
        );
        if let Some(launch) = &personal.launch {
            for (k, v) in launch.tags() {
                tags.insert(k.to_owned(), Value::String(v));
            }
        }
        started.tags = Value::Object(tags).to_string();
        started.max_budget_per_task = personal.max_budget_per_task;
        // Checked before the row is written: a start without a model leaves no conversation.
        let Some(model) = model.or_else(|| acp.map(|_| String::new())) else {
            return Err(Failure(super::NO_MODEL.into()));
        };
        if acp.is_none()
            && let Some(why) = svc.model_refusal(&model)
        {
            return Err(Failure(why));
        }
        let id = self.record_conversation(started, now)?;
        self.recorded_conversation = Some(id);
        let llm = self.through_relay(&personal.llm, agent, sandbox_id, &model, now)?;
        let mut body = create_body(&CreateBody {
            id,
            request,
            llm: &llm,
            model: &model,
            workdir,
            secrets: &personal.secrets_under(secrets),
        });
        personal.apply(&mut body);
        if request.selected_repository.is_some() && !self.prefs.full_clone {
            crate::conversations::start_preferences::tell_shallow(&mut body);
        }
        agent
            .client
            .create_conversation(&agent.url, &agent.key, &body, svc.timeouts.create)
            .map_err(|e| Failure(format!("the agent server refused the conversation: {e}")))?;
        // The agent server has it: from now on the row is the conversation's.
        self.recorded_conversation = None;
        svc.sandboxes.conversation_started();
        Ok(())
    }

    /// The conversation row of this start (credentials masked in the repository URL).
    fn started_conversation(
        &self,
        request: &StartRequest,
        id: ConversationId,
        sandbox_id: SandboxId,
        model: Option<String>,
        now: time::OffsetDateTime,
    ) -> StartedConversation {
        StartedConversation {
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
            llm_model: model,
            parent_conversation_id: request.parent_conversation_id.map(|p| p.to_string()),
            public: request.public,
            tags: Value::Object(request.tags.clone()).to_string(),
            max_budget_per_task: None,
        }
    }
}
