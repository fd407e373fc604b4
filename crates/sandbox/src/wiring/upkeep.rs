//! The background work the wired runtimes need, as jobs for the supervisor: the cap on
//! process sandboxes' logs, the Docker runtime's image pull and orphan sweep, the Kubernetes
//! runtime's orphan sweep, and the sandbox service's own jobs.

use std::sync::Arc;
use std::time::Duration;

use switchboard_domain::jobs::Job;
use switchboard_domain::services::SandboxService;

use crate::docker::upkeep::{OrphanSweeper, image_pull_job, orphan_sweep_job};
use crate::kubernetes::upkeep::orphan_sweep_job as kube_orphan_sweep_job;
use crate::{DockerRuntime, KubernetesRuntime, ProcessRuntime};

/// A cap on process sandboxes' log files (`--sandbox-log-max-mib`), kept by a job.
pub struct LogCap {
    /// The runtime whose sandboxes' logs are capped.
    pub runtime: Arc<ProcessRuntime>,
    /// The cap, in bytes.
    pub max_bytes: u64,
}

/// The Docker runtime's background work.
pub struct DockerUpkeep {
    /// The runtime.
    pub runtime: Arc<DockerRuntime>,
    /// The images of the Docker specs, pulled at start when missing.
    pub images: Vec<String>,
    /// How long a container no record names is left alone (`--docker-orphan-grace`).
    pub orphan_grace: Duration,
}

/// What the sandboxes need done in the background, as [`super::configure()`] wired them.
pub struct Upkeep {
    /// Whether a warm pool is kept (`--warm-sandboxes` above 0).
    pub warm: bool,
    /// The cap on process sandboxes' logs, when set.
    pub log_cap: Option<LogCap>,
    /// The Docker runtime's, when connected.
    pub docker: Option<DockerUpkeep>,
    /// The Kubernetes runtime and how long an object no record names is left alone
    /// (`--kube-orphan-grace`), when connected.
    pub kube: Option<(Arc<KubernetesRuntime>, Duration)>,
}

impl Upkeep {
    /// The jobs: with the Kubernetes runtime, the sweep of its pods, claims and secrets no
    /// record names; the cap on process sandboxes' logs (when set); with the Docker runtime,
    /// the pull of missing images and the sweep of containers no record names; then the
    /// sandbox service's (launcher, reconciler, warm pool when kept, cleanup of deleted
    /// sandboxes).
    pub fn jobs(self, sandboxes: &SandboxService) -> Vec<Job> {
        let mut jobs = Vec::new();
        if let Some((runtime, grace)) = self.kube {
            jobs.push(kube_orphan_sweep_job(runtime, grace, sandboxes.clone()));
        }
        if let Some(cap) = self.log_cap {
            jobs.push(cap.runtime.log_cap_job(cap.max_bytes));
        }
        if let Some(docker) = self.docker {
            jobs.extend(image_pull_job(docker.runtime.clone(), docker.images));
            let sweeper = OrphanSweeper::new(docker.runtime, docker.orphan_grace);
            jobs.push(orphan_sweep_job(sweeper, sandboxes.clone()));
        }
        jobs.extend(sandboxes.jobs(self.warm));
        jobs
    }
}
