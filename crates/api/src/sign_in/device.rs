//! Device authorization for `openhands login` (issue 34; RFC 8628 as openhands 1.16.0's
//! `openhands_cli/auth/device_flow.py` speaks it): `POST /oauth/device/authorize` (a JSON
//! body, `{}`) gives a device code and a user code; the person opens `/device`, signs in and
//! approves; `POST /oauth/device/token` (form `device_code=…`) then answers the new API key
//! as `access_token`, once. Until then it answers 400 with `authorization_pending`,
//! `slow_down` (with the longer `interval`), `expired_token`, `access_denied` or
//! `invalid_grant`.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use serde::{Deserialize, Serialize};
use switchboard_domain::services::DeviceRefusal;
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use super::pages;
use super::session::{configured, form_session, remote_addr, see_other, session_of};
use crate::AppState;
use crate::dto::ErrorDetail;
use crate::error::{ApiError, ApiResult};
use crate::extract::QueryPairs;

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(device_authorize)
        .service(device_token)
        .service(device_page)
        .service(device_decide);
}

/// `POST /oauth/device/authorize`'s answer (RFC 8628 §3.2).
#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceAuthorization {
    /// The device's secret, for polling.
    pub device_code: String,
    /// The code the person types, `XXXX-XXXX`.
    pub user_code: String,
    /// Where to type it.
    pub verification_uri: String,
    /// The same with the code filled in.
    pub verification_uri_complete: String,
    /// Seconds the codes live.
    pub expires_in: i64,
    /// Seconds between polls.
    pub interval: i64,
}

/// `POST /oauth/device/token`'s answer once approved.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceToken {
    /// A new API key of the member who approved (`X-Access-Token`).
    pub access_token: String,
    /// `Bearer`.
    pub token_type: String,
}

/// `POST /oauth/device/token`'s answer until then (RFC 8628 §3.5).
#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceTokenError {
    /// `authorization_pending`, `slow_down`, `expired_token`, `access_denied`,
    /// `invalid_grant` or `invalid_request`.
    pub error: String,
    /// For people.
    pub error_description: String,
    /// With `slow_down`: the seconds to wait between polls now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<i64>,
}

/// The token request's form (`grant_type` and `client_id`, when sent, are not needed).
#[derive(Deserialize, ToSchema)]
struct TokenForm {
    /// The device code.
    device_code: Option<String>,
}

/// The decision form.
#[derive(Deserialize, ToSchema)]
struct DecisionForm {
    /// The session's CSRF token.
    csrf: String,
    /// The code decided.
    user_code: String,
    /// `approve` or `deny`.
    decision: String,
}

/// A JSON 404 when sign-in is not configured (the CLI reads JSON).
fn not_configured() -> ApiError {
    ApiError::Domain(switchboard_domain::DomainError::NotFound(
        "Sign-in is not configured on this server".into(),
    ))
}

/// Starts a device login: a device code to poll with and a user code for the person to
/// approve at `verification_uri` once signed in. The body is ignored (`openhands login` sends
/// `{}`). At most 1,000 wait at once (429 past them).
#[utoipa::path(tag = "Sign-in",
    responses(
        (status = 200, body = DeviceAuthorization),
        (status = 404, description = "Sign-in is not configured on this server", body = ErrorDetail),
        (status = 429, description = "Too many device logins in flight", body = ErrorDetail),
    ))]
#[post("/oauth/device/authorize")]
pub async fn device_authorize(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let sign_in = configured(&state).map_err(|_| not_configured())?;
    let (st, remote) = (state.clone(), remote_addr(&req));
    let start = state
        .blocking(move || Ok(st.services.device_auth().start(remote.as_deref())?))
        .await?;
    let uri = format!("{}/device", sign_in.public_origin);
    Ok(HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(DeviceAuthorization {
            verification_uri_complete: format!("{uri}?user_code={}", start.user_code),
            verification_uri: uri,
            device_code: start.device_code,
            user_code: start.user_code,
            expires_in: start.expires_in,
            interval: start.interval,
        }))
}

/// Polls a device login (form `device_code=…`): the key once approved, else why not (400).
#[utoipa::path(tag = "Sign-in",
    request_body(content = Object, description = "`device_code=…` (form)", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, body = DeviceToken),
        (status = 400, body = DeviceTokenError),
        (status = 404, description = "Sign-in is not configured on this server", body = ErrorDetail),
        (status = 409, description = "The member holds the most keys allowed", body = ErrorDetail),
    ))]
