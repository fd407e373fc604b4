//! The pass-through's rig: the real app over a fresh database with the installation key set,
//! routes stored as a start stores them (a sandbox row, a started conversation, the token's
//! SHA-256 and the real key sealed bound to the conversation), the recording upstream, and
//! the calls a client and an owner make.

use std::time::{Duration, Instant};

use reqwest::{Method, RequestBuilder, Response};
use serde_json::Value;
use switchboard_api::extract::BodyLimits;
use switchboard_domain::identity::sealing::Sealer;
use switchboard_domain::llm_relay::{LlmRoute, UsageRecord};
use switchboard_domain::ports::LlmRelayStore;
use switchboard_domain::time_input::now_micros;
use switchboard_domain::{ConversationId, OrgId, SandboxId, UserId};
use switchboard_testkit::Backend;
use time::{Date, OffsetDateTime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::{TestApp, spawn_app_configured, status_json};
use crate::llm_relay::seed::seed_conversation;
use crate::llm_relay::upstream::Upstream;
use switchboard_domain::llm_relay::token_hash;

/// The real key: must reach the upstream, and only where the token was.
pub const REAL_KEY: &str = "sk-real-Zq8Lm3Vx7Np2Kc9Wd4Hf";

/// The pass-through's path.
pub const RELAY: &str = "/api/v1/llm-proxy";

/// A token of the pass-through's shape (`sbl_` + 43 base62 characters), random.
pub fn new_token() -> String {
    let hex = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    format!("sbl_{}", &hex[..43])
}

/// One stored route.
#[derive(Debug, Clone)]
pub struct Route {
    /// The token the sandbox would hold.
    pub token: String,
    /// Its conversation.
    pub conversation: ConversationId,
    /// Its sandbox.
    pub sandbox: SandboxId,
}

/// Where a route goes and how its key is sealed.
pub struct RouteSpec<'a> {
    /// The conversation's organization.
    pub org: OrgId,
    /// The member who started it.
    pub user: UserId,
    /// Its `max_budget_per_task`.
    pub budget: Option<f64>,
    /// The upstream (the key owner's base URL).
    pub upstream: &'a str,
    /// The sealer of its key (the server's, or another).
    pub sealer: &'a Sealer,
    /// The conversation its key is sealed bound to (its own when `None`).
    pub bound_to: Option<ConversationId>,
}

/// The app with the pass-through on, its upstream, and a second listener redirects point at.
pub struct Relay {
    pub app: TestApp,
    pub up: Upstream,
    /// Where the upstream's redirects point: must never be asked anything.
    pub elsewhere: Upstream,
    pub sealer: Sealer,
    /// A client that follows no redirect.
    pub http: reqwest::Client,
    /// The upstream as routes store it: `<upstream>/v1`.
    pub upstream: String,
}

impl Relay {
    pub async fn start(backend: Backend) -> Relay {
        let sealer = Sealer::new(&Sealer::generate_key());
        let s = sealer.clone();
        let app = spawn_app_configured(backend, BodyLimits::default(), move |sw| {
            sw.with_llm_relay_sealer(s)
        })
        .await;
        let elsewhere = Upstream::start("http://127.0.0.1:9");
        let up = Upstream::start(&elsewhere.base);
        let upstream = format!("{}/v1", up.base);
        Relay {
            app,
            up,
            elsewhere,
            sealer,
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            upstream,
        }
    }

    /// A route of the organization's member to the upstream, with `budget`.
    pub async fn route(&self, budget: Option<f64>) -> Route {
        self.route_with(RouteSpec {
            org: self.app.org,
            user: self.app.member.user_id,
            budget,
            upstream: &self.upstream,
            sealer: &self.sealer,
            bound_to: None,
        })
        .await
    }

