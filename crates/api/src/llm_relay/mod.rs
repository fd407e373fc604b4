//! The LLM pass-through's HTTP side (issue 38; docs/API.md, "LLM pass-through"):
//! `/api/v1/llm-proxy/{path}` takes a conversation's request as its agent's LLM client made
//! it, with the conversation's token where the key goes ([`token`]), and forwards it to the
//! route's upstream with the real key in the token's place ([`forward`]), streaming the answer
//! back while reading what it used. Refusals answer in the provider's own error shape
//! ([`refusal`]), so the agent's client shows their message. `GET` usage routes: [`usage`].
//!
//! Not in the OpenAPI document: this is the providers' API, not Switchboard's.

pub mod client;
pub mod forward;
pub mod refusal;
pub mod tee;
pub mod token;
pub mod usage;

use actix_web::{HttpRequest, HttpResponse, guard, web};
use switchboard_domain::services::llm_relay::{RELAY_PATH, Refusal};

use crate::AppState;
use crate::extract::RawBody;
pub use forward::MAX_BODY;
use token::Presented;

/// Registers the pass-through's routes (every method a provider's API uses).
pub fn register<T>(app: actix_web::App<T>) -> actix_web::App<T>
where
    T: actix_web::dev::ServiceFactory<
            actix_web::dev::ServiceRequest,
            Config = (),
            Error = actix_web::Error,
            InitError = (),
        >,
{
    let methods = guard::Any(guard::Get())
        .or(guard::Post())
        .or(guard::Put())
        .or(guard::Delete())
        .or(guard::Patch());
    app.service(
        web::resource(format!("{RELAY_PATH}/{{path:.*}}"))
            .route(web::route().guard(methods).to(relay)),
    )
}

/// One request through the pass-through: the token checked (401 in the provider's shape when
/// unknown or revoked; 400 `budget_exceeded` when a budget is spent), then forwarded.
async fn relay(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: RawBody<MAX_BODY>,
) -> HttpResponse {
    let Some(presented) = Presented::of(&req) else {
        return refusal::answer(None, &Refusal::UnknownToken);
    };
    let relay = state.services.llm_relay().clone();
    let authorized = match relay.cached(&presented.token) {
        Some(target) => Ok(Ok(target)),
        None => {
            let token = presented.token.clone();
            let today = time::OffsetDateTime::now_utc().date();
            state
                .blocking(move || Ok(relay.authorize(&token, today)?))
                .await
        }
    };
    let target = match authorized {
        Ok(Ok(target)) => target,
        Ok(Err(why)) => {
            state.metrics.llm_relay().refused(&why);
            return refusal::answer(Some(presented.placement), &why);
        }
        Err(e) => {
            tracing::warn!(error = %e, "the LLM pass-through could not check a token");
            return refusal::unavailable(Some(presented.placement));
        }
    };
    // The path as the client sent it, still percent-encoded (the router's decoded one would
    // turn an encoded `?` or `#` into a query or a fragment).
    let Some(path) = req
        .path()
        .strip_prefix(RELAY_PATH)
        .and_then(|p| p.strip_prefix('/'))
    else {
        return refusal::invalid(
            presented.placement,
            "Switchboard LLM pass-through: the request's path is not under /api/v1/llm-proxy/",
        );
    };
    forward::forward(&state, &req, body, path, &presented, target).await
}

/// Registers the usage routes (in the OpenAPI document).
pub fn configure(cfg: &mut utoipa_actix_web::service_config::ServiceConfig<'_>) {
    usage::configure(cfg);
}
