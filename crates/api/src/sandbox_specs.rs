//! Sandbox specs (issue 9; reference app-server §4): what a sandbox runs, from the operator's
//! `--sandbox-specs` file or the built-in process preset, in the configured order.

use actix_web::{get, web};
use switchboard_domain::sandboxes::records::{MAX_SANDBOX_BATCH, MAX_SANDBOX_PAGE, SpecCursor};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{ErrorDetail, SandboxSpecInfo, SandboxSpecInfoPage};
use crate::error::ApiResult;
use crate::extract::{Caller, QueryPairs};
use crate::openapi::params::PageLimit;
use crate::responses::ApiKeyErrors;

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(search_sandbox_specs).service(get_sandbox_specs);
}

/// The sandbox specs, in the configured order (the first is the default of a start).
#[utoipa::path(tag = "Sandbox specs",
    params(
        ("page_id" = Option<String>, Query, description = "The `next_page_id` of the previous page (opaque; any other value is 422)"),
        ("limit" = inline(Option<PageLimit>), Query, description = format!("1..={MAX_SANDBOX_PAGE}, default {MAX_SANDBOX_PAGE}")),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = SandboxSpecInfoPage), ApiKeyErrors))]
#[get("/api/v1/sandbox-specs/search")]
pub async fn search_sandbox_specs(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<web::Json<SandboxSpecInfoPage>> {
    let page = caller
        .run(state, move |s, _ctx| {
            let (after, limit) = query.paging::<SpecCursor>(MAX_SANDBOX_PAGE)?;
            Ok(s.services.sandboxes().search_specs(after, limit))
        })
        .await?;
    Ok(web::Json(SandboxSpecInfoPage {
        items: page.items.into_iter().map(SandboxSpecInfo::from).collect(),
        next_page_id: page.next_page_id,
    }))
}

/// Sandbox specs by id (`?id=…&id=…`, at most 100), in request order, `null` for unknown ids.
#[utoipa::path(tag = "Sandbox specs",
    params(
        ("id" = Vec<String>, Query, max_items = 100, description = "Spec ids (repeat the parameter; at most 100)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = Vec<Option<SandboxSpecInfo>>),
        (status = 400, description = format!("More than {MAX_SANDBOX_BATCH} ids"), body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[get("/api/v1/sandbox-specs")]
pub async fn get_sandbox_specs(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<web::Json<Vec<Option<SandboxSpecInfo>>>> {
    let found = caller
        .run(state, move |s, _ctx| {
            let ids = query.ids("id")?;
            Ok(s.services.sandboxes().get_specs(&ids)?)
        })
        .await?;
    Ok(web::Json(
        found
            .into_iter()
            .map(|s| s.map(SandboxSpecInfo::from))
            .collect(),
    ))
}
