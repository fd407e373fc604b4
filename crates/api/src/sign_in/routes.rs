//! Signing in through the OpenID provider and the account page (issue 34): `GET /login` →
//! the provider → `GET /login/callback` → a session cookie → `GET /account`, where a member
//! sees their organizations and creates, lists and revokes their own API keys; `POST
//! /logout`. Forms carry the session's CSRF token; the callback must come back to the browser
//! that started the sign-in (a cookie holds its `state`), once.

use actix_web::cookie::time::Duration as CookieDuration;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use serde::Deserialize;
use switchboard_domain::{ApiKeyId, DomainError};
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use super::config::{SESSION_COOKIE, SIGN_IN_COOKIE};
use super::pages::{self, refusal};
use super::session::{configured, form_session, remote_addr, see_other, session_of};
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{QueryPairs, path_uuid};

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(login)
        .service(callback)
        .service(logout)
        .service(account)
        .service(create_key)
        .service(revoke_key);
}

/// A form with only the CSRF token.
#[derive(Deserialize, ToSchema)]
struct CsrfForm {
    /// The session's CSRF token.
    csrf: String,
}

/// The key form.
#[derive(Deserialize, ToSchema)]
struct KeyForm {
    /// The session's CSRF token.
    csrf: String,
    /// The key's name.
    name: String,
}

/// Starts a sign-in: sends the browser to the identity provider (authorization code flow
/// with PKCE). `next` is where to return after (a path of this server; default `/account`).
#[utoipa::path(tag = "Sign-in",
    params(("next" = Option<String>, Query, description = "A path of this server to return to")),
    responses(
        (status = 303, description = "To the identity provider"),
        (status = 404, description = "Sign-in is not configured on this server", content_type = "text/html"),
        (status = 502, description = "The identity provider could not be reached", content_type = "text/html"),
    ))]
#[get("/login")]
pub async fn login(state: web::Data<AppState>, query: QueryPairs) -> HttpResponse {
    let sign_in = match configured(&state) {
        Ok(s) => s,
        Err(page) => return page,
    };
    let next = query.all("next").pop().unwrap_or_else(|| "/account".into());
    let auth = match sign_in.oidc.authorize().await {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(error = %e, "sign-in: the provider could not be reached");
            return pages::message(
                StatusCode::BAD_GATEWAY,
                "Sign-in is unavailable",
                &e.to_string(),
            );
        }
    };
    let (st, a_state, nonce, verifier) = (
        state.clone(),
        auth.state.clone(),
        auth.nonce.clone(),
        auth.pkce_verifier.clone(),
    );
    if let Err(e) = state
        .blocking(move || {
            Ok(st
                .services
                .sign_in()
                .begin(&a_state, &nonce, &verifier, &next)?)
        })
        .await
    {
        return refusal(e);
    }
    let mut cookie = sign_in.cookie(SIGN_IN_COOKIE, auth.state);
    cookie.set_max_age(CookieDuration::minutes(10));
    let mut resp = see_other(&auth.url);
    let _ = resp.add_cookie(&cookie);
    resp
}

/// The identity provider's return: checks the sign-in (`state` once, from this browser),
/// exchanges `code`, checks the ID token, finds or creates the user, opens a session and
/// returns to where the sign-in started.
#[utoipa::path(tag = "Sign-in",
    params(("code" = Option<String>, Query, description = "The authorization code"),
           ("state" = Option<String>, Query, description = "The sign-in's state")),
    responses(
        (status = 303, description = "Signed in: a session cookie, back to `next`"),
        (status = 400, description = "Unknown, used, expired or foreign sign-in", content_type = "text/html"),
        (status = 403, description = "Refused (the provider, a check of the token, a disabled user)", content_type = "text/html"),
        (status = 404, description = "Sign-in is not configured on this server", content_type = "text/html"),
    ))]
