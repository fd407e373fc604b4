//! The supervisor: the one owner of the server's background work. `serve` starts it once the
//! HTTP server runs and stops it after the HTTP server has stopped; stopping cancels every job
//! and waits for them, within a bound. Registering a job is one call: [`Supervisor::every`]
//! for a blocking step repeated on a period, [`Supervisor::spawn`] for a task of its own that
//! watches its cancellation token, and [`Supervisor::add`] for a [`Job`] described by the crate
//! that owns the work (the sandbox service, the runtimes, the store).

use std::fmt::Display;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard_domain::jobs::{Job, JobCounter, JobCounters, Pool, Schedule, Step, StepResult};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

/// The wake-ups of the woken jobs ([`Schedule::Woken`]): each job has its own, so a
/// notification is never taken by another; [`Wakes::wake_all`] (the services' wake-up signal)
/// notifies every one.
#[derive(Clone, Default)]
pub struct Wakes(Arc<Mutex<Vec<Arc<Notify>>>>);

impl Wakes {
    /// Notifies every woken job.
    pub fn wake_all(&self) {
        for wake in self.0.lock().expect("wake list poisoned").iter() {
            wake.notify_one();
        }
    }

    /// [`Wakes::wake_all`] as a shareable function (the services' wake-up signal, e.g. the
    /// sandbox service's `wake`).
    pub fn waker(&self) -> Arc<dyn Fn() + Send + Sync> {
        let wakes = self.clone();
        Arc::new(move || wakes.wake_all())
    }

    /// A new wake-up, notified by [`Wakes::wake_all`].
    fn register(&self) -> Arc<Notify> {
        let wake = Arc::new(Notify::new());
        self.0
            .lock()
            .expect("wake list poisoned")
            .push(wake.clone());
        wake
    }
}

/// How long the steps of [`Supervisor::at_shutdown`] may take together: a process sandbox
/// stops within its 10 s stop timeout, and they stop in parallel.
pub const FINAL_STEPS_BOUND: Duration = Duration::from_secs(30);

/// A blocking step run once at shutdown, after every job has stopped.
type FinalStep = Box<dyn FnOnce() -> Result<(), String> + Send>;

/// Background jobs, each named (for the logs and the counters) and given a cancellation token.
/// Must be used inside a Tokio runtime (the actix system's, in the server).
pub struct Supervisor {
    token: CancellationToken,
    jobs: Vec<(String, JoinHandle<()>)>,
    /// Blocking steps run once at shutdown, after every job has stopped
    /// ([`Supervisor::at_shutdown`]).
    finals: Vec<(String, FinalStep)>,
    /// Where the steps of the jobs registered from now on are counted, if anywhere.
    counters: Option<Arc<dyn JobCounters>>,
}

impl Default for Supervisor {
    fn default() -> Self {
        Supervisor::new()
    }
}

impl Supervisor {
    /// A supervisor with no job yet.
    pub fn new() -> Self {
        Supervisor {
            token: CancellationToken::new(),
            jobs: Vec::new(),
            finals: Vec::new(),
            counters: None,
        }
    }

    /// The same supervisor counting the steps of the jobs it runs in `counters` (the server's
    /// `background_job_*` metrics; jobs started with [`Supervisor::spawn`] have no steps).
    #[must_use]
    pub fn with_counters(mut self, counters: Arc<dyn JobCounters>) -> Self {
        self.counters = Some(counters);
        self
    }

    /// The counters of the job named `name`, if counted.
    fn job_counter(&self, name: &str) -> Option<Arc<dyn JobCounter>> {
        self.counters.as_ref().map(|c| c.job(name))
    }

    /// Runs the blocking `step` once at shutdown, after every job has stopped (so no job
    /// undoes it), on the blocking pool; the steps run one after the other, within
    /// [`FINAL_STEPS_BOUND`] in all. A failure is logged. The server stops its unclaimed
    /// warm-pool sandboxes this way (docs/API.md, "Warm pool").
    pub fn at_shutdown<F, E>(&mut self, name: &str, step: F)
    where
        F: FnOnce() -> Result<(), E> + Send + 'static,
        E: Display + Send + 'static,
    {
        self.finals.push((
            name.to_owned(),
            Box::new(move || step().map_err(|e| e.to_string())),
        ));
    }

