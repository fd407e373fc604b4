//! The background work of the sandbox service, called by the binary's supervisor (the domain
//! starts no thread): launching sandboxes the API started, probing them until `RUNNING`,
//! reconciling every record with its runtime (on start and every few seconds; no network call
//! on any request path), keeping the warm pool full, and cleaning up after deletes.
//!
//! Every status change is a conditional update (on the `updated_at` read), so a pass never
//! overwrites a pause, resume or delete that happened while it looked.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use time::OffsetDateTime;

use crate::error::DomainError;
use crate::identity::session_keys::SessionKey;
use crate::ids::SandboxId;
use crate::jobs::{Job, Schedule};
use crate::ports::sandboxes::SandboxUpdate;
use crate::sandboxes::failures::{self, StartFailure};
use crate::sandboxes::listeners::ListenerCheck;
use crate::sandboxes::records::SandboxRecord;
use crate::sandboxes::runtime::{
    AgentServerError, LaunchSpec, Observation, Observed, RuntimeHandle, SandboxRuntime,
    SandboxStatus, status_of,
};
use crate::sandboxes::settings::ManagedSandboxes;
use crate::services::sandboxes::{Health, Managed, SandboxService, runtime_and_handle};
use crate::time_input::now_micros;

mod failed;
mod warm;

use warm::POOL_EVERY;

/// How often the launcher looks at starting sandboxes when not woken.
const LAUNCH_EVERY: Duration = Duration::from_millis(250);
/// How many sandboxes one launcher pass starts at once: a runtime's start can take seconds (a
/// Kubernetes pod waits for the scheduler and its node to give it an address), and a burst of
/// starts must not queue behind each other (issue 32).
const LAUNCH_PARALLEL: usize = 8;
/// How long a claimed launch is left to the replica that claimed it before another takes it
/// over (that replica died while launching): longer than any runtime's start (a pod's
/// address: 180 s by default).
const LAUNCH_LEASE: time::Duration = time::Duration::minutes(5);
/// How often every sandbox is reconciled with its runtime.
const RECONCILE_EVERY: Duration = Duration::from_secs(3);
/// How often deleted sandboxes' runtimes are cleaned up when not woken.
const CLEANUP_EVERY: Duration = Duration::from_secs(5);
/// How often the pull path looks at running sandboxes when not woken (issue 19: a dropped
/// webhook batch is repaired within about this long after its conversation went quiet).
const CATCH_UP_EVERY: Duration = Duration::from_secs(2);

impl SandboxService {
    /// The current count of status changes (see [`SandboxService::wait_for_change`]); 0 when
    /// this server runs no sandboxes.
    pub fn changes_seen(&self) -> u64 {
        self.managed.as_deref().map_or(0, |m| m.changes.seen())
    }

    /// Waits until a launcher or reconciler pass, or a start, resume or delete, has happened
    /// since [`SandboxService::changes_seen`] answered `seen`, at most `at_most` (which also
    /// bounds the wait of a server without sandboxes).
    pub fn wait_for_change(&self, seen: u64, at_most: Duration) {
        match self.managed.as_deref() {
            Some(m) => m.changes.wait_after(seen, at_most),
            None => std::thread::sleep(at_most),
        }
    }

    /// The configuration this service runs sandboxes with (its settings, the agent-server
    /// client, the sealer, the wake-up), for the start pipeline.
    ///
    /// # Errors
    /// [`DomainError::SandboxesDisabled`] when this server runs no sandboxes.
    pub fn managed_config(&self) -> Result<&ManagedSandboxes, DomainError> {
        Ok(&self.managed()?.m)
    }

    /// A sandbox's record whoever owns it (the start pipeline reads the sandbox it started
    /// or was named, already checked); `None` when unknown or deleted.
    ///
    /// # Errors
    /// Storage failures.
    pub fn sandbox_record(&self, id: SandboxId) -> Result<Option<SandboxRecord>, DomainError> {
        Ok(self.sandboxes.sandbox(id)?)
    }

