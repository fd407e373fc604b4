//! The sandbox runtime port: how Switchboard starts, observes, pauses, resumes and deletes the
//! agent servers it runs (issue 9, "the process runtime"), and the status a sandbox shows
//! ([`status_of`]).
//!
//! The port is runtime-agnostic: a process runtime (crate `switchboard-sandbox`) implements it
//! today, a container runtime can implement it later without touching the domain. What a
//! runtime needs to find a sandbox again after a Switchboard restart is a [`RuntimeHandle`],
//! which the caller persists (as JSON text). The API is blocking, like the domain's services:
//! async callers run it on a blocking pool.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

pub use crate::identity::session_keys::SessionKey;
use crate::ids::SandboxId;
use crate::sandboxes::agent_requests::StartConversationRequest;
pub use crate::sandboxes::agent_server_error::AgentServerError;
use crate::sandboxes::listeners::ListenerCheck;
use crate::sandboxes::specs::SandboxSpec;

pub use crate::sandboxes::handles::RuntimeHandle;

/// Everything a runtime needs to start one sandbox. `Debug` shows variable names, never
/// values (passthrough variables carry LLM API keys).
#[derive(Clone)]
pub struct LaunchSpec {
    /// The sandbox's id (names its working directory or container).
    pub sandbox_id: SandboxId,
    /// What to run; the runtime appends `--host 127.0.0.1 --port <port>` to its command.
    pub spec: SandboxSpec,
    /// Given to the agent server as `OH_SESSION_API_KEYS_0` (reference agent-server-webhooks
    /// §1); a spec's `initial_env` cannot override it.
    pub session_key: SessionKey,
    /// Given as `OH_WEBHOOKS_0_BASE_URL`: Switchboard's public URL + `/api/v1/webhooks`, so
    /// every event reaches Switchboard with no operator step (issue 9).
    pub webhook_base_url: String,
    /// Variables passed from Switchboard's environment by name (`PATH`, `HOME`, `LANG` and the
    /// operator's `--sandbox-env NAME`s), values resolved by the caller. A spec's
    /// `initial_env` wins over them. Nothing else of Switchboard's environment reaches the
    /// sandbox.
    pub passthrough_env: Vec<(String, String)>,
    /// Host directories every runtime shows the sandbox read-only, at the same path: the
    /// operator's `--allow-local-repositories` (issue 18, "Repository sources"), so that a
    /// start's clone of a local repository works inside the sandbox.
    pub local_repositories: Vec<PathBuf>,
    /// The organization the sandbox is started for, when it has one at start (a warm-pool
    /// sandbox has none until a start claims it): runtimes label what they make with it
    /// (issue 32). The record, not the label, is the source of truth.
    pub org_id: Option<crate::ids::OrgId>,
    /// The member the sandbox is started for, when known at start (as `org_id`).
    pub owner_id: Option<crate::ids::UserId>,
}

impl fmt::Debug for LaunchSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LaunchSpec")
            .field("sandbox_id", &self.sandbox_id)
            .field("spec_id", &self.spec.id)
            .field("command", &self.spec.command)
            .field(
                "initial_env",
                &self.spec.initial_env.keys().collect::<Vec<_>>(),
            )
            .field("session_key", &self.session_key)
            .field("webhook_base_url", &self.webhook_base_url)
            .field(
                "passthrough_env",
                &self
                    .passthrough_env
                    .iter()
                    .map(|(k, _)| k)
                    .collect::<Vec<_>>(),
            )
            .field("local_repositories", &self.local_repositories)
            .field("org_id", &self.org_id)
            .field("owner_id", &self.owner_id)
            .finish()
    }
}

impl RuntimeHandle {
    /// The runtime-specific identity in [`RuntimeHandle::data`], for a handle made by the
    /// runtime named `runtime`; `what` names the data in an error (`container data`).
    ///
    /// # Errors
    /// [`RuntimeError::BadHandle`] for another runtime's handle or unreadable data.
    pub fn data_of<T: serde::de::DeserializeOwned>(
        &self,
        runtime: &str,
        what: &str,
    ) -> Result<T, RuntimeError> {
        if self.runtime != runtime {
            return Err(RuntimeError::BadHandle(format!(
                "made by the {:?} runtime, not {runtime:?}",
                self.runtime
            )));
        }
        serde_json::from_value(self.data.clone())
            .map_err(|e| RuntimeError::BadHandle(format!("{what}: {e}")))
    }

