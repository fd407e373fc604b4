//! Many writers and subscribers at random, every stream equal to the store's order; a
//! subscriber that reads nothing while 10,000 events arrive.

use std::sync::Arc;
use std::time::Duration;

use switchboard_testkit::Backend;

use crate::common::spawn_app;
use crate::live_delivery::client::{connect, conversation, ingest, next_json, quiet, store_order};

/// Deterministic pseudo-random numbers (xorshift).
pub struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

pub async fn writers_and_subscribers(backend: Backend) {
    let app = Arc::new(spawn_app(backend).await);
    let (conv, session) = conversation(&app, 1).await;
    const WRITERS: usize = 10;
    const BATCHES: usize = 20;
    const PER: usize = 5;
    let total = 1 + WRITERS * BATCHES * PER;
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let app = app.clone();
            let (conv, session) = (conv.clone(), session.clone());
            tokio::spawn(async move {
                for b in 0..BATCHES {
                    let from = 1 + (w * BATCHES + b) * PER;
                    ingest(&app, &session, &conv, from, from + PER).await;
                    tokio::time::sleep(Duration::from_millis(3)).await;
                }
            })
        })
        .collect();
    let subscribers: Vec<_> = (0..50u64)
        .map(|s| {
            let app = app.clone();
            let conv = conv.clone();
            tokio::spawn(async move {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (s + 1));
                tokio::time::sleep(Duration::from_millis(rng.below(300))).await;
                let mut got: Vec<String> = Vec::new();
                while got.len() < total {
                    let path =
                        format!("/sockets/session/{conv}?after_seq={}", got.len() as i64 - 1);
                    let mut ws = connect(&app.base, &path, &app.owner.key).await;
                    let sync = next_json(&mut ws).await;
                    assert_eq!(sync["from_seq"].as_u64(), Some(got.len() as u64));
                    // Read a random number of frames, then drop the socket (or read to the end).
                    let take = 1 + rng.below(400) as usize;
                    for _ in 0..take {
                        if got.len() == total {
                            break;
                        }
                        let f = next_json(&mut ws).await;
                        assert_eq!(
                            f["seq"].as_u64(),
                            Some(got.len() as u64),
                            "gap or duplicate"
                        );
                        got.push(f["event"]["id"].as_str().unwrap().to_owned());
                    }
                }
                got
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    let order = store_order(&app, &conv).await;
    assert_eq!(order.len(), total);
    for s in subscribers {
        let got = s.await.unwrap();
        assert_eq!(
            got, order,
            "{backend}: a subscriber's stream differs from the store"
        );
    }
}

pub fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

pub async fn slow_subscriber(backend: Backend) {
    let app = spawn_app(backend).await;
    let (conv, session) = conversation(&app, 1).await;
    let key = app.owner.key.clone();
    // Subscribed from the start, reading nothing while 10,000 events arrive.
    let mut ws = connect(
        &app.base,
        &format!("/sockets/session/{conv}?after_seq=-1"),
        &key,
    )
    .await;
    let before = rss_kib();
    for b in 0..100 {
        ingest(&app, &session, &conv, 1 + b * 100, 1 + (b + 1) * 100).await;
    }
    let grown = rss_kib().saturating_sub(before);
    // The server holds at most a page and a socket buffer for it, whatever it fell behind by.
    assert!(grown < 64 * 1024, "{backend}: RSS grew {grown} KiB");
    // Nothing lost: read some, drop, resume with after_seq and read to the end.
    let _sync = next_json(&mut ws).await;
    let mut next = 0u64;
    for _ in 0..1000 {
        let f = next_json(&mut ws).await;
        assert_eq!(f["seq"].as_u64(), Some(next));
        next += 1;
    }
    drop(ws);
    let mut ws = connect(
        &app.base,
        &format!("/sockets/session/{conv}?after_seq={}", next - 1),
        &key,
    )
    .await;
    let _sync = next_json(&mut ws).await;
    while next < 10_001 {
        let f = next_json(&mut ws).await;
        assert_eq!(f["seq"].as_u64(), Some(next), "{backend}");
        next += 1;
    }
    quiet(&mut ws, 200).await;
}
