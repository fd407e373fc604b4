//! 10,000 idle connections to the real server process (issue 13, limits): connections that
//! never send a request cost little memory, do not keep the server from answering others, and
//! are closed by the server (actix's client request timeout, 5 s), not held open forever.

use crate::common;

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Server, client, str_of};
use switchboard_testkit::{Backend, TestDatabase};

/// Idle connections opened.
const IDLE: usize = 10_000;
/// How far the server's resident set may grow with them open (MiB): measured 40 MiB
/// (32 -> 72), about 4 KiB per accepted connection that has sent nothing.
const GROWTH_MIB: u64 = 120;

fn rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmRSS")
        / 1024
}

/// The soft limit on open files of this process (`Max open files` in /proc/self/limits).
fn open_files_limit() -> u64 {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
    limits
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("Max open files")
}

#[test]
fn ten_thousand_idle_connections_are_cheap_and_closed() {
    let limit = open_files_limit();
    assert!(
        limit > IDLE as u64 + 200,
        "this test opens {IDLE} connections: raise the open-files limit (ulimit -n, now {limit})"
    );
    let db = TestDatabase::new(Backend::Sqlite);
    let server = Server::spawn(db.url());
    // The server derives its connection cap from the same limit, keeping room for its
    // database, sandboxes and /health (API.md, Open files): it must hold the connections too.
    let caps = server
        .wait_for_stderr("max_connections=", Duration::from_secs(5))
        .expect("the server logs the caps it derived from the open-files limit");
    let max_connections: u64 = caps
        .split("max_connections=")
        .nth(1)
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("max_connections=N");
    assert!(
        max_connections > IDLE as u64 + 16,
        "this test opens {IDLE} connections: the server takes at most {max_connections} under \
         the open-files limit {limit}: raise it (ulimit -n; about 14,000 is enough)"
    );
    let pid = server.pid();
    let addr = server.socket_addr();
    let key = str_of(server.bootstrapped.as_ref().unwrap(), "api_key").to_owned();
    let before = rss_mib(pid);

    let opened = Instant::now();
    let idle: Vec<TcpStream> = (0..IDLE)
        .map(|i| TcpStream::connect(addr).unwrap_or_else(|e| panic!("connection {i}: {e}")))
        .collect();
    let open_for = opened.elapsed();

    // Others are served meanwhile.
    let http = client();
    let started = Instant::now();
    let me = http
        .get(server.url("/api/v1/users/me"))
        .header("X-Access-Token", &key)
        .send()
        .unwrap();
    let answered_in = started.elapsed();
    assert_eq!(me.status().as_u16(), 200);
    assert!(
        answered_in < Duration::from_secs(2),
        "a request beside {IDLE} idle connections took {answered_in:?}"
    );
    let during = rss_mib(pid);
    assert!(
        during <= before + GROWTH_MIB,
        "{IDLE} idle connections took the resident set from {before} to {during} MiB"
    );

    // The server closes them: each read ends (EOF or an error answer) within the request
    // timeout plus slack, counted from when the last was opened.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut closed = 0;
    for mut c in idle.into_iter().step_by(50) {
        let left = deadline.saturating_duration_since(Instant::now());
        c.set_read_timeout(Some(left.max(Duration::from_millis(10))))
            .unwrap();
        let mut buf = [0u8; 512];
        match c.read(&mut buf) {
            Ok(_) => closed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => closed += 1,
            Err(e) => panic!("an idle connection was still open after 20 s: {e}"),
        }
    }
    assert_eq!(closed, IDLE / 50);
    eprintln!(
        "{IDLE} idle connections opened in {open_for:?}; a request beside them {answered_in:?}; \
         RSS {before} -> {during} MiB; all closed by the server"
    );
    // And the server is still well.
    let me = http
        .get(server.url("/api/v1/users/me"))
        .header("X-Access-Token", &key)
        .send()
        .unwrap();
    assert_eq!(me.status().as_u16(), 200);
}