    /// A handle read back from [`RuntimeHandle::to_json`]'s text.
    ///
    /// # Errors
    /// [`RuntimeError::BadHandle`] when the text is not such a handle.
    pub fn from_json(text: &str) -> Result<Self, RuntimeError> {
        serde_json::from_str(text).map_err(|e| RuntimeError::BadHandle(e.to_string()))
    }
}

/// What a runtime sees of a sandbox, before any health check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// It exists and is not stopped.
    Running,
    /// It is stopped (paused: SIGSTOP for processes).
    Stopped,
    /// It has ended; `reason` says how when known (`exit status 3`, `killed by signal 9`).
    Exited {
        /// How it ended, in words.
        reason: String,
    },
    /// There is no such sandbox: no such process, or another process now has its pid (or an
    /// unreadable handle).
    Gone,
}

/// Why a runtime operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
    /// The spec cannot be run by this runtime (e.g. a working directory outside the
    /// sandbox's directory).
    #[error("the sandbox spec cannot be run: {0}")]
    InvalidSpec(String),
    /// The sandbox could not be launched: the detail says why (e.g. `command \`x\` not found
    /// on the sandbox's PATH (/usr/bin:/bin)`). Upstream this makes the sandbox `ERROR`.
    #[error("the sandbox could not be started: {0}")]
    Launch(String),
    /// The sandbox is no longer there (process ended, or its pid now belongs to another).
    #[error("the sandbox's process is gone")]
    Gone,
    /// The handle was not made by this runtime, or is damaged.
    #[error("not a usable sandbox handle: {0}")]
    BadHandle(String),
    /// An operating-system operation failed (e.g. removing the working directory).
    #[error("{0}")]
    Io(String),
}

/// A runtime that runs sandboxes (issue 9: "a runtime port in the domain"). Blocking; safe to
/// share between threads. Implementations must never mistake another process or container
/// for a sandbox (identity is in [`RuntimeHandle::data`]).
pub trait SandboxRuntime: Send + Sync {
    /// The runtime's name, stored in [`RuntimeHandle::runtime`] (e.g. `process`).
    fn name(&self) -> &'static str;

    /// The webhook base URL this runtime gives its sandboxes in place of the launch's
    /// ([`LaunchSpec::webhook_base_url`]: Switchboard as the host reaches it), when its
    /// sandboxes reach Switchboard at another address (a bridged container, a pod); `None`
    /// when they use the launch's. The LLM pass-through's address follows it (issue 38).
    fn webhook_base_url(&self) -> Option<&str> {
        None
    }

    /// Starts a sandbox and returns at once (not waiting for its agent server to answer).
    ///
    /// # Errors
    /// [`RuntimeError::InvalidSpec`] or [`RuntimeError::Launch`] with a detail for the log.
    fn start(&self, launch: &LaunchSpec) -> Result<RuntimeHandle, RuntimeError>;

    /// What the sandbox is now. Cheap (no network), so it can run for every sandbox of a
    /// listing or a reconciliation pass.
    fn observe(&self, handle: &RuntimeHandle) -> Observed;

    /// As [`SandboxRuntime::observe`], telling "could not look" apart: reconciliation uses
    /// it, and a sandbox it cannot look at keeps its stored status (issue 24 item 3: an
    /// `EMFILE` read as "gone" once made every running sandbox `MISSING`). The default is
    /// `observe`, for runtimes whose looking cannot fail.
    ///
    /// # Errors
    /// [`RuntimeError::Io`] when the runtime could not look (no file descriptor left to read
    /// `/proc`, a container daemon that does not answer, …); only a definite answer is
    /// [`Observed::Gone`].
    fn try_observe(&self, handle: &RuntimeHandle) -> Result<Observed, RuntimeError> {
        Ok(self.observe(handle))
    }

    /// Pauses the sandbox (all of it: a process group, a container). Pausing a paused sandbox
    /// succeeds.
    ///
    /// # Errors
    /// [`RuntimeError::Gone`] when it has ended or is not there.
    fn pause(&self, handle: &RuntimeHandle) -> Result<(), RuntimeError>;

    /// Resumes a paused sandbox. Resuming a running one succeeds.
    ///
    /// # Errors
    /// [`RuntimeError::Gone`] when it has ended or is not there.
    fn resume(&self, handle: &RuntimeHandle) -> Result<(), RuntimeError>;

    /// The handle after a successful [`SandboxRuntime::resume`], when resuming moved the
    /// agent server (a Docker container reached at its address on its network, not through
    /// a published port, may get another address when it is started again: issue 22);
    /// `None` when it is where `handle` says, the default. The caller stores the new handle
    /// and its URL.
    fn handle_after_resume(&self, handle: &RuntimeHandle) -> Option<RuntimeHandle> {
        let _ = handle;
        None
    }

