//! Graceful shutdown of the real server on SIGTERM, on SQLite and PostgreSQL: a request in
//! flight when the signal arrives completes with a full response, new connections are
//! refused, and the process exits with status 0.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use common::{Server, client, send_json};
use serde_json::Value;
use switchboard_testkit::{Backend, TestDatabase};

const IO_TIMEOUT: Duration = Duration::from_secs(15);

/// One HTTP/1.1 response: status, headers (lowercase names) and body, read by
/// Content-Length.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn read_response(reader: &mut BufReader<TcpStream>) -> Response {
    let mut status_line = String::new();
    reader.read_line(&mut status_line).expect("status line");
    let mut parts = status_line.split_whitespace();
    assert_eq!(parts.next(), Some("HTTP/1.1"), "{status_line:?}");
    let status = parts.next().and_then(|s| s.parse().ok()).expect("status");
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("header line");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').expect("header");
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map(|(_, v)| v.parse().expect("content-length"))
        .expect("a content-length header");
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("the whole body");
    Response {
        status,
        headers,
        body,
    }
}

/// Whether connecting to `addr` is refused now, retried until `timeout`.
fn refused_within(addr: SocketAddr, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        match TcpStream::connect_timeout(&addr, Duration::from_millis(500)) {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return true,
            Err(_) | Ok(_) if Instant::now() >= deadline => return false,
            _ => thread::sleep(Duration::from_millis(20)),
        }
    }
}

#[test]
fn sigterm_finishes_the_request_in_flight_and_exits_zero() {
    for backend in Backend::ALL {
        finishes_the_request_in_flight(backend, "TERM");
    }
}

/// Ctrl-C (SIGINT) is as graceful as SIGTERM, as `--shutdown-timeout` documents.
#[test]
fn sigint_finishes_the_request_in_flight_and_exits_zero() {
    finishes_the_request_in_flight(Backend::Sqlite, "INT");
}

/// Sends the headers and part of the body of a change, then `signal`, checks that new
/// connections are refused while the process waits, sends the rest and expects a complete
/// 200, a clean exit, and the change kept.
fn finishes_the_request_in_flight(backend: Backend, signal: &str) {
    let db = TestDatabase::new(backend);
    let mut server = Server::spawn(db.url());
    let key = server.bootstrap_key();
    let addr = server.socket_addr();

    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    stream.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);

    // A first, complete request proves a worker holds the connection.
    write!(writer, "GET /health HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let health = read_response(&mut reader);
    assert_eq!(health.status, 200, "{backend}");

    // Headers and part of the body of a change.
    let body = br#"{"max_budget_per_task": 7.5}"#;
    let (first, rest) = body.split_at(10);
    write!(
        writer,
        "POST /api/organizations/app HTTP/1.1\r\nHost: {addr}\r\nX-Access-Token: {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    writer.write_all(first).unwrap();
    writer.flush().unwrap();
    thread::sleep(Duration::from_millis(200));

    server.signal(signal);
    assert!(
        refused_within(addr, Duration::from_secs(5)),
        "{backend}: new connections are still accepted after SIG{signal}"
    );
    // An idle server exits within half a second of the signal: this one must wait.
    thread::sleep(Duration::from_secs(1));
    assert_eq!(
        server.wait_exit(Duration::ZERO),
        None,
        "{backend}: exited with a request in flight after SIG{signal}"
    );

    writer.write_all(rest).unwrap();
    writer.flush().unwrap();
    let res = read_response(&mut reader);
    let text = String::from_utf8_lossy(&res.body).into_owned();
    assert_eq!(res.status, 200, "{backend}: {text}");
    assert!(res.header("x-request-id").is_some(), "{backend}");
    let json: Value = serde_json::from_slice(&res.body)
        .unwrap_or_else(|e| panic!("{backend}: not JSON ({e}): {text}"));
    assert_eq!(json["max_budget_per_task"], 7.5, "{backend}: {text}");
    drop(writer);
    drop(reader);

    let status = server.wait_exit(Duration::from_secs(5));
    assert!(
        status.is_some_and(|s| s.code() == Some(0)),
        "{backend}: expected exit 0 within 5 s of SIG{signal}, got {status:?}; stderr:\n{}",
        server.stderr_lines().join("\n")
    );

    // The change was committed before the exit.
    let server = Server::spawn(db.url());
    let (status, settings) = send_json(
        client()
            .get(server.url("/api/organizations/app"))
            .header("X-Access-Token", &key),
    );
    assert_eq!(status, 200, "{backend}: {settings}");
    assert_eq!(settings["max_budget_per_task"], 7.5, "{backend}");
}

#[test]
fn sigterm_when_idle_exits_zero_at_once() {
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        let server = Server::spawn(db.url());
        let (status, _) = send_json(client().get(server.url("/health")));
        assert_eq!(status, 200, "{backend}");
        server.stop(Duration::from_secs(5));
    }
}
