//! The port form by default, with the stand-in agent server; the path and host forms beside.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};
use tungstenite::Message;
use tungstenite::client::IntoClientRequest;

use crate::common::*;
use crate::sandbox_urls::DEFAULT_RANGE;

/// A data directory with the stand-in's spec, its path and the spec file's path.
pub fn standin_data() -> (TempDir, String, String) {
    let data = TempDir::new();
    let standin = switchboard_testkit::standin_agent_server()
        .display()
        .to_string();
    let specs = data.path().join("specs.json");
    std::fs::write(
        &specs,
        json!([{"id": "standin", "command": [python(), standin]}]).to_string(),
    )
    .unwrap();
    let dir = data.path().display().to_string();
    (data, dir, specs.display().to_string())
}

/// Starts a sandbox through `server` and waits until it runs: its id, session key and
/// AGENT_SERVER URL.
pub fn running_sandbox(server: &Server, key: &str) -> (String, String, String) {
    let (code, s) = send_json(
        client()
            .post(server.url("/api/v1/sandboxes"))
            .header("X-Access-Token", key),
    );
    assert_eq!(code, 200, "{s}");
    let id = s["id"].as_str().unwrap().to_owned();
    let info = wait_sandbox_status(server, key, &id, "RUNNING");
    let session = info["session_api_key"].as_str().unwrap().to_owned();
    (id, session, agent_url(&info))
}

/// The AGENT_SERVER URL of a sandbox's info.
pub fn agent_url(info: &Value) -> String {
    let urls = info["exposed_urls"].as_array().expect("exposed_urls");
    let u = urls.iter().find(|u| u["name"] == "AGENT_SERVER").unwrap();
    u["url"].as_str().unwrap().to_owned()
}

/// The port of a port-form URL `http://HOST:PORT` (no path), else a failure.
#[track_caller]
pub fn port_of(url: &str, host: &str) -> u16 {
    let port = url
        .strip_prefix(&format!("http://{host}:"))
        .unwrap_or_else(|| panic!("not a port-form URL on {host}: {url}"));
    port.parse()
        .unwrap_or_else(|_| panic!("a path after the port: {url}"))
}

