//! Sandboxes (issue 9; design: Sandboxes): registration and session-key authentication of
//! agent servers; start, pause, resume, delete, search and batch get of the sandboxes
//! Switchboard runs (the specs are read in `sandbox_specs.rs`). The background work that
//! drives them (launch, probes, reconciliation, warm pool, cleanup) is in
//! `sandbox_upkeep.rs`; the binary's supervisor calls it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use time::OffsetDateTime;

use crate::batch::Batch;
use crate::cursor::Keyset;
use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::identity::session_keys::{SessionKey, SessionKeyHash};
use crate::ids::{OrgId, SandboxId, UserId};
use crate::permissions::Permission;
use crate::ports::sandboxes::{
    ResumeSandbox, RunningLimit, SandboxQuery, SandboxUpdate, StartOutcome, StartSandbox, WarmClaim,
};
use crate::ports::{IdentityStore, SandboxStore};
use crate::sandboxes::quotas::SandboxQuota;
use crate::sandboxes::records::{Page, SandboxCursor, SandboxRecord, SandboxView};
use crate::sandboxes::runtime::{RuntimeError, RuntimeHandle, SandboxRuntime, SandboxStatus};
use crate::sandboxes::settings::ManagedSandboxes;
use crate::sandboxes::{RegisteredSandbox, Sandbox};
use crate::services::membership::existing_member;
use crate::time_input::now_micros;

/// How often a webhook's use of a sandbox is written (`last_used_at`), at most.
const TOUCH_EVERY: Duration = Duration::from_secs(60);

/// Registers and runs sandboxes and authenticates their agent servers.
#[derive(Clone)]
pub struct SandboxService {
    identity: Arc<dyn IdentityStore>,
    pub(super) sandboxes: Arc<dyn SandboxStore>,
    pub(super) managed: Option<Arc<Managed>>,
    touched: Arc<Mutex<HashMap<SandboxId, Instant>>>,
    /// The pull path (issue 19; `sandbox_catch_up.rs`).
    pub(super) catch_up: Option<super::event_catch_up::EventCatchUp>,
    /// The stream path (issue 19; `event_streaming.rs`, driven from `event_streams.rs`).
    pub(super) streaming: Option<super::event_streaming::EventStreaming>,
}

/// The managed part: configuration and what the background passes remember.
pub(super) struct Managed {
    pub(super) m: ManagedSandboxes,
    /// Per sandbox: when its current run began and when `/alive` last answered in it.
    pub(super) health: Mutex<HashMap<SandboxId, Health>>,
    /// Signalled after every pass and wake-up that may change a sandbox's status.
    pub(super) changes: crate::sandboxes::changes::Changes,
    /// The unowned (warm-pool) sandboxes this process launched: what it stops when it stops
    /// (`sandbox_upkeep/warm.rs`).
    pub(super) launched_warm: Mutex<std::collections::HashSet<SandboxId>>,
}

/// What the probes of one sandbox have seen during its current run.
#[derive(Debug, Clone, Copy)]
pub(super) struct Health {
    pub(super) since: OffsetDateTime,
    pub(super) last_alive: Option<OffsetDateTime>,
}

impl Managed {
    pub(super) fn wake(&self) {
        self.changes.notify();
        // A sandbox may have changed: the stream path lists again at once.
        if let Some(streams) = &self.m.event_streams {
            streams.interrupt();
        }
        if let Some(wake) = &self.m.wake {
            wake();
        }
    }

    pub(super) fn runtime(&self, name: &str) -> Option<&Arc<dyn SandboxRuntime>> {
        self.m.runtimes.get(name)
    }

    /// A new run begins (launch, resume): nothing has answered yet.
    pub(super) fn new_run(&self, id: SandboxId, since: OffsetDateTime) {
        self.health.lock().expect("health table poisoned").insert(
            id,
            Health {
                since,
                last_alive: None,
            },
        );
    }

    pub(super) fn forget(&self, id: SandboxId) {
        self.health
            .lock()
            .expect("health table poisoned")
            .remove(&id);
    }
}

impl SandboxService {
    /// The service over the identity and sandbox stores, running no sandbox (registration and
    /// webhook authentication only; starts answer 503).
    pub fn new(identity: Arc<dyn IdentityStore>, sandboxes: Arc<dyn SandboxStore>) -> Self {
        SandboxService {
            identity,
            sandboxes,
            managed: None,
            touched: Arc::default(),
            catch_up: None,
            streaming: None,
        }
    }

