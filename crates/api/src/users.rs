//! Users as they see themselves: `GET /api/v1/users/me`.

use actix_web::{get, web};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::MeResponse;
use crate::error::ApiResult;
use crate::extract::Caller;
use crate::responses::ApiKeyErrors;

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(users_me);
}

/// The caller, the effective organization, the caller's role and permissions there.
#[utoipa::path(tag = "Users",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = MeResponse), ApiKeyErrors))]
#[get("/api/v1/users/me")]
pub async fn users_me(
    state: web::Data<AppState>,
    caller: Caller,
) -> ApiResult<web::Json<MeResponse>> {
    let me = caller
        .run(state, |s, ctx| Ok(s.services.users().me(&ctx)?))
        .await?;
    Ok(web::Json(me.into()))
}