    /// Starts `job` as a task named `name`. Its token is cancelled at shutdown; the job should
    /// then return promptly (it is aborted when it outlives the shutdown bound).
    pub fn spawn<F, Fut>(&mut self, name: &str, job: F)
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let handle = tokio::spawn(job(self.token.child_token()));
        self.jobs.push((name.to_owned(), handle));
    }

    /// Runs the blocking `step` every `period` (the first time one period from now) on the
    /// blocking thread pool, one at a time, until shutdown. A failed step is logged and the
    /// next one runs as planned; a step that overruns its period delays the next one.
    pub fn every<F, E>(&mut self, name: &str, period: Duration, step: F)
    where
        F: Fn() -> Result<(), E> + Send + Sync + 'static,
        E: Display + Send + 'static,
    {
        let step = Arc::new(step);
        let job = name.to_owned();
        let counter = self.job_counter(name);
        self.spawn(name, move |token| async move {
            let mut ticks = tokio::time::interval_at(Instant::now() + period, period);
            ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = token.cancelled() => return,
                    _ = ticks.tick() => {}
                }
                let step = step.clone();
                run_step(&job, counter.as_ref(), move || step()).await;
            }
        });
    }

    /// Runs the blocking `step` at once, then every `period` and whenever `wake` is notified
    /// (a notification during a step runs it once more right after), one at a time, until
    /// shutdown. Failures are logged as for [`Supervisor::every`].
    pub fn every_or_woken<F, E>(&mut self, name: &str, period: Duration, wake: Arc<Notify>, step: F)
    where
        F: Fn() -> Result<(), E> + Send + Sync + 'static,
        E: Display + Send + 'static,
    {
        let step = Arc::new(step);
        let job = name.to_owned();
        let counter = self.job_counter(name);
        self.spawn(name, move |token| async move {
            loop {
                let step = step.clone();
                run_step(&job, counter.as_ref(), move || step()).await;
                tokio::select! {
                    () = token.cancelled() => return,
                    () = wake.notified() => {}
                    () = tokio::time::sleep(period) => {}
                }
            }
        });
    }

    /// Starts every job of `jobs` ([`Supervisor::add`]), in order.
    pub fn add_all(&mut self, jobs: impl IntoIterator<Item = Job>, wakes: &Wakes) {
        for job in jobs {
            self.add(job, wakes);
        }
    }

    /// Starts `job` as its schedule says; a [`Schedule::Woken`] job is also woken by `wakes`.
    /// A job with a [`Pool`] claims after each step (see [`Supervisor::pooled`]).
    pub fn add(&mut self, job: Job, wakes: &Wakes) {
        let Job {
            name,
            schedule,
            step,
            pool,
        } = job;
        if let Some(pool) = pool {
            let (period, wake) = match schedule {
                Schedule::Woken(period) => (period, wakes.register()),
                Schedule::Every(period) | Schedule::AtOnceThenEvery(period) => {
                    (period, Arc::new(Notify::new()))
                }
                Schedule::Once => (Duration::from_secs(86_400), Arc::new(Notify::new())),
            };
            self.pooled(name, period, wake, step, pool);
            return;
        }
        match schedule {
            Schedule::Once => {
                let counter = self.job_counter(name);
                self.spawn(name, move |_token| async move {
                    run_step(name, counter.as_ref(), move || step()).await;
                });
            }
            Schedule::Every(period) => self.every(name, period, move || step()),
            Schedule::AtOnceThenEvery(period) => {
                self.every_or_woken(name, period, Arc::new(Notify::new()), move || step());
            }
            Schedule::Woken(period) => {
                self.every_or_woken(name, period, wakes.register(), move || step());
            }
        }
    }

    /// Runs the blocking `step` at once, then every `period` and whenever `wake` is notified,
    /// and after each step claims `pool`'s work while fewer than `pool.workers` items run,
    /// each claimed item on a thread of its own (named after the job; an item may block for
    /// minutes, and the runtime's blocking pool would hold the shutdown until it ends). An
    /// item's end claims again at once. At shutdown the claiming stops; items still running
    /// end with the process (their claims lapse: the owner's restart rule applies).
    pub fn pooled(
        &mut self,
        name: &'static str,
        period: Duration,
        wake: Arc<Notify>,
        step: Step,
        pool: Pool,
    ) {
        let free = Arc::new(tokio::sync::Semaphore::new(pool.workers));
        let counter = self.job_counter(name);
        self.spawn(name, move |token| async move {
            loop {
                let pass = step.clone();
                run_step(name, counter.as_ref(), move || pass()).await;
                while let Ok(worker) = free.clone().try_acquire_owned() {
                    let claim = pool.claim.clone();
                    let work = match tokio::task::spawn_blocking(move || claim()).await {
                        Ok(Ok(Some(work))) => {
                            if let Some(c) = &counter {
                                c.claimed();
                            }
                            work
                        }
                        Ok(Ok(None)) => break,
                        Ok(Err(e)) => {
                            tracing::warn!(job = %name, error = %e, "claiming work failed");
                            break;
                        }
                        Err(e) => {
                            tracing::error!(job = %name, error = %e, "claiming work panicked");
                            break;
                        }
                    };
                    let done = wake.clone();
                    let started = std::thread::Builder::new()
                        .name(name.into())
                        .spawn(move || {
                            work();
                            drop(worker);
                            done.notify_one();
                        });
                    if let Err(e) = started {
                        // The claim lapses and the restart rule fails the item.
                        tracing::error!(job = %name, error = %e, "no thread for claimed work");
                    }
                }
                tokio::select! {
                    () = token.cancelled() => return,
                    () = wake.notified() => {}
                    () = tokio::time::sleep(period) => {}
                }
            }
        });
    }

    /// Cancels every job and waits until all have returned, at most `bound` in all; jobs
    /// still running then are aborted and named in the log. Then runs the steps of
    /// [`Supervisor::at_shutdown`].
    pub async fn shutdown(self, bound: Duration) {
        self.token.cancel();
        let deadline = Instant::now() + bound;
        for (name, handle) in self.jobs {
            let abort = handle.abort_handle();
            match tokio::time::timeout_at(deadline, handle).await {
                Ok(Ok(())) => tracing::debug!(job = %name, "background job stopped"),
                Ok(Err(e)) => tracing::error!(job = %name, error = %e, "background job failed"),
                Err(_) => {
                    abort.abort();
                    tracing::warn!(job = %name, ?bound, "background job did not stop in time; aborted");
                }
            }
        }
        let deadline = Instant::now() + FINAL_STEPS_BOUND;
        for (name, step) in self.finals {
            match tokio::time::timeout_at(deadline, tokio::task::spawn_blocking(step)).await {
                Ok(Ok(Ok(()))) => tracing::debug!(step = %name, "shutdown step done"),
                Ok(Ok(Err(e))) => tracing::warn!(step = %name, error = %e, "shutdown step failed"),
                Ok(Err(e)) => tracing::error!(step = %name, error = %e, "shutdown step panicked"),
                Err(_) => {
                    tracing::warn!(step = %name, bound = ?FINAL_STEPS_BOUND, "shutdown step did not finish in time");
                }
            }
        }
    }
}

