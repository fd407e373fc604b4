//! Background jobs as descriptions: a name, a schedule and a blocking step. The crates that own
//! background work (the sandbox service here, the runtimes in `switchboard-sandbox`, the
//! store) hand out [`Job`]s; the binary's supervisor alone runs them (on its blocking pool,
//! one step at a time per job, until shutdown), so nothing in the libraries starts a thread.

use std::fmt::Display;
use std::sync::Arc;
use std::time::Duration;

/// One step of a job: blocking; an `Err` is logged by the supervisor with the job's name and
/// the next step runs as planned.
pub type Step = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// When a job's step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    /// Once, at start (a one-off task such as pulling missing images).
    Once,
    /// Every period, the first time one period after start.
    Every(Duration),
    /// At once, then every period.
    AtOnceThenEvery(Duration),
    /// At once, then every period and whenever the services signal that work may be waiting
    /// (the wake-up of [`crate::sandboxes::settings::ManagedSandboxes::wake`]); a signal during
    /// a step runs it once more right after.
    Woken(Duration),
}

/// A background job: `name` (for the logs), `schedule` and `step`.
#[derive(Clone)]
pub struct Job {
    /// The job's name in the logs (`sandbox-launcher`, `docker-orphans`, ...).
    pub name: &'static str,
    /// When the step runs.
    pub schedule: Schedule,
    /// The work of one pass.
    pub step: Step,
}

impl Job {
    /// A job running `step` on `schedule`; the step's error is kept as its message.
    pub fn new<F, E>(name: &'static str, schedule: Schedule, step: F) -> Job
    where
        F: Fn() -> Result<(), E> + Send + Sync + 'static,
        E: Display,
    {
        Job {
            name,
            schedule,
            step: Arc::new(move || step().map_err(|e| e.to_string())),
        }
    }
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("name", &self.name)
            .field("schedule", &self.schedule)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_step_keeps_its_message() {
        let job = Job::new("failing", Schedule::Once, || {
            Err::<(), _>("the daemon is away")
        });
        assert_eq!((job.step)(), Err("the daemon is away".to_owned()));
        assert_eq!(job.name, "failing");
        assert!(format!("{job:?}").contains("failing"));
    }
}