    /// The sandbox service's background jobs, for the supervisor: the launcher (launch and
    /// probe starting sandboxes; every 250 ms and when woken), the reconciler (at once and
    /// every 3 s), the warm pool (every 3 s and when woken when `warm`; else once, removing the
    /// unowned sandboxes an earlier run left), the pull
    /// path's catch-up of sandboxes' events (every 2 s and when woken; issue 19), the stream
    /// path (step after step, each waiting at most [`super::RECEIVE_WAIT`] for frames; only
    /// with [`crate::sandboxes::settings::ManagedSandboxes::event_streams`]; issue 19) and the
    /// cleanup of deleted sandboxes (every 5 s and when woken).
    pub fn jobs(&self, warm: bool) -> Vec<Job> {
        let mut jobs = Vec::with_capacity(6);
        let s = self.clone();
        jobs.push(Job::new(
            "sandbox-launcher",
            Schedule::Woken(LAUNCH_EVERY),
            move || s.advance_starting(),
        ));
        let s = self.clone();
        jobs.push(Job::new(
            "sandbox-reconciler",
            Schedule::AtOnceThenEvery(RECONCILE_EVERY),
            move || s.reconcile(),
        ));
        // Without a pool, once: the unowned sandboxes an earlier run left are removed.
        let s = self.clone();
        jobs.push(Job::new(
            "sandbox-warm-pool",
            if warm {
                Schedule::Woken(POOL_EVERY)
            } else {
                Schedule::Once
            },
            move || s.refill_warm_pool(),
        ));
        let s = self.clone();
        jobs.push(Job::new(
            "event-catch-up",
            Schedule::Woken(CATCH_UP_EVERY),
            move || s.catch_up_events(),
        ));
        if self
            .managed
            .as_deref()
            .is_some_and(|m| m.m.event_streams.is_some())
        {
            let s = self.clone();
            // The step waits for frames itself: the next one follows at once.
            jobs.push(Job::new(
                "agent-event-streams",
                Schedule::AtOnceThenEvery(Duration::ZERO),
                move || s.stream_events(),
            ));
        }
        let s = self.clone();
        jobs.push(Job::new(
            "sandbox-cleanup",
            Schedule::Woken(CLEANUP_EVERY),
            move || s.clean_up_deleted(),
        ));
        jobs
    }

    /// One pass of the launcher: launches every `STARTING` sandbox not launched yet (up to
    /// eight at once, each on a thread of its own), then probes the `STARTING`
    /// ones (`RUNNING` once `/alive` answers; `ERROR` when the process
    /// ends first or the start timeout passes). Run every few hundred milliseconds and when
    /// woken.
    ///
    /// # Errors
    /// Storage failures (a runtime's failure is the sandbox's `ERROR`, logged).
    pub fn advance_starting(&self) -> Result<(), DomainError> {
        let Some(m) = self.managed.as_deref() else {
            return Ok(());
        };
        let starting: Vec<SandboxRecord> = self
            .sandboxes
            .live_sandboxes()?
            .into_iter()
            .filter(|r| r.is_managed() && r.status == SandboxStatus::Starting)
            .collect();
        let now = now_micros();
        let (unlaunched, launched): (Vec<&SandboxRecord>, Vec<&SandboxRecord>) =
            starting.iter().partition(|r| r.handle.is_none());
        // A launch another replica (or this one, earlier) has claimed and not finished is
        // left to it until its lease lapses (issue 32: two replicas must not both start a pod).
        let unlaunched: Vec<&SandboxRecord> = unlaunched
            .into_iter()
            .filter(|r| r.started_at.is_none_or(|t| now - t >= LAUNCH_LEASE))
            .collect();
        for batch in unlaunched.chunks(LAUNCH_PARALLEL) {
            if let [record] = batch {
                self.launch(m, record)?;
                continue;
            }
            std::thread::scope(|scope| {
                let launches: Vec<_> = batch
                    .iter()
                    .map(|record| scope.spawn(|| self.launch(m, record)))
                    .collect();
                launches
                    .into_iter()
                    .map(|l| l.join().expect("a sandbox launch panicked"))
                    .collect::<Result<Vec<()>, DomainError>>()
            })?;
        }
        for record in launched {
            self.reconcile_one(m, record)?;
        }
        if m.m.settings.warm_sandboxes > 0 && starting.iter().any(|r| r.org_id.is_none()) {
            self.report_warm_pool(m)?;
        }
        m.changes.notify();
        Ok(())
    }

