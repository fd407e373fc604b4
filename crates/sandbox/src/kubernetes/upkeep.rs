//! The Kubernetes runtime's background work (issue 32), as a job for the supervisor: the sweep
//! of this installation's pods, claims and secrets that no sandbox record names, found by the
//! installation label.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use kube::api::ListParams;
use switchboard_domain::SandboxId;
use switchboard_domain::jobs::{Job, Schedule};
use switchboard_domain::services::SandboxService;

use crate::kubernetes::config::LABEL_SANDBOX_ID;
use crate::kubernetes::{KubernetesError, KubernetesRuntime, objects};
use crate::orphans::OrphanClock;

impl KubernetesRuntime {
    /// The sandbox ids of every pod, claim and secret of this installation in the namespace
    /// (pods and claims from the caches, secrets listed).
    ///
    /// # Errors
    /// [`KubernetesError::Unavailable`] while the watches fail; [`KubernetesError::Api`] when
    /// the secrets cannot be listed.
    pub fn sandbox_ids(&self) -> Result<BTreeSet<String>, KubernetesError> {
        if !(self.pods.healthy() && self.claims.healthy()) {
            return Err(KubernetesError::Unavailable(
                "the watch of pods and claims is failing".into(),
            ));
        }
        let label = |meta: &kube::api::ObjectMeta| {
            meta.labels
                .as_ref()
                .and_then(|l| l.get(LABEL_SANDBOX_ID).cloned())
        };
        let mut ids: BTreeSet<String> = self
            .pods
            .all()
            .iter()
            .filter_map(|p| label(&p.metadata))
            .collect();
        ids.extend(self.claims.all().iter().filter_map(|c| label(&c.metadata)));
        let selector = objects::installation_selector(&self.config);
        let secrets = self
            .block_on(
                self.secrets_api()
                    .list_metadata(&ListParams::default().labels(&selector)),
            )
            .map_err(|e| KubernetesError::Api(format!("listing secrets: {}", super::words(&e))))?;
        ids.extend(secrets.items.iter().filter_map(|s| label(&s.metadata)));
        Ok(ids)
    }

    /// Removes the pod, claim and secret of `sandbox_id` (an orphan's).
    ///
    /// # Errors
    /// The API server failed a deletion.
    pub fn remove_orphan(&self, sandbox_id: &str) -> Result<(), KubernetesError> {
        self.block_on(self.remove(&objects::object_name(sandbox_id), sandbox_id))
            .map_err(|e| KubernetesError::Api(e.to_string()))
    }
}

/// The job sweeping orphans every half grace period (between 1 and 30 seconds), reading the
/// records through `sandboxes`.
pub fn orphan_sweep_job(
    runtime: Arc<KubernetesRuntime>,
    grace: Duration,
    sandboxes: SandboxService,
) -> Job {
    let clock = OrphanClock::new(grace);
    Job::new(
        "kubernetes-orphans",
        Schedule::AtOnceThenEvery(clock.period()),
        move || sweep(&runtime, &clock, &sandboxes),
    )
}

/// One pass: the sandbox ids of this installation's objects without a record are logged when
/// first seen and their objects removed once seen so for the grace period.
///
/// # Errors
/// The API server or the database failed (the pass is retried at the next period).
pub fn sweep(
    runtime: &KubernetesRuntime,
    clock: &OrphanClock,
    sandboxes: &SandboxService,
) -> Result<(), String> {
    // Listed first, records read after: a record is inserted before its objects are made,
    // so an object listed here whose record is missing below has none.
    let ids = runtime.sandbox_ids().map_err(|e| e.to_string())?;
    let known: HashSet<String> = sandboxes
        .sandbox_ids_with_records()
        .map_err(|e| e.to_string())?
        .iter()
        .map(SandboxId::to_string)
        .collect();
    let orphans = ids.into_iter().filter(|id| !known.contains(id));
    for id in clock.pass(orphans, "a sandbox's pod, claim or secret") {
        match runtime.remove_orphan(&id) {
            Ok(()) => tracing::warn!(sandbox = %id, "orphan pod, claim and secret removed"),
            Err(e) => tracing::warn!(sandbox = %id, error = %e, "removing an orphan failed"),
        }
    }
    Ok(())
}
