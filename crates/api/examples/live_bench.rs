//! Live delivery benchmark client (`scripts/bench-live.sh`; numbers in docs/benchmarks.md,
//! "Live delivery"). Talks to running servers over loopback; not a test.
//!
//! Environment: `PUB` (base URL webhooks are posted to), `SUB` (base URL subscribers connect
//! to; may be another replica), `KEY` (API key), `SESSION` (a sandbox session key), `MODE`:
//! - `latency`: `N` subscribers on one conversation (live only), then `ROUNDS` webhooks of one
//!   event each, one at a time; per frame: time from the webhook being sent to the frame being
//!   received by a subscriber (an upper bound on commit → frame); prints p50/p99/max.
//! - `idle`: opens `N` sockets (live only, one conversation each 100) and holds them for
//!   `HOLD` seconds (the script samples the server's RSS and CPU meanwhile).
//! - `replay`: stores `N` events (webhook batches of 1,000), then times one socket's
//!   `after_seq=-1` replay to the last event.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

fn event(tag: &str, i: usize) -> String {
    format!(
        r#"{{"id":"{tag}-{i}","timestamp":"2026-11-23T10:00:00.{:06}","source":"agent","kind":"MessageEvent","llm_message":{{"role":"assistant","content":[{{"type":"text","text":"event {i}"}}]}}}}"#,
        i % 1_000_000
    )
}

async fn post(client: &reqwest::Client, base: &str, session: &str, conv: &str, body: String) {
    let r = client
        .post(format!("{base}/api/v1/webhooks/events/{conv}"))
        .header("X-Session-API-Key", session)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200, "webhook");
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn open(sub: &str, key: &str, path: &str) -> Ws {
    let url = format!("{}{}", sub.replacen("http://", "ws://", 1), path);
    let mut req = url.into_client_request().unwrap();
    req.headers_mut()
        .insert("X-Access-Token", key.parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
    // The sync frame.
    loop {
        if let Some(Ok(Message::Text(_))) = ws.next().await {
            break;
        }
    }
    ws
}

/// The `seq` of a `durable` envelope (`{"type":"durable","seq":N,…}`), read without parsing
/// the whole frame.
fn seq_of(frame: &str) -> u64 {
    let at = frame.find("\"seq\":").expect("a durable frame") + 6;
    let digits = frame[at..].bytes().take_while(u8::is_ascii_digit).count();
    frame[at..at + digits].parse().expect("a seq")
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((p / 100.0) * (v.len() - 1) as f64).round() as usize]
}

#[tokio::main]
async fn main() {
    let publ = env("PUB", "http://127.0.0.1:3000");
    let sub = env("SUB", &publ);
    let key = env("KEY", "");
    let session = env("SESSION", "");
    let n: usize = env("N", "1").parse().unwrap();
    let client = reqwest::Client::new();
    match env("MODE", "latency").as_str() {
        "latency" => {
            let rounds: usize = env("ROUNDS", "200").parse().unwrap();
            let conv = uuid::Uuid::new_v4().to_string();
            post(
                &client,
                &publ,
                &session,
                &conv,
                format!("[{}]", event("seed", 0)),
            )
            .await;
            let path = format!("/sockets/session/{conv}");
            // Each subscriber keeps its own (seq, received at) list and only counts into a
            // shared atomic: the client's own work per frame (no JSON parse, no shared lock)
            // stays small beside the server's, since both share the machine's cores.
            let received = Arc::new(AtomicUsize::new(0));
            let all_in = Arc::new(tokio::sync::Notify::new());
            let mut tasks = Vec::new();
            for _ in 0..n {
                let mut ws = open(&sub, &key, &path).await;
                let (received, all_in) = (received.clone(), all_in.clone());
                tasks.push(tokio::spawn(async move {
                    let mut got = Vec::with_capacity(rounds);
                    while got.len() < rounds {
                        match ws.next().await {
                            Some(Ok(Message::Text(t))) => {
                                let at = Instant::now();
                                got.push((seq_of(&t), at));
                                if received.fetch_add(1, Ordering::AcqRel) + 1
                                    == n * (seq_of(&t) as usize)
                                {
                                    all_in.notify_one();
                                }
                            }
                            Some(Ok(_)) => {}
                            _ => panic!("socket closed"),
                        }
                    }
                    got
                }));
            }
            let mut sent = Vec::new();
            for i in 0..rounds {
                let t0 = Instant::now();
                post(
                    &client,
                    &publ,
                    &session,
                    &conv,
                    format!("[{}]", event("e", i)),
                )
                .await;
                sent.push(t0);
                // Let every subscriber receive it before the next one.
                let want = (i + 1) * n;
                let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
                while received.load(Ordering::Acquire) < want {
                    if tokio::time::timeout_at(deadline, all_in.notified())
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
            }
            let mut lat = Vec::with_capacity(rounds * n);
            for t in tasks {
                for (seq, at) in t.await.unwrap() {
                    lat.push((at - sent[seq as usize - 1]).as_secs_f64() * 1000.0);
                }
            }
            let count = lat.len();
            println!(
                "{{\"subscribers\":{n},\"frames\":{count},\"p50_ms\":{:.2},\"p99_ms\":{:.2},\"max_ms\":{:.2}}}",
                pct(&mut lat, 50.0),
                pct(&mut lat, 99.0),
                pct(&mut lat, 100.0)
            );
        }
        "idle" => {
            let hold: u64 = env("HOLD", "30").parse().unwrap();
            let mut socks = Vec::with_capacity(n);
            let mut conv = String::new();
            for i in 0..n {
                if i % 100 == 0 {
                    conv = uuid::Uuid::new_v4().to_string();
                    post(
                        &client,
                        &publ,
                        &session,
                        &conv,
                        format!("[{}]", event("seed", 0)),
                    )
                    .await;
                }
                socks.push(open(&sub, &key, &format!("/sockets/session/{conv}")).await);
            }
            println!("{{\"open\":{}}}", socks.len());
            // Keep answering pings while idle.
            let readers: Vec<_> = socks
                .into_iter()
                .map(|mut ws| {
                    tokio::spawn(async move { while let Some(Ok(_)) = ws.next().await {} })
                })
                .collect();
            tokio::time::sleep(Duration::from_secs(hold)).await;
            drop(readers);
        }
        "replay" => {
            let conv = uuid::Uuid::new_v4().to_string();
            for b in 0..n.div_ceil(1000) {
                let events: Vec<String> = (b * 1000..((b + 1) * 1000).min(n))
                    .map(|i| event("r", i))
                    .collect();
                post(
                    &client,
                    &publ,
                    &session,
                    &conv,
                    format!("[{}]", events.join(",")),
                )
                .await;
            }
            let t0 = Instant::now();
            let mut ws = open(&sub, &key, &format!("/sockets/session/{conv}?after_seq=-1")).await;
            let mut last = -1i64;
            while last < n as i64 - 1 {
                if let Some(Ok(Message::Text(t))) = ws.next().await {
                    let v: serde_json::Value = serde_json::from_str(&t).unwrap();
                    let seq = v["seq"].as_i64().unwrap();
                    assert_eq!(seq, last + 1, "gap");
                    last = seq;
                }
            }
            println!(
                "{{\"events\":{n},\"replay_s\":{:.3}}}",
                t0.elapsed().as_secs_f64()
            );
        }
        m => panic!("unknown MODE {m}"),
    }
}
