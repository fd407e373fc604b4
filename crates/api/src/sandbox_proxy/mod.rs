//! The sandbox proxy (issue 22, "Sandbox traffic through Switchboard"; API.md, Sandbox
//! proxy): every service a sandbox exposes is reached at
//! `/sandboxes/{sandbox_id}/{service}/{path…}` on Switchboard's own address, HTTP and
//! websockets, so clients need no route to the sandboxes. This module routes and
//! authenticates ([`register`], [`resolve`]); [`http`] forwards HTTP with both bodies streamed; [`ws`] relays
//! websockets; [`public`] writes the public URLs the API shows.
//!
//! Authentication happens here, before a byte reaches the sandbox: the sandbox's session key
//! (`X-Session-API-Key`, the query `session_api_key`, or a websocket's first
//! `{"type": "auth", "session_api_key": …}` frame, as the agent server accepts them) or an API
//! key (`X-Access-Token`, `Authorization: Bearer`) of a user who sees the sandbox. The
//! client's credentials never go upstream; Switchboard presents the sandbox's session key.
//! Without credentials, `GET /alive`, `/health` and `/ready` of the agent server are answered
//! by Switchboard from the sandbox's last reconciled status (the SDK probes them without a
//! key); everything else is 401.

pub mod hosts;
pub mod http;
pub mod public;
pub mod ws;

use std::time::Duration;

use actix_web::http::Method;
use actix_web::{HttpRequest, HttpResponse, guard, web};
use switchboard_domain::sandboxes::runtime::SandboxStatus;
use switchboard_domain::services::{ProxyCredential, ProxyTarget};
use switchboard_domain::{DomainError, SandboxId, parse_uuid};

use crate::AppState;
use crate::dto::Status;
use crate::error::ApiError;
use crate::extract::{DEFAULT_BODY_LIMIT, QueryPairs, SESSION_KEY_HEADER, presented_key};

/// The route prefix of proxied traffic.
pub const PREFIX: &str = "/sandboxes";
/// The query parameter carrying a session key (the agent server's deprecated form).
pub const SESSION_KEY_QUERY: &str = "session_api_key";

/// How the proxy behaves (`switchboard serve` flags; API.md, Sandbox proxy).
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Switchboard's URL as clients reach it (`--public-url`), without a trailing `/`:
    /// `exposed_urls`, `conversation_url` and `agent_server_url` point under it. `None`
    /// shows the sandboxes' own URLs (the app as tests build it in-process).
    pub public_url: Option<String>,
    /// Host-based routing (`--sandbox-host-pattern`): services at the root of their own host
    /// under the public URL's scheme and port, for clients that need a bare host.
    pub host_pattern: Option<hosts::HostPattern>,
    /// The largest request body forwarded, bytes (as the API's routes: 1 MiB); a larger
    /// declared one is 413 before the sandbox is called, and one that grows past it is cut.
    pub max_body: usize,
    /// Upstream connect timeout.
    pub connect_timeout: Duration,
    /// The longest an upstream read may wait (headers or the next body chunk) before 504 (or
    /// the end of the answer); long enough for the agent server's bash calls.
    pub read_timeout: Duration,
    /// Frames from the sandbox queued for one websocket client; a client further behind is
    /// closed (1008) so it never holds up the sandbox or the other clients.
    pub ws_queue: usize,
    /// How long a websocket client without credentials has to send its first-frame auth.
    pub ws_auth_timeout: Duration,
    /// The largest websocket message relayed either way, bytes.
    pub ws_max_message: usize,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            public_url: None,
            host_pattern: None,
            max_body: DEFAULT_BODY_LIMIT,
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(600),
            ws_queue: 1024,
            ws_auth_timeout: Duration::from_secs(10),
            ws_max_message: 16 << 20,
        }
    }
}

/// The proxy's configuration and its upstream HTTP client (a connection pool shared by every
/// worker).
pub struct Proxy {
    config: ProxyConfig,
    client: reqwest::Client,
}

