//! The pass-through's own answers, in the error shape of the provider the client speaks to
//! (Anthropic's when its key came as `x-api-key`, else OpenAI's, which OpenAI-compatible
//! clients read), so the agent's LLM client shows their message.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use serde_json::json;
use switchboard_domain::llm_relay::KeyPlacement;
use switchboard_domain::services::llm_relay::Refusal;

/// The answer to a refused request: 401 for an unknown or revoked token, 400
/// `budget_exceeded` for a spent budget (as LiteLLM's proxy answers), 503 for a key that does
/// not open here.
pub fn answer(placement: Option<KeyPlacement>, why: &Refusal) -> HttpResponse {
    let (status, kind) = match why {
        Refusal::UnknownToken => (StatusCode::UNAUTHORIZED, "authentication_error"),
        Refusal::TaskBudget { .. } | Refusal::MonthlyBudget { .. } => {
            (StatusCode::BAD_REQUEST, "budget_exceeded")
        }
        Refusal::KeyUnavailable => (StatusCode::SERVICE_UNAVAILABLE, "api_error"),
    };
    shaped(placement, status, kind, &why.message())
}

/// 503: the pass-through could not check the token (the database failed).
pub fn unavailable(placement: Option<KeyPlacement>) -> HttpResponse {
    shaped(
        placement,
        StatusCode::SERVICE_UNAVAILABLE,
        "api_error",
        "Switchboard LLM pass-through: temporarily unavailable",
    )
}

/// 502 or 504: the upstream could not be reached, broke off, or did not answer in time.
pub fn upstream(placement: KeyPlacement, status: StatusCode, message: &str) -> HttpResponse {
    shaped(Some(placement), status, "api_error", message)
}

/// 400: a request the pass-through does not forward (its path would leave the provider's
/// base URL).
pub fn invalid(placement: KeyPlacement, message: &str) -> HttpResponse {
    shaped(
        Some(placement),
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        message,
    )
}

/// An error body as the provider writes it: Anthropic's `{"type": "error", "error": {"type",
/// "message"}}`, else OpenAI's `{"error": {"message", "type", "param", "code"}}`.
fn shaped(
    placement: Option<KeyPlacement>,
    status: StatusCode,
    kind: &str,
    message: &str,
) -> HttpResponse {
    let body = if placement == Some(KeyPlacement::XApiKey) {
        json!({"type": "error", "error": {"type": kind, "message": message}})
    } else {
        json!({"error": {"message": message, "type": kind, "param": null, "code": status.as_u16().to_string()}})
    };
    HttpResponse::build(status).json(body)
}