#[post("/oauth/device/token")]
pub async fn device_token(
    state: web::Data<AppState>,
    form: Option<web::Form<TokenForm>>,
) -> ApiResult<HttpResponse> {
    configured(&state).map_err(|_| not_configured())?;
    let Some(code) = form
        .and_then(|f| f.into_inner().device_code)
        .filter(|c| !c.is_empty())
    else {
        return Ok(token_error(
            "invalid_request",
            "device_code is required",
            None,
        ));
    };
    let st = state.clone();
    let polled = state
        .blocking(move || Ok(st.services.device_auth().poll(&code)?))
        .await?;
    Ok(match polled {
        Ok(key) => HttpResponse::Ok()
            .insert_header(("Cache-Control", "no-store"))
            .json(DeviceToken {
                access_token: key.secret,
                token_type: "Bearer".into(),
            }),
        Err(refusal) => {
            let interval = match refusal {
                DeviceRefusal::SlowDown(i) => Some(i),
                _ => None,
            };
            token_error(&refusal.to_string(), refusal.description(), interval)
        }
    })
}

/// A 400 of the token endpoint.
fn token_error(error: &str, description: &str, interval: Option<i64>) -> HttpResponse {
    HttpResponse::BadRequest()
        .insert_header(("Cache-Control", "no-store"))
        .json(DeviceTokenError {
            error: error.into(),
            error_description: description.into(),
            interval,
        })
}

/// The verification page: the code to approve (`user_code`), or a form to type one. Without
/// a session: to `/login`, then back here.
#[utoipa::path(tag = "Sign-in",
    params(("user_code" = Option<String>, Query, description = "The code the device shows")),
    responses(
        (status = 200, description = "The page", content_type = "text/html"),
        (status = 303, description = "Not signed in: to /login, then back"),
        (status = 404, description = "Sign-in is not configured, or no such code waiting", content_type = "text/html"),
    ))]
#[get("/device")]
pub async fn device_page(
    req: HttpRequest,
    state: web::Data<AppState>,
    query: QueryPairs,
) -> HttpResponse {
    if let Err(page) = configured(&state) {
        return page;
    }
    let typed = query.all("user_code").pop().unwrap_or_default();
    let session = match session_of(&state, &req).await {
        Ok(Some(s)) => s,
        Ok(None) => {
            let back = format!("/device?user_code={}", urlencode(&typed));
            return see_other(&format!("/login?next={}", urlencode(&back)));
        }
        Err(e) => return pages::message(StatusCode::FORBIDDEN, "Not signed in", &e.to_string()),
    };
    if typed.is_empty() {
        return pages::device(None, &session.csrf_token, "");
    }
    let (st, code) = (state.clone(), typed.clone());
    match state
        .blocking(move || Ok(st.services.device_auth().lookup(&code)?))
        .await
    {
        Ok(g) => pages::device(Some(&g), &session.csrf_token, &typed),
        Err(e) => pages::message(StatusCode::NOT_FOUND, "No such code", &e.to_string()),
    }
}

/// Approves or denies a code (form: `user_code`, `decision` = `approve`|`deny`, `csrf`).
#[utoipa::path(tag = "Sign-in",
    responses(
        (status = 200, description = "Decided", content_type = "text/html"),
        (status = 403, description = "No session, or a form without its token", content_type = "text/html"),
        (status = 404, description = "No such code waiting, or sign-in is not configured", content_type = "text/html"),
    ))]
#[post("/device")]
pub async fn device_decide(
    req: HttpRequest,
    state: web::Data<AppState>,
    form: Option<web::Form<DecisionForm>>,
) -> HttpResponse {
    let session = match form_session(&state, &req, form.as_ref().map(|f| f.csrf.as_str())).await {
        Ok(s) => s,
        Err(page) => return page,
    };
    let Some(form) = form.map(web::Form::into_inner) else {
        return pages::forbidden_form();
    };
    let approve = form.decision == "approve";
    let (st, code) = (state.clone(), form.user_code.clone());
    match state
        .blocking(move || Ok(st.services.device_auth().decide(&session, &code, approve)?))
        .await
    {
        Ok(()) => pages::device_decided(approve),
        Err(e) => pages::message(
            StatusCode::NOT_FOUND,
            "No such code waiting",
            &e.to_string(),
        ),
    }
}

/// A query value, percent-encoded.
fn urlencode(s: &str) -> String {
    serde_urlencoded::to_string([("v", s)])
        .map(|e| e[2..].to_owned())
        .unwrap_or_default()
}