impl Default for Proxy {
    fn default() -> Self {
        Proxy::new(ProxyConfig::default())
    }
}

impl Proxy {
    /// A proxy under `config`.
    ///
    /// # Panics
    /// When the HTTP client cannot be built (no TLS is configured, so it always can).
    pub fn new(mut config: ProxyConfig) -> Self {
        config.public_url = config
            .public_url
            .map(|u| u.trim_end_matches('/').to_owned());
        let client = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(config.connect_timeout)
            .read_timeout(config.read_timeout)
            // An idle pooled connection is dropped before the read timeout could fire on it
            // (the timeout runs on idle connections too; one cut there would fail the next
            // request sent on it).
            .pool_idle_timeout(Duration::from_secs(30).min(config.read_timeout / 2))
            .redirect(reqwest::redirect::Policy::none())
            .tcp_nodelay(true)
            .build()
            .expect("the proxy's HTTP client builds");
        Proxy { config, client }
    }

    /// The configuration.
    pub fn config(&self) -> &ProxyConfig {
        &self.config
    }

    /// The public URLs the API shows.
    pub fn public(&self) -> public::PublicUrls<'_> {
        public::PublicUrls::new(self.config.public_url.as_deref())
            .with_hosts(self.config.host_pattern.as_ref())
    }
}

/// Registers the proxy's routes on `app` (plain actix routes, every method: the OpenAPI
/// document describes them through [`document`]).
pub fn register<T>(app: actix_web::App<T>) -> actix_web::App<T>
where
    T: actix_web::dev::ServiceFactory<
            actix_web::dev::ServiceRequest,
            Config = (),
            Error = actix_web::Error,
            InitError = (),
        >,
{
    let resource = |pattern: String| {
        let methods = guard::Any(guard::Get())
            .or(guard::Head())
            .or(guard::Post())
            .or(guard::Put())
            .or(guard::Delete())
            .or(guard::Patch());
        web::resource(pattern)
            .route(web::route().guard(methods).to(proxy))
            .default_service(web::to(|| {
                std::future::ready(crate::routes::method_not_allowed(METHODS))
            }))
    };
    app.service(resource(format!("{PREFIX}/{{sandbox_id}}/{{service}}")))
        .service(resource(format!(
            "{PREFIX}/{{sandbox_id}}/{{service}}/{{path:.*}}"
        )))
}

/// The methods proxied (`Allow` of the 405 for any other: OPTIONS and TRACE; a browser's
/// preflight from an allowed origin is answered by [`crate::cors`] first).
pub const METHODS: &str = "GET, HEAD, PUT, POST, DELETE, PATCH";

/// One proxied request, as routed: the sandbox, the service and the raw rest of the path
/// (percent-encoding kept, with its leading `/`; empty for the service's root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The sandbox, or `None` when the path segment is no UUID (answered as unknown: 404).
    pub sandbox_id: Option<SandboxId>,
    /// The service name as written.
    pub service: String,
    /// The rest of the path, e.g. `/api/conversations`, forwarded as is.
    pub tail: String,
}

impl Route {
    /// Reads `/sandboxes/{id}/{service}{tail}` from a raw request path.
    pub fn parse(path: &str) -> Option<Route> {
        let rest = path.strip_prefix(PREFIX)?.strip_prefix('/')?;
        let (id, rest) = rest.split_once('/')?;
        let (service, tail) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if service.is_empty() {
            return None;
        }
        Some(Route {
            sandbox_id: parse_uuid(id).map(SandboxId),
            service: service.to_owned(),
            tail: tail.to_owned(),
        })
    }
}

