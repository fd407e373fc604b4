//! The LLM pass-through's cost on loopback (issue 38; docs/benchmarks.md, "LLM pass-through"):
//! the same chat completion asked of a minimal upstream directly and through Switchboard's
//! `/api/v1/llm-proxy` (a real route on a SQLite file: token check, budget reads, key opened,
//! request forwarded, answer streamed back and its usage recorded), sequentially, for the time
//! to the answer's headers (first byte) and to its end, whole JSON and streamed (SSE, 20
//! chunks); then the throughput of 16 concurrent clients through the pass-through.
//!
//! Run: `cargo bench -p switchboard-api --bench llm_relay` (`just bench-llm-relay`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::{App, HttpResponse, HttpServer, web};
use switchboard_api::AppState;
use switchboard_api::app::create_app;
use switchboard_domain::Switchboard;
use switchboard_domain::identity::sealing::Sealer;
use switchboard_domain::llm_relay::LlmRoute;
use switchboard_domain::ports::LlmRelayStore;
use switchboard_domain::time_input::now_micros;
use switchboard_storage::DieselStore;
use switchboard_testkit::{Backend, TestDatabase};

#[path = "../tests/llm_relay/seed.rs"]
mod seed;
use seed::seed_conversation;
use switchboard_domain::llm_relay::token_hash;

const TOKEN: &str = "sbl_BenchBenchBenchBenchBenchBenchBenchBench123";
const ROUNDS: usize = 2000;

const ANSWER: &str = r#"{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}"#;

/// The upstream: a whole JSON answer, or 20 SSE chunks and `[DONE]` when asked to stream.
async fn upstream(body: web::Bytes) -> HttpResponse {
    if asks_to_stream(&body) {
        let mut sse = String::new();
        for i in 0..20 {
            sse.push_str(&format!(
                "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"w{i} \"}}}}]}}\n\n"
            ));
        }
        sse.push_str("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":10}}\n\ndata: [DONE]\n\n");
        return HttpResponse::Ok()
            .content_type("text/event-stream")
            .body(sse);
    }
    HttpResponse::Ok()
        .content_type("application/json")
        .body(ANSWER)
}

fn asks_to_stream(body: &[u8]) -> bool {
    body.windows(14).any(|w| w == b"\"stream\":true")
}

/// A live route of `TOKEN` to `upstream` on `store`, its key sealed with `sealer`.
fn route(store: &DieselStore, sealer: &Sealer, services: &Switchboard, upstream: &str) {
    let boot = services
        .operator()
        .bootstrap("Bench", "bench@example.com")
        .unwrap();
    let now = now_micros();
    let (sandbox, conversation) = seed_conversation(store, (boot.org_id, boot.user_id), None, now);
    store
        .insert_llm_route(&LlmRoute {
            token_hash: token_hash(TOKEN),
            sandbox_id: sandbox,
            conversation_id: conversation,
            org_id: boot.org_id,
            user_id: boot.user_id,
            upstream: upstream.to_owned(),
            api_key_sealed: sealer.seal("sk-real", &format!("llm-route:{conversation}")),
            key_owner: "organization".into(),
            model: "openai/m".into(),
            created_at: now,
        })
        .unwrap();
}

/// Percentile `p` (0..=100) of `v`, µs.
fn pct(v: &mut [Duration], p: f64) -> f64 {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p / 100.0).round() as usize;
    v[i].as_secs_f64() * 1e6
}

/// `ROUNDS` sequential requests to `url` (after 200 to warm up): first-byte and whole times.
async fn sequential(
    client: &reqwest::Client,
    url: &str,
    auth: Option<&str>,
    stream: bool,
) -> (Vec<Duration>, Vec<Duration>) {
    let body = format!(
        "{{\"model\":\"m\",\"stream\":{stream},\"messages\":[{{\"role\":\"user\",\"content\":\"hi\"}}]}}"
    );
    let (mut first, mut whole) = (Vec::new(), Vec::new());
    for i in 0..ROUNDS + 200 {
        let mut req = client
            .post(url)
            .header("content-type", "application/json")
            .body(body.clone());
        if let Some(t) = auth {
            req = req.bearer_auth(t);
        }
        let t0 = Instant::now();
        let r = req.send().await.unwrap();
        let t1 = Instant::now();
        assert!(r.status().is_success(), "{}", r.status());
        let _ = r.bytes().await.unwrap();
        if i >= 200 {
            first.push(t1 - t0);
            whole.push(t0.elapsed());
        }
    }
    (first, whole)
}

#[actix_web::main]
async fn main() {
    let db = TestDatabase::new(Backend::Sqlite);
    let store = Arc::new(DieselStore::open(db.url(), None).unwrap().0);
    let sealer = Sealer::new(&Sealer::generate_key());
    let services = Switchboard::new(store.clone()).with_llm_relay_sealer(sealer.clone());
    let up = HttpServer::new(|| App::new().route("/v1/chat/completions", web::post().to(upstream)))
        .workers(1)
        .bind("127.0.0.1:0")
        .unwrap();
    let up_addr = up.addrs()[0];
    actix_web::rt::spawn(up.run());
    route(&store, &sealer, &services, &format!("http://{up_addr}/v1"));
    let state = web::Data::new(AppState::new(services, None));
    let sb = HttpServer::new(move || create_app(state.clone()))
        .workers(1)
        .bind("127.0.0.1:0")
        .unwrap();
    let sb_addr = sb.addrs()[0];
    actix_web::rt::spawn(sb.run());
    let client = reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .unwrap();
    let direct = format!("http://{up_addr}/v1/chat/completions");
    let relayed = format!("http://{sb_addr}/api/v1/llm-proxy/chat/completions");
    println!("LLM pass-through on loopback, {ROUNDS} sequential requests each (µs):");
    for stream in [false, true] {
        let (mut df, mut dw) = sequential(&client, &direct, Some("sk-real"), stream).await;
        let (mut rf, mut rw) = sequential(&client, &relayed, Some(TOKEN), stream).await;
        let kind = if stream {
            "streamed (20 SSE chunks)"
        } else {
            "whole JSON"
        };
        println!(
            "{kind}: first byte direct p50 {:.0} p99 {:.0}; through p50 {:.0} p99 {:.0}; added p50 {:.0} p99 {:.0}",
            pct(&mut df, 50.0),
            pct(&mut df, 99.0),
            pct(&mut rf, 50.0),
            pct(&mut rf, 99.0),
            pct(&mut rf, 50.0) - pct(&mut df, 50.0),
            pct(&mut rf, 99.0) - pct(&mut df, 99.0),
        );
        println!(
            "{kind}: whole answer direct p50 {:.0} p99 {:.0}; through p50 {:.0} p99 {:.0}",
            pct(&mut dw, 50.0),
            pct(&mut dw, 99.0),
            pct(&mut rw, 50.0),
            pct(&mut rw, 99.0),
        );
    }
    // Throughput: 16 clients for 5 s through the pass-through.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (client, url) = (client.clone(), relayed.clone());
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while Instant::now() < deadline {
                let r = client
                    .post(&url)
                    .bearer_auth(TOKEN)
                    .header("content-type", "application/json")
                    .body(r#"{"model":"m","messages":[]}"#)
                    .send()
                    .await
                    .unwrap();
                let _ = r.bytes().await.unwrap();
                n += 1;
            }
            n
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    println!(
        "throughput through the pass-through, 16 clients: {:.0} requests/s",
        total as f64 / 5.0
    );
}