    /// The service running sandboxes as `managed` says.
    #[must_use]
    pub fn with_managed(mut self, managed: ManagedSandboxes) -> Self {
        self.managed = Some(Arc::new(Managed {
            m: managed,
            health: Mutex::new(HashMap::new()),
            changes: Default::default(),
            launched_warm: Mutex::default(),
        }));
        self
    }

    /// Whether this server runs sandboxes (else starts answer 503).
    pub fn runs_sandboxes(&self) -> bool {
        self.managed.is_some()
    }

    pub(super) fn managed(&self) -> Result<&Managed, DomainError> {
        self.managed
            .as_deref()
            .ok_or(DomainError::SandboxesDisabled)
    }

    /// Registers an agent server run elsewhere as a sandbox of `org` owned by `user` (a
    /// member); only the session key's SHA-256 is stored.
    ///
    /// # Errors
    /// [`DomainError::UserNotFound`], [`DomainError::OrgNotFound`], [`DomainError::NotAMember`].
    pub fn register_sandbox(
        &self,
        org: OrgId,
        user: UserId,
    ) -> Result<RegisteredSandbox, DomainError> {
        existing_member(&*self.identity, org, user)?;
        let key = SessionKey::generate();
        let sandbox = Sandbox {
            id: SandboxId::new_random(),
            org_id: org,
            owner_id: user,
            created_at: now_micros(),
        };
        self.sandboxes.create_sandbox(&sandbox, &key.hash())?;
        Ok(RegisteredSandbox {
            sandbox_id: sandbox.id,
            session_api_key: key.expose().to_owned(),
        })
    }

    /// The sandbox behind a webhook's `X-Session-API-Key`: owned and not deleted (a deleted
    /// sandbox's key no longer authenticates). Records the use, at most once a minute per
    /// sandbox (the running limit pauses the least recently used).
    ///
    /// # Errors
    /// [`DomainError::SessionKeyRequired`] (absent or empty), [`DomainError::InvalidSessionKey`].
    pub fn authenticate_sandbox(&self, key: Option<&str>) -> Result<Sandbox, DomainError> {
        let key = key
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .ok_or(DomainError::SessionKeyRequired)?;
        let sandbox = self
            .sandboxes
            .sandbox_by_key_hash(&SessionKeyHash::of(key))?
            .ok_or(DomainError::InvalidSessionKey)?;
        let due = {
            let mut touched = self.touched.lock().expect("touch table poisoned");
            let now = Instant::now();
            match touched.get(&sandbox.id) {
                Some(at) if now.duration_since(*at) < TOUCH_EVERY => false,
                _ => {
                    touched.insert(sandbox.id, now);
                    true
                }
            }
        };
        if due {
            self.sandboxes.touch_sandbox(sandbox.id, now_micros())?;
        }
        Ok(sandbox)
    }

    /// Starts a sandbox for the caller in the effective organization (issue 9): the spec
    /// named, else the first. With a warm pool of that spec a ready sandbox is claimed and is
    /// `RUNNING` at once; otherwise the answer is `STARTING` and the background launcher runs
    /// it. Beyond the caller's running limit their least recently used sandboxes are paused.
    /// At `--max-sandboxes-per-user` (or `--max-sandboxes-per-org`) sandboxes holding
    /// resources, the start is refused and nothing is written (issue 18, Quotas).
    ///
    /// # Errors
    /// [`DomainError::SandboxSpecNotFound`], [`DomainError::SandboxesDisabled`],
    /// [`DomainError::SandboxQuotaExceeded`] (409, naming what to delete), storage.
    pub fn start_sandbox(
        &self,
        ctx: &OrgContext,
        spec_id: Option<&str>,
    ) -> Result<SandboxView, DomainError> {
        self.start_sandbox_for(ctx, spec_id, None)
    }