/// The credential a request presents, by precedence: `X-Session-API-Key`, the query
/// `session_api_key`, an API key. `None` without any.
pub fn credential(req: &HttpRequest) -> Option<Credential> {
    if let Some(v) = req.headers().get(SESSION_KEY_HEADER) {
        return Some(Credential::Session(
            v.to_str().unwrap_or("").trim().to_owned(),
        ));
    }
    let query = QueryPairs::parse(req.query_string());
    if let Some(k) = query.all(SESSION_KEY_QUERY).into_iter().next() {
        return Some(Credential::Session(k));
    }
    presented_key(req)
        .filter(|k| !k.is_empty())
        .map(Credential::ApiKey)
}

/// An owned credential (see [`ProxyCredential`]).
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    /// A session key.
    Session(String),
    /// An API key.
    ApiKey(String),
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Credential::Session(_) => "Session(***)",
            Credential::ApiKey(_) => "ApiKey(***)",
        })
    }
}

/// Checks `credential` against sandbox `id` on the blocking pool: the target, or the error
/// to answer (401, 404, 409).
///
/// # Errors
/// Those of [`switchboard_domain::Switchboard::proxy_target`].
pub async fn resolve(
    state: &web::Data<AppState>,
    id: Option<SandboxId>,
    credential: Credential,
) -> Result<ProxyTarget, ApiError> {
    let s = state.clone();
    state
        .blocking(move || {
            let cred = match &credential {
                Credential::Session(k) => ProxyCredential::Session(k),
                Credential::ApiKey(k) => ProxyCredential::ApiKey(k),
            };
            // A key is judged before the id, so an unknown caller learns nothing from it.
            let target = match id {
                Some(id) => s.services.proxy_target(id, cred),
                None => s
                    .services
                    .proxy_target(SandboxId(uuid::Uuid::nil()), cred)
                    .and(Err(DomainError::SandboxNotFound)),
            };
            Ok(target?)
        })
        .await
}

/// The proxy's handler: every method of `/sandboxes/{sandbox_id}/{service}[/{path}]`.
async fn proxy(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let route = Route::parse(req.uri().path()).ok_or(DomainError::SandboxNotFound)?;
    proxy_route(req, payload, state, route).await
}

/// A request to `route` (from its path, or its host: [`hosts`]), authenticated and forwarded.
pub(crate) async fn proxy_route(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
    route: Route,
) -> Result<HttpResponse, ApiError> {
    if ws::is_upgrade(&req) {
        return ws::relay(req, payload, state, route).await;
    }
    let Some(credential) = credential(&req) else {
        if let Some(answer) = probe(&req, &state, &route).await? {
            return Ok(answer);
        }
        return Err(DomainError::NotAuthenticated.into());
    };
    let target = resolve(&state, route.sandbox_id, credential).await?;
    let base = target
        .service_url(&route.service)
        .ok_or(DomainError::SandboxNotFound)?
        .to_owned();
    http::forward(&state.proxy, &req, payload, &base, &route, &target).await
}

/// The agent server's probes without credentials (`GET /alive`, `/health`, `/ready`),
/// answered from the sandbox's last reconciled status: 200 `{"status": "ok"}` (`ready` for
/// `/ready`) when `RUNNING`, 409 otherwise, 404 for an unknown sandbox. `None` for any other
/// request.
async fn probe(
    req: &HttpRequest,
    state: &web::Data<AppState>,
    route: &Route,
) -> Result<Option<HttpResponse>, ApiError> {
    let probe = matches!(route.tail.as_str(), "/alive" | "/health" | "/ready");
    let agent = route
        .service
        .replace('-', "_")
        .eq_ignore_ascii_case("agent_server");
    if !(probe && agent && (req.method() == Method::GET || req.method() == Method::HEAD)) {
        return Ok(None);
    }
    let id = route.sandbox_id.ok_or(DomainError::SandboxNotFound)?;
    let s = state.clone();
    let status = state
        .blocking(move || Ok(s.services.proxy_probe(id)?))
        .await?;
    if status != SandboxStatus::Running {
        return Err(DomainError::SandboxNotReachable(status).into());
    }
    let word = if route.tail == "/ready" {
        "ready"
    } else {
        "ok"
    };
    Ok(Some(HttpResponse::Ok().json(Status {
        status: word.into(),
    })))
}

