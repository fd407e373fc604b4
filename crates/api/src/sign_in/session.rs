//! What the sign-in pages share: the server's sign-in or the page saying there is none, the
//! request's session, the CSRF check, redirects and the peer's address.

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use switchboard_domain::DomainError;
use switchboard_domain::identity::sign_in::WebSession;

use super::config::{SESSION_COOKIE, SignIn};
use super::pages;
use crate::AppState;

/// The server's sign-in, or the page saying there is none.
#[allow(clippy::result_large_err)]
pub(crate) fn configured(state: &AppState) -> Result<Arc<SignIn>, HttpResponse> {
    state.sign_in.clone().ok_or_else(|| {
        pages::message(
            StatusCode::NOT_FOUND,
            "Sign-in is not configured on this server",
            "This Switchboard takes API keys only (the operator starts it with --oidc-issuer to sign people in).",
        )
    })
}

/// The client's address as this server sees it: the connection's peer (the audit log's and
/// the device page's).
pub(crate) fn remote_addr(req: &HttpRequest) -> Option<String> {
    req.peer_addr().map(|a| a.ip().to_string())
}

/// The request's session, checked on the blocking pool: `Ok(None)` without a usable one (no
/// cookie, unknown, lapsed); a disabled user is refused.
pub(crate) async fn session_of(
    state: &actix_web::web::Data<AppState>,
    req: &HttpRequest,
) -> Result<Option<WebSession>, crate::error::ApiError> {
    let Some(cookie) = req.cookie(SESSION_COOKIE).map(|c| c.value().to_owned()) else {
        return Ok(None);
    };
    let s = state.clone();
    state
        .blocking(move || match s.services.sign_in().session(&cookie) {
            Ok(session) => Ok(Some(session)),
            Err(DomainError::NotAuthenticated) => Ok(None),
            Err(e) => Err(e.into()),
        })
        .await
}

/// Whether a form's CSRF token is the session's (compared in constant time).
fn csrf_ok(session: &WebSession, presented: &str) -> bool {
    let (a, b) = (session.csrf_token.as_bytes(), presented.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A redirect (303 See Other).
pub(crate) fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header(("Location", location))
        .insert_header(("Cache-Control", "no-store"))
        .finish()
}

/// The session of a form's request with its CSRF token (`csrf`, `None` without a form)
/// checked: otherwise the page refusing it (404 without sign-in configured; 403; a disabled
/// user's refusal).
pub(crate) async fn form_session(
    state: &actix_web::web::Data<AppState>,
    req: &HttpRequest,
    csrf: Option<&str>,
) -> Result<WebSession, HttpResponse> {
    configured(state)?;
    match (csrf, session_of(state, req).await) {
        (Some(token), Ok(Some(s))) if csrf_ok(&s, token) => Ok(s),
        (_, Err(e)) => Err(pages::refusal(e)),
        _ => Err(pages::forbidden_form()),
    }
}
