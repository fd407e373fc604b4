//! `serve` as a normal user (issue 18, "Process runtime"; the README's quick start): with
//! unprivileged user namespaces its process sandboxes are confined by bwrap in namespaces of
//! their own (as Switchboard's user); without them `serve` refuses the process runtime and
//! says why and what to do, unless told `--process-isolation none`. The tests become user
//! `nobody` through `setpriv`, so they need root (and a system `python3` nobody may run);
//! elsewhere they say why they skip.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

/// `nobody`'s id.
const NOBODY: &str = "65534";

/// Why these tests cannot run here, if they cannot.
fn skip_reason() -> Option<&'static str> {
    if !rustix::process::geteuid().is_root() {
        return Some("not root: cannot become another user");
    }
    if !Path::new("/usr/bin/python3").exists() {
        return Some("no /usr/bin/python3 for the stand-in agent server");
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        return Some("no setpriv (util-linux)");
    }
    None
}

/// A data directory and a specs file `nobody` owns and may read.
fn scene() -> (TempDir, String, String) {
    let dir = TempDir::new();
    let specs = dir.path().join("specs.json");
    let standin = switchboard_testkit::standin_agent_server();
    std::fs::write(
        &specs,
        json!([{"id": "standin", "command": ["/usr/bin/python3", standin]}]).to_string(),
    )
    .unwrap();
    let status = Command::new("chown")
        .args([
            "-R",
            &format!("{NOBODY}:{NOBODY}"),
            &dir.path().display().to_string(),
        ])
        .status()
        .unwrap();
    assert!(status.success());
    let data = dir.path().join("data").display().to_string();
    (dir, data, specs.display().to_string())
}

/// `switchboard serve` as `nobody`, optionally inside `prefix` (e.g. a namespace without user
/// namespaces).
fn serve_as_nobody(data: &str, specs: &str, prefix: &[&str], extra: &[&str]) -> Command {
    let mut c = Command::new("setpriv");
    c.args([
        &format!("--reuid={NOBODY}"),
        &format!("--regid={NOBODY}"),
        "--clear-groups",
        "--",
    ])
    .args(prefix)
    .arg(BIN)
    .args([
        "--data-dir",
        data,
        "serve",
        "--bind",
        "127.0.0.1:0",
        "--sandbox-specs",
        specs,
    ])
    .args(extra)
    .env_remove("SWITCHBOARD_DATABASE_URL")
    .env("PATH", "/usr/local/bin:/usr/bin:/bin")
    .stdin(Stdio::null());
    c
}

#[test]
fn a_normal_user_runs_confined_sandboxes() {
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    let (_dir, data, specs) = scene();
    let mut child = serve_as_nobody(&data, &specs, &[], &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let serve_pid = child.id();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut key = String::new();
    let address = loop {
        let line = lines.next().expect("serve printed its address").unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        match v["event"].as_str() {
            Some("bootstrapped") => key = v["api_key"].as_str().unwrap().to_owned(),
            Some("listening") => break v["address"].as_str().unwrap().to_owned(),
            _ => {}
        }
    };
    let (code, started) = send_json(
        client()
            .post(format!("{address}/api/v1/sandboxes"))
            .header("X-Access-Token", &key),
    );
    assert_eq!(code, 200, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    let info = loop {
        let (_, got) = send_json(
            client()
                .get(format!("{address}/api/v1/sandboxes?id={id}"))
                .header("X-Access-Token", &key),
        );
        if got[0]["status"] == "RUNNING" {
            break got[0].clone();
        }
        assert!(Instant::now() < deadline, "{got}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let url = info["exposed_urls"][0]["url"].as_str().unwrap();
    let session = info["session_api_key"].as_str().unwrap();
    let (_, out) = send_json(
        client()
            .post(format!("{url}/api/bash/execute_bash_command"))
            .header("X-Session-API-Key", session)
            .json(&json!({"command": format!(
                "id -u; cat '{data}/secret.key' || echo unreadable; kill -0 {serve_pid} || echo unreachable"
            ), "timeout": 30})),
    );
    let stdout = out["stdout"].as_str().unwrap_or("");
    let secret = std::fs::read_to_string(format!("{data}/secret.key")).unwrap();
    assert!(stdout.starts_with(NOBODY), "as Switchboard's user: {out}");
    assert!(
        !stdout.contains(secret.trim()) && stdout.contains("unreadable"),
        "{out}"
    );
    assert!(
        stdout.contains("unreachable"),
        "Switchboard's process is not in its namespace: {out}"
    );
    let (code, _) = send_json(
        client()
            .delete(format!("{address}/api/v1/sandboxes/{id}"))
            .header("X-Access-Token", &key),
    );
    assert_eq!(code, 200);
    let deadline = Instant::now() + Duration::from_secs(30);
    while common::agent_host_pid(url).is_some() {
        assert!(Instant::now() < deadline, "the sandbox outlived its delete");
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn without_user_namespaces_a_normal_user_is_refused_unless_told() {
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    if Command::new("bwrap").arg("--version").output().is_err() {
        eprintln!("skipped: no bwrap to make a namespace without user namespaces");
        return;
    }
    let (_dir, data, specs) = scene();
    // A user namespace in which no further user namespace may be made.
    let prefix = [
        "bwrap",
        "--unshare-user",
        "--disable-userns",
        // So that killing it (below) ends the server inside.
        "--die-with-parent",
        "--bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--",
    ];
    let out = serve_as_nobody(&data, &specs, &prefix, &[])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    for needle in [
        "needs unprivileged user namespaces",
        "--process-isolation none",
        "--sandbox-runtime docker",
    ] {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
    // Told: it serves (a single-user Switchboard), warned.
    let mut child = serve_as_nobody(&data, &specs, &prefix, &["--process-isolation", "none"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let listening = stdout.any(|l| l.is_ok_and(|l| l.contains("\"listening\"")));
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    assert!(listening, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("WARN"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
