//! PostgreSQL stopped (immediate mode, like a crash) and started again under webhook load, on a
//! cluster of this test's own (never the shared server): while it is away requests fail fast
//! with 503 and `/ready` is 503; once it is back the pool recovers by itself, requests and
//! `/ready` answer 200 again, and every event acknowledged before, during or after is stored
//! exactly once.

use crate::common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use switchboard_testkit::OwnedCluster;

const CONVERSATION: &str = "1e2d3c4b-5a69-4788-9a6b-5c4d3e2f1a0b";

/// How long a request may take to fail while the database is away.
const FAIL_FAST: Duration = Duration::from_secs(6);

fn status_and_time(req: reqwest::blocking::RequestBuilder) -> (u16, Duration) {
    let began = Instant::now();
    let status = req.send().map_or(0, |r| r.status().as_u16());
    (status, began.elapsed())
}

#[test]
fn postgres_restart_under_load() {
    let cluster = OwnedCluster::start().expect("a PostgreSQL cluster of the test's own");
    let url = cluster.url().to_owned();
    let boot = cli_json(
        &url,
        &["bootstrap", "--org-name", "Pg", "--email", "p@example.com"],
    );
    let key = str_of(&boot, "api_key").to_owned();
    let reg = cli_json(
        &url,
        &[
            "sandboxes",
            "register",
            "--org-id",
            str_of(&boot, "org_id"),
            "--user-id",
            str_of(&boot, "user_id"),
        ],
    );
    let session = str_of(&reg, "session_api_key").to_owned();
    let server = Server::spawn(&url);

    // Load: one webhook batch after another; 200s are recorded, anything else must be 503.
    let stop = Arc::new(AtomicBool::new(false));
    let hook = server.url(&format!("/api/v1/webhooks/events/{CONVERSATION}"));
    let loader = {
        let stop = stop.clone();
        thread::spawn(move || {
            let http = client();
            let mut acked = Vec::new();
            let mut statuses: HashMap<u16, usize> = HashMap::new();
            let mut slowest = Duration::ZERO;
            for seq in 0u64.. {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let id = format!("00000000-0000-4000-8000-{seq:012}");
                let body = format!(
                    r#"[{{"id":"{id}","timestamp":"2026-11-23T10:{:02}:{:02}","kind":"PauseEvent"}}]"#,
                    (seq / 60) % 60,
                    seq % 60
                );
                let began = Instant::now();
                let status = http
                    .post(&hook)
                    .header("X-Session-API-Key", &session)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .map_or(0, |r| r.status().as_u16());
                *statuses.entry(status).or_default() += 1;
                if status != 200 {
                    slowest = slowest.max(began.elapsed());
                }
                if status == 200 {
                    acked.push(id);
                } else {
                    thread::sleep(Duration::from_millis(50));
                }
            }
            (acked, statuses, slowest)
        })
    };
    let http = client();
    let me = || {
        http.get(server.url("/api/v1/users/me"))
            .header("X-Access-Token", &key)
    };
    thread::sleep(Duration::from_millis(800));
    assert_eq!(status_and_time(me()).0, 200);

    cluster.kill().unwrap();
    // Away: 503, fast, and not ready.
    let away = Instant::now();
    let mut slowest = Duration::ZERO;
    while away.elapsed() < Duration::from_secs(4) {
        let (status, took) = status_and_time(me());
        slowest = slowest.max(took);
        assert_eq!(status, 503, "a request while the database is away");
        assert!(took < FAIL_FAST, "a request took {took:?} to fail");
        let (ready, took) = status_and_time(http.get(server.url("/ready")));
        assert_eq!(ready, 503, "/ready while the database is away");
        assert!(took < FAIL_FAST, "/ready took {took:?}");
    }

    cluster.restart().unwrap();
    // Back: the pool recovers by itself.
    let back = Instant::now();
    loop {
        let (status, _) = status_and_time(me());
        let (ready, _) = status_and_time(http.get(server.url("/ready")));
        if status == 200 && ready == 200 {
            break;
        }
        assert!(
            back.elapsed() < Duration::from_secs(30),
            "not recovered: {status} {ready}"
        );
        thread::sleep(Duration::from_millis(100));
    }
    let recovered_in = back.elapsed();
    thread::sleep(Duration::from_millis(800));
    stop.store(true, Ordering::Relaxed);
    let (acked, statuses, slowest_hook) = loader.join().unwrap();
    assert!(
        slowest_hook < FAIL_FAST,
        "a webhook took {slowest_hook:?} to fail"
    );
    assert!(
        statuses.keys().all(|s| *s == 200 || *s == 503),
        "webhooks answered {statuses:?}"
    );
    assert!(
        statuses.get(&503).is_some_and(|n| *n > 0),
        "no 503 while away: {statuses:?}"
    );

    // Everything acknowledged is there, once.
    let mut stored: HashMap<String, usize> = HashMap::new();
    let mut page: Option<String> = None;
    loop {
        let mut u = server.url(&format!(
            "/api/v1/conversation/{CONVERSATION}/events/search?limit=100"
        ));
        if let Some(p) = &page {
            u.push_str(&format!("&page_id={p}"));
        }
        let (status, body) = send_json(http.get(u).header("X-Access-Token", &key));
        assert_eq!(status, 200, "{body}");
        for e in body["items"].as_array().unwrap() {
            *stored
                .entry(e["id"].as_str().unwrap().to_owned())
                .or_default() += 1;
        }
        match body["next_page_id"].as_str() {
            Some(p) => page = Some(p.to_owned()),
            None => break,
        }
    }
    for id in &acked {
        assert_eq!(stored.get(id).copied(), Some(1), "acknowledged event {id}");
    }
    eprintln!(
        "webhooks: {statuses:?}; slowest 503 while away {slowest:?} (webhooks {slowest_hook:?}); recovered {recovered_in:?} after the restart; {} acknowledged events stored once",
        acked.len()
    );
    server.stop(Duration::from_secs(30));
}