#[get("/login/callback")]
pub async fn callback(
    req: HttpRequest,
    state: web::Data<AppState>,
    query: QueryPairs,
) -> HttpResponse {
    let sign_in = match configured(&state) {
        Ok(s) => s,
        Err(page) => return page,
    };
    let one = |name: &str| query.all(name).pop();
    if let Some(error) = one("error") {
        let why = one("error_description").unwrap_or(error);
        return pages::message(
            StatusCode::FORBIDDEN,
            "The identity provider refused the sign-in",
            &why,
        );
    }
    let (Some(code), Some(returned)) = (one("code"), one("state")) else {
        return pages::message(
            StatusCode::BAD_REQUEST,
            "Sign-in failed",
            "The callback has no code or state.",
        );
    };
    // Bound to the browser that started it: a callback link sent to someone else does not
    // sign them in as another.
    if req
        .cookie(SIGN_IN_COOKIE)
        .is_none_or(|c| c.value() != returned)
    {
        return pages::message(
            StatusCode::BAD_REQUEST,
            "Sign-in failed",
            "This sign-in was not started in this browser: start again at /login.",
        );
    }
    let st = state.clone();
    let flight = match state
        .blocking(move || Ok(st.services.sign_in().resume(&returned)?))
        .await
    {
        Ok(f) => f,
        Err(e) => return refusal(e),
    };
    let who = match sign_in
        .oidc
        .finish(&code, &flight.nonce, &flight.pkce_verifier)
        .await
    {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(error = %e, "sign-in refused");
            return pages::message(StatusCode::FORBIDDEN, "Sign-in refused", &e.to_string());
        }
    };
    let (st, remote) = (state.clone(), remote_addr(&req));
    let opened = match state
        .blocking(move || Ok(st.services.sign_in().sign_in(&who, remote.as_deref())?))
        .await
    {
        Ok(o) => o,
        Err(e) => return refusal(e),
    };
    tracing::info!(user_id = %opened.user.id, created = opened.created, "signed in");
    let mut session = sign_in.cookie(SESSION_COOKIE, opened.cookie);
    let lifetime = opened.expires_at - switchboard_domain::time_input::now_micros();
    session.set_max_age(CookieDuration::seconds(lifetime.whole_seconds().max(0)));
    let mut resp = see_other(&flight.return_to);
    let _ = resp.add_cookie(&session);
    let _ = resp.add_cookie(&sign_in.removal(SIGN_IN_COOKIE));
    resp
}

/// Ends the session (form with its CSRF token).
#[utoipa::path(tag = "Sign-in",
    responses(
        (status = 200, description = "Signed out", content_type = "text/html"),
        (status = 403, description = "No session, or a form without its token", content_type = "text/html"),
        (status = 404, description = "Sign-in is not configured on this server", content_type = "text/html"),
    ))]
#[post("/logout")]
pub async fn logout(
    req: HttpRequest,
    state: web::Data<AppState>,
    form: Option<web::Form<CsrfForm>>,
) -> HttpResponse {
    let sign_in = match configured(&state) {
        Ok(s) => s,
        Err(page) => return page,
    };
    if let Err(page) = form_session(&state, &req, form.as_ref().map(|f| f.csrf.as_str())).await {
        return page;
    }
    let cookie = req
        .cookie(SESSION_COOKIE)
        .map(|c| c.value().to_owned())
        .unwrap_or_default();
    let st = state.clone();
    if let Err(e) = state
        .blocking(move || Ok(st.services.sign_in().sign_out(&cookie)?))
        .await
    {
        return refusal(e);
    }
    let mut resp = pages::message(StatusCode::OK, "Signed out", "Your session ended.");
    let _ = resp.add_cookie(&sign_in.removal(SESSION_COOKIE));
    resp
}