    /// A route as `spec` says: its sandbox, its started conversation, the route itself.
    pub async fn route_with(&self, spec: RouteSpec<'_>) -> Route {
        let store = self.app.store.clone();
        let token = new_token();
        let now = now_micros();
        let (org, user, budget) = (spec.org, spec.user, spec.budget);
        let (upstream, sealer, bound_to) =
            (spec.upstream.to_owned(), spec.sealer.clone(), spec.bound_to);
        let token_hash = token_hash(&token);
        let (sandbox, conversation) = tokio::task::spawn_blocking(move || {
            let (sandbox, conversation) = seed_conversation(&store, (org, user), budget, now);
            let bound = bound_to.unwrap_or(conversation);
            store
                .insert_llm_route(&LlmRoute {
                    token_hash,
                    sandbox_id: sandbox,
                    conversation_id: conversation,
                    org_id: org,
                    user_id: user,
                    upstream,
                    api_key_sealed: sealer.seal(REAL_KEY, &format!("llm-route:{bound}")),
                    key_owner: "organization".into(),
                    model: "openai/m".into(),
                    created_at: now,
                })
                .unwrap();
            (sandbox, conversation)
        })
        .await
        .unwrap();
        Route {
            token,
            conversation,
            sandbox,
        }
    }

    /// Adds a usage row directly (as a request on `day` would have), costing `cost`.
    pub async fn add_usage(&self, route: &Route, user: UserId, day: Date, cost: f64) {
        let store = self.app.store.clone();
        let record = UsageRecord {
            org_id: self.app.org,
            user_id: user,
            conversation_id: route.conversation,
            day,
            model: "openai/m".into(),
            requests: 1,
            input_tokens: 0,
            output_tokens: 0,
            cost_usd: cost,
        };
        tokio::task::spawn_blocking(move || store.add_llm_usage(&record).unwrap())
            .await
            .unwrap();
    }

    /// A request to the pass-through's `path` (its query included), no key yet.
    pub fn call(&self, method: Method, path: &str) -> RequestBuilder {
        self.http
            .request(method, format!("{}{RELAY}/{path}", self.app.base))
    }

    /// `POST chat/completions` with `token` as a bearer and a small chat body.
    pub async fn chat(&self, path: &str, token: &str) -> Response {
        self.call(Method::POST, path)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#)
            .send()
            .await
            .unwrap()
    }

