//! A conversation start through the proxy into a sandbox without a `/workspace` of its own
//! (issue 31; API.md, "The conversation's working directory"): `POST /api/conversations` of
//! the agent server whose `workspace.working_dir` is `/workspace` or below it is answered 422
//! here, naming `working_dir` and the directory to pass instead, where the agent server would
//! answer a 500 with Python's `PermissionError` (or, run as root, create the host's
//! `/workspace` shared by every sandbox). Only such sandboxes (`--process-isolation none`)
//! have their start bodies read here; every other request streams through untouched.

use actix_web::http::Method;
use actix_web::{FromRequest, HttpRequest, web};
use futures_util::StreamExt;
use switchboard_domain::sandboxes::services::ExposedService;
use switchboard_domain::services::ProxyTarget;
use switchboard_model::{ErrorType, LocItem, ValidationError};

use super::route::Route;
use crate::error::ApiError;

/// The agent server's conversation start, as the route names it.
const START_PATH: &str = "/api/conversations";

/// Whether `req` to `route` starts a conversation on the agent server of a sandbox that
/// refuses `/workspace` (its project directory is not under it).
fn must_check(req: &HttpRequest, route: &Route, target: &ProxyTarget) -> bool {
    req.method() == Method::POST
        && ExposedService::parse(&route.service) == Some(ExposedService::AgentServer)
        && route.tail.trim_end_matches('/') == START_PATH
        && target.working_dir_refusal("/workspace").is_some()
}

/// `payload` unchanged, or, for a conversation start on the agent server (`must_check`), read
/// whole (at most `limit` bytes: the proxy's own limit) and checked, then handed on as a payload
/// again.
///
/// # Errors
/// 422 ([`ApiError::Validation`], loc `body.workspace.working_dir`) for a `working_dir`
/// under `/workspace`; 413 for a body over `limit`; 400 when the body breaks off.
pub async fn checked(
    req: &HttpRequest,
    payload: web::Payload,
    route: &Route,
    target: &ProxyTarget,
    limit: usize,
) -> Result<web::Payload, ApiError> {
    if !must_check(req, route, target) {
        return Ok(payload);
    }
    let mut payload = payload;
    let mut body = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| ApiError::BadBody(e.to_string()))?;
        if body.len() + chunk.len() > limit {
            return Err(ApiError::PayloadTooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    let body = body.freeze();
    // Not JSON, or no working_dir: the agent server answers it as it would.
    let working_dir = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| {
            v.pointer("/workspace/working_dir")
                .and_then(|w| w.as_str())
                .map(str::to_owned)
        });
    if let Some(dir) = working_dir
        && let Some(why) = target.working_dir_refusal(&dir)
    {
        let loc = ["body", "workspace", "working_dir"]
            .map(|k| LocItem::Key(k.to_owned()))
            .to_vec();
        return Err(ApiError::Validation(vec![
            ValidationError::new(ErrorType::ValueError, loc, format!("Value error, {why}"))
                .with_input(serde_json::Value::String(dir)),
        ]));
    }
    let mut again = actix_web::dev::Payload::from(body);
    web::Payload::from_request(req, &mut again)
        .await
        .map_err(|e| ApiError::BadBody(e.to_string()))
}
