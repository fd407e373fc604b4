//! Port squatting between process sandboxes, against the real binary (issue 33, "never talk to
//! a listener you did not verify"): a member's sandbox binds, from inside, the loopback port
//! Switchboard will use for another member's sandbox, and Switchboard sends it nothing:
//!
//! - the victim's exposed `WORKER_1` (its service not listening yet): the proxy answers 502
//!   naming the other listener, the squatter's listener receives no connection (before: the
//!   victim's request and session key); once the victim's own service listens there, the same
//!   request passes;
//! - the agent server port of a conversation start, squatted by the owner of a second
//!   organization (its agent server slow to listen): the
//!   sandbox is `ERROR` at once and the start fails, and the squatter, answering `/alive` as an agent
//!   server would, receives no probe, no create request and no LLM key (before: all three).
//!
//! Each test runs twice. With `--sandbox-network host`, the squatter really holds the host's
//! port and Switchboard refuses to send: confined sandboxes run as users of their own only
//! when Switchboard runs as root, so as another user these say so and pass without checking.
//! With each sandbox's network of its own (the default), the squatter's bind is in its own
//! namespace: the victim's ports are its own `pasta`'s on the host, the start goes on to
//! `READY`, and the squatter still receives nothing.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

const LLM_KEY: &str = "sk-squatting-test-llm-key-5511";
/// `--sandbox-network host`: the squatter can bind the host's ports.
const HOST: &str = "host";
/// `--sandbox-network isolated` (the default): it cannot.
const ISOLATED: &str = "isolated";

/// The squatter: listens on 127.0.0.1:`argv[1]`, answers every connection as an agent
/// server's `/alive` would, and appends what it received to `squat.log` (`squat.ready` once
/// bound).
const SQUATTER: &str = r#"
import os, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(64)
open("squat.pid", "w").write(str(os.getpid()))
open("squat.ready", "w").write("bound")
while True:
    c, _ = s.accept()
    c.settimeout(2)
    try:
        data = c.recv(65536)
    except OSError:
        data = b"(nothing read)"
    with open("squat.log", "ab") as f:
        f.write(data + b"\n----\n")
    c.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{"status":"ok"}')
    c.close()
"#;

/// A service of the victim's own: the same answer, on its `WORKER_1` port.
const SERVICE: &str = r#"
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"the victim's own service"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"#;

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// `command` through the agent server's command API at `url` (Switchboard's URL of the
/// sandbox) with session key `key`: its stdout.
fn bash(url: &str, key: &str, command: &str) -> String {
    let (code, out) = send_json(
        client()
            .post(format!("{url}/api/bash/execute_bash_command"))
            .header("X-Session-API-Key", key)
            .json(&json!({"command": command, "cwd": null, "timeout": 30})),
    );
    assert_eq!(code, 200, "{command}: {out}");
    out["stdout"].as_str().unwrap_or("").to_owned()
}

