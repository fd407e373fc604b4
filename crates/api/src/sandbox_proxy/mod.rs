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

pub mod access;
pub mod config;
pub mod hosts;
pub mod http;
pub mod public;
pub mod route;
pub mod start_check;
pub mod upstream;
pub mod url_listeners;
pub mod url_ports;
pub mod ws;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::Next;
use actix_web::{FromRequest, HttpMessage, HttpRequest, HttpResponse, ResponseError, guard, web};
use switchboard_domain::DomainError;
use switchboard_domain::sandboxes::runtime::SandboxStatus;

pub use access::{Credential, credential, resolve};
pub use config::{Proxy, ProxyConfig};
pub use route::{PREFIX, Route, SESSION_KEY_QUERY};

use crate::dto::Status;
use crate::error::ApiError;
use crate::metrics::ProxyOutcome;
use crate::metrics::access_log::RouteLabel;
use crate::state::AppState;

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

/// The middleware of host-based routing ([`hosts`]) and of the sandboxes' own ports
/// ([`url_ports`]): a request on a connection a sandbox's port accepted
/// ([`url_ports::PortConnection`]), or whose `Host` matches the pattern, is proxied with its
/// whole path (to the agent server, for a port); others go on to the routes.
///
/// # Errors
/// Those of the wrapped service.
pub async fn route_by_host(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let state = req.app_data::<web::Data<AppState>>().cloned();
    let on_port = req.conn_data::<url_ports::PortConnection>().map(|c| Route {
        sandbox_id: Some(c.sandbox),
        service: public::AGENT_SERVER_SERVICE.to_owned(),
        tail: req.uri().path().to_owned(),
    });
    let label = if on_port.is_some() {
        PORT_ROUTE
    } else {
        HOST_ROUTE
    };
    let route = on_port.or_else(|| {
        let s = state.as_ref()?;
        let pattern = s.proxy.config().host_pattern.as_ref()?;
        let host = req.connection_info().host().to_owned();
        pattern.route(&host, req.uri().path())
    });
    let (Some(state), Some(route)) = (state, route) else {
        return Ok(next.call(req).await?.map_into_left_body());
    };
    let (http, mut payload) = req.into_parts();
    http.extensions_mut().insert(RouteLabel(label));
    let payload = <web::Payload as FromRequest>::from_request(&http, &mut payload).await?;
    let answer = match proxy_route(http.clone(), payload, state, route).await {
        Ok(a) => a,
        Err(e) => e.error_response(),
    };
    Ok(ServiceResponse::new(http, answer).map_into_right_body())
}

/// The route label (metrics, access log) of a request proxied from a sandbox's own port.
pub const PORT_ROUTE: &str = "<sandbox port>";
/// The route label of a request proxied by its host ([`hosts`]).
pub const HOST_ROUTE: &str = "<sandbox host>";

/// The methods proxied (`Allow` of the 405 for any other: OPTIONS and TRACE; a browser's
/// preflight from an allowed origin is answered by [`crate::cors`] first).
pub const METHODS: &str = "GET, HEAD, PUT, POST, DELETE, PATCH";

/// The proxy's handler: every method of `/sandboxes/{sandbox_id}/{service}[/{path}]`.
async fn proxy(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let route = Route::parse(req.uri().path()).ok_or(DomainError::SandboxNotFound)?;
    proxy_route(req, payload, state, route).await
}

/// A request to `route` (from its path, or its host: [`hosts`]), authenticated and forwarded;
/// counted in the proxy's metrics.
pub(crate) async fn proxy_route(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
    route: Route,
) -> Result<HttpResponse, ApiError> {
    let websocket = ws::is_upgrade(&req);
    let metrics = state.metrics.clone();
    let result = if websocket {
        ws::relay(req, payload, state, route)
            .await
            .map(|r| (r, ProxyOutcome::Forwarded))
    } else {
        forward_route(req, payload, state, route).await
    };
    let activity = metrics.activity();
    match result {
        Ok((answer, outcome)) => {
            activity.proxy_request(websocket, Ok(outcome));
            Ok(answer)
        }
        Err(e) => {
            activity.proxy_request(websocket, Err(&e));
            Err(e)
        }
    }
}

/// [`proxy_route`] for HTTP: the answer and whether it was forwarded or a probe answered here.
async fn forward_route(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
    route: Route,
) -> Result<(HttpResponse, ProxyOutcome), ApiError> {
    let Some(credential) = credential(&req) else {
        if let Some(answer) = probe(&req, &state, &route).await? {
            return Ok((answer, ProxyOutcome::Probe));
        }
        return Err(DomainError::NotAuthenticated.into());
    };
    let session = matches!(credential, Credential::Session(_));
    let target = resolve(&state, &route, credential).await?;
    access::note_target(&req, session, &target);
    let base = target
        .service_url(&route.service)
        .ok_or(DomainError::SandboxNotFound)?
        .to_owned();
    let limit = state.proxy.config.max_body;
    let payload = start_check::checked(&req, payload, &route, &target, limit).await?;
    http::forward(&state.proxy, &req, payload, &base, &route, &target)
        .await
        .map(|answer| (answer, ProxyOutcome::Forwarded))
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
        detail: None,
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
            "description": "Forwarded to the sandbox's service (`agent_server`: the agent server's own API under it; `vscode`, `worker_1`, `worker_2` where the sandbox's spec exposes them) with the sandbox's session key added; both bodies streamed. Websocket upgrades (GET) are relayed. Credentials: the sandbox's session key (X-Session-API-Key, the query session_api_key, or a websocket's first {\"type\":\"auth\"} frame) or an API key of a user who sees the sandbox. Without credentials, GET /alive, /health and /ready of the agent server are answered by Switchboard from the sandbox's status.",
            "operationId": format!("proxy_{method}"),
            "parameters": [
                {"name": "sandbox_id", "in": "path", "required": true, "schema": {"type": "string"}, "description": "Sandbox id (dashed or 32 hex; anything else is 404)"},
                {"name": "service", "in": "path", "required": true, "schema": {"type": "string"}, "description": "The exposed service, OpenHands' name in lowercase: agent_server (AGENT_SERVER), and where the spec exposes them vscode (VSCODE), worker_1 (WORKER_1), worker_2 (WORKER_2); `-` for `_` is accepted"},
                {"name": "path", "in": "path", "required": true, "schema": {"type": "string"}, "description": "The path on the service (may contain /)"},
                {"name": "session_api_key", "in": "query", "required": false, "schema": {"type": "string"}, "description": "The sandbox's session key (the agent server's query form)"},
            ],
            "requestBody": {"required": false, "content": {"*/*": {"schema": {}}}},
            "security": [{"SessionKeyHeader": []}, {"APIKeyHeader": []}, {"BearerAuth": []}],
            "responses": {
                "200": {"description": "The service's answer (any status it gives is passed through)", "content": {"*/*": {"schema": {}}}},
                "401": {"description": "No credentials, or an unknown, expired or revoked key", "content": error},
                "404": {"description": "Unknown sandbox, one the caller does not see, another sandbox's session key, or a service the sandbox does not expose", "content": error},
                "408": {"description": "The request body did not arrive within the body read timeout or above the minimum rate (the connection is closed)", "content": error},
                "409": {"description": "The sandbox is not RUNNING", "content": error},
                "413": {"description": "Body over the proxy's limit (--proxy-max-body-bytes, default 1 MiB)", "content": error},
                "429": {"description": "Rate limited", "content": error},
                "502": {"description": "The service did not answer", "content": error},
                "503": {"description": "No socket to sandboxes left in the proxy's share of the open-files budget (Retry-After: 1)", "content": error},
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