    /// As [`start_sandbox`](Self::start_sandbox), for a conversation start: the new sandbox
    /// is bound to start task `task` in the transaction that creates or claims it (sandbox
    /// grouping counts the task at once, [`crate::sandboxes::grouping`]).
    ///
    /// # Errors
    /// As [`start_sandbox`](Self::start_sandbox).
    pub fn start_sandbox_for(
        &self,
        ctx: &OrgContext,
        spec_id: Option<&str>,
        task: Option<crate::conversations::start_tasks::StartTaskId>,
    ) -> Result<SandboxView, DomainError> {
        let began = Instant::now();
        let m = self.managed()?;
        let settings = &m.m.settings;
        let spec = match spec_id {
            Some(id) => settings
                .spec(id)
                .ok_or_else(|| DomainError::SandboxSpecNotFound(id.to_owned()))?,
            None => settings.default_spec(),
        };
        let runtime = settings.runtime_of(spec).to_owned();
        let now = now_micros();
        let user = ctx.principal.user_id;
        let key = SessionKey::generate();
        let id = SandboxId::new_random();
        let record = SandboxRecord::starting(
            id,
            Some((ctx.org.id, user)),
            spec.id.clone(),
            runtime.clone(),
            m.m.sealer.seal(key.expose(), &id.to_string()),
            now,
        );
        let claim_warm = (settings.warm_sandboxes > 0 && spec.id == settings.default_spec().id)
            .then(|| WarmClaim {
                spec_id: spec.id.clone(),
                runtime,
            });
        let outcome = self.sandboxes.start_sandbox(&StartSandbox {
            record,
            key_hash: key.hash(),
            claim_warm,
            limit: RunningLimit {
                owner: user,
                max: settings.max_running_per_user.max(1),
            },
            quota: SandboxQuota {
                owner: user,
                per_user: settings.max_sandboxes_per_user.max(1),
                org: ctx.org.id,
                per_org: settings.max_sandboxes_per_org,
            },
            bind_task: task,
        })?;
        let started = match outcome {
            StartOutcome::Started(s) => s,
            StartOutcome::OverQuota(refused) => {
                let see_all = ctx.role.grants(Permission::ViewOrgConversations);
                tracing::info!(user = %user, org = %ctx.org.id, scope = %refused.scope, limit = refused.limit, "sandbox start refused: quota reached");
                return Err(DomainError::SandboxQuotaExceeded(
                    refused.detail(user, see_all),
                ));
            }
        };
        self.pause_displaced(m, &started.displaced);
        if let Some(observer) = &m.m.observer {
            let runtime = &started.record.runtime;
            observer.started(runtime, started.claimed);
            if started.claimed {
                observer.start_finished(runtime, began.elapsed().as_secs_f64(), true);
            }
        }
        m.wake();
        Ok(self.view(ctx, &started.record))
    }

    /// Pauses the runtimes of sandboxes the running limit marked `PAUSED`. A sandbox already
    /// gone is left to the reconciler (which finds it `MISSING`).
    fn pause_displaced(&self, m: &Managed, displaced: &[SandboxRecord]) {
        for record in displaced {
            let Some((runtime, handle)) = runtime_and_handle(m, record) else {
                continue;
            };
            self.drain_events(record, super::event_catch_up::PAUSE_DRAIN, "pause");
            if let Err(e) = runtime.pause(&handle) {
                tracing::info!(sandbox = %record.id, error = %e, "pausing a sandbox over the running limit failed");
            } else {
                tracing::info!(sandbox = %record.id, "paused: its owner's running limit was reached");
            }
        }
    }

    /// One page of the sandboxes the caller sees in the effective organization, newest first
    /// (members: their own; `view_org_conversations`: all).
    ///
    /// # Errors
    /// Storage failures.
    pub fn search_sandboxes(
        &self,
        ctx: &OrgContext,
        after: Option<SandboxCursor>,
        limit: u32,
    ) -> Result<Page<SandboxView>, DomainError> {
        let owner =
            (!ctx.role.grants(Permission::ViewOrgConversations)).then_some(ctx.principal.user_id);
        let mut rows = self.sandboxes.search_sandboxes(&SandboxQuery {
            org: ctx.org.id,
            owner,
            after,
            limit: limit + 1,
        })?;
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let next_page_id = more
            .then(|| rows.last())
            .flatten()
            .map(|r| SandboxCursor {
                created_at: r.created_at,
                id: r.id,
            })
            .map(|c| c.encode());
        Ok(Page {
            items: rows.iter().map(|r| self.view(ctx, r)).collect(),
            next_page_id,
        })
    }

    /// The sandboxes with these ids, in request order, `None` for unknown or not visible ones.
    ///
    /// # Errors
    /// [`DomainError::TooManyIds`] over [`Batch::SANDBOXES`]' most; storage failures.
    pub fn get_sandboxes(
        &self,
        ctx: &OrgContext,
        ids: &[SandboxId],
    ) -> Result<Vec<Option<SandboxView>>, DomainError> {
        Batch::SANDBOXES.check(ids.len())?;
        let found: HashMap<SandboxId, SandboxRecord> = self
            .sandboxes
            .sandboxes_by_ids(ids)?
            .into_iter()
            .filter(|r| r.visible_to(ctx))
            .map(|r| (r.id, r))
            .collect();
        Ok(ids
            .iter()
            .map(|id| found.get(id).map(|r| self.view(ctx, r)))
            .collect())
    }