/// Runs Python `script` with `port` in the background of the sandbox at `url`, from a file
/// written in its own directory, and waits for `ready` to exist there (when given).
fn run_python(url: &str, key: &str, name: &str, script: &str, port: u16, ready: Option<&str>) {
    let hex: String = script.bytes().map(|b| format!("{b:02x}")).collect();
    let py = python();
    bash(
        url,
        key,
        &format!(
            "{py} -c \"import sys; open('{name}', 'wb').write(bytes.fromhex(sys.argv[1]))\" {hex} && (nohup {py} {name} {port} >/dev/null 2>&1 &)"
        ),
    );
    let Some(ready) = ready else { return };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !bash(url, key, &format!("cat {ready} 2>/dev/null")).contains("bound") {
        assert!(Instant::now() < deadline, "{name} did not listen on {port}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

struct Rig {
    _data: TempDir,
    server: Server,
    owner: String,
    member: String,
    /// The owner of a second organization.
    outsider: String,
}

/// The rig, its process sandboxes on `network` (`--sandbox-network`).
fn rig(network: &str) -> Rig {
    let data = TempDir::new();
    let data_dir = data.path().display().to_string();
    let standin = switchboard_testkit::standin_agent_server()
        .display()
        .to_string();
    let key_file = data.path().join("llm.key");
    std::fs::write(&key_file, LLM_KEY).unwrap();
    let specs = data.path().join("specs.json");
    std::fs::write(
        &specs,
        json!([
            {"id": "standin", "command": [python(), standin]},
            {"id": "worker", "command": [python(), standin], "exposed_services": ["WORKER_1"]},
            {"id": "slow", "command": [python(), standin],
             "initial_env": {"STANDIN_MODE": "slow-start:15"}},
        ])
        .to_string(),
    )
    .unwrap();
    let db = format!("sqlite://{data_dir}/switchboard.sqlite");
    let (specs_arg, key_arg) = (specs.display().to_string(), key_file.display().to_string());
    let server = Server::spawn_with(
        &db,
        ServeOptions {
            args: vec![
                "--data-dir",
                &data_dir,
                "--sandbox-specs",
                &specs_arg,
                "--llm-api-key-file",
                &key_arg,
                "--llm-model",
                "openai/fake-model",
                "--sandbox-network",
                network,
            ],
            env: vec![],
        },
    );
    let owner = server.bootstrap_key();
    let org = server.bootstrapped.as_ref().unwrap()["org_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, member) = add_member(&db, &org, "squatter@example.com", "member");
    let other = cli_json(
        &db,
        &[
            "bootstrap",
            "--org-name",
            "other",
            "--email",
            "outsider@example.com",
        ],
    );
    let outsider = str_of(&other, "api_key").to_owned();
    Rig {
        _data: data,
        server,
        owner,
        member,
        outsider,
    }
}

/// The rig on `network`, and a guard that ends every sandbox process when the test ends;
/// `None` (said) on the host's network when not root.
fn rig_as_root(network: &str) -> Option<(Rig, EndProcessesUnder)> {
    if network == HOST && !is_root() {
        eprintln!("not root: sandboxes share Switchboard's user, nothing tells a squatter apart");
        return None;
    }
    let rig = rig(network);
    let guard = EndProcessesUnder(rig._data.path().join("sandboxes"));
    Some((rig, guard))
}

/// Starts a sandbox of `spec` as `key` and waits for `RUNNING`: (id, its agent server's URL
/// as Switchboard shows it, its session key, every exposed URL).
fn running_sandbox(rig: &Rig, key: &str, spec: &str) -> (String, String, String, Vec<Value>) {
    let (code, body) = send_json(
        client()
            .post(
                rig.server
                    .url(&format!("/api/v1/sandboxes?sandbox_spec_id={spec}")),
            )
            .header("X-Access-Token", key),
    );
    assert_eq!(code, 200, "{body}");
    let id = body["id"].as_str().unwrap().to_owned();
    let info = wait_sandbox_status(&rig.server, key, &id, "RUNNING");
    let urls = info["exposed_urls"].as_array().unwrap().clone();
    let agent = urls[0]["url"].as_str().unwrap().to_owned();
    let session = info["session_api_key"].as_str().unwrap().to_owned();
    (id, agent, session, urls)
}

/// The `WORKER_1` port sandbox `id`'s processes were given (from its agent server's
/// environment).
fn worker_port(id: &str) -> u16 {
    let (pid, _) = sandbox_agent(id).expect("the sandbox's agent server process");
    let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    String::from_utf8_lossy(&env)
        .split('\0')
        .find_map(|kv| kv.strip_prefix("WORKER_1=")?.parse().ok())
        .expect("WORKER_1 in the agent server's environment")
}

#[test]
fn a_squatted_worker_port_gets_no_request_and_no_key() {
    squatted_worker_port(HOST);
}

#[test]
fn a_worker_port_cannot_be_squatted_from_a_network_of_its_own() {
    squatted_worker_port(ISOLATED);
}

fn squatted_worker_port(network: &str) {
    let Some((rig, _guard)) = rig_as_root(network) else {
        return;
    };
    let (victim, victim_agent, victim_session, urls) = running_sandbox(&rig, &rig.owner, "worker");
    let worker_url = urls
        .iter()
        .find(|u| u["name"] == "WORKER_1")
        .and_then(|u| u["url"].as_str())
        .expect("a WORKER_1 URL")
        .to_owned();
    let port = worker_port(&victim);
    let (_, attacker_agent, attacker_session, _) = running_sandbox(&rig, &rig.member, "standin");
    run_python(
        &attacker_agent,
        &attacker_session,
        "squat.py",
        SQUATTER,
        port,
        Some("squat.ready"),
    );

    for (header, value) in [
        ("X-Access-Token", rig.owner.as_str()),
        ("X-Session-API-Key", victim_session.as_str()),
    ] {
        let r = client()
            .get(format!("{worker_url}/private/report"))
            .header(header, value)
            .send()
            .unwrap();
        let status = r.status().as_u16();
        let body = r.text().unwrap();
        assert_eq!(status, 502, "{header}: {body}");
        if network == HOST {
            assert!(body.contains("not by the sandbox's user"), "{body}");
        }
    }
    let log = bash(
        &attacker_agent,
        &attacker_session,
        "cat squat.log 2>/dev/null",
    );
    assert!(log.is_empty(), "the squatter received: {log}");

    // The victim's own service on its port is reached: the squatter lets go, the victim binds.
    bash(&attacker_agent, &attacker_session, "kill $(cat squat.pid)");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        run_python(
            &victim_agent,
            &victim_session,
            "service.py",
            SERVICE,
            port,
            None,
        );
        std::thread::sleep(Duration::from_millis(300));
        let r = client()
            .get(format!("{worker_url}/"))
            .header("X-Access-Token", &rig.owner)
            .send()
            .unwrap();
        let status = r.status().as_u16();
        let body = r.text().unwrap();
        if status == 200 {
            assert_eq!(body, "the victim's own service");
            break;
        }
        assert!(Instant::now() < deadline, "{status}: {body}");
    }
}

#[test]
fn a_squatted_agent_server_port_gets_no_probe_and_no_llm_key() {
    squatted_agent_server_port(HOST);
}

#[test]
fn an_agent_server_port_cannot_be_squatted_from_a_network_of_its_own() {
    squatted_agent_server_port(ISOLATED);
}

fn squatted_agent_server_port(network: &str) {
    let Some((rig, _guard)) = rig_as_root(network) else {
        return;
    };
    let (attacker, attacker_agent, attacker_session, _) =
        running_sandbox(&rig, &rig.outsider, "standin");

    // The owner starts a conversation; its agent server takes 15 s to listen.
    let hello = json!({"role": "user", "content": [{"type": "text", "text": "hi"}]});
    let (code, task) = send_json(
        client()
            .post(rig.server.url("/api/v1/app-conversations"))
            .header("X-Access-Token", &rig.owner)
            .json(&json!({"initial_message": hello, "sandbox_spec_id": "slow"})),
    );
    assert_eq!(code, 200, "{task}");
    let task_id = task["id"].as_str().unwrap().to_owned();
    let task_of = || {
        let (code, body) = send_json(
            client()
                .get(rig.server.url(&format!(
                    "/api/v1/app-conversations/start-tasks?ids={task_id}"
                )))
                .header("X-Access-Token", &rig.owner),
        );
        assert_eq!(code, 200, "{body}");
        body[0].clone()
    };

    // Its sandbox's agent server port, as soon as the process exists; the squatter binds it.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (sandbox, port) = loop {
        let t = task_of();
        if let Some(sid) = t["sandbox_id"].as_str()
            && sid != attacker
            && let Some((_, port)) = sandbox_agent(sid)
        {
            break (sid.to_owned(), port);
        }
        assert!(Instant::now() < deadline, "no sandbox process for {t}");
        std::thread::sleep(Duration::from_millis(50));
    };
    run_python(
        &attacker_agent,
        &attacker_session,
        "squat.py",
        SQUATTER,
        port,
        Some("squat.ready"),
    );

    if network == ISOLATED {
        // Nothing reaches the squatter: the start goes on to READY once the agent server
        // listens in its own namespace.
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let t = task_of();
            if t["status"] == "READY" {
                break;
            }
            assert!(
                t["status"] != "ERROR" && Instant::now() < deadline,
                "the start failed: {t}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let log = bash(
            &attacker_agent,
            &attacker_session,
            "cat squat.log 2>/dev/null",
        );
        assert!(log.is_empty(), "the squatter received: {log}");
        return;
    }
    // The sandbox is ERROR at once (the start then deletes the sandbox it created).
    let deadline = Instant::now() + Duration::from_secs(60);
    let t = loop {
        let t = task_of();
        if t["status"] == "ERROR" {
            break t;
        }
        assert!(
            t["status"] != "READY" && Instant::now() < deadline,
            "the start went on: {t}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(!t.to_string().contains(LLM_KEY), "{t}");
    assert!(
        t["detail"]
            .as_str()
            .is_some_and(|d| d.contains(&format!("sandbox {sandbox} is ERROR"))),
        "{t}"
    );
    let log = bash(
        &attacker_agent,
        &attacker_session,
        "cat squat.log 2>/dev/null",
    );
    assert!(log.is_empty(), "the squatter received: {log}");
    assert!(
        rig.server
            .stderr_lines()
            .iter()
            .any(|l| l.contains("held by another listener") && l.contains(&sandbox)),
        "no log line names the squatted sandbox"
    );
}