    /// `POST <path>` with `token` as `x-api-key` (Anthropic's client): status and body.
    pub async fn anthropic(&self, path: &str, token: &str) -> (u16, Value) {
        let answer = self
            .call(Method::POST, path)
            .header("x-api-key", token)
            .header("anthropic-version", "2023-06-01")
            .body(r#"{"model":"claude","max_tokens":5,"messages":[]}"#)
            .send()
            .await
            .unwrap();
        status_json(answer).await
    }

    /// `GET <path>` as `key` on Switchboard's own API.
    pub async fn api(&self, key: &str, path: &str) -> (u16, Value) {
        status_json(self.app.get(path, Some(key)).await).await
    }

    /// The organization's usage read by `key`, with `query`.
    pub async fn org_usage(&self, key: &str, query: &str) -> (u16, Value) {
        self.api(
            key,
            &format!("/api/organizations/{}/llm-usage?{query}", self.app.org),
        )
        .await
    }

    /// Polls the organization's usage (the owner's read, yesterday to tomorrow) until it
    /// counts `requests` requests (usage is recorded after an answer ends, off the request);
    /// then reads it once more after a pause, so a late extra write would show.
    pub async fn wait_requests(&self, requests: u64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        let query = around_today();
        loop {
            let (status, body) = self.org_usage(&self.app.owner.key, &query).await;
            assert_eq!(status, 200, "{body}");
            let n = body["total"]["requests"].as_u64().unwrap();
            if n >= requests {
                tokio::time::sleep(Duration::from_millis(300)).await;
                let (_, body) = self.org_usage(&self.app.owner.key, &query).await;
                assert_eq!(body["total"]["requests"], requests, "{body}");
                return body;
            }
            assert!(
                Instant::now() < deadline,
                "usage stayed at {n} requests, {requests} expected: {body}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The value of the metric line `name{labels}` at `/metrics` (0 when absent).
    pub async fn metric(&self, series: &str) -> f64 {
        let text = self.app.get("/metrics", None).await.text().await.unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .map_or(0.0, |v| v.trim().parse().unwrap())
    }

    /// Polls [`Self::metric`] until it is `want` (counters move when an answer ends).
    pub async fn wait_metric(&self, series: &str, want: f64) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let v = self.metric(series).await;
            if v == want {
                return;
            }
            assert!(Instant::now() < deadline, "{series} = {v}, {want} expected");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sends `target` verbatim as the target of a `GET` (no client resolving its dot segments)
    /// with `token` as a bearer; the answer's status and body.
    pub async fn raw_get(&self, target: &str, token: &str) -> (u16, String) {
        let addr = self.app.base.trim_start_matches("http://");
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req = format!(
            "GET {target} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).await.unwrap();
        let answer = String::from_utf8_lossy(&answer);
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        // The answers read here are small and not chunked unless streamed.
        (status, body.to_owned())
    }

    /// Stops the app and both listeners.
    pub async fn stop(self) {
        self.app.stop().await;
        self.up.stop().await;
        self.elsewhere.stop().await;
    }
}

/// Today (UTC) as `YYYY-MM-DD`, `days` away.
pub fn day(days: i64) -> String {
    let d = OffsetDateTime::now_utc().date() + time::Duration::days(days);
    format!("{d}")
}

/// The first day of this month (UTC), `YYYY-MM-DD`.
pub fn first_of_month() -> Date {
    let today = OffsetDateTime::now_utc().date();
    today.replace_day(1).unwrap()
}

/// `from=<yesterday, or the month's first day>&to=<tomorrow>`: a span holding every request
/// of a test, and no earlier month.
pub fn around_today() -> String {
    let yesterday = OffsetDateTime::now_utc().date() - time::Duration::days(1);
    format!("from={}&to={}", yesterday.max(first_of_month()), day(1))
}

/// Asserts an OpenAI-shaped error: exactly `{"error": {"message", "type", "param": null,
/// "code"}}`, its status `status`, its type `kind`; answers the message.
#[track_caller]
pub fn openai_error(status: u16, body: &Value, want_status: u16, kind: &str) -> String {
    assert_eq!(status, want_status, "{body}");
    let obj = body
        .as_object()
        .unwrap_or_else(|| panic!("not JSON: {body}"));
    assert_eq!(obj.len(), 1, "{body}");
    let e = body["error"]
        .as_object()
        .unwrap_or_else(|| panic!("{body}"));
    let mut keys: Vec<&str> = e.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["code", "message", "param", "type"], "{body}");
    assert_eq!(e["type"], kind, "{body}");
    assert_eq!(e["param"], Value::Null, "{body}");
    assert_eq!(e["code"], want_status.to_string(), "{body}");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.starts_with("Switchboard LLM pass-through"),
        "{body}"
    );
    message.to_owned()
}

/// Asserts an Anthropic-shaped error: exactly `{"type": "error", "error": {"type",
/// "message"}}`; answers the message.
#[track_caller]
pub fn anthropic_error(status: u16, body: &Value, want_status: u16, kind: &str) -> String {
    assert_eq!(status, want_status, "{body}");
    let obj = body
        .as_object()
        .unwrap_or_else(|| panic!("not JSON: {body}"));
    assert_eq!(obj.len(), 2, "{body}");
    assert_eq!(body["type"], "error", "{body}");
    let e = body["error"]
        .as_object()
        .unwrap_or_else(|| panic!("{body}"));
    assert_eq!(e.len(), 2, "{body}");
    assert_eq!(e["type"], kind, "{body}");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.starts_with("Switchboard LLM pass-through"),
        "{body}"
    );
    message.to_owned()
}

/// Waits out the pass-through's per-replica cache of authorized tokens
/// (`ROUTE_CACHE_TTL`): a revocation or a budget reached is refused from then on.
pub async fn past_cache() {
    let ttl = switchboard_domain::services::llm_relay_cache::ROUTE_CACHE_TTL;
    tokio::time::sleep(ttl + std::time::Duration::from_millis(100)).await;
}
