//! Who may reach a sandbox through the proxy: the credential a request presents
//! ([`credential`]) checked against the sandbox ([`resolve`]; API.md, Sandbox proxy).

use actix_web::{HttpRequest, web};
use switchboard_domain::services::{ProxyCredential, ProxyTarget};
use switchboard_domain::{DomainError, SandboxId};

use super::route::{Route, SESSION_KEY_QUERY};
use crate::error::ApiError;
use crate::extract::{QueryPairs, SESSION_KEY_HEADER, presented_key};
use crate::metrics::access_log::{CallerId, note_caller};
use crate::state::AppState;

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

/// Checks `credential` against the route's sandbox on the blocking pool, and that the
/// route's service listens as the sandbox: the target, or the error to answer (401, 404,
/// 409, 502).
///
/// # Errors
/// Those of [`switchboard_domain::Switchboard::proxy_target`] and
/// [`switchboard_domain::Switchboard::verify_upstream`].
pub async fn resolve(
    state: &web::Data<AppState>,
    route: &Route,
    credential: Credential,
) -> Result<ProxyTarget, ApiError> {
    let s = state.clone();
    let (id, service) = (route.sandbox_id, route.service.clone());
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
            let target = target?;
            // Nothing goes to a listener that is not the sandbox's (issue 33).
            s.services.verify_upstream(&target, &service)?;
            Ok(target)
        })
        .await
}

/// Records who reached the sandbox of `target` for `req`'s access log line: the sandbox by its
/// session key (`session`), or the user whose API key it was.
pub fn note_target(req: &HttpRequest, session: bool, target: &ProxyTarget) {
    let caller = match (session, target.member) {
        (false, Some(user)) => CallerId::User { user, key: None },
        _ => CallerId::Sandbox(target.sandbox_id),
    };
    note_caller(req, caller);
}