    /// Stops the sandbox (politely, then by force after the runtime's grace period) and
    /// removes its working directory. Deleting a sandbox that is already gone succeeds.
    ///
    /// # Errors
    /// [`RuntimeError::Io`] when something could not be stopped or removed.
    fn delete(&self, handle: &RuntimeHandle) -> Result<(), RuntimeError>;

    /// The last `lines` lines of the sandbox's log (stdout and stderr), if it has one.
    fn log_tail(&self, handle: &RuntimeHandle, lines: usize) -> Option<String>;

    /// Who listens at `url`, one of the sandbox's own (its agent server's or an exposed
    /// service's), asked before Switchboard sends a request or a credential there (issue 33:
    /// a process sandbox could bind the loopback port of another's service first). The
    /// default, for runtimes whose addresses no sandbox can take:
    /// [`ListenerCheck::Unchecked`].
    ///
    /// # Errors
    /// [`RuntimeError::Io`] when the runtime could not look (the caller sends nothing);
    /// [`RuntimeError::BadHandle`] for another runtime's handle.
    fn listener(&self, handle: &RuntimeHandle, url: &str) -> Result<ListenerCheck, RuntimeError> {
        let _ = (handle, url);
        Ok(ListenerCheck::Unchecked)
    }
}

/// The calls Switchboard makes to an agent server (reference agent-server-webhooks §1): the
/// health probe, conversation calls (create, send message, delete) taking the base URL and
/// the sandbox's [`SessionKey`], returning [`AgentServerError`], and the reads of the pull
/// path ([`AgentServerEvents`](crate::sandboxes::agent_events::AgentServerEvents)).
pub trait AgentServerClient:
    crate::sandboxes::agent_events::AgentServerEvents
    + crate::sandboxes::agent_workspace::AgentServerWorkspace
    + Send
    + Sync
{
    /// `GET {base_url}/alive` answered 200 with `{"status":"ok"}` within `timeout`.
    ///
    /// # Errors
    /// Why it did not.
    fn alive(&self, base_url: &str, timeout: Duration) -> Result<(), AgentServerError>;

    /// `POST {base_url}/api/conversations` with header `X-Session-API-Key` and `body` (the
    /// agent server's `StartConversationRequest`, reference agent-server-webhooks §1 "Create
    /// body"); 200 (an existing id reused) or 201 answers the `ConversationInfo`, returned as
    /// given. `body` holds the LLM key: it is never logged or put in an error.
    ///
    /// # Errors
    /// Transport failures, a timeout, or any other status ([`AgentServerError::BadAnswer`]
    /// names the status and the answer's body, never the request; the answer may echo the
    /// request's secrets, so it is redacted before it is shown or shortened).
    fn create_conversation(
        &self,
        base_url: &str,
        session_key: &SessionKey,
        body: &StartConversationRequest,
        timeout: Duration,
    ) -> Result<serde_json::Value, AgentServerError>;

    /// `POST {base_url}/api/bash/execute_bash_command` (`ExecuteBashRequest`: `command`,
    /// `cwd`, `timeout` in seconds) with header `X-Session-API-Key`: runs `command` to its end
    /// in the sandbox and answers its [`BashOutcome`]. The HTTP call waits up to the command's
    /// timeout plus a margin.
    ///
    /// # Errors
    /// Transport failures, a timeout, or a status other than 200.
    fn execute_bash(
        &self,
        base_url: &str,
        session_key: &SessionKey,
        command: &BashCommand,
    ) -> Result<BashOutcome, AgentServerError>;

    /// `POST {base_url}/api/conversations/{conversation}/events` with `X-Session-API-Key`
    /// and `message` (a `SendMessageRequest`: `{"role":"user","content":[…],"run":…}`,
    /// reference agent-server-webhooks §2): the message joins the conversation and, with
    /// `run`, the agent runs. Any 2xx answer is success.
    ///
    /// # Errors
    /// Unreachable, timed out, or any other answer (its status and the start of its body).
    fn send_message(
        &self,
        base_url: &str,
        key: &SessionKey,
        conversation: crate::ids::ConversationId,
        message: &serde_json::Value,
    ) -> Result<(), AgentServerError>;

    /// `POST {base_url}/api/conversations/{conversation}/switch_llm` with
    /// `X-Session-API-Key`: the conversation's LLM replaced (its key never logged).
    ///
    /// # Errors
    /// As [`AgentServerClient::send_message`].
    fn switch_llm(
        &self,
        base_url: &str,
        key: &SessionKey,
        conversation: crate::ids::ConversationId,
        request: &crate::sandboxes::agent_requests::SwitchLlmRequest,
    ) -> Result<(), AgentServerError>;

    /// `DELETE {base_url}/api/conversations/{conversation}` with `X-Session-API-Key`
    /// (reference agent-server-webhooks §2). A 2xx answer, and 404 (the agent server does not
    /// know it: nothing to delete), are success.
    ///
    /// # Errors
    /// As [`AgentServerClient::send_message`].
    fn delete_conversation(
        &self,
        base_url: &str,
        key: &SessionKey,
        conversation: crate::ids::ConversationId,
    ) -> Result<(), AgentServerError>;

    /// `POST {base_url}/api/conversations/{conversation}/pause` with `X-Session-API-Key`: the
    /// run stops after its current step (the answer waits for it). 2xx, and 404 (unknown
    /// there: nothing runs), are success.
    ///
    /// # Errors
    /// As [`AgentServerClient::send_message`].
    fn pause_conversation(
        &self,
        base_url: &str,
        key: &SessionKey,
        conversation: crate::ids::ConversationId,
    ) -> Result<(), AgentServerError>;
}

