//! Background jobs' metrics (docs/metrics.md): each step of each job by result, its
//! duration, the last success, and the work items pooled jobs claim. The supervisor
//! (`switchboard-runtime`) records them through the domain's port ([`JobCounters::job`] once
//! per job, then [`JobCounter::step`] per step).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prometheus::{Gauge, GaugeVec, Histogram, HistogramVec, IntCounter, IntCounterVec, Registry};
use switchboard_domain::jobs::{JobCounter, JobCounters, StepResult};

use super::families::{counters, gauges, histograms};

/// The background jobs' families.
#[derive(Clone)]
pub struct Jobs {
    runs: IntCounterVec,
    seconds: HistogramVec,
    last_success: GaugeVec,
    claimed: IntCounterVec,
}

impl Jobs {
    /// Creates the families and registers them in `registry`.
    pub(super) fn new(registry: &Registry) -> Self {
        Jobs {
            runs: counters(
                registry,
                "background_job_runs_total",
                "Steps of background jobs by job and result (ok, error, panic); a failed step is logged and the job goes on.",
                &["job", "result"],
            ),
            seconds: histograms(
                registry,
                "background_job_duration_seconds",
                "Seconds one step of a background job took, by job.",
                &["job"],
                &[0.001, 0.005, 0.025, 0.1, 0.25, 1.0, 2.5, 10.0, 30.0, 120.0],
            ),
            last_success: gauges(
                registry,
                "background_job_last_success_timestamp_seconds",
                "Unix time of the last step of a background job that succeeded, by job (0 until one has).",
                &["job"],
            ),
            claimed: counters(
                registry,
                "background_job_items_claimed_total",
                "Work items (e.g. conversation starts) claimed by pooled background jobs, by job.",
                &["job"],
            ),
        }
    }
}

/// One job's metrics (cheap to clone: handles to the same series).
#[derive(Clone)]
pub struct JobMetrics {
    ok: IntCounter,
    error: IntCounter,
    panic: IntCounter,
    seconds: Histogram,
    last_success: Gauge,
    claimed: IntCounter,
}

impl JobCounters for Jobs {
    /// The metrics of the job named `name` (a fixed name, never an id), resolved once.
    fn job(&self, name: &str) -> Arc<dyn JobCounter> {
        Arc::new(JobMetrics {
            ok: self.runs.with_label_values(&[name, "ok"]),
            error: self.runs.with_label_values(&[name, "error"]),
            panic: self.runs.with_label_values(&[name, "panic"]),
            seconds: self.seconds.with_label_values(&[name]),
            last_success: self.last_success.with_label_values(&[name]),
            claimed: self.claimed.with_label_values(&[name]),
        })
    }
}

impl JobCounter for JobMetrics {
    /// Records one step that took `took` and ended with `result` (a success also sets the
    /// last success time to now).
    fn step(&self, result: StepResult, took: Duration) {
        self.seconds.observe(took.as_secs_f64());
        match result {
            StepResult::Ok => {
                self.ok.inc();
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default();
                self.last_success.set(now.as_secs_f64());
            }
            StepResult::Error => self.error.inc(),
            StepResult::Panic => self.panic.inc(),
        }
    }

    /// Records one work item claimed.
    fn claimed(&self) {
        self.claimed.inc();
    }
}