    /// The sandbox `id` if the caller sees it.
    ///
    /// # Errors
    /// [`DomainError::SandboxNotFound`] otherwise.
    pub fn visible_sandbox(
        &self,
        ctx: &OrgContext,
        id: SandboxId,
    ) -> Result<SandboxRecord, DomainError> {
        match self.sandboxes.sandbox(id)? {
            Some(r) if r.visible_to(ctx) => Ok(r),
            _ => Err(DomainError::SandboxNotFound),
        }
    }

    /// Pauses a sandbox the caller sees (SIGSTOP of its process group for the process
    /// runtime); pausing a paused one succeeds.
    ///
    /// # Errors
    /// [`DomainError::SandboxNotFound`]; [`DomainError::SandboxNotManaged`] for a registered
    /// one; [`DomainError::SandboxNotRunnable`] when it is `ERROR` or `MISSING` (or found gone).
    pub fn pause_sandbox(&self, ctx: &OrgContext, id: SandboxId) -> Result<(), DomainError> {
        let record = self.visible_sandbox(ctx, id)?;
        if !record.is_managed() {
            return Err(DomainError::SandboxNotManaged);
        }
        let m = self.managed()?;
        match record.status {
            SandboxStatus::Paused => return Ok(()),
            SandboxStatus::Error | SandboxStatus::Missing => {
                return Err(DomainError::SandboxNotRunnable(record.status));
            }
            SandboxStatus::Starting | SandboxStatus::Running => {}
        }
        if let Some((runtime, handle)) = runtime_and_handle(m, &record) {
            self.drain_events(&record, super::event_catch_up::PAUSE_DRAIN, "pause");
            match runtime.pause(&handle) {
                Ok(()) => {}
                Err(RuntimeError::Gone) => return Err(self.found_gone(&record)),
                Err(e) => return Err(DomainError::Runtime(e.to_string())),
            }
        }
        self.set_status(id, SandboxStatus::Paused)
    }

    /// Resumes a paused sandbox the caller sees (SIGCONT): it is `STARTING` until its agent
    /// server answers again, then `RUNNING`; beyond its owner's running limit their least
    /// recently used sandboxes are paused. Resuming a running one succeeds.
    ///
    /// # Errors
    /// As [`SandboxService::pause_sandbox`].
    pub fn resume_sandbox(&self, ctx: &OrgContext, id: SandboxId) -> Result<(), DomainError> {
        let record = self.visible_sandbox(ctx, id)?;
        if !record.is_managed() {
            return Err(DomainError::SandboxNotManaged);
        }
        let m = self.managed()?;
        let now = now_micros();
        match record.status {
            SandboxStatus::Starting | SandboxStatus::Running => {
                self.sandboxes.touch_sandbox(id, now)?;
                return Ok(());
            }
            SandboxStatus::Error | SandboxStatus::Missing => {
                return Err(DomainError::SandboxNotRunnable(record.status));
            }
            SandboxStatus::Paused => {}
        }
        let owner = record.owner_id.unwrap_or(ctx.principal.user_id);
        let Some(displaced) = self.sandboxes.resume_sandbox(&ResumeSandbox {
            id,
            now,
            limit: RunningLimit {
                owner,
                max: m.m.settings.max_running_per_user.max(1),
            },
        })?
        else {
            // Changed meanwhile (resumed by another request, or found gone).
            let now_status = self.visible_sandbox(ctx, id)?.status;
            return match now_status {
                SandboxStatus::Starting | SandboxStatus::Running => Ok(()),
                other => Err(DomainError::SandboxNotRunnable(other)),
            };
        };
        self.pause_displaced(m, &displaced);
        m.new_run(id, now);
        if let Some((runtime, handle)) = runtime_and_handle(m, &record) {
            match runtime.resume(&handle) {
                Ok(()) => {
                    if let Some(moved) = runtime.handle_after_resume(&handle) {
                        self.record_moved(id, &moved)?;
                    }
                }
                Err(RuntimeError::Gone) => return Err(self.found_gone(&record)),
                Err(e) => return Err(DomainError::Runtime(e.to_string())),
            }
        }
        m.wake();
        Ok(())
    }

    /// Deletes a sandbox Switchboard itself decided to drop (a start that failed or was cut
    /// off by a restart), as [`SandboxService::delete_sandbox`] without a caller.
    ///
    /// # Errors
    /// Storage failures.
    pub(super) fn delete_sandbox_internal(&self, id: SandboxId) -> Result<bool, DomainError> {
        let deleted = self.sandboxes.delete_sandbox(id, now_micros())?;
        if let Some(m) = &self.managed {
            m.forget(id);
            m.wake();
        }
        Ok(deleted)
    }