/// The account page of the session's user, `new_key` shown once.
async fn account_page(
    state: &web::Data<AppState>,
    session: switchboard_domain::identity::sign_in::WebSession,
    new_key: Option<(String, String)>,
) -> HttpResponse {
    let st = state.clone();
    let csrf = session.csrf_token.clone();
    match state
        .blocking(move || Ok(st.services.sign_in().account(&session)?))
        .await
    {
        Ok(a) => pages::account(
            &a,
            &csrf,
            new_key.as_ref().map(|(n, s)| (n.as_str(), s.as_str())),
        ),
        Err(e) => refusal(e),
    }
}

/// The account page: the member's organizations and roles, and their API keys (create,
/// revoke). Without a session: to `/login`.
#[utoipa::path(tag = "Sign-in",
    responses(
        (status = 200, description = "The account page", content_type = "text/html"),
        (status = 303, description = "Not signed in: to /login"),
        (status = 404, description = "Sign-in is not configured on this server", content_type = "text/html"),
    ))]
#[get("/account")]
pub async fn account(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Err(page) = configured(&state) {
        return page;
    }
    match session_of(&state, &req).await {
        Ok(Some(s)) => account_page(&state, s, None).await,
        Ok(None) => see_other("/login?next=/account"),
        Err(e) => refusal(e),
    }
}

/// Creates an API key of the session's user (form: `name`, `csrf`); the page shows it once.
#[utoipa::path(tag = "Sign-in",
    responses(
        (status = 200, description = "The account page with the new key", content_type = "text/html"),
        (status = 403, description = "No session, or a form without its token", content_type = "text/html"),
        (status = 404, description = "Sign-in is not configured on this server", content_type = "text/html"),
        (status = 422, description = "Not a key name", content_type = "text/html"),
        (status = 409, description = "The member holds the most keys allowed", content_type = "text/html"),
    ))]
#[post("/account/keys")]
pub async fn create_key(
    req: HttpRequest,
    state: web::Data<AppState>,
    form: Option<web::Form<KeyForm>>,
) -> HttpResponse {
    let session = match form_session(&state, &req, form.as_ref().map(|f| f.csrf.as_str())).await {
        Ok(s) => s,
        Err(page) => return page,
    };
    let name = form.map(|f| f.into_inner().name).unwrap_or_default();
    let (st, s) = (state.clone(), session.clone());
    match state
        .blocking(move || Ok(st.services.sign_in().create_key(&s, &name)?))
        .await
    {
        Ok(k) => account_page(&state, session, Some((k.record.name, k.secret))).await,
        Err(ApiError::Domain(DomainError::Invalid(e))) => pages::message(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Not a key name",
            &e.to_string(),
        ),
        Err(e) => refusal(e),
    }
}

/// Revokes one of the session user's keys (form: `csrf`).
#[utoipa::path(tag = "Sign-in",
    params(("key_id" = uuid::Uuid, Path, description = "The key")),
    responses(
        (status = 303, description = "Revoked: back to /account"),
        (status = 403, description = "No session, or a form without its token", content_type = "text/html"),
        (status = 404, description = "Not one of the member's keys, or sign-in is not configured", content_type = "text/html"),
    ))]
#[post("/account/keys/{key_id}/revoke")]
pub async fn revoke_key(
    req: HttpRequest,
    state: web::Data<AppState>,
    key_id: web::Path<String>,
    form: Option<web::Form<CsrfForm>>,
) -> HttpResponse {
    let session = match form_session(&state, &req, form.as_ref().map(|f| f.csrf.as_str())).await {
        Ok(s) => s,
        Err(page) => return page,
    };
    let Ok(id) = path_uuid(&key_id, "key_id") else {
        return pages::message(
            StatusCode::NOT_FOUND,
            "No such key",
            "It is not one of yours.",
        );
    };
    let st = state.clone();
    match state
        .blocking(move || Ok(st.services.sign_in().revoke_key(&session, ApiKeyId(id))?))
        .await
    {
        Ok(()) => see_other("/account"),
        Err(e) => refusal(e),
    }
}
