//! [`SandboxCaller`]: the session key an agent server presents on the webhooks (API.md, Event
//! ingestion), checked in the same blocking call as the handler's work.

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, web};
use switchboard_domain::sandboxes::Sandbox;

use super::headers::SESSION_KEY_HEADER;
use crate::error::ApiError;
use crate::metrics::access_log::{CallerId, CallerSlot};
use crate::state::AppState;

/// The session key of a webhook request, not yet checked.
pub struct SandboxCaller {
    key: Option<String>,
    /// Where the caller goes for the access log (`None` when it is off).
    slot: Option<CallerSlot>,
}

impl SandboxCaller {
    /// Authenticates the sandbox (401 without a key or for an unknown one), then runs `f` with
    /// it, all on the blocking pool.
    ///
    /// # Errors
    /// Those above, and `f`'s.
    pub async fn run<T: Send + 'static>(
        self,
        state: web::Data<AppState>,
        f: impl FnOnce(&AppState, Sandbox) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let st = state.clone();
        st.blocking(move || {
            let sandbox = state
                .services
                .sandboxes()
                .authenticate_sandbox(self.key.as_deref())?;
            if let Some(slot) = &self.slot {
                slot.set(CallerId::Sandbox(sandbox.id));
            }
            f(&state, sandbox)
        })
        .await
    }
}

impl SandboxCaller {
    /// Authenticates the sandbox (401 without a key or for an unknown one) in one blocking
    /// call and returns it: for the webhooks, which read their body only after this (API.md,
    /// Request bodies).
    ///
    /// # Errors
    /// That above.
    pub async fn authenticate(self, state: &web::Data<AppState>) -> Result<Sandbox, ApiError> {
        self.run(state.clone(), |_, sandbox| Ok(sandbox)).await
    }
}

impl FromRequest for SandboxCaller {
    type Error = ApiError;
    type Future = std::future::Ready<Result<SandboxCaller, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let key = req
            .headers()
            .get(SESSION_KEY_HEADER)
            .map(|v| v.to_str().unwrap_or("").to_owned());
        std::future::ready(Ok(SandboxCaller {
            key,
            slot: CallerSlot::of(req),
        }))
    }
}
