//! The real binary runs sandboxes (the stand-in agent server) and survives its own death:
//! after `kill -9` of Switchboard the sandbox keeps running and, once Switchboard serves again
//! on the same database, is `RUNNING` again with nothing restarted (same pid), while one
//! killed meanwhile is `MISSING`. Also: a bad specs file and a secret key file others can
//! read stop `serve` with a message naming the file.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;
use switchboard_testkit::{Backend, TestDatabase};

fn serve(url: &str, data: &str, specs: &str) -> Server {
    Server::spawn_with(
        url,
        ServeOptions {
            args: vec!["--data-dir", data, "--sandbox-specs", specs],
            env: vec![],
        },
    )
}

/// The stand-in's own pid, from its `/server_info`.
fn agent_pid(url: &str) -> Option<u64> {
    let r = client().get(format!("{url}/server_info")).send().ok()?;
    r.json::<Value>().ok()?["pid"].as_u64()
}

fn kill_pid(pid: u64) {
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status();
}

fn start(server: &Server, key: &str) -> (String, String, u64) {
    let (code, body) = send_json(
        client()
            .post(server.url("/api/v1/sandboxes"))
            .header("X-Access-Token", key),
    );
    assert_eq!(
        (code, &body["status"]),
        (200, &Value::from("STARTING")),
        "{body}"
    );
    let id = body["id"].as_str().unwrap().to_owned();
    let running = wait_sandbox_status(server, key, &id, "RUNNING");
    let url = running["exposed_urls"][0]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    agent_pid(&direct_agent_url(&url)).expect("the stand-in answers");
    let pid = agent_host_pid(&url).expect("the stand-in's process");
    (id, url, pid)
}

fn restart_reconciles(backend: Backend) {
    let db = TestDatabase::new(backend);
    let data = TempDir::new();
    let data_dir = data.path().display().to_string();
    let specs = standin_specs_file(data.path());
    let server = serve(db.url(), &data_dir, &specs);
    let key = server.bootstrap_key();
    let (kept, kept_url, kept_pid) = start(&server, &key);
    let (killed, _, killed_pid) = start(&server, &key);

    drop(server); // SIGKILL: no shutdown of any kind
    kill_pid(killed_pid);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        agent_host_pid(&kept_url),
        Some(kept_pid),
        "{backend}: the sandbox died with Switchboard"
    );

    let server = serve(db.url(), &data_dir, &specs);
    assert!(server.bootstrapped.is_none());
    let info = wait_sandbox_status(&server, &key, &kept, "RUNNING");
    // The same agent server, at the same address behind the proxy's URL.
    let url = info["exposed_urls"][0]["url"].as_str().unwrap();
    assert_eq!(
        (proxied_sandbox(url), direct_agent_url(url)),
        (Some(kept.clone()), direct_agent_url(&kept_url)),
        "{backend}"
    );
    assert_eq!(
        agent_host_pid(&kept_url),
        Some(kept_pid),
        "{backend}: restarted"
    );
    wait_sandbox_status(&server, &key, &killed, "MISSING");
    // Still under control: pause, resume, delete.
    for action in ["pause", "resume"] {
        let (code, body) = send_json(
            client()
                .post(server.url(&format!("/api/v1/sandboxes/{kept}/{action}")))
                .header("X-Access-Token", &key),
        );
        assert_eq!(code, 200, "{backend}: {action}: {body}");
    }
    wait_sandbox_status(&server, &key, &kept, "RUNNING");
    // The agent server itself, not the proxy (which answers nothing for a deleted sandbox).
    let kept_url = direct_agent_url(&kept_url);
    let (code, _) = send_json(
        client()
            .delete(server.url(&format!("/api/v1/sandboxes/{kept}")))
            .header("X-Access-Token", &key),
    );
    assert_eq!(code, 200);
    let deadline = Instant::now() + Duration::from_secs(20);
    while agent_pid(&kept_url).is_some() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let gone = agent_pid(&kept_url).is_none();
    kill_pid(kept_pid);
    assert!(gone, "{backend}: delete left the process running");
}

#[test]
fn restart_reconciles_sqlite() {
    restart_reconciles(Backend::Sqlite);
}

#[test]
fn restart_reconciles_postgres() {
    restart_reconciles(Backend::Postgres);
}

#[test]
fn bad_specs_and_exposed_secret_keys_stop_serve() {
    let db = TestDatabase::new(Backend::Sqlite);
    let data = TempDir::new();
    let data_dir = data.path().display().to_string();
    let bad = data.path().join("bad.json");
    std::fs::write(&bad, r#"[{"id":"a","command":[]}]"#).unwrap();
    let err = cli_error(
        db.url(),
        &[
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--data-dir",
            &data_dir,
            "--sandbox-specs",
            &bad.display().to_string(),
        ],
    );
    assert!(
        err.contains(&format!("{}: [0].command", bad.display())),
        "{err}"
    );

    let key_file = data.path().join("secret.key");
    std::fs::write(&key_file, "00".repeat(32)).unwrap();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let err = cli_error(
        db.url(),
        &["serve", "--bind", "127.0.0.1:0", "--data-dir", &data_dir],
    );
    assert!(
        err.contains(&key_file.display().to_string()) && err.contains("chmod 600"),
        "{err}"
    );
}