    /// One reconciliation pass (issue 9): every launched sandbox's runtime is observed (for
    /// processes: the pid and its start time in `/proc`) and, when it runs, probed at
    /// `/alive`; the status that follows ([`status_of`]) is stored. A process that died is
    /// `MISSING`; one still running after a Switchboard restart is `RUNNING` again with
    /// nothing restarted. A sandbox the runtime cannot look at (an error other than a
    /// definite "gone", e.g. no file descriptor left) keeps its status, and the log says so.
    /// Also reports the status metrics.
    ///
    /// # Errors
    /// Storage failures.
    pub fn reconcile(&self) -> Result<(), DomainError> {
        let Some(m) = self.managed.as_deref() else {
            return Ok(());
        };
        let live = self.sandboxes.live_sandboxes()?;
        for record in live.iter().filter(|r| r.is_managed() && r.handle.is_some()) {
            self.reconcile_one(m, record)?;
        }
        if let Some(observer) = &m.m.observer {
            let after = self.sandboxes.live_sandboxes()?;
            const ALL: [SandboxStatus; 5] = [
                SandboxStatus::Starting,
                SandboxStatus::Running,
                SandboxStatus::Paused,
                SandboxStatus::Error,
                SandboxStatus::Missing,
            ];
            // Every status of every configured runtime (and of any other a record names).
            let mut counts: BTreeMap<(&str, &str), (SandboxStatus, usize)> = BTreeMap::new();
            let runtimes = m.m.runtimes.names();
            let named = after.iter().map(|r| r.runtime.as_str());
            for runtime in runtimes.iter().copied().chain(named) {
                for s in ALL {
                    counts.entry((runtime, s.as_str())).or_insert((s, 0));
                }
            }
            let mut warm_ready = 0;
            for r in &after {
                if r.org_id.is_none() {
                    warm_ready += usize::from(r.status == SandboxStatus::Running);
                } else if let Some(entry) = counts.get_mut(&(r.runtime.as_str(), r.status.as_str()))
                {
                    entry.1 += 1;
                }
            }
            let counts: Vec<(&str, SandboxStatus, usize)> = counts
                .into_iter()
                .map(|((runtime, _), (status, n))| (runtime, status, n))
                .collect();
            observer.statuses(&counts, warm_ready);
        }
        m.changes.notify();
        Ok(())
    }

    /// Stops and removes the runtimes of deleted sandboxes (SIGTERM, the stop timeout,
    /// SIGKILL, working directory removed for processes), after reading what a running one's
    /// agent server has that Switchboard lacks (issue 19: a bounded drain, logged when it gives
    /// up); retried on the next pass when it fails.
    ///
    /// # Errors
    /// Storage failures.
    pub fn clean_up_deleted(&self) -> Result<(), DomainError> {
        let Some(m) = self.managed.as_deref() else {
            return Ok(());
        };
        for record in self.sandboxes.pending_cleanups()? {
            let found = runtime_and_handle(m, &record);
            if found.is_some() {
                self.drain_events(&record, super::event_catch_up::DELETE_DRAIN, "delete");
            }
            match found {
                Some((runtime, handle)) => match runtime.delete(&handle) {
                    Ok(()) => {
                        tracing::info!(sandbox = %record.id, "deleted sandbox stopped and removed");
                        self.sandboxes.cleanup_done(record.id)?;
                    }
                    Err(e) => {
                        tracing::warn!(sandbox = %record.id, error = %e, "cleaning up a deleted sandbox failed; retrying later");
                    }
                },
                // Not ours to clean (unknown runtime: logged) or nothing readable to clean.
                None if m.runtime(&record.runtime).is_some() => {
                    self.sandboxes.cleanup_done(record.id)?;
                }
                None => {}
            }
        }
        Ok(())
    }

    /// The ids of every sandbox whose record may still own something in a runtime: live
    /// sandboxes (launched or not) and deleted ones not yet cleaned up. Read after listing a
    /// runtime's own inventory, anything there whose sandbox id is not in this set has no
    /// record (a record is inserted before its sandbox is launched, and outlives it until the
    /// cleanup removed it): the Docker runtime's orphan containers (issue 12).
    ///
    /// # Errors
    /// Storage failures.
    pub fn sandbox_ids_with_records(&self) -> Result<HashSet<SandboxId>, DomainError> {
        let mut ids: HashSet<SandboxId> = self
            .sandboxes
            .live_sandboxes()?
            .iter()
            .map(|r| r.id)
            .collect();
        ids.extend(self.sandboxes.pending_cleanups()?.iter().map(|r| r.id));
        Ok(ids)
    }

