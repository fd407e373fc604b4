//! The cap on process sandboxes' log files (`--sandbox-log-max-mib`) as a supervised job.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use switchboard_domain::jobs::{Job, Schedule};

use super::ProcessRuntime;

/// How often the logs are checked against their cap (a sandbox may write this long past it).
const LOG_TRIM_EVERY: Duration = Duration::from_secs(1);

impl ProcessRuntime {
    /// The job keeping this runtime's sandboxes' logs under `max_bytes`:
    /// [`ProcessRuntime::trim_logs`] at once and every second, each trim logged.
    pub fn log_cap_job(self: Arc<Self>, max_bytes: u64) -> Job {
        Job::new(
            "sandbox-log-cap",
            Schedule::AtOnceThenEvery(LOG_TRIM_EVERY),
            move || {
                for t in self.trim_logs(max_bytes)? {
                    match t.error {
                        None => tracing::info!(
                            log = %t.path.display(), bytes = t.bytes,
                            "sandbox log over its cap: its end moved to agent-server.log.1, \
                             the log starts again"
                        ),
                        Some(e) => tracing::warn!(
                            log = %t.path.display(), bytes = t.bytes, error = %e,
                            "sandbox log over its cap could not be trimmed"
                        ),
                    }
                }
                Ok::<(), io::Error>(())
            },
        )
    }
}
