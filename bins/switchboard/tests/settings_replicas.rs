//! Organization settings on two replicas (two `switchboard serve` processes on one PostgreSQL
//! database; API.md, Organization settings): each serves GETs from its own cache, a write on
//! one is seen by the other at once (`NOTIFY` invalidates), and `last_known_updated_at` is
//! checked against the database, not a cache.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{Server, client, send_json};
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const STOP_TIMEOUT: Duration = Duration::from_secs(10);

fn get(server: &Server, key: &str) -> Value {
    let (status, body) = send_json(
        client()
            .get(server.url("/api/organizations/app"))
            .header("X-Access-Token", key),
    );
    assert_eq!(status, 200, "{body}");
    body
}

fn post(server: &Server, key: &str, body: Value) -> (u16, Value) {
    send_json(
        client()
            .post(server.url("/api/organizations/app"))
            .header("X-Access-Token", key)
            .json(&body),
    )
}

/// GETs on `server` until `budget` is `want` (at most 5 s).
fn eventually_budget(server: &Server, key: &str, want: f64) -> Value {
    let start = Instant::now();
    loop {
        let body = get(server, key);
        if body["max_budget_per_task"] == json!(want) {
            return body;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "still {body} instead of budget {want}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (at most 10 s) until `n` listening connections are open on the database: two per
/// server (live delivery and settings); a replica caches only once its own is up.
fn wait_for_listeners(url: &str, n: usize) {
    let start = Instant::now();
    loop {
        let out = Command::new("psql")
            .arg(url)
            .args([
                "-qAtc",
                "SELECT count(*) FROM pg_stat_activity WHERE application_name IN ('switchboard-listener', 'switchboard-cache-listener') AND datname = current_database() AND state = 'idle'",
            ])
            .output()
            .expect("psql");
        let count: usize = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or(0);
        if count >= n {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{count} listeners"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn postgres_replicas_share_settings_writes_through_notify() {
    let db = TestDatabase::new(Backend::Postgres);
    let a = Server::spawn(db.url());
    let key = a.bootstrap_key();
    let b = Server::spawn(db.url());
    // B caches once its listener is up: a row changed behind the servers' backs is not seen
    // while B holds the settings (so GETs do read the cache).
    wait_for_listeners(db.url(), 4);
    let (status, _) = post(&a, &key, json!({"max_budget_per_task": 1.5}));
    assert_eq!(status, 200);
    eventually_budget(&b, &key, 1.5);
    // The write's notification may reach B after that read began (B then does not cache what
    // it read): once it has arrived, the next read fills B's cache.
    std::thread::sleep(Duration::from_millis(300));
    get(&b, &key);
    let psql = Command::new("psql")
        .arg(db.url())
        .args(["-qAtc", "UPDATE orgs SET max_budget_per_task = 99"])
        .status()
        .expect("psql");
    assert!(psql.success());
    for _ in 0..20 {
        assert_eq!(
            get(&b, &key)["max_budget_per_task"],
            json!(1.5),
            "served from B's cache"
        );
    }

    // A write on A: B sees it on its next GET, not the stale entry.
    let seen_by_b = get(&b, &key);
    let (status, written) = post(&a, &key, json!({"max_budget_per_task": 2.5}));
    assert_eq!(status, 200, "{written}");
    let now_on_b = eventually_budget(&b, &key, 2.5);
    assert_eq!(now_on_b["updated_at"], written["updated_at"]);

    // Optimistic locking is the database's: B's stale version is refused, the current one
    // accepted, whatever either cache holds.
    let (status, body) = post(
        &b,
        &key,
        json!({"max_budget_per_task": 3.5, "last_known_updated_at": seen_by_b["updated_at"]}),
    );
    assert_eq!(status, 409, "{body}");
    let (status, body) = post(
        &b,
        &key,
        json!({"max_budget_per_task": 3.5, "last_known_updated_at": now_on_b["updated_at"]}),
    );
    assert_eq!(status, 200, "{body}");
    eventually_budget(&a, &key, 3.5);
    assert_eq!(get(&b, &key)["max_budget_per_task"], json!(3.5));

    // With B's listener gone its cache is not used: a change behind its back shows at once
    // (and after the listener is back, from a cleared cache).
    let kill = Command::new("psql")
        .arg(db.url())
        .args([
            "-qAtc",
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name IN ('switchboard-listener', 'switchboard-cache-listener') AND datname = current_database()",
        ])
        .status()
        .expect("psql");
    assert!(kill.success());
    let psql = Command::new("psql")
        .arg(db.url())
        .args(["-qAtc", "UPDATE orgs SET max_budget_per_task = 7"])
        .status()
        .expect("psql");
    assert!(psql.success());
    eventually_budget(&b, &key, 7.0);
    eventually_budget(&a, &key, 7.0);
    a.stop(STOP_TIMEOUT);
    b.stop(STOP_TIMEOUT);
}
