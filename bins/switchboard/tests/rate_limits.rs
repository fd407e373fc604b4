//! `--rate-limit-per-key` and `--rate-limit-per-ip` through the real binary: a burst of N
//! passes, the rest is 429 `{"detail"}` with `Retry-After`; the health routes are never
//! limited; webhooks are limited by session key and every batch is either stored (200) or
//! refused with 429, never dropped.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use switchboard_testkit::{Backend, TestDatabase};

/// Requests per second (and burst) configured in these tests.
const N: u32 = 3;

/// Sends `count` requests made by `make` as fast as possible; the statuses, and how long it took.
#[allow(clippy::type_complexity)]
fn burst(
    count: usize,
    make: impl Fn(usize) -> reqwest::blocking::RequestBuilder,
) -> (
    Vec<u16>,
    Vec<(u16, Option<String>, serde_json::Value)>,
    Duration,
) {
    let started = Instant::now();
    let mut statuses = Vec::new();
    let mut refused = Vec::new();
    for i in 0..count {
        let r = make(i).send().unwrap();
        let status = r.status().as_u16();
        statuses.push(status);
        if status == 429 {
            let retry = r
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_owned());
            refused.push((status, retry, r.json().unwrap()));
        }
    }
    (statuses, refused, started.elapsed())
}

/// At most the burst plus what refilled while the requests ran (one more for rounding).
fn admitted_bound(elapsed: Duration) -> usize {
    N as usize + (elapsed.as_secs_f64() * f64::from(N)).ceil() as usize + 1
}

fn assert_refusals(refused: &[(u16, Option<String>, serde_json::Value)]) {
    assert!(!refused.is_empty(), "nothing was refused");
    for (_, retry, body) in refused {
        let secs: u64 = retry
            .as_deref()
            .expect("429 without Retry-After")
            .parse()
            .unwrap();
        assert!((1..=2).contains(&secs), "Retry-After {secs}");
        assert_eq!(body, &json!({"detail": "Too many requests, retry later"}));
    }
}

