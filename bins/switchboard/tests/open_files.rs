//! The real binary under a low open-files limit (issue 24 item 3), on both backends: started
//! by `prlimit --nofile=256:512`, `serve` raises its soft limit to the hard one and logs both;
//! websockets from several keys are opened until the server refuses one (1013, the cap it
//! derived from the limit), and while they are held `/health` and the API answer at once, a
//! running sandbox stays `RUNNING` through several reconciliations, and nothing in the log
//! says "Too many open files". Then the sandbox proxy (issue 22): websockets through it to
//! the sandbox are opened until one is refused with 503 (its sockets' share of the budget,
//! `max_proxy_sockets` in the log), no more than that share is served, and meanwhile the API
//! and `/health` answer.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use switchboard_testkit::{Backend, TestDatabase};

/// The soft and hard limits the server is started with.
const SOFT: u64 = 256;
const HARD: u64 = 512;
/// The most sockets the test tries before giving up on a refusal.
const MAX_TRIES: usize = 1_000;

/// What the server answered a websocket upgrade with.
#[derive(Debug)]
enum Upgrade {
    /// 101, then a first text frame: the socket is served.
    Served(TcpStream),
    /// 101, then a close frame with this code.
    Closed(u16),
    /// Anything else (no answer in time, a refused connection, another status).
    Failed(String),
}

/// Opens `/sockets/session/{conv}` with `key` and reads the first frame (2 s at most each).
fn open_socket(addr: std::net::SocketAddr, conv: &str, key: &str) -> Upgrade {
    let mut s = match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
        Ok(s) => s,
        Err(e) => return Upgrade::Failed(format!("connect: {e}")),
    };
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let request = format!(
        "GET /sockets/session/{conv} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Version: 13\r\nX-Access-Token: {key}\r\n\r\n"
    );
    if let Err(e) = s.write_all(request.as_bytes()) {
        return Upgrade::Failed(format!("write: {e}"));
    }
    // The response head, byte by byte (the first frame may follow in the same packet).
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            Ok(_) => return Upgrade::Failed("closed before answering".into()),
            Err(e) => return Upgrade::Failed(format!("no answer: {e}")),
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    if !head.starts_with("HTTP/1.1 101") {
        return Upgrade::Failed(head.lines().next().unwrap_or_default().to_owned());
    }
    let mut frame = [0u8; 4];
    if let Err(e) = s.read_exact(&mut frame[..2]) {
        return Upgrade::Failed(format!("no first frame: {e}"));
    }
    match frame[0] & 0x0F {
        0x1 => Upgrade::Served(s),
        0x8 => {
            let _ = s.read_exact(&mut frame[2..4]);
            Upgrade::Closed(u16::from_be_bytes([frame[2], frame[3]]))
        }
        op => Upgrade::Failed(format!("first frame opcode {op}")),
    }
}

/// `GET path` with a 3 s timeout: the status, or the error.
fn quick_get(server: &Server, path: &str, key: Option<&str>) -> Result<u16, String> {
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(3))
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let mut req = client.get(server.url(path));
    if let Some(k) = key {
        req = req.header("X-Access-Token", k);
    }
    req.send()
        .map(|r| r.status().as_u16())
        .map_err(|e| e.to_string())
}

