//! A real LLM provider stand-in on a loopback port: it records every request it receives
//! (method, path and query as they arrived, every header, the body's bytes) and answers by
//! the request's path:
//!
//! - `…/sse…`: server-sent events, [`SSE_CHUNKS`] chunks [`SSE_GAP`] apart, the last one
//!   carrying the usage [`SSE_USAGE`] (its sending instant is kept);
//! - `…/anthropic…`: an Anthropic message with [`ANTHROPIC_USAGE`];
//! - `…/redirect…`: 302 to the `redirect_to` base given at start;
//! - `…/error…`: 500 with a JSON body that still carries a usage (never to be recorded);
//! - `…/nocost…`: an OpenAI chat completion whose usage has no cost ([`NOCOST_USAGE`]);
//! - anything else: an OpenAI chat completion with [`JSON_USAGE`] (its cost included), its
//!   `x-request-id`, `openai-processing-ms` and `set-cookie` headers.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};

/// Tokens and cost an answer reports: (input, output, cost in USD). Costs are sums of powers
/// of two, so their sums are exact.
pub type Reported = (u64, u64, f64);

/// The whole JSON answer's usage.
pub const JSON_USAGE: Reported = (100, 20, 0.125);
/// The streamed answer's usage (in its last chunk).
pub const SSE_USAGE: Reported = (30, 5, 0.0625);
/// The usage of the answer without a cost.
pub const NOCOST_USAGE: Reported = (7, 3, 0.0);
/// The Anthropic answer's usage: 9 input tokens and 3 cache reads (counted as input), 4
/// output tokens, no cost.
pub const ANTHROPIC_USAGE: Reported = (12, 4, 0.0);

/// Chunks of the streamed answer.
pub const SSE_CHUNKS: usize = 5;
/// The pause before each chunk after the first.
pub const SSE_GAP: Duration = Duration::from_millis(400);

/// One request as the upstream received it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The method.
    pub method: String,
    /// The path and query, as they arrived.
    pub uri: String,
    /// Every header, names lowercase, in arrival order.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body's bytes.
    pub body: Vec<u8>,
}

impl Seen {
    /// The values of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Vec<String> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
            .collect()
    }

    /// Whether `needle` is anywhere in the request's URL or headers (names or values).
    pub fn mentions(&self, needle: &str) -> bool {
        self.uri.contains(needle)
            || self.headers.iter().any(|(n, v)| {
                n.contains(&needle.to_ascii_lowercase())
                    || String::from_utf8_lossy(v).contains(needle)
            })
    }

    /// The query's parameters, in order (not decoded).
    pub fn query(&self) -> Vec<(String, String)> {
        let Some((_, q)) = self.uri.split_once('?') else {
            return Vec::new();
        };
        q.split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (k.to_owned(), v.to_owned())
            })
            .collect()
    }
}

#[derive(Default)]
struct Log {
    seen: Mutex<Vec<Seen>>,
    last_sse_chunk: Mutex<Option<Instant>>,
}

struct Config {
    log: Arc<Log>,
    redirect_to: String,
}

/// The running upstream.
pub struct Upstream {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    log: Arc<Log>,
    handle: ServerHandle,
}

impl Upstream {
    /// An upstream on a fresh loopback port; its redirects point at `redirect_to`.
    pub fn start(redirect_to: &str) -> Upstream {
        let log = Arc::new(Log::default());
        let config = web::Data::new(Config {
            log: log.clone(),
            redirect_to: redirect_to.to_owned(),
        });
        let server = HttpServer::new(move || {
            App::new()
                .app_data(config.clone())
                .app_data(web::PayloadConfig::new(64 << 20))
                .default_service(web::to(answer))
        })
        .workers(2)
        .disable_signals()
        .bind(("127.0.0.1", 0))
        .unwrap();
        let addr = server.addrs()[0];
        let server = server.run();
        let handle = server.handle();
        tokio::spawn(server);
        Upstream {
            base: format!("http://{addr}"),
            log,
            handle,
        }
    }

