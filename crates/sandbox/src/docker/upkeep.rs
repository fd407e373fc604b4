//! The Docker runtime's background work (issue 12; docs/docker.md), as jobs for the
//! supervisor: the pull of missing images at start ([`image_pull_job`]; also what
//! `switchboard specs pull` does, [`pull_missing`]) and the sweep of containers and volumes
//! no sandbox record names ([`OrphanSweeper`], [`orphan_sweep_job`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use switchboard_domain::SandboxId;
use switchboard_domain::jobs::{Job, Schedule};
use switchboard_domain::sandboxes::specs::SandboxSpec;
use switchboard_domain::services::SandboxService;

use super::{DockerError, DockerRuntime, RUNTIME_NAME, SandboxContainer};
use crate::orphans::OrphanClock;

/// How often the orphan sweep runs at the most (half the grace period when shorter).
const ORPHANS_EVERY: Duration = Duration::from_secs(30);

/// The images of the specs that run on Docker (a spec naming `docker`, or naming no runtime
/// when `default_runtime` is `docker`), in order, without repeats.
pub fn docker_images(specs: &[SandboxSpec], default_runtime: &str) -> Vec<String> {
    let mut images: Vec<String> = Vec::new();
    for spec in specs {
        let runtime = spec.runtime.as_deref().unwrap_or(default_runtime);
        if runtime == RUNTIME_NAME && !images.contains(&spec.id) {
            images.push(spec.id.clone());
        }
    }
    images
}

/// What became of one image in [`pull_missing`].
#[derive(Debug)]
pub enum PullOutcome {
    /// Already on the Docker host.
    Present,
    /// Pulled now.
    Pulled,
    /// The pull failed (the daemon's or the registry's words).
    Failed(DockerError),
}

/// Pulls each of `images` that is not on the Docker host, one after the other, calling
/// `report` with each image and its outcome.
///
/// # Errors
/// The daemon cannot be asked whether an image is present (nothing is pulled after that).
pub fn pull_missing(
    runtime: &DockerRuntime,
    images: &[String],
    mut report: impl FnMut(&str, PullOutcome),
) -> Result<(), DockerError> {
    for image in images {
        if runtime.image_present(image)? {
            report(image, PullOutcome::Present);
            continue;
        }
        match runtime.pull(image) {
            Ok(()) => report(image, PullOutcome::Pulled),
            Err(e) => report(image, PullOutcome::Failed(e)),
        }
    }
    Ok(())
}

/// The job pulling the `images` that are not on the Docker host once, at start, logging each
/// outcome: never on a request path (a sandbox of a missing image is `ERROR` until the pull
/// has finished). `None` when there is no image to pull.
pub fn image_pull_job(runtime: Arc<DockerRuntime>, images: Vec<String>) -> Option<Job> {
    if images.is_empty() {
        return None;
    }
    Some(Job::new("docker-pull", Schedule::Once, move || {
        pull_missing(&runtime, &images, |image, outcome| match outcome {
            PullOutcome::Present => {}
            PullOutcome::Pulled => tracing::info!(%image, "sandbox image pulled"),
            PullOutcome::Failed(e) => tracing::warn!(
                %image, error = %e,
                "pulling a sandbox image failed; sandboxes of it are ERROR until it is \
                 on the Docker host (`switchboard specs pull`, `docker pull`, or \
                 scripts/agent-server-image.sh)"
            ),
        })
        .map_err(|e| format!("cannot check the sandbox images: {e}"))
    }))
}

/// The job sweeping orphans every half grace period (between 1 and 30 seconds), reading the
/// records through `sandboxes`.
pub fn orphan_sweep_job(sweeper: OrphanSweeper, sandboxes: SandboxService) -> Job {
    let period = sweeper.period().min(ORPHANS_EVERY);
    Job::new(
        "docker-orphans",
        Schedule::AtOnceThenEvery(period),
        move || sweeper.sweep(&sandboxes),
    )
}

