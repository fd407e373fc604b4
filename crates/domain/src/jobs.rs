//! Background jobs as descriptions: a name, a schedule and a blocking step, and for a job whose
//! work items each take long (a conversation start) a [`Pool`]: what it claims, and how many
//! claimed items may run at once. The crates that own background work (the sandbox service
//! and the start pipeline here, the runtimes in `switchboard-sandbox`, the store) hand out
//! [`Job`]s; the supervisor alone runs them (`switchboard-runtime`, started by the binary: on
//! its blocking pool, one step at a time per job, and a pool's items on workers of its own,
//! until shutdown), so nothing in the other libraries starts a thread. It counts their steps
//! through [`JobCounters`].

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

/// One claimed item of a pool's work (a start task run to its end): blocking, may take
/// minutes; it reports its own failures.
pub type Work = Box<dyn FnOnce() + Send>;

/// Claims the next item of a pool's work, `Ok(None)` when there is none; blocking.
pub type Claim = Arc<dyn Fn() -> Result<Option<Work>, String> + Send + Sync>;

/// The claimed work of a job: after each step (at its schedule, and when woken), the
/// supervisor claims while fewer than `workers` items run, and runs each claimed item on a
/// worker of its own; an item's end claims again at once.
#[derive(Clone)]
pub struct Pool {
    /// The most items running at once.
    pub workers: usize,
    /// Claims the next item.
    pub claim: Claim,
}

/// A background job: `name` (for the logs), `schedule`, `step` and, for claimed work, `pool`.
#[derive(Clone)]
pub struct Job {
    /// The job's name in the logs (`sandbox-launcher`, `docker-orphans`, ...).
    pub name: &'static str,
    /// When the step runs.
    pub schedule: Schedule,
    /// The work of one pass (for a job with a pool: its upkeep, run before each round of
    /// claims).
    pub step: Step,
    /// Work claimed item by item and run beside the job, if any.
    pub pool: Option<Pool>,
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
            pool: None,
        }
    }

    /// The same job claiming items with `claim` after each step and running at most
    /// `workers` of them at once (at least one).
    #[must_use]
    pub fn with_pool<F, E>(mut self, workers: usize, claim: F) -> Job
    where
        F: Fn() -> Result<Option<Work>, E> + Send + Sync + 'static,
        E: Display,
    {
        self.pool = Some(Pool {
            workers: workers.max(1),
            claim: Arc::new(move || claim().map_err(|e| e.to_string())),
        });
        self
    }
}

/// How a job's step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepResult {
    /// It returned `Ok`.
    Ok,
    /// It returned an error (logged; the job goes on).
    Error,
    /// It panicked (logged; the job goes on with its next step).
    Panic,
}

/// Where one job's steps are counted (a port: the API's Prometheus metrics implement it,
/// `background_job_*` in docs/metrics.md).
pub trait JobCounter: Send + Sync {
    /// One step that took `took` and ended with `result`.
    fn step(&self, result: StepResult, took: Duration);
    /// One work item of the job's [`Pool`] claimed.
    fn claimed(&self);
}

/// Every job's counters, by the job's name (a fixed name, never an id).
pub trait JobCounters: Send + Sync {
    /// The counters of the job named `name`, resolved once per job.
    fn job(&self, name: &str) -> Arc<dyn JobCounter>;
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("name", &self.name)
            .field("schedule", &self.schedule)
            .field("workers", &self.pool.as_ref().map(|p| p.workers))
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

    #[test]
    fn a_pool_claims_items_and_keeps_at_least_one_worker() {
        let job = Job::new("pooled", Schedule::Once, || Ok::<(), String>(()))
            .with_pool(0, || -> Result<Option<Work>, String> {
                Ok(Some(Box::new(|| {})))
            });
        let pool = job.pool.expect("a pool");
        assert_eq!(pool.workers, 1);
        let work = (pool.claim)().unwrap().expect("an item");
        work();
    }
}