    /// Every request received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.log.seen.lock().unwrap().clone()
    }

    /// The last request received.
    #[track_caller]
    pub fn last(&self) -> Seen {
        self.seen().pop().expect("the upstream received a request")
    }

    /// When the last streamed answer's last chunk was handed to the connection.
    pub fn last_sse_chunk(&self) -> Option<Instant> {
        *self.log.last_sse_chunk.lock().unwrap()
    }

    /// Stops the server.
    pub async fn stop(self) {
        self.handle.stop(false).await;
    }
}

/// A loopback address nothing listens on (bound, then released).
pub fn dead_address() -> String {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}")
}

fn usage_json((input, output, cost): Reported) -> serde_json::Value {
    let mut u = serde_json::json!({
        "prompt_tokens": input,
        "completion_tokens": output,
        "total_tokens": input + output,
    });
    if cost > 0.0 {
        u["cost"] = cost.into();
    }
    u
}

fn completion(usage: Reported) -> serde_json::Value {
    serde_json::json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}],
        "usage": usage_json(usage),
    })
}

async fn answer(req: HttpRequest, body: web::Bytes, config: web::Data<Config>) -> HttpResponse {
    let uri = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.path().to_owned(), |p| p.as_str().to_owned());
    config.log.seen.lock().unwrap().push(Seen {
        method: req.method().as_str().to_owned(),
        uri,
        headers: req
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec()))
            .collect(),
        body: body.to_vec(),
    });
    let path = req.path();
    if path.contains("/sse") {
        return sse(config.log.clone());
    }
    if path.contains("/anthropic") {
        let (input, output, _) = ANTHROPIC_USAGE;
        return HttpResponse::Ok().json(serde_json::json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
            "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": input - 3, "cache_read_input_tokens": 3, "output_tokens": output},
        }));
    }
    if path.contains("/redirect") {
        return HttpResponse::Found()
            .insert_header(("location", format!("{}/stolen", config.redirect_to)))
            .finish();
    }
    if path.contains("/error") {
        return HttpResponse::InternalServerError().json(serde_json::json!({
            "error": {"message": "upstream failed", "type": "server_error"},
            "usage": usage_json((1000, 1000, 8.0)),
        }));
    }
    if path.contains("/nocost") {
        return HttpResponse::Ok().json(completion(NOCOST_USAGE));
    }
    HttpResponse::Ok()
        .insert_header(("x-request-id", "upstream-1"))
        .insert_header(("openai-processing-ms", "17"))
        .insert_header(("set-cookie", "upstream-session=1; Path=/"))
        .json(completion(JSON_USAGE))
}

/// Chunk `i` of the streamed answer: content, the last one the usage and `[DONE]`.
fn sse_chunk(i: usize) -> String {
    if i + 1 < SSE_CHUNKS {
        format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"w{i} \"}}}}],\"usage\":null}}\n\n"
        )
    } else {
        format!(
            "data: {{\"choices\":[],\"usage\":{}}}\n\ndata: [DONE]\n\n",
            usage_json(SSE_USAGE)
        )
    }
}

/// The whole streamed answer, as the upstream sends it.
pub fn sse_body() -> String {
    (0..SSE_CHUNKS).map(sse_chunk).collect()
}

/// The streamed answer: a content chunk at once, then one every [`SSE_GAP`], the last with
/// the usage and `[DONE]`.
fn sse(log: Arc<Log>) -> HttpResponse {
    let chunks = futures_util::stream::unfold(0usize, move |i| {
        let log = log.clone();
        async move {
            if i == SSE_CHUNKS {
                return None;
            }
            if i > 0 {
                tokio::time::sleep(SSE_GAP).await;
            }
            if i + 1 == SSE_CHUNKS {
                *log.last_sse_chunk.lock().unwrap() = Some(Instant::now());
            }
            Some((
                Ok::<_, actix_web::Error>(web::Bytes::from(sse_chunk(i))),
                i + 1,
            ))
        }
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .streaming(chunks)
}