/// A failure of one orphan sweep (retried at the next period).
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The daemon failed.
    #[error(transparent)]
    Docker(#[from] DockerError),
    /// The records could not be read.
    #[error("{0}")]
    Records(#[from] switchboard_domain::DomainError),
}

/// The sweep of this installation's containers that no sandbox record names (issue 12: "a
/// Switchboard container with no record is reported in the log and removed after a grace
/// period"): one listing per pass; a container is logged when first seen without a record and
/// removed (with its volume) once it has been seen so for the grace period ([`OrphanClock`]).
/// Workspace volumes without a container or a record are removed the same way.
pub struct OrphanSweeper {
    runtime: Arc<DockerRuntime>,
    clock: OrphanClock,
}

impl OrphanSweeper {
    /// A sweeper removing orphans after `grace`.
    pub fn new(runtime: Arc<DockerRuntime>, grace: Duration) -> Self {
        OrphanSweeper {
            runtime,
            clock: OrphanClock::new(grace),
        }
    }

    /// How often a pass should run: half the grace period, between 1 and 30 seconds.
    pub fn period(&self) -> Duration {
        self.clock.period()
    }

    /// One pass.
    ///
    /// # Errors
    /// The daemon or the database failed (the pass is retried at the next period).
    pub fn sweep(&self, sandboxes: &SandboxService) -> Result<(), SweepError> {
        // Listed first, records read after: a record is inserted before its container is
        // created, so a container listed here whose record is missing below has none.
        let containers = self.runtime.list_sandboxes()?;
        let volumes = self.runtime.list_volumes()?;
        let known: HashSet<String> = sandboxes
            .sandbox_ids_with_records()?
            .iter()
            .map(SandboxId::to_string)
            .collect();
        let with_container: HashSet<String> =
            containers.iter().map(SandboxContainer::volume).collect();
        let orphans: HashMap<String, Orphan<'_>> = containers
            .iter()
            .filter(|c| !known.contains(&c.sandbox_id))
            .map(|c| (c.container_id.clone(), Orphan::Container(c)))
            .chain(
                volumes
                    .iter()
                    .filter(|v| !known.contains(&v.sandbox_id) && !with_container.contains(&v.name))
                    .map(|v| (format!("volume:{}", v.name), Orphan::Volume(v))),
            )
            .collect();
        let due = self
            .clock
            .pass(orphans.keys().cloned(), "a container or workspace volume");
        for key in due {
            match orphans[&key] {
                Orphan::Container(c) => match self.runtime.remove_orphan(c) {
                    Ok(()) => {
                        tracing::warn!(container = %c.container_name, "orphan container removed")
                    }
                    Err(e) => {
                        tracing::warn!(container = %c.container_name, error = %e, "removing an orphan container failed")
                    }
                },
                Orphan::Volume(v) => match self.runtime.remove_orphan_volume(v) {
                    Ok(()) => tracing::warn!(volume = %v.name, "orphan workspace volume removed"),
                    Err(e) => {
                        tracing::warn!(volume = %v.name, error = %e, "removing an orphan volume failed")
                    }
                },
            }
        }
        Ok(())
    }
}

/// One thing a sweep found without a record.
enum Orphan<'a> {
    Container(&'a SandboxContainer),
    Volume(&'a super::inventory::SandboxVolume),
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_domain::sandboxes::specs::{docker_preset, process_preset};
    use time::OffsetDateTime;

    #[test]
    fn the_images_to_pull_are_the_docker_specs_once_each() {
        let now = OffsetDateTime::UNIX_EPOCH;
        let a = docker_preset("img/a:1", now).unwrap();
        let mut b = docker_preset("img/b:1", now).unwrap();
        b.runtime = Some("docker".into());
        let mut process = process_preset(Some("agent-server"), None, now).unwrap();
        process.id = "img/c:1".into();
        let specs = [a.clone(), b, process, a];
        // Default runtime process: only the spec naming docker.
        assert_eq!(docker_images(&specs, "process"), ["img/b:1"]);
        // Default runtime docker: every spec naming none too; the process spec never.
        let mut specs = specs.to_vec();
        specs[2].runtime = Some("process".into());
        assert_eq!(docker_images(&specs, "docker"), ["img/a:1", "img/b:1"]);
    }
}