fn per_key(backend: Backend) {
    let db = TestDatabase::new(backend);
    let n = N.to_string();
    let server = Server::spawn_with(
        db.url(),
        ServeOptions {
            args: vec!["--rate-limit-per-key", &n],
            env: vec![],
        },
    );
    let key = server.bootstrap_key();
    let boot = server.bootstrapped.clone().unwrap();
    let http = client();
    let me = server.url("/api/v1/users/me");

    let (statuses, refused, elapsed) = burst(30, |_| http.get(&me).header("X-Access-Token", &key));
    let ok = statuses.iter().filter(|s| **s == 200).count();
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 429),
        "{backend}: {statuses:?}"
    );
    assert!(
        ok >= N as usize,
        "{backend}: the burst was refused: {statuses:?}"
    );
    assert!(
        ok <= admitted_bound(elapsed),
        "{backend}: {ok} admitted in {elapsed:?}"
    );
    assert_refusals(&refused);

    // Another key has its own bucket; health routes are never limited.
    let (_, other) = send_json(
        http.post(server.url("/api/keys"))
            .header("X-Access-Token", &key)
            .json(&json!({"name": "second"})),
    );
    // The key above may itself have been refused: retry once after the refill.
    let other = match other["api_key"].as_str() {
        Some(k) => k.to_owned(),
        None => {
            std::thread::sleep(Duration::from_millis(1100));
            let (status, body) = send_json(
                http.post(server.url("/api/keys"))
                    .header("X-Access-Token", &key)
                    .json(&json!({"name": "second"})),
            );
            assert_eq!(status, 200, "{backend}: {body}");
            body["api_key"].as_str().unwrap().to_owned()
        }
    };
    let (status, _) = send_json(http.get(&me).header("X-Access-Token", &other));
    assert_eq!(status, 200, "{backend}: a fresh key was limited");
    for _ in 0..20 {
        let (status, _) = send_json(http.get(server.url("/health")));
        assert_eq!(status, 200, "{backend}: /health was limited");
    }

    // After Retry-After the key is admitted again.
    std::thread::sleep(Duration::from_millis(1100));
    let (status, _) = send_json(http.get(&me).header("X-Access-Token", &key));
    assert_eq!(status, 200, "{backend}: not admitted after the refill");

    // Webhooks: limited by session key; every batch is stored (200) or refused (429).
    let reg = cli_json(
        db.url(),
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
    let conv = "6c1d7c2e-3f7a-4b8e-9d2c-1a2b3c4d5e6f";
    let hook = server.url(&format!("/api/v1/webhooks/events/{conv}"));
    let event_id = |i: usize| format!("00000000-0000-4000-8000-{i:012}");
    let (statuses, refused, elapsed) = burst(30, |i| {
        http.post(&hook)
            .header("X-Session-API-Key", &session)
            .header("content-type", "application/json")
            .body(format!(
                r#"[{{"id":"{}","timestamp":"2026-11-23T10:00:{:02}","kind":"PauseEvent"}}]"#,
                event_id(i),
                i
            ))
    });
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 429),
        "{backend}: {statuses:?}"
    );
    let ok: Vec<usize> = (0..statuses.len())
        .filter(|i| statuses[*i] == 200)
        .collect();
    assert!(ok.len() <= admitted_bound(elapsed), "{backend}: {ok:?}");
    assert_refusals(&refused);
    // Read back with the owner's key (after its bucket refilled): exactly the 200s.
    std::thread::sleep(Duration::from_millis(1100));
    let (status, body) = send_json(
        http.get(server.url(&format!(
            "/api/v1/conversation/{conv}/events/search?limit=100"
        )))
        .header("X-Access-Token", &key),
    );
    assert_eq!(status, 200, "{backend}: {body}");
    let mut stored: Vec<String> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    stored.sort();
    let want: Vec<String> = ok.iter().map(|i| event_id(*i)).collect();
    assert_eq!(
        stored, want,
        "{backend}: stored events are not the acknowledged ones"
    );
    server.stop(Duration::from_secs(30));
}

#[test]
fn per_key_sqlite() {
    per_key(Backend::Sqlite);
}

#[test]
fn per_key_postgres() {
    per_key(Backend::Postgres);
}

/// The address limit counts every request of a client whatever its credential, before
/// authentication: garbage keys are refused with 429, not 401, once over it.
#[test]
fn per_ip_counts_every_request_before_authentication() {
    let db = TestDatabase::new(Backend::Sqlite);
    let n = N.to_string();
    let server = Server::spawn_with(
        db.url(),
        ServeOptions {
            args: vec!["--rate-limit-per-ip", &n],
            env: vec![],
        },
    );
    let http = client();
    let me = server.url("/api/v1/users/me");
    let (statuses, refused, elapsed) = burst(30, |i| {
        http.get(&me)
            .header("X-Access-Token", format!("sb_garbage_{i}"))
    });
    let unauthorized = statuses.iter().filter(|s| **s == 401).count();
    assert!(
        statuses.iter().all(|s| *s == 401 || *s == 429),
        "{statuses:?}"
    );
    assert!(unauthorized >= N as usize, "{statuses:?}");
    assert!(unauthorized <= admitted_bound(elapsed), "{statuses:?}");
    assert_refusals(&refused);
    let (status, _) = send_json(http.get(server.url("/ready")));
    assert_eq!(status, 200, "/ready was limited");
    server.stop(Duration::from_secs(30));
}

/// Off by default: a burst far over any small limit is served.
#[test]
fn off_by_default() {
    let db = TestDatabase::new(Backend::Sqlite);
    let server = Server::spawn(db.url());
    let key = server.bootstrap_key();
    let http = client();
    let me = server.url("/api/v1/users/me");
    let (statuses, _, _) = burst(50, |_| http.get(&me).header("X-Access-Token", &key));
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    server.stop(Duration::from_secs(30));
}