fn open_files(backend: Backend) {
    let db = TestDatabase::new(backend);
    let data = TempDir::new();
    let _sandboxes = EndProcessesUnder(data.path().to_path_buf());
    let standin = switchboard_testkit::standin_agent_server()
        .display()
        .to_string();
    let specs = data.path().join("specs.json");
    std::fs::write(
        &specs,
        json!([{"id": "standin", "command": [python(), standin]}]).to_string(),
    )
    .unwrap();
    let data_dir = data.path().display().to_string();
    let specs = specs.display().to_string();
    let nofile = format!("--nofile={SOFT}:{HARD}");
    let server = Server::spawn_under(
        &["prlimit", &nofile, "--"],
        db.url(),
        ServeOptions {
            // The host's network: a sandbox's own `pasta` inherits this low limit too and
            // would run out of descriptors (about four per spliced socket) before the proxy's
            // share does; this test is about Switchboard's own budget.
            args: vec![
                "--data-dir",
                &data_dir,
                "--sandbox-specs",
                &specs,
                "--sandbox-network",
                "host",
            ],
            env: vec![],
        },
    );
    let owner = server.bootstrap_key();
    let mut problems: Vec<String> = Vec::new();

    // Both limits in the log, the soft one raised.
    match server.wait_for_stderr("open files", Duration::from_secs(5)) {
        Some(line)
            if line.contains(&format!("soft_before={SOFT}"))
                && line.contains(&format!("soft={HARD}"))
                && line.contains(&format!("hard={HARD}")) => {}
        other => problems.push(format!("no log line of the raised limit: {other:?}")),
    }

    // A running sandbox and a conversation of it.
    let (code, sandbox) = send_json(
        client()
            .post(server.url("/api/v1/sandboxes"))
            .header("X-Access-Token", &owner),
    );
    assert_eq!(code, 200, "{sandbox}");
    let sandbox = sandbox["id"].as_str().unwrap().to_owned();
    let info = wait_sandbox_status(&server, &owner, &sandbox, "RUNNING");
    let session = info["session_api_key"].as_str().unwrap().to_owned();
    let conv = uuid::Uuid::new_v4().to_string();
    let (code, body) = send_json(
        client()
            .post(server.url("/api/v1/webhooks/conversations"))
            .header("X-Session-API-Key", &session)
            .json(&json!({"id": conv, "title": "watched", "execution_status": "idle"})),
    );
    assert_eq!(code, 200, "{body}");
    // Several keys, so that the per-key limit is not what stops the sockets.
    let keys: Vec<String> = (0..4)
        .map(|i| {
            let (code, body) = send_json(
                client()
                    .post(server.url("/api/keys"))
                    .header("X-Access-Token", &owner)
                    .json(&json!({"name": format!("socket key {i}")})),
            );
            assert_eq!(code, 200, "{body}");
            body["api_key"].as_str().unwrap().to_owned()
        })
        .collect();

    // Sockets until one is refused.
    let addr = server.socket_addr();
    let mut held = Vec::new();
    let mut refused = None;
    for i in 0..MAX_TRIES {
        match open_socket(addr, &conv, &keys[i % keys.len()]) {
            Upgrade::Served(s) => held.push(s),
            Upgrade::Closed(code) => {
                refused = Some(code);
                break;
            }
            Upgrade::Failed(why) => {
                problems.push(format!("socket {i} neither served nor refused: {why}"));
                break;
            }
        }
    }
    eprintln!("{backend}: {} sockets served, then {refused:?}", held.len());
    if refused != Some(1013) {
        problems.push(format!(
            "after {} sockets: no 1013 refusal ({refused:?})",
            held.len()
        ));
    }

    // While they are held: health and the API answer, the sandbox stays RUNNING.
    let deadline = Instant::now() + Duration::from_secs(8);
    while Instant::now() < deadline {
        match quick_get(&server, "/health", None) {
            Ok(200) => {}
            other => {
                problems.push(format!("/health beside {} sockets: {other:?}", held.len()));
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    match quick_get(
        &server,
        &format!("/api/v1/sandboxes?id={sandbox}"),
        Some(&owner),
    ) {
        Ok(200) => {
            let (_, body) = send_json(
                client()
                    .get(server.url(&format!("/api/v1/sandboxes?id={sandbox}")))
                    .header("X-Access-Token", &owner),
            );
            if body[0]["status"] != "RUNNING" {
                problems.push(format!(
                    "the sandbox is {} (expected RUNNING)",
                    body[0]["status"]
                ));
            }
        }
        other => problems.push(format!("the sandbox could not be read: {other:?}")),
    }
    drop(held);
    proxied_sockets(&server, &owner, &sandbox, &session, &mut problems);

    let log = server.stderr_lines();
    for needle in ["Too many open files", "to=MISSING", "os error 24"] {
        if let Some(line) = log.iter().find(|l| l.contains(needle)) {
            problems.push(format!("the log says {needle:?}: {line}"));
        }
    }
    let (code, _) = send_json(
        client()
            .delete(server.url(&format!("/api/v1/sandboxes/{sandbox}")))
            .header("X-Access-Token", &owner),
    );
    assert_eq!(code, 200);
    assert!(problems.is_empty(), "{backend}:\n{}", problems.join("\n"));
}

/// The sandbox's event socket through the proxy, with its session key: `Ok(socket)` once
/// upgraded (the stand-in sends nothing first), `Err(status line)` otherwise.
fn open_proxied(
    addr: std::net::SocketAddr,
    sandbox: &str,
    session: &str,
) -> Result<TcpStream, String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let conv = uuid::Uuid::new_v4().simple();
    let request = format!(
        "GET /sandboxes/{sandbox}/agent_server/sockets/events/{conv} HTTP/1.1\r\nHost: {addr}\r\n\
         Upgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         X-Session-API-Key: {session}\r\n\r\n"
    );
    s.write_all(request.as_bytes())
        .map_err(|e| format!("write: {e}"))?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            Ok(_) => return Err("closed before answering".into()),
            Err(e) => return Err(format!("no answer: {e}")),
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    if head.starts_with("HTTP/1.1 101") {
        Ok(s)
    } else {
        Err(head.lines().next().unwrap_or_default().to_owned())
    }
}

/// Proxied websockets until one is refused: 503, after no more than the proxy's share of the
/// budget (from the log); `/health` and the API answer meanwhile; the sockets come back.
fn proxied_sockets(
    server: &Server,
    owner: &str,
    sandbox: &str,
    session: &str,
    problems: &mut Vec<String>,
) {
    let cap: Option<usize> = server
        .wait_for_stderr("max_proxy_sockets", Duration::from_secs(1))
        .and_then(|line| {
            let at = line.find("max_proxy_sockets=")? + "max_proxy_sockets=".len();
            line[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        });
    let Some(cap) = cap else {
        problems.push("no max_proxy_sockets in the log".into());
        return;
    };
    let addr = server.socket_addr();
    let mut held = Vec::new();
    let mut refused = None;
    for _ in 0..MAX_TRIES {
        match open_proxied(addr, sandbox, session) {
            Ok(s) => held.push(s),
            Err(line) => {
                refused = Some(line);
                break;
            }
        }
    }
    eprintln!(
        "{} proxied sockets served (cap {cap}), then {refused:?}",
        held.len()
    );
    if !refused
        .as_deref()
        .is_some_and(|l| l.starts_with("HTTP/1.1 503"))
    {
        problems.push(format!(
            "after {} proxied sockets: no 503 ({refused:?})",
            held.len()
        ));
    }
    if held.len() > cap || held.is_empty() {
        problems.push(format!(
            "{} proxied sockets served with a share of {cap}",
            held.len()
        ));
    }
    let api = format!("/api/v1/sandboxes?id={sandbox}");
    for (path, key) in [("/health", None), (api.as_str(), Some(owner))] {
        match quick_get(server, path, key) {
            Ok(200) => {}
            other => problems.push(format!("{path} beside the proxied sockets: {other:?}")),
        }
    }
    drop(held);
    let back = (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        open_proxied(addr, sandbox, session).is_ok()
    });
    if !back {
        problems.push("the proxied sockets did not come back once closed".into());
    }
}

#[test]
fn low_open_files_limit_sqlite() {
    open_files(Backend::Sqlite);
}

#[test]
fn low_open_files_limit_postgres() {
    open_files(Backend::Postgres);
}
