//! `switchboard serve` as a black box, on SQLite and PostgreSQL: first-start bootstrap,
//! the printed address and key, restarts that keep everything, request ids and JSON logs.

use crate::common;

use std::time::Duration;

use common::{ServeOptions, Server, client, send_json, str_of};
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const STOP_TIMEOUT: Duration = Duration::from_secs(10);

#[test]
fn first_start_bootstraps_and_a_restart_keeps_everything() {
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        let server = Server::spawn(db.url());
        let boot = server.bootstrapped.clone().expect("a bootstrapped line");
        assert_eq!(boot["event"], "bootstrapped", "{backend}");
        for k in ["org_id", "user_id"] {
            assert_eq!(str_of(&boot, k).len(), 36, "{backend}: {boot:?}");
        }
        let key = server.bootstrap_key();
        assert!(key.starts_with("sb_"), "{backend}: {key}");
        let port = server.socket_addr().port();
        assert_ne!(port, 0, "{backend}");
        assert_eq!(
            server.address,
            format!("http://127.0.0.1:{port}"),
            "{backend}"
        );

        let http = client();
        let (status, settings) = send_json(
            http.get(server.url("/api/organizations/app"))
                .header("X-Access-Token", &key),
        );
        assert_eq!(status, 200, "{backend}: {settings}");
        assert_eq!(settings["max_budget_per_task"], Value::Null, "{backend}");

        let (status, changed) = send_json(
            http.post(server.url("/api/organizations/app"))
                .header("X-Access-Token", &key)
                .json(&json!({ "max_budget_per_task": 12.5 })),
        );
        assert_eq!(status, 200, "{backend}: {changed}");
        assert_eq!(changed["max_budget_per_task"], 12.5, "{backend}");

        let (status, me) = send_json(
            http.get(server.url("/api/v1/users/me"))
                .header("Authorization", format!("Bearer {key}")),
        );
        assert_eq!(status, 200, "{backend}: {me}");
        assert_eq!(me["role"], "owner", "{backend}: {me}");
        assert_eq!(me["org_id"], boot["org_id"], "{backend}: {me}");
        assert_eq!(me["user_id"], boot["user_id"], "{backend}: {me}");

        let (status, body) = send_json(http.get(server.url("/api/organizations/app")));
        assert_eq!(status, 401, "{backend}: {body}");

        // Nothing else is printed on stdout while serving.
        assert_eq!(server.next_stdout_line(Duration::from_millis(100)), None);
        server.stop(STOP_TIMEOUT);

        // Second start: no bootstrap, same data, same key.
        let server = Server::spawn(db.url());
        assert!(
            server.bootstrapped.is_none(),
            "{backend}: bootstrapped again: {:?}",
            server.bootstrapped
        );
        let (status, settings) = send_json(
            http.get(server.url("/api/organizations/app"))
                .header("X-Access-Token", &key),
        );
        assert_eq!(status, 200, "{backend}: {settings}");
        assert_eq!(settings["max_budget_per_task"], 12.5, "{backend}");
        assert_eq!(settings["updated_at"], changed["updated_at"], "{backend}");
        let (status, me) = send_json(
            http.get(server.url("/api/v1/users/me"))
                .header("X-Access-Token", &key),
        );
        assert_eq!(status, 200, "{backend}: {me}");
        assert_eq!(me["role"], "owner", "{backend}");
        server.stop(STOP_TIMEOUT);
    }
}

#[test]
fn serve_applies_migrations_on_a_migrated_but_empty_database_and_bootstraps() {
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        common::cli_json(db.url(), &["migrate"]);
        let server = Server::spawn(db.url());
        assert!(server.bootstrapped.is_some(), "{backend}");
        drop(server);
        // Killed (not stopped) servers lose nothing committed either.
        let server = Server::spawn(db.url());
        assert!(server.bootstrapped.is_none(), "{backend}");
    }
}

