//! Members managed by an admin through the API and by the operator's commands (issue 34),
//! against the real binary: `users list|disable|enable|remove`, `members remove`, `audit list`;
//! on PostgreSQL with two replicas, a member removed through one is refused by the other, and
//! a user disabled by the CLI is refused by both, each within a second (the key caches are
//! dropped by `NOTIFY`).

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const STOP_TIMEOUT: Duration = Duration::from_secs(10);

#[test]
fn members_admin_sqlite() {
    members_admin(Backend::Sqlite);
}

#[test]
fn members_admin_postgres() {
    members_admin(Backend::Postgres);
}

fn call(server: &Server, method: reqwest::Method, path: &str, key: &str) -> (u16, Value) {
    send_json(
        client()
            .request(method, server.url(path))
            .header("X-Access-Token", key),
    )
}

/// Polls `GET /api/v1/users/me` with `key` on `server` until it answers `status` (with
/// `detail`, for a refusal): the time
/// it took, at most 1.5 s (the key cache's time to live is 1 s; `NOTIFY` is faster).
#[track_caller]
fn refused_within(server: &Server, key: &str, status: u16, detail: &str) -> Duration {
    let start = Instant::now();
    loop {
        let (s, body) = call(server, reqwest::Method::GET, "/api/v1/users/me", key);
        if s == status && (status == 200 || body["detail"] == detail) {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < Duration::from_millis(1500),
            "still {s}: {body}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn members_admin(backend: Backend) {
    let db = TestDatabase::new(backend);
    let url = db.url();
    let a = Server::spawn(url);
    let owner_key = a.bootstrap_key();
    // On SQLite one server; on PostgreSQL a second replica of the same database.
    let b = (backend == Backend::Postgres).then(|| Server::spawn(url));
    let other = b.as_ref().unwrap_or(&a);
    let org = str_of(&cli_json(url, &["bootstrap"]), "org_id").to_owned();
    let (admin, admin_key) = add_member(url, &org, "admin@example.com", "admin");
    let (dev, dev_key) = add_member(url, &org, "dev@example.com", "member");

    // users list: oldest first, filtered, in pages.
    let all = cli_json(url, &["users", "list"]);
    let emails: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["email"].as_str().unwrap())
        .collect();
    assert_eq!(
        emails,
        ["admin@localhost", "admin@example.com", "dev@example.com"],
        "{backend}"
    );
    let one = cli_json(url, &["users", "list", "--email", "DEV"]);
    assert_eq!(one["items"][0]["user_id"], dev.as_str(), "{backend}");
    let first = cli_json(url, &["users", "list", "--limit", "2"]);
    let next = first["next_after"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let rest = cli_json(url, &["users", "list", "--limit", "2", "--after", &next]);
    assert_eq!(rest["items"].as_array().unwrap().len(), 1, "{backend}");
    assert_eq!(rest["next_after"], Value::Null, "{backend}");

    // An admin removes the member through one replica; the other refuses their key within a
    // second (it was bound to the organization: revoked).
    let (status, body) = call(other, reqwest::Method::GET, "/api/v1/users/me", &dev_key);
    assert_eq!(status, 200, "{backend}: {body}");
    let (status, body) = call(
        &a,
        reqwest::Method::DELETE,
        &format!("/api/organizations/{org}/members/{dev}"),
        &admin_key,
    );
    assert_eq!(
        (status, body),
        (200, json!({"message": "Member removed successfully"})),
        "{backend}"
    );
    let took = refused_within(other, &dev_key, 401, "API key revoked");
    eprintln!("{backend}: a removed member refused by the other replica after {took:?}");

    // The operator disables the admin: both replicas refuse at once; enabled, accepted again.
    let disabled = cli_json(url, &["users", "disable", "--user-id", &admin]);
    assert!(
        disabled["disabled_at"].is_string(),
        "{backend}: {disabled:?}"
    );
    let took = refused_within(other, &admin_key, 401, "User is disabled");
    eprintln!("{backend}: a disabled user refused by the other replica after {took:?}");
    refused_within(&a, &admin_key, 401, "User is disabled");
    let enabled = cli_json(url, &["users", "enable", "--user-id", &admin]);
    assert_eq!(enabled["disabled_at"], Value::Null, "{backend}");
    refused_within(other, &admin_key, 200, "");

    // The last owner stays; the only owner is not removed; a user is, with their keys.
    let owner = str_of(&cli_json(url, &["bootstrap"]), "user_id").to_owned();
    let refused = cli_error(
        url,
        &["members", "remove", "--org-id", &org, "--user-id", &owner],
    );
    assert!(refused.contains("last owner"), "{backend}: {refused}");
    let refused = cli_error(url, &["users", "remove", "--user-id", &owner]);
    assert!(refused.contains("only owner"), "{backend}: {refused}");
    let removed = cli_json(
        url,
        &["members", "remove", "--org-id", &org, "--user-id", &admin],
    );
    assert_eq!(removed["role"], "admin", "{backend}");
    let removed = cli_json(url, &["users", "remove", "--user-id", &admin]);
    assert_eq!(removed["removed"], true, "{backend}");
    refused_within(other, &admin_key, 401, "Invalid API key");

    // The audit log: the organization's through the API and the CLI alike, newest first;
    // the changes to users as a whole through the CLI.
    let (status, page) = call(
        other,
        reqwest::Method::GET,
        &format!("/api/organizations/{org}/audit-log"),
        &owner_key,
    );
    assert_eq!(status, 200, "{backend}: {page}");
    let api_actions: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        api_actions,
        [
            "member.removed",
            "member.removed",
            "member.added",
            "member.added"
        ],
        "{backend}"
    );
    assert_eq!(
        page["items"][1]["actor_email"], "admin@example.com",
        "{backend}"
    );
    assert_eq!(page["items"][1]["remote_addr"], "127.0.0.1", "{backend}");
    let cli_log = cli_json(url, &["audit", "list", "--org-id", &org]);
    let ids = |items: &Value| -> Vec<i64> {
        items
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(ids(&cli_log["items"]), ids(&page["items"]), "{backend}");
    assert_eq!(cli_log["items"][0]["actor"], "operator", "{backend}");
    let users_log = cli_json(url, &["audit", "list"]);
    let actions: Vec<&str> = users_log["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["user.removed", "user.enabled", "user.disabled"],
        "{backend}"
    );
    assert_eq!(
        users_log["items"][0]["target"]["email"], "admin@example.com",
        "{backend}"
    );

    if let Some(b) = b {
        b.stop(STOP_TIMEOUT);
    }
    a.stop(STOP_TIMEOUT);
}