    /// Launches one `STARTING` sandbox; a failure makes it `ERROR`, with the detail logged.
    /// The launch is claimed first (its `started_at` set while it has no handle, by a
    /// conditional update of the version read), so replicas sharing the database launch each
    /// sandbox once; a claim lost to another replica launches nothing.
    fn launch(&self, m: &Managed, record: &SandboxRecord) -> Result<(), DomainError> {
        let settings = &m.m.settings;
        let now = now_micros();
        let claim = SandboxUpdate {
            status: None,
            started_at: Some(now),
            ..SandboxUpdate::status(record, SandboxStatus::Starting, now)
        };
        if !self.sandboxes.update_sandbox(&claim)? {
            return Ok(());
        }
        let record = &SandboxRecord {
            updated_at: claim.updated_at,
            started_at: Some(now),
            ..record.clone()
        };
        let prepared = (|| {
            let spec = settings.spec(&record.spec_id).ok_or_else(|| {
                format!("sandbox spec {:?} is no longer configured", record.spec_id)
            })?;
            let runtime = m
                .runtime(&record.runtime)
                .ok_or_else(|| format!("runtime {:?} is not configured", record.runtime))?;
            let sealed = record
                .session_key_sealed
                .as_deref()
                .ok_or("the session key is missing")?;
            let key =
                m.m.sealer
                    .open(sealed, &record.id.to_string())
                    .map_err(|e| format!("session key: {e}"))?;
            let launch = LaunchSpec {
                sandbox_id: record.id,
                spec: spec.clone(),
                session_key: SessionKey::new(key),
                webhook_base_url: settings.webhook_base_url.clone(),
                passthrough_env: settings.passthrough_env.clone(),
                local_repositories: settings.local_repositories.clone(),
                org_id: record.org_id,
                owner_id: record.owner_id,
            };
            runtime
                .start(&launch)
                .map(|handle| (runtime, handle))
                .map_err(|e| e.to_string())
        })();
        match prepared {
            Ok((runtime, handle)) => {
                let update = SandboxUpdate {
                    handle: Some(handle.to_json()),
                    agent_server_url: Some(handle.agent_server_url.clone()),
                    started_at: Some(now),
                    status: None,
                    ..SandboxUpdate::status(record, SandboxStatus::Starting, now)
                };
                if self.sandboxes.update_sandbox(&update)? {
                    m.new_run(record.id, now);
                    if record.org_id.is_none() {
                        Self::launched_unowned(m, record.id);
                    }
                    tracing::info!(sandbox = %record.id, url = %handle.agent_server_url, "sandbox launched");
                } else {
                    // Paused or deleted while launching: undo; a later pass launches it
                    // again if it is still to start.
                    if let Err(e) = runtime.delete(&handle) {
                        tracing::warn!(sandbox = %record.id, error = %e, "removing a launch that lost a race failed");
                    }
                }
            }
            Err(detail) => {
                let detail =
                    crate::identity::redaction::redact(&detail, &self.log_secrets(m, record));
                let message = failures::launch_failed(&record.spec_id, &detail);
                let kind = StartFailure::of_launch_error(&detail);
                self.record_failure(m, record, SandboxStatus::Error, message, Some(kind), now)?;
            }
        }
        Ok(())
    }

