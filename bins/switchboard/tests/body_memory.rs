//! Memory under body bursts, measured on the real server process (`VmRSS` of
//! `/proc/<pid>/status`; issue 7 §2; API.md, Request bodies), on both backends:
//! - 200 concurrent unauthenticated 8 MiB webhook bodies are answered 401 from their headers
//!   and never held: the resident set stays within [`UNAUTHENTICATED_GROWTH_MIB`] of its level
//!   before during the burst, and within [`AFTER_BURST_GROWTH_MIB`] after it;
//! - 100 concurrent authenticated 1 MiB webhook batches, admitted 8 at a time by
//!   `--max-body-bytes-in-flight`, are all stored, and the allocator gives the memory back:
//!   a few seconds after the burst the resident set is within [`AFTER_BURST_GROWTH_MIB`] of its
//!   level before.

use crate::common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use common::{ServeOptions, Server, cli_json, client, send_json, str_of};
use switchboard_testkit::{Backend, TestDatabase};

/// How far above its level before the burst the resident set may be, at any time, under the
/// unauthenticated burst (MiB): 200 connections' read buffers and the threads serving them, not
/// bodies (measured +41 to +53 MiB; reading the bodies first took it to 1.6 GiB).
const UNAUTHENTICATED_GROWTH_MIB: u64 = 96;
/// How far above its level before the burst the resident set may be once a burst is over
/// (the lowest of 12 s of samples, MiB; measured +8 to +25 MiB).
const AFTER_BURST_GROWTH_MIB: u64 = 40;

/// `VmRSS` of process `pid`, in MiB.
fn rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/<pid>/status");
    kb / 1024
}

/// Samples the resident set of `pid` every 20 ms while `work` runs; returns `work`'s result
/// and the highest sample.
fn with_peak<T>(pid: u32, work: impl FnOnce() -> T) -> (T, u64) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let stop = stop.clone();
        thread::spawn(move || {
            let mut peak = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(rss_mib(pid));
                thread::sleep(Duration::from_millis(20));
            }
            peak
        })
    };
    let out = work();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    (out, sampler.join().unwrap())
}

/// The lowest resident set seen over `span`, sampled every 100 ms: the level once the
/// server has settled (a background purge may take a moment).
fn settled_rss(pid: u32, span: Duration) -> u64 {
    let deadline = Instant::now() + span;
    let mut low = u64::MAX;
    while Instant::now() < deadline {
        low = low.min(rss_mib(pid));
        thread::sleep(Duration::from_millis(100));
    }
    low
}

/// Sends `POST path` with `headers` and a body of `len` bytes made by `fill`, in 64 KiB
/// writes, and returns the status of the answer, or `None` when the server closed the
/// connection before one could be read.
fn post_raw(addr: std::net::SocketAddr, path: &str, headers: &str, body: &[u8]) -> Option<u16> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{headers}\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).ok()?;
    for chunk in body.chunks(64 << 10) {
        if s.write_all(chunk).is_err() {
            // The server answered and closed without reading the rest.
            break;
        }
    }
    let _ = s.shutdown(Shutdown::Write);
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let line = String::from_utf8_lossy(&answer);
    line.split(' ').nth(1).and_then(|c| c.parse().ok())
}

/// A webhook batch of about `size` bytes: message events of 64 KiB of text each.
fn batch_of(size: usize) -> Vec<u8> {
    let text = "x".repeat(64 << 10);
    let events: Vec<serde_json::Value> = (0..size / (64 << 10))
        .map(|i| {
            serde_json::json!({
                "id": uuid_like(i),
                "timestamp": "2026-11-23T10:00:00",
                "source": "agent",
                "llm_message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
                "kind": "MessageEvent",
            })
        })
        .collect();
    serde_json::to_vec(&events).unwrap()
}

/// A distinct event id per batch position (the conversation differs per batch).
fn uuid_like(i: usize) -> String {
    format!("00000000-0000-4000-8000-{i:012}")
}

/// A fresh conversation id.
fn new_conversation(n: usize) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{nanos:08x}-0000-4000-8000-{n:012}")
}

