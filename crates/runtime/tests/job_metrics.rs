//! The supervisor counting its jobs' steps into the server's Prometheus metrics, as the binary
//! wires them (`Supervisor::with_counters` over the API's `Jobs`), read back as `/metrics`
//! renders them.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use switchboard_runtime::Supervisor;
use tokio::sync::Notify;

#[tokio::test]
async fn steps_are_counted_by_result_with_the_last_success_time() {
    let metrics = switchboard_api::Metrics::new();
    let mut supervisor =
        Supervisor::new().with_counters(Arc::new(metrics.activity().jobs().clone()));
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    supervisor.every_or_woken(
        "flaky",
        Duration::from_millis(10),
        Arc::new(Notify::new()),
        move || match counter.fetch_add(1, Ordering::SeqCst) {
            0 => Ok(()),
            1 => Err("refused"),
            2 => panic!("a step that panics"),
            _ => Ok(()),
        },
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while runs.load(Ordering::SeqCst) < 5 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    supervisor.shutdown(Duration::from_secs(5)).await;
    let text = metrics.render(None, None);
    let value = |series: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {series} in {text}"))
    };
    let ran = runs.load(Ordering::SeqCst) as f64;
    assert_eq!(
        value(r#"background_job_runs_total{job="flaky",result="error"}"#),
        1.0
    );
    assert_eq!(
        value(r#"background_job_runs_total{job="flaky",result="panic"}"#),
        1.0
    );
    assert_eq!(
        value(r#"background_job_runs_total{job="flaky",result="ok"}"#),
        ran - 2.0
    );
    assert_eq!(
        value(r#"background_job_duration_seconds_count{job="flaky"}"#),
        ran
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let last = value(r#"background_job_last_success_timestamp_seconds{job="flaky"}"#);
    assert!((now - 60.0..=now + 1.0).contains(&last), "{last} vs {now}");
}
