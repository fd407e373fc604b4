//! [`Caller`]: the API key of a request and the organization it names, checked in the same
//! blocking call as the handler's work.

use actix_web::dev::Payload;
use actix_web::http::header::AUTHORIZATION;
use actix_web::{FromRequest, HttpRequest, web};
use switchboard_domain::validation::{loc, uuid_parsing};
use switchboard_domain::{DomainError, OrgContext, OrgId, parse_uuid};
use switchboard_model::ValidationError;

use crate::AppState;
use crate::error::ApiError;

/// Header carrying an API key (spec §5).
pub const ACCESS_TOKEN_HEADER: &str = "X-Access-Token";
/// Header naming the organization to act on (API.md, Identity).
pub const ORG_HEADER: &str = "X-Org-Id";

/// The API key of a request: `X-Access-Token`, else `Authorization: Bearer`. The first present
/// wins; an invalid one never falls through to the other.
pub fn presented_key(req: &HttpRequest) -> Option<String> {
    if let Some(v) = req.headers().get(ACCESS_TOKEN_HEADER) {
        return Some(v.to_str().unwrap_or("").trim().to_owned());
    }
    let auth = req.headers().get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = auth.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
}

/// `X-Org-Id`, parsed: `Ok(None)` when absent; a 422 (`uuid_parsing`, loc
/// `["header", "x-org-id"]`) when it is not a UUID.
pub fn requested_org(req: &HttpRequest) -> Result<Option<OrgId>, ValidationError> {
    let Some(v) = req.headers().get(ORG_HEADER) else {
        return Ok(None);
    };
    let text = v.to_str().unwrap_or("");
    parse_uuid(text.trim())
        .map(|u| Some(OrgId(u)))
        .ok_or_else(|| uuid_parsing(loc(["header", "x-org-id"]), text))
}

/// The credentials of a request, not yet checked: handlers authenticate, resolve the
/// organization and do their work in one blocking call ([`Caller::run`]) instead of two.
pub struct Caller {
    key: Option<String>,
    requested: Result<Option<OrgId>, ValidationError>,
}

impl Caller {
    /// Authenticates (401), resolves the effective organization (422 for a malformed
    /// `X-Org-Id`, 403, 404), then runs `f` with the context, all on the blocking pool.
    ///
    /// # Errors
    /// Those above, and `f`'s.
    pub async fn run<T: Send + 'static>(
        self,
        state: web::Data<AppState>,
        f: impl FnOnce(&AppState, OrgContext) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let key = self
            .key
            .filter(|k| !k.is_empty())
            .ok_or(DomainError::NotAuthenticated)?;
        let requested = self.requested;
        let st = state.clone();
        st.blocking(move || {
            let auth = state.services.auth();
            // The key is checked before a malformed X-Org-Id is reported.
            let requested = match requested {
                Ok(r) => r,
                Err(e) => {
                    auth.authenticate(&key)?;
                    return Err(e.into());
                }
            };
            let ctx = auth.authenticate_in(&key, requested)?;
            f(&state, ctx)
        })
        .await
    }
}

impl Caller {
    /// Authenticates (401) and resolves the effective organization (422 for a malformed
    /// `X-Org-Id`, 403, 404) in one blocking call, and returns the context: for handlers that
    /// read a body, which they do only after this (API.md, Request bodies), and then do their
    /// work in a second blocking call.
    ///
    /// # Errors
    /// Those above.
    pub async fn authenticate(self, state: &web::Data<AppState>) -> Result<OrgContext, ApiError> {
        self.run(state.clone(), |_, ctx| Ok(ctx)).await
    }
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Caller, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(Ok(Caller {
            key: presented_key(req),
            requested: requested_org(req),
        }))
    }
}
