//! No secret in a log line, an error body or a metric: a full session against the real binary
//! with every log at `debug` (and `trace` for Switchboard's own crates) issues API keys
//! (bootstrap, created, revoked, expired), starts a sandbox (stand-in agent server) and registers
//! one (session keys), posts webhooks, and provokes the errors a secret could leak through:
//! wrong, revoked and swapped credentials, a key bound to another organization, bad bodies,
//! unknown resources. Then every secret it issued is looked for in Switchboard's stderr, in
//! every error body, and in `/metrics`: none may appear, whole or its random part.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

/// What the session saw: error bodies and the secrets it was given.
#[derive(Default)]
struct Seen {
    secrets: Vec<String>,
    error_bodies: Vec<String>,
}

impl Seen {
    /// Sends `req`; keeps the body when the status is an error.
    fn send(&mut self, req: reqwest::blocking::RequestBuilder) -> (u16, Value) {
        let r = req.send().unwrap();
        let status = r.status().as_u16();
        let text = r.text().unwrap();
        if status >= 400 {
            self.error_bodies.push(format!("{status} {text}"));
        }
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }
}

fn session(backend: Backend) {
    let db = TestDatabase::new(backend);
    let data = TempDir::new();
    let specs = data.path().join("specs.json");
    std::fs::write(
        &specs,
        json!([{
            "id": "standin",
            "command": [python(), switchboard_testkit::standin_agent_server()],
        }])
        .to_string(),
    )
    .unwrap();
    let data_dir = data.path().display().to_string();
    let specs = specs.display().to_string();
    let server = Server::spawn_with(
        db.url(),
        ServeOptions {
            args: vec!["--data-dir", &data_dir, "--sandbox-specs", &specs],
            env: vec![("SWITCHBOARD_LOG", "debug,switchboard=trace")],
        },
    );
    let boot = server.bootstrapped.clone().unwrap();
    let owner = server.bootstrap_key();
    let org = str_of(&boot, "org_id").to_owned();
    let user = str_of(&boot, "user_id").to_owned();
    let http = client();
    let mut seen = Seen::default();
    seen.secrets.push(owner.clone());
    let url = |p: &str| server.url(p);

    // API keys: one kept, one revoked, one already expired.
    let new_key = |seen: &mut Seen, body: Value| {
        let (status, k) = seen.send(
            http.post(url("/api/keys"))
                .header("X-Access-Token", &owner)
                .json(&body),
        );
        assert_eq!(status, 200, "{backend}: {k}");
        let secret = k["api_key"].as_str().unwrap().to_owned();
        seen.secrets.push(secret.clone());
        (k["id"].as_str().unwrap().to_owned(), secret)
    };
    let (_, kept) = new_key(&mut seen, json!({"name": "kept"}));
    let (revoked_id, revoked) = new_key(&mut seen, json!({"name": "revoked"}));
    // Expires in 2 s (a past expiry is refused at creation); used after it passed.
    let soon = std::process::Command::new("date")
        .args(["-u", "-d", "+2 seconds", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .unwrap();
    let soon = String::from_utf8(soon.stdout).unwrap().trim().to_owned();
    let (_, expired) = new_key(&mut seen, json!({"name": "expired", "expires_at": soon}));
    let expires = Instant::now() + Duration::from_secs(3);
    let (status, _) = seen.send(
        http.delete(url(&format!("/api/keys/{revoked_id}")))
            .header("X-Access-Token", &owner),
    );
    assert_eq!(status, 200, "{backend}: revoke");

    // A started sandbox (its session key is in its info once running) and a registered one.
    let (status, started) = seen.send(
        http.post(url("/api/v1/sandboxes"))
            .header("X-Access-Token", &kept),
    );
    assert_eq!(status, 200, "{backend}: start: {started}");
    let sandbox_id = started["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    let running = loop {
        let (_, batch) = seen.send(
            http.get(url(&format!("/api/v1/sandboxes?id={sandbox_id}")))
                .header("X-Access-Token", &kept),
        );
        if batch[0]["status"] == "RUNNING" {
            break batch[0].clone();
        }
        assert!(Instant::now() < deadline, "{backend}: {batch}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let started_session = running["session_api_key"].as_str().unwrap().to_owned();
    seen.secrets.push(started_session.clone());
    let reg = cli_json(
        db.url(),
        &[
            "sandboxes",
            "register",
            "--org-id",
            &org,
            "--user-id",
            &user,
        ],
    );
    let registered = str_of(&reg, "session_api_key").to_owned();
    seen.secrets.push(registered.clone());

    // Webhooks: a good batch, a bad one, a wrong key, an API key in place of a session key.
    let conv = "5a0f6f9e-2b1d-4c3e-8f7a-9b8c7d6e5f4a";
    let hook = url(&format!("/api/v1/webhooks/events/{conv}"));
    let event = r#"[{"id":"11111111-2222-4333-8444-555555555555","timestamp":"2026-11-23T10:00:00","kind":"PauseEvent"}]"#;
    for (session_key, body, want) in [
        (registered.as_str(), event, 200),
        (started_session.as_str(), event, 200),
        (registered.as_str(), r#"{"kind":"PauseEvent"}"#, 422),
        (registered.as_str(), "{not json", 422),
        (&format!("{registered}x"), event, 401),
        (&registered[..registered.len() - 1], event, 401),
        (kept.as_str(), event, 401),
    ] {
        let (status, got) = seen.send(
            http.post(&hook)
                .header("X-Session-API-Key", session_key)
                .header("content-type", "application/json")
                .body(body),
        );
        assert_eq!(status, want, "{backend}: webhook: {got}");
    }

    // API routes with bad credentials and bad requests.
    std::thread::sleep(expires.saturating_duration_since(Instant::now()));
    let other_org = uuid::Uuid::new_v4().to_string();
    let probes: Vec<(reqwest::blocking::RequestBuilder, u16)> = vec![
        (
            http.get(url("/api/v1/users/me"))
                .header("X-Access-Token", &revoked),
            401,
        ),
        (
            http.get(url("/api/v1/users/me"))
                .header("X-Access-Token", &expired),
            401,
        ),
        (
            http.get(url("/api/v1/users/me"))
                .header("X-Access-Token", format!("{kept}x")),
            401,
        ),
        (
            http.get(url("/api/v1/users/me")).bearer_auth(&registered),
            401,
        ),
        (
            http.get(url("/api/v1/users/me"))
                .header("X-Access-Token", &started_session),
            401,
        ),
        (
            http.get(url("/api/v1/users/me"))
                .header("X-Access-Token", &kept)
                .header("X-Org-Id", &other_org),
            403,
        ),
        (
            http.post(url("/api/keys"))
                .header("X-Access-Token", &kept)
                .header("content-type", "application/json")
                .body("[1,"),
            422,
        ),
        (
            http.delete(url(&format!("/api/keys/{}", uuid::Uuid::new_v4())))
                .header("X-Access-Token", &kept),
            404,
        ),
        (
            http.post(url("/api/v1/sandboxes?sandbox_spec_id=nope"))
                .header("X-Access-Token", &kept),
            400,
        ),
    ];
    for (req, want) in probes {
        let (status, got) = seen.send(req);
        assert_eq!(status, want, "{backend}: {got}");
    }

    // The sandbox goes away; its key stops working.
    let (status, _) = seen.send(
        http.delete(url(&format!("/api/v1/sandboxes/{sandbox_id}")))
            .header("X-Access-Token", &kept),
    );
    assert_eq!(status, 200, "{backend}: delete");
    let (status, _) = seen.send(
        http.post(&hook)
            .header("X-Session-API-Key", &started_session)
            .header("content-type", "application/json")
            .body(event),
    );
    assert_eq!(status, 401, "{backend}: a deleted sandbox's key");

    let metrics = http.get(url("/metrics")).send().unwrap().text().unwrap();
    assert!(metrics.contains("http_requests"), "{backend}: {metrics}");
    let mut server = server;
    server.sigterm();
    server.wait_exit(Duration::from_secs(30));
    let logs = server.stderr_lines();
    // The logs are really at debug level (request lines are there).
    assert!(
        logs.iter().any(|l| l.contains("DEBUG")),
        "{backend}: no debug line logged"
    );
    assert!(seen.error_bodies.len() >= 15, "{}", seen.error_bodies.len());

    for secret in &seen.secrets {
        // The whole secret, and its random part (after the `sb_`/`sbs_` prefix), minus a few
        // characters so a truncated copy is caught too.
        let random = secret.split_once('_').map_or(secret.as_str(), |(_, r)| r);
        let needles = [secret.as_str(), &random[..random.len().min(16)]];
        for needle in needles {
            for line in &logs {
                assert!(
                    !line.contains(needle),
                    "{backend}: a secret in a log line: {line}"
                );
            }
            for body in &seen.error_bodies {
                assert!(
                    !body.contains(needle),
                    "{backend}: a secret in an error body: {body}"
                );
            }
            assert!(!metrics.contains(needle), "{backend}: a secret in /metrics");
        }
    }
}

#[test]
fn no_secret_leaks_sqlite() {
    session(Backend::Sqlite);
}

#[test]
fn no_secret_leaks_postgres() {
    session(Backend::Postgres);
}
