//! When the sandbox service pulls events from its sandboxes (issue 19, "Pull path"): before a
//! sandbox is paused or its process stopped after a delete (a bounded drain), when a sandbox
//! is seen `RUNNING` (at `serve` start, after a resume, after a pass that failed because the
//! database was away), and periodically for the conversations of running sandboxes that have
//! been quiet on the webhook. The engine is `event_catch_up.rs`; the binary's supervisor runs
//! [`SandboxService::catch_up_events`].

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::error::DomainError;
use crate::ids::SandboxId;
use crate::sandboxes::records::SandboxRecord;
use crate::sandboxes::runtime::SandboxStatus;
use crate::services::event_catch_up::{CatchUpOutcome, EventCatchUp, Target};
use crate::services::sandboxes::SandboxService;

/// How long a periodic pass may spend on one sandbox (a long outage's catch-up included).
const PASS_PER_SANDBOX: Duration = Duration::from_secs(120);

impl SandboxService {
    /// The same service, repairing its sandboxes' events with `engine`.
    #[must_use]
    pub(super) fn with_catch_up(mut self, engine: EventCatchUp) -> Self {
        self.catch_up = Some(engine);
        self
    }

    /// One pass of the pull path over every `RUNNING` sandbox Switchboard runs that has an
    /// owner: sandboxes not `RUNNING` at the previous pass (every one at the first pass, so
    /// at `serve` start; after a resume; after a failed pass) are read whole; the others only
    /// where the agent server's counts moved while the webhook was quiet. Run every few
    /// seconds and when woken.
    ///
    /// # Errors
    /// Storage failures (the next pass then reads every running sandbox again).
    pub fn catch_up_events(&self) -> Result<(), DomainError> {
        let (Some(_), Some(engine)) = (self.managed.as_deref(), &self.catch_up) else {
            return Ok(());
        };
        let result = self.catch_up_pass(engine);
        if result.is_err() {
            engine.forget_running();
        }
        result
    }

    fn catch_up_pass(&self, engine: &EventCatchUp) -> Result<(), DomainError> {
        let running: Vec<SandboxRecord> = self
            .sandboxes
            .live_sandboxes()?
            .into_iter()
            .filter(|r| r.is_managed() && r.status == SandboxStatus::Running && r.org_id.is_some())
            .collect();
        let again =
            engine.newly_running(running.iter().map(|r| r.id).collect::<HashSet<SandboxId>>());
        for record in &running {
            let forced = again.contains(&record.id);
            let deadline = Instant::now() + PASS_PER_SANDBOX;
            if let Some(outcome) = self.catch_up_one(engine, record, forced, deadline)?
                && let Some(why) = &outcome.incomplete
            {
                tracing::debug!(sandbox = %record.id, stored = outcome.stored, reason = %why, "event catch-up incomplete; the next pass goes on");
            }
        }
        Ok(())
    }

    /// Reads what the sandbox's agent server has and Switchboard lacks before it stops (a
    /// pause, the cleanup after a delete), for at most `bound`; says in the log when it gave
    /// up. Only for a `RUNNING` sandbox with an owner (a paused one was drained when paused).
    pub(super) fn drain_events(&self, record: &SandboxRecord, bound: Duration, before: &str) {
        let Some(engine) = &self.catch_up else {
            return;
        };
        if record.status != SandboxStatus::Running {
            return;
        }
        let began = Instant::now();
        match self.catch_up_one(engine, record, true, began + bound) {
            Ok(Some(CatchUpOutcome {
                incomplete: Some(why),
                stored,
                ..
            })) => {
                tracing::warn!(sandbox = %record.id, before, stored, reason = %why, ?bound, "gave up draining the sandbox's events: what its agent server still had may be lost");
            }
            Ok(Some(o)) => {
                tracing::debug!(sandbox = %record.id, before, stored = o.stored, conversations = o.conversations, took = ?began.elapsed(), "sandbox events drained");
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(sandbox = %record.id, before, error = %e, "gave up draining the sandbox's events: storage failed");
            }
        }
    }

    /// Catches up one sandbox; `None` when it has no owner, URL or session key, or its
    /// listener is not the sandbox's.
    fn catch_up_one(
        &self,
        engine: &EventCatchUp,
        record: &SandboxRecord,
        forced: bool,
        deadline: Instant,
    ) -> Result<Option<CatchUpOutcome>, DomainError> {
        let (Some(m), Some(sandbox)) = (self.managed.as_deref(), record.owned()) else {
            return Ok(None);
        };
        // A listener that is not the sandbox's is read nothing from (the refusal is logged).
        let (url, key) = match self.agent_target(record) {
            Ok(Some(target)) => target,
            Ok(None) | Err(DomainError::ListenerNotSandbox(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        let target = Target {
            client: &*m.m.client,
            url: &url,
            key: &key,
            sandbox: &sandbox,
        };
        engine.sandbox(&target, forced, deadline).map(Some)
    }
}