/// A shell command for an agent server's bash endpoint: the body of the call, its
/// `ExecuteBashRequest` (`command`, `cwd`, `timeout` in seconds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BashCommand {
    /// The command line, run by `bash -c` semantics in the sandbox.
    pub command: String,
    /// The directory it runs in; `None` for the agent server's own.
    pub cwd: Option<String>,
    /// The longest it may run, in seconds (`timeout` on the wire).
    #[serde(rename = "timeout")]
    pub timeout_secs: u64,
}

/// What an agent server's bash command ended with (its `BashOutput`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BashOutcome {
    /// The exit code; `None` when the command did not finish (timed out).
    pub exit_code: Option<i64>,
    /// Standard output (the agent server may truncate it).
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// A sandbox's status (reference app-server §3.1; serialized in these uppercase names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SandboxStatus {
    /// Started (or resumed), its agent server not yet answering.
    Starting,
    /// Running and answering `/alive`.
    Running,
    /// Paused (stopped).
    Paused,
    /// Failed to start, or stopped answering for longer than the health grace.
    Error,
    /// Its process or container is gone.
    Missing,
}

impl SandboxStatus {
    /// The wire name: `STARTING`, `RUNNING`, `PAUSED`, `ERROR` or `MISSING`.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxStatus::Starting => "STARTING",
            SandboxStatus::Running => "RUNNING",
            SandboxStatus::Paused => "PAUSED",
            SandboxStatus::Error => "ERROR",
            SandboxStatus::Missing => "MISSING",
        }
    }
}

impl fmt::Display for SandboxStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The time limits of [`status_of`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusPolicy {
    /// How long a started or resumed sandbox may take to first answer `/alive` before it is
    /// `ERROR` (`--sandbox-start-timeout`, default 120 s, issue 9).
    pub start_timeout: Duration,
    /// How long a sandbox that has answered may fail probes and stay `RUNNING` before it is
    /// `ERROR` (default 30 s), so one probe lost on a loaded machine does not hide its URL.
    pub health_grace: Duration,
}

impl Default for StatusPolicy {
    fn default() -> Self {
        StatusPolicy {
            start_timeout: Duration::from_secs(120),
            health_grace: Duration::from_secs(30),
        }
    }
}

/// What is known of a sandbox at one moment, the input of [`status_of`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// What the runtime sees ([`SandboxRuntime::observe`]).
    pub observed: Observed,
    /// Whether the latest `/alive` probe answered (false when none was made).
    pub alive: bool,
    /// When the current run began: the start, or the latest resume.
    pub since: OffsetDateTime,
    /// When `/alive` last answered during the current run (`None`: not yet since `since`).
    pub last_alive: Option<OffsetDateTime>,
}