    /// Observes, probes and stores the status of one launched sandbox.
    fn reconcile_one(&self, m: &Managed, record: &SandboxRecord) -> Result<(), DomainError> {
        let Some((runtime, handle)) = runtime_and_handle(m, record) else {
            return Ok(());
        };
        // A runtime that cannot look, or a probe Switchboard could not make, says nothing of
        // the sandbox: its stored status stays (issue 24 item 3).
        let observed = match runtime.try_observe(&handle) {
            Ok(o) => o,
            Err(e) => {
                tracing::warn!(sandbox = %record.id, status = %record.status, error = %e, "sandbox status unknown: the runtime could not be looked at; the stored status is kept");
                return Ok(());
            }
        };
        let Some(may_probe) = self.may_probe(&**runtime, &handle, record, &observed)? else {
            return Ok(());
        };
        let alive = if may_probe {
            match m
                .m
                .client
                .alive(&handle.agent_server_url, m.m.settings.probe_timeout)
            {
                Ok(()) => true,
                Err(e @ AgentServerError::Local { .. }) => {
                    tracing::warn!(sandbox = %record.id, status = %record.status, error = %e, "sandbox status unknown: its health probe could not be made; the stored status is kept");
                    return Ok(());
                }
                Err(_) => false,
            }
        } else {
            false
        };
        let now = now_micros();
        let health = self.health_of(m, record, alive, now);
        let status = status_of(
            &Observation {
                observed: observed.clone(),
                alive,
                since: health.since,
                last_alive: health.last_alive,
            },
            &m.m.settings.policy,
            now,
        );
        if status == record.status {
            return Ok(());
        }
        if matches!(status, SandboxStatus::Error | SandboxStatus::Missing) {
            let (message, kind) =
                self.reconciled_failure(m, record, status, &observed, &health, &**runtime, &handle);
            self.record_failure(m, record, status, message, kind, now)?;
            return Ok(());
        }
        if !self
            .sandboxes
            .update_sandbox(&SandboxUpdate::status(record, status, now))?
        {
            return Ok(());
        }
        match status {
            SandboxStatus::Running if record.status == SandboxStatus::Starting => {
                tracing::info!(sandbox = %record.id, "sandbox RUNNING");
                // Seen RUNNING again: the pull path reads it at once (issue 19).
                m.wake();
                if let Some(observer) = &m.m.observer {
                    let seconds = (now - health.since).as_seconds_f64().max(0.0);
                    observer.start_finished(&record.runtime, seconds, false);
                }
            }
            other => {
                tracing::info!(sandbox = %record.id, from = %record.status, to = %other, observed = ?observed, "sandbox status changed");
            }
        }
        Ok(())
    }

    /// Whether the health probe may go to the agent server of a sandbox `observed` running:
    /// only to a listener that is the sandbox's (issue 33). `None` ends the pass for this
    /// sandbox: the runtime could not look (the stored status stays), or another user's
    /// listener holds the address, which makes the sandbox `ERROR` at once (its agent server
    /// cannot listen there, and the start pipeline would send the LLM key to whoever does).
    fn may_probe(
        &self,
        runtime: &dyn SandboxRuntime,
        handle: &RuntimeHandle,
        record: &SandboxRecord,
        observed: &Observed,
    ) -> Result<Option<bool>, DomainError> {
        if *observed != Observed::Running {
            return Ok(Some(false));
        }
        let who = match runtime.listener(handle, &handle.agent_server_url) {
            Ok(ListenerCheck::Foreign(who)) => who,
            Ok(check) => return Ok(Some(check.may_send())),
            Err(e) => {
                tracing::warn!(sandbox = %record.id, status = %record.status, error = %e, "sandbox status unknown: its listener could not be looked up; the stored status is kept");
                return Ok(None);
            }
        };
        if record.status != SandboxStatus::Error {
            tracing::warn!(sandbox = %record.id, detail = %who, "its agent server's address is held by another listener");
            let kind =
                (record.status == SandboxStatus::Starting).then_some(StartFailure::RuntimeError);
            let message = failures::address_taken();
            self.record_failure(
                self.managed()?,
                record,
                SandboxStatus::Error,
                message,
                kind,
                now_micros(),
            )?;
        }
        Ok(None)
    }

    /// The health memory of a sandbox, updated with this probe. A sandbox first seen by this
    /// process (after a restart) that was `RUNNING` or `PAUSED` counts as having answered,
    /// so a process that died since is `MISSING`, not a failed start.
    fn health_of(
        &self,
        m: &Managed,
        record: &SandboxRecord,
        alive: bool,
        now: OffsetDateTime,
    ) -> Health {
        let mut table = m.health.lock().expect("health table poisoned");
        let entry = table.entry(record.id).or_insert_with(|| Health {
            since: record.started_at.unwrap_or(record.created_at),
            last_alive: matches!(
                record.status,
                SandboxStatus::Running | SandboxStatus::Paused
            )
            .then_some(now),
        });
        if alive {
            entry.last_alive = Some(now);
        }
        *entry
    }
}
