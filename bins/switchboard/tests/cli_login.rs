//! OpenHands' CLI (`openhands` 1.16.0, unchanged) logs in to Switchboard with a key already
//! stored (issue 31): `openhands login --server-url URL` checks the key (`GET
//! /api/v1/users/me`), reads the member's own LLM key (`GET /api/keys/llm/byor`) and settings
//! (`GET /api/v1/settings`), and writes its local agent settings (`agent_settings.json`) with
//! the member's model, base URL and key. On both backends, against the real binary. Without the
//! CLI's venv on this machine the test says so and passes (`scripts/e2e.sh prepare` makes it).

use crate::common;

use std::process::Command;

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const MODEL: &str = "openai/member-cli-model";
const BASE_URL: &str = "http://127.0.0.1:9/v1";
const LLM_KEY: &str = "sk-member-cli-Qe4Rt7Yu1Io";

#[test]
fn cli_login_sqlite() {
    cli_login(Backend::Sqlite);
}

#[test]
fn cli_login_postgres() {
    cli_login(Backend::Postgres);
}

/// A member of `org` and an API key of theirs bound to it.
fn member(db: &str, org: &str) -> String {
    add_member(db, org, "cli-member@example.com", "member").1
}

fn cli_login(backend: Backend) {
    let Some(cli) = switchboard_testkit::openhands_cli() else {
        eprintln!(
            "skipped: no OpenHands CLI venv on this machine (scripts/e2e.sh prepare makes it)"
        );
        return;
    };
    let db = TestDatabase::new(backend);
    let data = TempDir::new();
    let data_dir = data.path().display().to_string();
    let server = Server::spawn_with(
        db.url(),
        ServeOptions {
            args: vec!["--data-dir", &data_dir],
            env: vec![("SWITCHBOARD_LOG", "info")],
        },
    );
    let org = server.bootstrapped.clone().unwrap();
    let key = member(db.url(), str_of(&org, "org_id"));
    let (status, body) = send_json(
        client()
            .post(server.url("/api/v1/settings"))
            .header("X-Access-Token", &key)
            .json(&json!({"agent_settings_diff": {"llm": {
                "model": MODEL, "base_url": BASE_URL, "api_key": LLM_KEY}}})),
    );
    assert_eq!(status, 200, "{backend}: {body}");

    // The key where `openhands login` stores it: <persistence dir>/cloud/api_key.txt.
    let home = TempDir::new();
    let persistence = home.path().join(".openhands");
    std::fs::create_dir_all(persistence.join("cloud")).unwrap();
    std::fs::write(persistence.join("cloud/api_key.txt"), &key).unwrap();
    let out = Command::new(&cli)
        .args(["login", "--server-url", &server.url("")])
        .env("HOME", home.path())
        .env("OPENHANDS_PERSISTENCE_DIR", &persistence)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "200")
        .output()
        .expect("running openhands login");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{backend}: {stdout}\n{stderr}");
    assert!(
        stdout.contains("Settings synchronized successfully"),
        "{backend}: {stdout}\n{stderr}"
    );

    // Its agent settings: the member's model, base URL and key.
    let path = persistence.join("agent_settings.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{backend}: {}: {e}\n{stdout}\n{stderr}", path.display()));
    let saved: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (
            saved["llm"]["model"].as_str(),
            saved["llm"]["base_url"].as_str()
        ),
        (Some(MODEL), Some(BASE_URL)),
        "{backend}: {text}"
    );
    assert!(
        text.contains(LLM_KEY),
        "{backend}: the member's key is not in {text}"
    );

    // What the CLI asked for, in its order, each answered 200 (the access log's lines).
    let served: Vec<String> = server
        .stderr_lines()
        .into_iter()
        .filter(|l| l.contains("switchboard::access"))
        .collect();
    let mut from = 0;
    for path in ["/api/v1/users/me", "/api/keys/llm/byor", "/api/v1/settings"] {
        let needle = format!("route={path} ");
        let i = served[from..]
            .iter()
            .position(|l| l.contains(&needle))
            .unwrap_or_else(|| panic!("{backend}: no {path} after the previous: {served:#?}"));
        assert!(
            served[from + i].contains("status=200"),
            "{backend}: {}",
            served[from + i]
        );
        from += i + 1;
    }
}