/// The status of a sandbox (issue 9, "Status that is true"; OpenHands reports an idle healthy
/// process as `STARTING`, reference app-server §3.3, which this does not copy):
///
/// | observed | `/alive` | before | status |
/// |---|---|---|---|
/// | gone | – | – | `MISSING` |
/// | stopped | – | – | `PAUSED` |
/// | exited | – | never answered this run | `ERROR` (exited during start) |
/// | exited | – | has answered | `MISSING` |
/// | running | answers | – | `RUNNING` |
/// | running | fails | never answered, within `start_timeout` of `since` | `STARTING` |
/// | running | fails | never answered, past `start_timeout` | `ERROR` |
/// | running | fails | answered within `health_grace` | `RUNNING` |
/// | running | fails | last answered longer than `health_grace` ago | `ERROR` |
pub fn status_of(obs: &Observation, policy: &StatusPolicy, now: OffsetDateTime) -> SandboxStatus {
    let within = |from: OffsetDateTime, limit: Duration| {
        (now - from).whole_milliseconds() <= i128::try_from(limit.as_millis()).unwrap_or(i128::MAX)
    };
    match (&obs.observed, obs.last_alive) {
        (Observed::Gone, _) => SandboxStatus::Missing,
        (Observed::Stopped, _) => SandboxStatus::Paused,
        (Observed::Exited { .. }, None) => SandboxStatus::Error,
        (Observed::Exited { .. }, Some(_)) => SandboxStatus::Missing,
        (Observed::Running, _) if obs.alive => SandboxStatus::Running,
        (Observed::Running, None) if within(obs.since, policy.start_timeout) => {
            SandboxStatus::Starting
        }
        (Observed::Running, Some(last)) if within(last, policy.health_grace) => {
            SandboxStatus::Running
        }
        (Observed::Running, _) => SandboxStatus::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_700_000_000 + secs).unwrap()
    }

    #[test]
    fn status_table() {
        let policy = StatusPolicy {
            start_timeout: Duration::from_secs(120),
            health_grace: Duration::from_secs(30),
        };
        let exited = Observed::Exited {
            reason: "exit status 1".into(),
        };
        use SandboxStatus::*;
        // (observed, alive, last_alive, now, expected); `since` is 0.
        let cases = [
            (Observed::Gone, false, None, 1, Missing),
            (Observed::Gone, true, Some(0), 1, Missing),
            (Observed::Stopped, false, Some(0), 500, Paused),
            (Observed::Stopped, false, None, 500, Paused),
            (exited.clone(), false, None, 1, Error),
            (exited.clone(), false, Some(5), 10, Missing),
            (Observed::Running, true, Some(1), 1, Running),
            (Observed::Running, true, None, 1000, Running),
            (Observed::Running, false, None, 0, Starting),
            (Observed::Running, false, None, 120, Starting),
            (Observed::Running, false, None, 121, Error),
            (Observed::Running, false, Some(100), 130, Running),
            (Observed::Running, false, Some(100), 131, Error),
        ];
        for (observed, alive, last_alive, now, expected) in cases {
            let obs = Observation {
                observed: observed.clone(),
                alive,
                since: at(0),
                last_alive: last_alive.map(at),
            };
            assert_eq!(
                status_of(&obs, &policy, at(now)),
                expected,
                "{observed:?} alive={alive} last_alive={last_alive:?} now={now}"
            );
        }
    }

    #[test]
    fn a_clock_behind_since_is_still_starting() {
        let obs = Observation {
            observed: Observed::Running,
            alive: false,
            since: at(10),
            last_alive: None,
        };
        assert_eq!(
            status_of(&obs, &StatusPolicy::default(), at(0)),
            SandboxStatus::Starting
        );
    }

    #[test]
    fn status_names_are_the_wire_names() {
        for (status, name) in [
            (SandboxStatus::Starting, "STARTING"),
            (SandboxStatus::Running, "RUNNING"),
            (SandboxStatus::Paused, "PAUSED"),
            (SandboxStatus::Error, "ERROR"),
            (SandboxStatus::Missing, "MISSING"),
        ] {
            assert_eq!(status.as_str(), name);
            assert_eq!(
                serde_json::to_string(&status).unwrap(),
                format!("\"{name}\"")
            );
            assert_eq!(
                serde_json::from_str::<SandboxStatus>(&format!("\"{name}\"")).unwrap(),
                status
            );
        }
    }

    #[test]
    fn launch_specs_never_print_secrets() {
        let key = SessionKey::generate();
        let launch = LaunchSpec {
            sandbox_id: SandboxId::new_random(),
            spec: crate::sandboxes::specs::process_preset(Some("srv"), None, at(0)).unwrap(),
            session_key: key.clone(),
            webhook_base_url: "http://127.0.0.1:1/api/v1/webhooks".into(),
            passthrough_env: vec![("LLM_API_KEY".into(), "sk-very-secret".into())],
            local_repositories: Vec::new(),
            org_id: None,
            owner_id: None,
        };
        let shown = format!("{launch:?}");
        assert!(!shown.contains(key.expose()), "{shown}");
        assert!(
            shown.contains("LLM_API_KEY") && !shown.contains("sk-very-secret"),
            "{shown}"
        );
    }
}
