//! [`Caller`]: the API key of a request and the organization it names, checked in the same
//! blocking call as the handler's work.

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, web};
use switchboard_domain::{DomainError, OrgContext, OrgId};
use switchboard_model::ValidationError;

use super::headers::{presented_key, requested_org};
use crate::error::ApiError;
use crate::metrics::access_log::{CallerId, CallerSlot};
use crate::state::AppState;

/// The credentials of a request, not yet checked: handlers authenticate, resolve the
/// organization and do their work in one blocking call ([`Caller::run`]) instead of two.
pub struct Caller {
    key: Option<String>,
    requested: Result<Option<OrgId>, ValidationError>,
    /// Where the caller goes for the access log (`None` when it is off).
    slot: Option<CallerSlot>,
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
        let slot = self.slot;
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
            if let Some(slot) = slot {
                slot.set(CallerId::User {
                    user: ctx.principal.user_id,
                    key: Some(ctx.principal.key_id),
                });
            }
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
            slot: CallerSlot::of(req),
        }))
    }
}