/// Waits (10 s at most) until nothing accepts connections on `host:port`.
#[track_caller]
pub fn wait_refused(host: &str, port: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect((host, port)).is_ok() {
        assert!(
            Instant::now() < deadline,
            "{host}:{port} still accepts connections"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `POST {base}/api/standin/echo` with `header: value`: the status and the stand-in's echo.
pub fn echo(base: &str, header: &str, value: &str) -> (u16, Value) {
    send_json(
        client()
            .post(format!("{base}/api/standin/echo?x=1"))
            .header(header, value)
            .body("hello"),
    )
}

/// A websocket to the stand-in's event socket under `base` (`http://…`), authenticated by
/// the query (`query` set) or by the first frame: answers what an `echo:` frame brings back.
fn websocket_echo(base: &str, session: &str, query: bool) -> String {
    let conv = uuid::Uuid::new_v4();
    let ws = base.replacen("http://", "ws://", 1);
    let url = if query {
        format!("{ws}/sockets/events/{conv}?session_api_key={session}")
    } else {
        format!("{ws}/sockets/events/{conv}")
    };
    let (mut socket, _) =
        tungstenite::connect(url.into_client_request().unwrap()).expect("the upgrade");
    if !query {
        let auth = json!({"type": "auth", "session_api_key": session}).to_string();
        socket.send(Message::text(auth)).unwrap();
    }
    socket.send(Message::text("echo:through the port")).unwrap();
    loop {
        match socket.read().expect("a frame") {
            Message::Text(t) => return t.as_str().to_owned(),
            Message::Close(c) => panic!("closed: {c:?}"),
            _ => {}
        }
    }
}

fn port_form_by_default(backend: Backend) {
    let _range = DEFAULT_RANGE.lock().unwrap_or_else(|e| e.into_inner());
    let db = TestDatabase::new(backend);
    let (data, dir, specs) = standin_data();
    let _end = EndProcessesUnder(data.path().to_path_buf());
    let server = Server::spawn_as_readme(
        &[],
        "127.0.0.1:0",
        db.url(),
        ServeOptions {
            args: vec!["--data-dir", &dir, "--sandbox-specs", &specs],
            env: vec![],
        },
    );
    let key = server.bootstrap_key();
    let (id, session, url) = running_sandbox(&server, &key);
    let port = port_of(&url, "127.0.0.1");
    assert!((20000..=20999).contains(&port), "{backend}: {url}");
    let path_form = server.url(&format!("/sandboxes/{id}/agent_server"));

    // The probe without credentials, answered as on the path form.
    let (code, body) = send_json(client().get(format!("{url}/alive")));
    assert_eq!((code, &body), (200, &json!({"status": "ok"})), "{backend}");
    // Without credentials anything else is refused, as on the path form.
    for base in [&url, &path_form] {
        let (code, body) = send_json(client().get(format!("{base}/server_info")));
        assert_eq!(code, 401, "{backend}: {base}: {body}");
    }
    let (code, _) = echo(&url, "X-Session-API-Key", "sbs_not-this-sandboxes-key");
    assert_eq!(code, 401, "{backend}");
    // With the session key or an API key: the agent server, its path whole.
    for (header, value) in [("X-Session-API-Key", &session), ("X-Access-Token", &key)] {
        let (code, body) = echo(&url, header, value);
        assert_eq!(code, 200, "{backend}: {header}: {body}");
        assert_eq!(body["path"], "/api/standin/echo?x=1", "{backend}: {body}");
        assert_eq!(body["body_length"], 5, "{backend}: {body}");
    }
    // A member of another organization: refused on the port as on the path form.
    let other = cli_json(
        db.url(),
        &[
            "bootstrap",
            "--org-name",
            "other-org",
            "--email",
            "owner@other.test",
        ],
    );
    let other_key = str_of(&other, "api_key");
    let (on_port, _) = echo(&url, "X-Access-Token", other_key);
    let (on_path, _) = echo(&path_form, "X-Access-Token", other_key);
    assert_eq!(
        (on_port, on_path),
        (404, 404),
        "{backend}: another organization's key"
    );
    // The port is the sandbox's alone: Switchboard's own API is not behind it.
    let res = client()
        .get(format!("{url}/api/v1/sandboxes/search"))
        .header("X-Access-Token", &key)
        .send()
        .unwrap();
    assert_ne!(
        res.status().as_u16(),
        200,
        "{backend}: the API on a sandbox port"
    );
    // Websockets, with the key in the query or in the first frame.
    assert_eq!(
        websocket_echo(&url, &session, true),
        "echo:through the port"
    );
    assert_eq!(
        websocket_echo(&url, &session, false),
        "echo:through the port"
    );

    // The batch get and the search show the same URL.
    let (_, page) = send_json(
        client()
            .get(server.url("/api/v1/sandboxes/search"))
            .header("X-Access-Token", &key),
    );
    assert_eq!(agent_url(&page["items"][0]), url, "{backend}");

    // Deleted: the port closes, and a later sandbox gets it again.
    let code = client()
        .delete(server.url(&format!("/api/v1/sandboxes/{id}")))
        .header("X-Access-Token", &key)
        .send()
        .unwrap()
        .status()
        .as_u16();
    assert_eq!(code, 200, "{backend}");
    wait_refused("127.0.0.1", port);
    let (_, session2, url2) = running_sandbox(&server, &key);
    assert_eq!(url2, url, "{backend}: the released port given out again");
    let (code, body) = echo(&url2, "X-Session-API-Key", &session2);
    assert_eq!(code, 200, "{backend}: {body}");
    let (code, _) = echo(&url2, "X-Session-API-Key", &session);
    assert_eq!(
        code, 401,
        "{backend}: the deleted sandbox's key on its old port"
    );
}

#[test]
fn port_form_by_default_sqlite() {
    port_form_by_default(Backend::Sqlite);
}

#[test]
fn port_form_by_default_postgres() {
    port_form_by_default(Backend::Postgres);
}

/// `serve` with `args`: its exit status and stderr (it must stop before listening).
fn refused_start(args: &[&str]) -> String {
    let data = TempDir::new();
    let dir = data.path().display().to_string();
    let mut cmd = command(data.path());
    cmd.args(["serve", "--data-dir", &dir]).args(args);
    let out = cmd.output().expect("running serve");
    assert!(!out.status.success(), "serve started with {args:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn ranges_overlapping_the_ephemeral_range_or_the_bind_port_are_refused() {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap();
    let first: u16 = text.split_whitespace().next().unwrap().parse().unwrap();
    let range = format!("{}-{}", first - 10, first + 10);
    let err = refused_start(&["--bind", "127.0.0.1:0", "--sandbox-url-ports", &range]);
    assert!(
        err.contains("overlaps the ephemeral port range") && err.contains(&range),
        "{err}"
    );
    let err = refused_start(&[
        "--bind",
        "127.0.0.1:21500",
        "--sandbox-url-ports",
        "21000-21999",
    ]);
    assert!(err.contains("contains port 21500"), "{err}");
    let err = refused_start(&["--sandbox-url-form", "host"]);
    assert!(err.contains("needs --sandbox-host-pattern"), "{err}");
    // The path form checks no range.
    let db = TestDatabase::new(Backend::Sqlite);
    let server = Server::spawn_as_readme(
        &[],
        "127.0.0.1:0",
        db.url(),
        ServeOptions {
            args: vec!["--sandbox-url-form", "path", "--sandbox-url-ports", &range],
            env: vec![],
        },
    );
    assert!(server.address.starts_with("http://127.0.0.1:"));
}

fn path_and_host_forms(backend: Backend) {
    let db = TestDatabase::new(backend);
    let (data, dir, specs) = standin_data();
    let _end = EndProcessesUnder(data.path().to_path_buf());
    // The path form, asked for: no port of the range is opened.
    let server = Server::spawn_as_readme(
        &[],
        "127.0.0.1:0",
        db.url(),
        ServeOptions {
            args: vec![
                "--data-dir",
                &dir,
                "--sandbox-specs",
                &specs,
                "--sandbox-url-form",
                "path",
                "--sandbox-url-ports",
                "21100-21109",
            ],
            env: vec![],
        },
    );
    let key = server.bootstrap_key();
    let (id, session, url) = running_sandbox(&server, &key);
    assert_eq!(url, server.url(&format!("/sandboxes/{id}/agent_server")));
    let (code, body) = echo(&url, "X-Session-API-Key", &session);
    assert_eq!(
        (code, &body["path"]),
        (200, &json!("/api/standin/echo?x=1"))
    );
    assert!(
        TcpStream::connect(("127.0.0.1", 21100)).is_err(),
        "{backend}"
    );
    drop(server);

    // The host form, implied by the pattern: the service at the root of its host.
    let server = Server::spawn_as_readme(
        &[],
        "127.0.0.1:0",
        db.url(),
        ServeOptions {
            args: vec![
                "--data-dir",
                &dir,
                "--sandbox-specs",
                &specs,
                "--sandbox-host-pattern",
                "{id}-{service}.sandboxes.test",
            ],
            env: vec![],
        },
    );
    let info = wait_sandbox_status(&server, &key, &id, "RUNNING");
    let port = server.socket_addr().port();
    let host = format!("{id}-agent-server.sandboxes.test");
    assert_eq!(
        agent_url(&info),
        format!("http://{host}:{port}"),
        "{backend}"
    );
    let res = client()
        .post(server.url("/api/standin/echo?x=1"))
        .header("Host", format!("{host}:{port}"))
        .header("X-Session-API-Key", &session)
        .body("hello")
        .send()
        .unwrap();
    assert_eq!(res.status().as_u16(), 200, "{backend}");
    let body: Value = res.json().unwrap();
    assert_eq!(body["path"], "/api/standin/echo?x=1", "{backend}");
}

#[test]
fn path_and_host_forms_sqlite() {
    path_and_host_forms(Backend::Sqlite);
}

#[test]
fn path_and_host_forms_postgres() {
    path_and_host_forms(Backend::Postgres);
}