/// Runs one blocking `step` of the job named `job` on the blocking pool; a failure is logged
/// (the job goes on), and the step counted in `counter`.
async fn run_step<F, E>(job: &str, counter: Option<&Arc<dyn JobCounter>>, step: F)
where
    F: FnOnce() -> Result<(), E> + Send + 'static,
    E: Display + Send + 'static,
{
    let started = Instant::now();
    let result = match tokio::task::spawn_blocking(step).await {
        Ok(Ok(())) => StepResult::Ok,
        Ok(Err(e)) => {
            tracing::warn!(job = %job, error = %e, "background step failed");
            StepResult::Error
        }
        Err(e) => {
            tracing::error!(job = %job, error = %e, "background step panicked");
            StepResult::Panic
        }
    };
    if let Some(c) = counter {
        c.step(result, started.elapsed());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn periodic_steps_run_until_shutdown_and_failures_do_not_stop_them() {
        let runs = Arc::new(AtomicUsize::new(0));
        let mut supervisor = Supervisor::new();
        let counter = runs.clone();
        supervisor.every("count", Duration::from_millis(10), move || {
            // Every other step fails: the job goes on.
            match counter.fetch_add(1, Ordering::SeqCst) % 2 {
                0 => Ok(()),
                _ => Err("odd step"),
            }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        supervisor.shutdown(Duration::from_secs(5)).await;
        let after_shutdown = runs.load(Ordering::SeqCst);
        assert!(after_shutdown >= 4, "only {after_shutdown} steps ran");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            runs.load(Ordering::SeqCst),
            after_shutdown,
            "a step ran after shutdown"
        );
    }

    #[tokio::test]
    async fn woken_steps_run_at_once_and_on_notification() {
        let runs = Arc::new(AtomicUsize::new(0));
        let wake = Arc::new(Notify::new());
        let mut supervisor = Supervisor::new();
        let counter = runs.clone();
        supervisor.every_or_woken(
            "woken",
            Duration::from_secs(3600),
            wake.clone(),
            move || -> Result<(), String> {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok(())
            },
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            runs.load(Ordering::SeqCst),
            1,
            "the first step runs at once"
        );
        wake.notify_one();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            runs.load(Ordering::SeqCst),
            2,
            "a notification runs it again"
        );
        supervisor.shutdown(Duration::from_secs(5)).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_pool_runs_claimed_items_at_once_up_to_its_workers_and_claims_again_when_one_ends() {
        let queued = Arc::new(AtomicUsize::new(5));
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let (q, r, m, d) = (queued.clone(), running.clone(), most.clone(), done.clone());
        let job = Job::new("pooled", Schedule::Woken(Duration::from_secs(3600)), || {
            Ok::<(), String>(())
        })
        .with_pool(
            2,
            move || -> Result<Option<switchboard_domain::jobs::Work>, String> {
                if q.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_err()
                {
                    return Ok(None);
                }
                let (r, m, d) = (r.clone(), m.clone(), d.clone());
                Ok(Some(Box::new(move || {
                    let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                    m.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(100));
                    r.fetch_sub(1, Ordering::SeqCst);
                    d.fetch_add(1, Ordering::SeqCst);
                })))
            },
        );
        let mut supervisor = Supervisor::new();
        supervisor.add(job, &Wakes::default());
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while done.load(Ordering::SeqCst) < 5 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Five items, two at a time, each claimed again as soon as a worker was free (not
        // at the hour-long period).
        assert_eq!(done.load(Ordering::SeqCst), 5);
        assert_eq!(most.load(Ordering::SeqCst), 2);
        supervisor.shutdown(Duration::from_secs(5)).await;
    }

    #[tokio::test]
    async fn shutdown_steps_run_once_after_every_job_has_stopped() {
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut supervisor = Supervisor::new();
        let seen = order.clone();
        supervisor.spawn("job", move |token| async move {
            token.cancelled().await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            seen.lock().unwrap().push("job stopped");
        });
        let seen = order.clone();
        supervisor.at_shutdown("final", move || -> Result<(), String> {
            seen.lock().unwrap().push("final step");
            Ok(())
        });
        supervisor.at_shutdown("failing", || Err("it failed"));
        assert!(
            order.lock().unwrap().is_empty(),
            "nothing runs before shutdown"
        );
        supervisor.shutdown(Duration::from_secs(5)).await;
        assert_eq!(*order.lock().unwrap(), ["job stopped", "final step"]);
    }

    #[tokio::test]
    async fn shutdown_waits_for_jobs_to_finish_and_aborts_those_that_outlive_the_bound() {
        let finished = Arc::new(AtomicUsize::new(0));
        let mut supervisor = Supervisor::new();
        let done = finished.clone();
        supervisor.spawn("cooperative", move |token| async move {
            token.cancelled().await;
            // Some cleanup after the cancellation, which shutdown waits for.
            tokio::time::sleep(Duration::from_millis(50)).await;
            done.fetch_add(1, Ordering::SeqCst);
        });
        let ignored = finished.clone();
        supervisor.spawn("stubborn", move |_token| async move {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            ignored.fetch_add(100, Ordering::SeqCst);
        });
        let started = std::time::Instant::now();
        supervisor.shutdown(Duration::from_millis(300)).await;
        let took = started.elapsed();
        assert_eq!(
            finished.load(Ordering::SeqCst),
            1,
            "the cooperative job finished"
        );
        assert!(
            took >= Duration::from_millis(50),
            "returned before the cleanup: {took:?}"
        );
        assert!(
            took < Duration::from_secs(5),
            "the bound was not kept: {took:?}"
        );
    }
}