    /// Deletes a sandbox the caller sees: the record becomes a tombstone at once (invisible,
    /// its session key no longer authenticates; conversations keep their `sandbox_id`); the
    /// background cleanup stops its process (SIGTERM, 10 s, SIGKILL) and removes its
    /// working directory. A registered sandbox is only tombstoned.
    ///
    /// # Errors
    /// [`DomainError::SandboxNotFound`]; storage failures.
    pub fn delete_sandbox(&self, ctx: &OrgContext, id: SandboxId) -> Result<(), DomainError> {
        self.visible_sandbox(ctx, id)?;
        if !self.sandboxes.delete_sandbox(id, now_micros())? {
            return Err(DomainError::SandboxNotFound);
        }
        if let Some(m) = &self.managed {
            m.forget(id);
            m.wake();
        }
        Ok(())
    }

    /// Marks a sandbox whose runtime says it is gone `MISSING`; the error to answer.
    fn found_gone(&self, record: &SandboxRecord) -> DomainError {
        let message = crate::sandboxes::failures::gone(None, None);
        tracing::warn!(sandbox = %record.id, reason = %message, "sandbox MISSING");
        let update = SandboxUpdate::failed(record, SandboxStatus::Missing, now_micros(), message);
        if let Err(e) = self.sandboxes.update_sandbox(&update) {
            return e.into();
        }
        DomainError::SandboxNotRunnable(SandboxStatus::Missing)
    }

    /// Sets a status whatever the version (re-reading on a concurrent change, a few times).
    fn set_status(&self, id: SandboxId, status: SandboxStatus) -> Result<(), DomainError> {
        for _ in 0..5 {
            let Some(record) = self.sandboxes.sandbox(id)? else {
                return Err(DomainError::SandboxNotFound);
            };
            if record.status == status
                || self.sandboxes.update_sandbox(&SandboxUpdate::status(
                    &record,
                    status,
                    now_micros(),
                ))?
            {
                return Ok(());
            }
        }
        Ok(()) // still changing: the reconciler sets what the runtime shows
    }

    /// The sandbox as `ctx`'s caller sees it: the session key and URL only when `RUNNING`,
    /// the key only for its creator and `view_org_conversations` (admins, owners).
    pub(super) fn view(&self, ctx: &OrgContext, record: &SandboxRecord) -> SandboxView {
        let running = record.status == SandboxStatus::Running && record.is_managed();
        let may_see_key = record.owner_id == Some(ctx.principal.user_id)
            || ctx.role.grants(Permission::ViewOrgConversations);
        let session_api_key = match (&self.managed, &record.session_key_sealed) {
            (Some(m), Some(sealed)) if running && may_see_key => {
                match m.m.sealer.open(sealed, &record.id.to_string()) {
                    Ok(k) => Some(SessionKey::new(k)),
                    Err(e) => {
                        tracing::error!(sandbox = %record.id, error = %e, "a session key does not open with the secret key (was --secret-key-file changed?)");
                        None
                    }
                }
            }
            _ => None,
        };
        let exposed_urls = running.then(|| self.exposed_urls(record)).flatten();
        SandboxView {
            id: record.id,
            created_by_user_id: record.owner_id,
            sandbox_spec_id: record.spec_id.clone(),
            status: record.status,
            status_message: matches!(record.status, SandboxStatus::Error | SandboxStatus::Missing)
                .then(|| record.status_message.clone())
                .flatten(),
            session_api_key,
            exposed_urls,
            created_at: record.created_at,
        }
    }
}

/// The runtime of a launched sandbox and its handle; `None` when not launched, or when its
/// runtime is not configured or its handle is unreadable (logged).
pub(super) fn runtime_and_handle<'a>(
    m: &'a Managed,
    record: &SandboxRecord,
) -> Option<(&'a Arc<dyn SandboxRuntime>, RuntimeHandle)> {
    let text = record.handle.as_deref()?;
    let Some(runtime) = m.runtime(&record.runtime) else {
        tracing::warn!(sandbox = %record.id, runtime = %record.runtime, "the sandbox's runtime is not configured on this server");
        return None;
    };
    match RuntimeHandle::from_json(text) {
        Ok(handle) => Some((runtime, handle)),
        Err(e) => {
            tracing::warn!(sandbox = %record.id, error = %e, "unreadable runtime handle");
            None
        }
    }
}
