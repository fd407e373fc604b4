//! What the storage benchmarks share: knobs from the environment, percentiles of timed
//! calls, and bulk SQL run in the store's write transaction.

#![allow(dead_code, reason = "each benchmark uses some of these")]

use std::time::{Duration, Instant};

/// The number in environment variable `name`, else `default`.
pub fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// p50 and p99 of `samples`, in milliseconds.
pub fn percentiles(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let at = |q: f64| {
        let i = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
        samples[i].as_secs_f64() * 1e3
    };
    (at(0.50), at(0.99))
}

/// p50 and p99 in milliseconds of `iters` calls of `f` (after 10 unmeasured ones).
pub fn time_it(iters: u64, mut f: impl FnMut(u64)) -> (f64, f64) {
    for i in 0..10 {
        f(i);
    }
    let samples = (0..iters)
        .map(|i| {
            let t = Instant::now();
            f(i);
            t.elapsed()
        })
        .collect();
    percentiles(samples)
}

/// Runs `sql` (a bulk insert) in one write transaction of `store`.
///
/// # Panics
/// When the statement fails.
pub fn execute(store: &switchboard_storage::DieselStore, sql: &str) {
    store
        .write(|c| {
            use diesel::RunQueryDsl;
            diesel::sql_query(sql)
                .execute(c)
                .map(|_| ())
                .map_err(|e| switchboard_domain::StorageError::Other(Box::new(e)))
        })
        .unwrap();
}

/// Prints `rows` (an operation's name, its p50 and p99 in milliseconds) as a Markdown table
/// under `title`.
pub fn print_table(title: &str, rows: &[(&str, (f64, f64))]) {
    println!("\n{title}");
    println!("| operation | p50 ms | p99 ms |\n| --- | --- | --- |");
    for (name, (p50, p99)) in rows {
        println!("| {name} | {p50:.3} | {p99:.3} |");
    }
}

/// A benchmark's world: a fresh database of `backend` (keep it while the benchmark runs), the
/// store over it, the services, and one organization bootstrapped (`Bench`, its owner
/// `owner@bench.example`).
///
/// # Panics
/// When the database cannot be made or opened.
pub fn world(
    backend: switchboard_testkit::Backend,
) -> (
    switchboard_testkit::TestDatabase,
    std::sync::Arc<switchboard_storage::DieselStore>,
    switchboard_domain::Switchboard,
    switchboard_domain::services::Bootstrapped,
) {
    let db = switchboard_testkit::TestDatabase::new(backend);
    let (store, _) = switchboard_storage::DieselStore::open(db.url(), None).unwrap();
    let store = std::sync::Arc::new(store);
    let services = switchboard_domain::Switchboard::new(store.clone());
    let boot = services
        .operator()
        .bootstrap("Bench", "owner@bench.example")
        .unwrap();
    (db, store, services, boot)
}