#[test]
fn bursts_of_bodies_leave_the_memory_as_it_was() {
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        let server = Server::spawn_with(
            db.url(),
            ServeOptions {
                args: vec!["--max-body-bytes-in-flight", "8388608"],
                ..ServeOptions::default()
            },
        );
        let pid = server.pid();
        let addr = server.socket_addr();
        let boot = server.bootstrapped.clone().unwrap();
        let session = str_of(
            &cli_json(
                db.url(),
                &[
                    "sandboxes",
                    "register",
                    "--org-id",
                    str_of(&boot, "org_id"),
                    "--user-id",
                    str_of(&boot, "user_id"),
                ],
            ),
            "session_api_key",
        )
        .to_owned();
        let key = server.bootstrap_key();

        // Warm up to the working set (every pooled database connection open, the worker and
        // blocking threads started): 32 small authenticated batches and 32 refused bodies at
        // once.
        let small = std::sync::Arc::new(batch_of(64 << 10));
        let warm: Vec<_> = (0..64)
            .map(|i| {
                let small = small.clone();
                let path = format!("/api/v1/webhooks/events/{}", new_conversation(1000 + i));
                let header = if i % 2 == 0 {
                    format!("X-Session-API-Key: {session}\r\n")
                } else {
                    "X-Session-API-Key: sbs_not_a_key\r\n".to_owned()
                };
                thread::spawn(move || post_raw(addr, &path, &header, &small))
            })
            .collect();
        for (i, t) in warm.into_iter().enumerate() {
            let want = if i % 2 == 0 { 200 } else { 401 };
            assert_eq!(t.join().unwrap(), Some(want), "{backend}: warm-up {i}");
        }
        let before = settled_rss(pid, Duration::from_secs(2));

        // 200 unauthenticated 8 MiB bodies at once: every one refused from its headers.
        let body = std::sync::Arc::new(vec![b' '; 8 << 20]);
        let (statuses, peak) = with_peak(pid, || {
            let threads: Vec<_> = (0..200)
                .map(|i| {
                    let body = body.clone();
                    let path = format!("/api/v1/webhooks/events/{}", new_conversation(i));
                    thread::spawn(move || {
                        post_raw(addr, &path, "X-Session-API-Key: sbs_not_a_key\r\n", &body)
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().unwrap())
                .collect::<Vec<_>>()
        });
        let answered = statuses.iter().filter(|s| **s == Some(401)).count();
        assert!(
            statuses.iter().all(|s| matches!(s, Some(401) | None)),
            "{backend}: {statuses:?}"
        );
        assert!(
            answered >= 100,
            "{backend}: only {answered} of 200 saw their 401"
        );
        let after = settled_rss(pid, Duration::from_secs(12));
        eprintln!(
            "{backend}: unauthenticated 200 x 8 MiB: RSS before {before} MiB, peak {peak}, after {after}; {answered} answers read"
        );
        assert!(
            peak <= before + UNAUTHENTICATED_GROWTH_MIB,
            "{backend}: peak {peak} MiB from {before} MiB"
        );
        assert!(
            after <= before + AFTER_BURST_GROWTH_MIB,
            "{backend}: after {after} MiB from {before} MiB"
        );

        // 100 authenticated 1 MiB batches at once, 8 admitted at a time.
        let batch = std::sync::Arc::new(batch_of(1 << 20));
        let before = settled_rss(pid, Duration::from_secs(1));
        let conversations: Vec<String> = (1..=100).map(new_conversation).collect();
        let (statuses, peak) = with_peak(pid, || {
            let threads: Vec<_> = conversations
                .iter()
                .map(|c| {
                    let batch = batch.clone();
                    let path = format!("/api/v1/webhooks/events/{c}");
                    let header = format!("X-Session-API-Key: {session}\r\n");
                    thread::spawn(move || post_raw(addr, &path, &header, &batch))
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().unwrap())
                .collect::<Vec<_>>()
        });
        assert!(
            statuses.iter().all(|s| *s == Some(200)),
            "{backend}: {statuses:?}"
        );
        let http = client();
        for c in conversations.iter().step_by(10) {
            let (status, count) = send_json(
                http.get(server.url(&format!("/api/v1/conversation/{c}/events/count")))
                    .header("X-Access-Token", &key),
            );
            assert_eq!((status, count.as_u64()), (200, Some(16)), "{backend}: {c}");
        }
        let after = settled_rss(pid, Duration::from_secs(12));
        eprintln!(
            "{backend}: authenticated 100 x 1 MiB: RSS before {before} MiB, peak {peak}, after {after}"
        );
        assert!(
            after <= before + AFTER_BURST_GROWTH_MIB,
            "{backend}: {after} MiB after the burst, {before} MiB before (peak {peak})"
        );
        server.stop(Duration::from_secs(10));
    }
}

/// A budget of body bytes in flight smaller than the largest body limit is refused at start:
/// such a body could never be admitted.
#[test]
fn an_in_flight_budget_below_the_webhook_limit_is_refused() {
    let dir = common::TempDir::new();
    let mut cmd = common::command(dir.path());
    cmd.args([
        "serve",
        "--bind",
        "127.0.0.1:0",
        "--max-body-bytes-in-flight",
        "1048576",
    ]);
    let message = common::expect_error(&common::output(cmd));
    assert!(message.contains("at least 8388608"), "{message}");
}