#[test]
fn operator_keys_work_against_the_server() {
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        let boot = common::cli_json(db.url(), &["bootstrap"]);
        let server = Server::spawn(db.url());
        assert!(
            server.bootstrapped.is_none(),
            "{backend}: the CLI bootstrap counts"
        );
        let http = client();
        let key = str_of(&boot, "api_key");
        let (status, me) = send_json(
            http.get(server.url("/api/v1/users/me"))
                .header("X-Access-Token", key),
        );
        assert_eq!(status, 200, "{backend}: {me}");
        assert_eq!(me["role"], "owner", "{backend}");

        // A key revoked through the CLI stops working within the key cache's time to live
        // (1 s; on PostgreSQL as soon as the CLI's NOTIFY arrives: API.md, "API keys: lookups
        // from a per-replica cache").
        let list = common::cli_json(
            db.url(),
            &["keys", "list", "--user-id", str_of(&boot, "user_id")],
        );
        let id = list["items"][0]["id"].as_str().unwrap();
        common::cli_json(db.url(), &["keys", "revoke", "--id", id]);
        let revoked = std::time::Instant::now();
        loop {
            let (status, body) = send_json(
                http.get(server.url("/api/v1/users/me"))
                    .header("X-Access-Token", key),
            );
            if status == 401 {
                break;
            }
            assert_eq!(status, 200, "{backend}: {body}");
            assert!(
                revoked.elapsed() < std::time::Duration::from_millis(1500),
                "{backend}: the revoked key still works"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

#[test]
fn health_openapi_and_metrics() {
    let db = TestDatabase::new(Backend::Sqlite);
    let server = Server::spawn(db.url());
    let http = client();
    let (status, body) = send_json(http.get(server.url("/health")));
    assert_eq!((status, body), (200, json!({ "status": "ok" })));
    let (status, body) = send_json(http.get(server.url("/ready")));
    assert_eq!(status, 200, "{body}");
    let (status, body) = send_json(http.get(server.url("/openapi.json")));
    assert_eq!(status, 200);
    assert!(body["paths"]["/api/organizations/app"].is_object());
    let res = http.get(server.url("/metrics")).send().unwrap();
    assert_eq!(res.status(), 200);
    assert!(!res.text().unwrap().is_empty());
}

#[test]
fn responses_carry_a_request_id() {
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        let server = Server::spawn(db.url());
        let key = server.bootstrap_key();
        let http = client();
        let mut seen = Vec::new();
        for (path, with_key, expected) in [
            ("/api/organizations/app", true, 200),
            ("/api/organizations/app", false, 401),
            ("/no/such/route", false, 404),
            ("/health", false, 200),
        ] {
            let mut req = http.get(server.url(path));
            if with_key {
                req = req.header("X-Access-Token", &key);
            }
            let res = req.send().unwrap();
            assert_eq!(res.status().as_u16(), expected, "{backend}: {path}");
            let id = res
                .headers()
                .get("x-request-id")
                .unwrap_or_else(|| panic!("{backend}: {path}: no x-request-id"))
                .to_str()
                .unwrap()
                .to_owned();
            assert!(!id.is_empty(), "{backend}: {path}");
            assert!(!seen.contains(&id), "{backend}: {id} repeated");
            seen.push(id);
        }
        let res = http
            .get(server.url("/api/organizations/app"))
            .header("X-Access-Token", &key)
            .header("x-request-id", "test-req-1")
            .send()
            .unwrap();
        assert_eq!(res.status(), 200, "{backend}");
        assert_eq!(res.headers()["x-request-id"], "test-req-1", "{backend}");
    }
}

#[test]
fn json_logs_carry_the_request_id() {
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        let server = Server::spawn_with(
            db.url(),
            ServeOptions {
                args: vec!["--log-format", "json"],
                env: vec![("SWITCHBOARD_LOG", "debug")],
            },
        );
        let key = server.bootstrap_key();
        let res = client()
            .get(server.url("/api/organizations/app"))
            .header("X-Access-Token", &key)
            .header("x-request-id", "test-req-1")
            .send()
            .unwrap();
        assert_eq!(res.status(), 200, "{backend}");
        assert_eq!(res.headers()["x-request-id"], "test-req-1", "{backend}");
        let line = server
            .wait_for_stderr("\"request_id\":\"test-req-1\"", Duration::from_secs(10))
            .unwrap_or_else(|| {
                panic!(
                    "{backend}: no log line with the request id; stderr:\n{}",
                    server.stderr_lines().join("\n")
                )
            });
        let _: serde_json::Map<String, Value> = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("{backend}: not a JSON object ({e}): {line}"));
        server.stop(STOP_TIMEOUT);
    }
}

#[test]
fn json_log_lines_are_json_objects() {
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        let server = Server::spawn_with(
            db.url(),
            ServeOptions {
                args: vec!["--log-format", "json"],
                env: vec![("SWITCHBOARD_LOG", "debug")],
            },
        );
        let key = server.bootstrap_key();
        let http = client();
        for path in ["/api/organizations/app", "/nope", "/health"] {
            http.get(server.url(path))
                .header("X-Access-Token", &key)
                .send()
                .unwrap();
        }
        // The logs may trail the responses: wait for the last request's line, then check
        // every line so far.
        assert!(
            server
                .wait_for_stderr("listening", Duration::from_secs(10))
                .is_some(),
            "{backend}: {:?}",
            server.stderr_lines()
        );
        server
            .wait_for_stderr("/health", Duration::from_secs(10))
            .unwrap_or_else(|| panic!("{backend}: {:?}", server.stderr_lines()));
        let lines = server.stderr_lines();
        assert!(!lines.is_empty(), "{backend}");
        for line in &lines {
            match serde_json::from_str::<Value>(line) {
                Ok(Value::Object(obj)) => {
                    assert!(obj.contains_key("level"), "{backend}: {line}");
                    assert!(obj.contains_key("timestamp"), "{backend}: {line}");
                }
                other => panic!("{backend}: not a JSON object: {line} ({other:?})"),
            }
        }
        // Same with the format from the environment, at the default level.
        drop(server);
        let server = Server::spawn_with(
            db.url(),
            ServeOptions {
                args: vec![],
                env: vec![("SWITCHBOARD_LOG_FORMAT", "json")],
            },
        );
        let line = server
            .wait_for_stderr("listening", Duration::from_secs(10))
            .unwrap_or_else(|| panic!("{backend}: {:?}", server.stderr_lines()));
        assert!(
            serde_json::from_str::<serde_json::Map<String, Value>>(&line).is_ok(),
            "{backend}: {line}"
        );
        for line in server.stderr_lines() {
            assert!(
                serde_json::from_str::<serde_json::Map<String, Value>>(&line).is_ok(),
                "{backend}: {line}"
            );
        }
    }
}
