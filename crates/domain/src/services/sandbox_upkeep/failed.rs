//! A sandbox turning `ERROR` or `MISSING`: the reason worded for its user
//! ([`crate::sandboxes::failures`]), stored with the status in one conditional update, logged
//! at warn with the sandbox's id, and counted when its start failed.

use time::OffsetDateTime;

use crate::error::DomainError;
use crate::ports::sandboxes::SandboxUpdate;
use crate::sandboxes::failures::{self, StartFailure};
use crate::sandboxes::records::SandboxRecord;
use crate::sandboxes::runtime::{Observed, RuntimeHandle, SandboxRuntime, SandboxStatus};
use crate::services::sandboxes::{Health, Managed, SandboxService};

/// Lines of a sandbox's log written to the server log when it turns `ERROR`.
const ERROR_LOG_LINES: usize = 20;
/// Variables always passed to process sandboxes, whose values are no secrets.
const PLAIN_VARIABLES: [&str; 3] = ["PATH", "HOME", "LANG"];

impl SandboxService {
    /// Stores `status` (`ERROR` or `MISSING`) with `message` when the sandbox has not changed
    /// since `record` was read; logs it at warn and counts a failed start of `kind`. A sandbox
    /// that was `ERROR` and is now gone keeps its earlier reason after the new one. `false`
    /// when it changed meanwhile (nothing written).
    ///
    /// # Errors
    /// Storage failures.
    pub(super) fn record_failure(
        &self,
        m: &Managed,
        record: &SandboxRecord,
        status: SandboxStatus,
        message: String,
        kind: Option<StartFailure>,
        now: OffsetDateTime,
    ) -> Result<bool, DomainError> {
        let message = match (&record.status_message, record.status, status) {
            (Some(before), SandboxStatus::Error, SandboxStatus::Missing) => {
                failures::bounded(&format!("{message}; before, it was ERROR: {before}"))
            }
            _ => message,
        };
        let update = SandboxUpdate::failed(record, status, now, message.clone());
        if !self.sandboxes.update_sandbox(&update)? {
            return Ok(false);
        }
        tracing::warn!(sandbox = %record.id, spec = %record.spec_id, runtime = %record.runtime, from = %record.status, to = %status, reason = %message, "sandbox failed");
        if let (Some(kind), Some(observer)) = (kind, &m.m.observer) {
            observer.start_failed(&record.runtime, kind);
        }
        Ok(true)
    }

    /// The reason of a reconciliation's `status` (`ERROR` or `MISSING`) for what the runtime
    /// `observed`, with the last lines of the sandbox's log (redacted), and the kind of failed
    /// start when it was starting. Also writes the longer log tail to the server log.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn reconciled_failure(
        &self,
        m: &Managed,
        record: &SandboxRecord,
        status: SandboxStatus,
        observed: &Observed,
        health: &Health,
        runtime: &dyn SandboxRuntime,
        handle: &RuntimeHandle,
    ) -> (String, Option<StartFailure>) {
        let secrets = self.log_secrets(m, record);
        let tail = runtime
            .log_tail(handle, ERROR_LOG_LINES)
            .map(|t| crate::identity::redaction::redact(&t, &secrets));
        if status == SandboxStatus::Error
            && let Some(tail) = &tail
        {
            tracing::warn!(sandbox = %record.id, log_tail = %tail, "the last lines of the failed sandbox's log");
        }
        let short = tail
            .as_deref()
            .map(|t| failures::log_tail_redacted(t, &secrets));
        let short = short.as_deref();
        let starting = record.status == SandboxStatus::Starting;
        let policy = &m.m.settings.policy;
        let command =
            m.m.settings
                .spec(&record.spec_id)
                .map(|s| s.command.clone())
                .unwrap_or_default();
        match (status, observed) {
            (SandboxStatus::Missing, Observed::Exited { reason }) => {
                (failures::gone(Some(reason), short), None)
            }
            (SandboxStatus::Missing, _) => (failures::gone(None, short), None),
            (_, Observed::Exited { reason }) => (
                failures::exited_during_start(&record.spec_id, &command, reason, short),
                starting.then(|| StartFailure::of_exit(reason)),
            ),
            _ if health.last_alive.is_none() => (
                failures::start_timed_out(policy.start_timeout.as_secs(), short),
                starting.then_some(StartFailure::Timeout),
            ),
            _ => (
                failures::stopped_answering(policy.health_grace.as_secs(), short),
                None,
            ),
        }
    }

    /// Values a sandbox's log may echo that its user must not read back from the API: its
    /// session key, the values of the operator's `--sandbox-env` variables, and its spec's
    /// variables whose names look secret.
    pub(super) fn log_secrets(&self, m: &Managed, record: &SandboxRecord) -> Vec<String> {
        let mut secrets: Vec<String> =
            m.m.settings
                .passthrough_env
                .iter()
                .filter(|(name, _)| !PLAIN_VARIABLES.contains(&name.as_str()))
                .map(|(_, value)| value.clone())
                .collect();
        if let Some(spec) = m.m.settings.spec(&record.spec_id) {
            secrets.extend(
                spec.initial_env
                    .iter()
                    .filter(|(name, _)| {
                        let upper = name.to_ascii_uppercase();
                        ["KEY", "SECRET", "TOKEN", "PASSWORD"]
                            .iter()
                            .any(|w| upper.contains(w))
                    })
                    .map(|(_, value)| value.clone()),
            );
        }
        if let Some(key) = record
            .session_key_sealed
            .as_deref()
            .and_then(|s| m.m.sealer.open(s, &record.id.to_string()).ok())
        {
            secrets.push(key);
        }
        secrets
    }
}
