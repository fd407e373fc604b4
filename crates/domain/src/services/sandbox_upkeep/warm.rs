//! The warm pool (API.md, "Warm pool"): kept full by its job, and what a stopping server
//! does with the unclaimed sandboxes it launched: it stops them ([`SandboxService::stop_warm_pool`]),
//! so no sandbox runs for nobody once the last server is gone. A server that ended without
//! stopping them (killed, crashed) finds them at its next start and keeps them in its pool;
//! a server configured without a pool removes them then ([`SandboxService::jobs`]).

use std::time::Duration;

use crate::error::DomainError;
use crate::identity::session_keys::SessionKey;
use crate::ids::SandboxId;
use crate::sandboxes::records::SandboxRecord;
use crate::sandboxes::runtime::SandboxStatus;
use crate::services::sandboxes::{Managed, SandboxService, runtime_and_handle};
use crate::time_input::now_micros;

impl SandboxService {
    /// Reports the warm pool's ready sandboxes to the observer.
    pub(super) fn report_warm_pool(&self, m: &Managed) -> Result<(), DomainError> {
        if let Some(observer) = &m.m.observer {
            let ready = self
                .sandboxes
                .live_sandboxes()?
                .iter()
                .filter(|r| r.org_id.is_none() && r.status == SandboxStatus::Running)
                .count();
            observer.warm_pool(ready);
        }
        Ok(())
    }

    /// Keeps `--warm-sandboxes` unowned sandboxes of the default spec started: failed or
    /// vanished ones (and ones of a spec no longer the default) are deleted, missing ones
    /// inserted as `STARTING` for the launcher. Run every few seconds and after a claim.
    ///
    /// # Errors
    /// Storage failures.
    pub fn refill_warm_pool(&self) -> Result<(), DomainError> {
        let Some(m) = self.managed.as_deref() else {
            return Ok(());
        };
        let settings = &m.m.settings;
        let spec = settings.default_spec();
        let runtime = settings.runtime_of(spec).to_owned();
        let now = now_micros();
        let mut alive = 0u32;
        let mut removed = false;
        for r in self.sandboxes.live_sandboxes()? {
            if r.org_id.is_some() || !r.is_managed() {
                continue;
            }
            let wanted = r.spec_id == spec.id
                && r.runtime == runtime
                && matches!(r.status, SandboxStatus::Starting | SandboxStatus::Running);
            if wanted && alive < settings.warm_sandboxes {
                alive += 1;
            } else {
                tracing::info!(sandbox = %r.id, status = %r.status, "removing a warm-pool sandbox");
                self.sandboxes.delete_sandbox(r.id, now)?;
                m.forget(r.id);
                removed = true;
            }
        }
        for _ in alive..settings.warm_sandboxes {
            let key = SessionKey::generate();
            let id = SandboxId::new_random();
            let record = SandboxRecord::starting(
                id,
                None,
                spec.id.clone(),
                runtime.clone(),
                m.m.sealer.seal(key.expose(), &id.to_string()),
                now,
            );
            self.sandboxes.insert_sandbox(&record, &key.hash())?;
        }
        if removed || alive < settings.warm_sandboxes {
            m.wake();
        }
        self.report_warm_pool(m)
    }

    /// Stops the unclaimed warm-pool sandboxes this process launched, for a graceful stop
    /// (after the HTTP server and the background jobs have stopped): each still unowned one is
    /// tombstoned (a start claiming it at the same moment wins: a claimed sandbox is never
    /// stopped) and its runtime stopped and removed at once, all in parallel, each within the
    /// runtime's stop timeout. Unowned sandboxes launched by another replica sharing the
    /// database stay with it. Returns how many were stopped.
    ///
    /// # Errors
    /// Storage failures (a runtime's failure to stop one is logged; the cleanup of the next
    /// start retries it).
    pub fn stop_warm_pool(&self) -> Result<usize, DomainError> {
        let Some(m) = self.managed.as_deref() else {
            return Ok(0);
        };
        let mine: Vec<SandboxId> = m
            .launched_warm
            .lock()
            .expect("warm set poisoned")
            .drain()
            .collect();
        let now = now_micros();
        let mut tombstoned = Vec::with_capacity(mine.len());
        for id in mine {
            if self.sandboxes.delete_unowned_sandbox(id, now)? {
                m.forget(id);
                tombstoned.push(id);
            }
        }
        let records: Vec<SandboxRecord> = self
            .sandboxes
            .pending_cleanups()?
            .into_iter()
            .filter(|r| tombstoned.contains(&r.id))
            .collect();
        let stopped = std::thread::scope(|scope| {
            let stops: Vec<_> = records
                .iter()
                .map(|record| scope.spawn(|| self.stop_now(m, record)))
                .collect();
            stops
                .into_iter()
                .map(|s| s.join().unwrap_or(Ok(false)))
                .collect::<Result<Vec<bool>, DomainError>>()
        })?;
        let n = stopped.into_iter().filter(|s| *s).count();
        if n > 0 {
            tracing::info!(
                stopped = n,
                "unclaimed warm-pool sandboxes of this server stopped"
            );
        }
        Ok(n)
    }

    /// Stops and removes the runtime of one tombstoned sandbox now; `true` when done.
    fn stop_now(&self, m: &Managed, record: &SandboxRecord) -> Result<bool, DomainError> {
        let Some((runtime, handle)) = runtime_and_handle(m, record) else {
            return Ok(false);
        };
        match runtime.delete(&handle) {
            Ok(()) => {
                self.sandboxes.cleanup_done(record.id)?;
                Ok(true)
            }
            Err(e) => {
                tracing::warn!(sandbox = %record.id, error = %e, "stopping an unclaimed warm-pool sandbox failed; the next start's cleanup retries");
                Ok(false)
            }
        }
    }

    /// Remembers that this process launched the unowned sandbox `id`.
    pub(super) fn launched_unowned(m: &Managed, id: SandboxId) {
        m.launched_warm
            .lock()
            .expect("warm set poisoned")
            .insert(id);
    }
}

/// How often the warm pool is checked when not woken.
pub(super) const POOL_EVERY: Duration = Duration::from_secs(3);