/// Adds the proxy's paths to the OpenAPI document `doc` (its operations take any body and
/// answer whatever the sandbox's service answers, so their bodies have no schema).
pub fn document(doc: &mut serde_json::Value) {
    use serde_json::json;
    let error =
        json!({"application/json": {"schema": {"$ref": "#/components/schemas/ErrorDetail"}}});
    let op = |method: &str| {
        json!({
            "tags": ["Sandbox proxy"],
            "summary": format!("{} to a sandbox's service", method.to_uppercase()),
            "description": "Forwarded to the sandbox's service (`agent_server`; the agent server's own API under it) with the sandbox's session key added; both bodies streamed. Websocket upgrades (GET) are relayed. Credentials: the sandbox's session key (X-Session-API-Key, the query session_api_key, or a websocket's first {\"type\":\"auth\"} frame) or an API key of a user who sees the sandbox. Without credentials, GET /alive, /health and /ready of the agent server are answered by Switchboard from the sandbox's status.",
            "operationId": format!("proxy_{method}"),
            "parameters": [
                {"name": "sandbox_id", "in": "path", "required": true, "schema": {"type": "string"}, "description": "Sandbox id (dashed or 32 hex; anything else is 404)"},
                {"name": "service", "in": "path", "required": true, "schema": {"type": "string"}, "description": "The exposed service: agent_server (AGENT_SERVER)"},
                {"name": "path", "in": "path", "required": true, "schema": {"type": "string"}, "description": "The path on the service (may contain /)"},
                {"name": "session_api_key", "in": "query", "required": false, "schema": {"type": "string"}, "description": "The sandbox's session key (the agent server's query form)"},
            ],
            "requestBody": {"required": false, "content": {"*/*": {"schema": {}}}},
            "security": [{"SessionKeyHeader": []}, {"APIKeyHeader": []}, {"BearerAuth": []}],
            "responses": {
                "200": {"description": "The service's answer (any status it gives is passed through)", "content": {"*/*": {"schema": {}}}},
                "401": {"description": "No credentials, or an unknown, expired or revoked key", "content": error},
                "404": {"description": "Unknown sandbox, one the caller does not see, another sandbox's session key, or a service the sandbox does not expose", "content": error},
                "409": {"description": "The sandbox is not RUNNING", "content": error},
                "413": {"description": "Body over the proxy's limit (--proxy-max-body-bytes, default 1 MiB)", "content": error},
                "429": {"description": "Rate limited", "content": error},
                "502": {"description": "The service did not answer", "content": error},
                "504": {"description": "The service did not answer in time", "content": error},
            },
        })
    };
    let item = json!({
        "get": op("get"), "put": op("put"), "post": op("post"),
        "delete": op("delete"), "patch": op("patch"),
    });
    if let Some(paths) = doc["paths"].as_object_mut() {
        paths.insert(
            format!("{PREFIX}/{{sandbox_id}}/{{service}}/{{path}}"),
            item,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_parse() {
        let id = "0b9f3c4e-7d2a-4c1e-9a8b-5f6e7d8c9a0b";
        let r = Route::parse(&format!("/sandboxes/{id}/agent_server/api/x%2Fy")).unwrap();
        assert_eq!(r.sandbox_id.unwrap().to_string(), id);
        assert_eq!(
            (r.service.as_str(), r.tail.as_str()),
            ("agent_server", "/api/x%2Fy")
        );
        let r = Route::parse(&format!("/sandboxes/{id}/agent_server")).unwrap();
        assert_eq!(r.tail, "");
        let r = Route::parse("/sandboxes/nope/agent_server/").unwrap();
        assert_eq!((r.sandbox_id, r.tail.as_str()), (None, "/"));
        assert_eq!(Route::parse("/sandboxes/x/"), None);
        assert_eq!(Route::parse("/api/v1/sandboxes"), None);
    }
}
