//! Sandbox specs (issue 9; reference app-server §4): what a sandbox runs, from the operator's
//! `--sandbox-specs` file or the built-in process preset, in the configured order.

use actix_web::{get, web};
use switchboard_domain::OrgContext;
use switchboard_domain::sandboxes::records::{
    MAX_SANDBOX_BATCH, MAX_SANDBOX_PAGE, Page, SpecCursor,
};
use switchboard_domain::sandboxes::specs::SandboxSpec;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{ErrorDetail, SandboxSpecInfo, SandboxSpecInfoPage};
use crate::error::{ApiError, ApiResult};
use crate::extract::{Caller, QueryPairs};
use crate::openapi::params::PageLimit;
use crate::reads::{self, Reads};
use crate::responses::ApiKeyErrors;

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(search_sandbox_specs).service(get_sandbox_specs);
}

/// Sandbox specs, as [`reads`] reads them (the same for every organization).
struct Specs;

impl Reads for Specs {
    type Scope = ();
    type Params = (Option<SpecCursor>, u32);
    type Page = Page<SandboxSpec>;
    type Found = Vec<Option<SandboxSpec>>;

    fn scope(_path: &str) -> Result<(), ApiError> {
        Ok(())
    }

    fn params(query: &QueryPairs, _paging: bool) -> Result<Self::Params, ApiError> {
        query.paging::<SpecCursor>(MAX_SANDBOX_PAGE)
    }

    fn search(
        s: &AppState,
        _ctx: &OrgContext,
        (): (),
        (after, limit): Self::Params,
    ) -> Result<Self::Page, ApiError> {
        Ok(s.services.sandboxes().search_specs(after, limit))
    }

    fn get(
        s: &AppState,
        _ctx: &OrgContext,
        (): (),
        query: &QueryPairs,
    ) -> Result<Self::Found, ApiError> {
        let ids = query.ids("id")?;
        Ok(s.services.sandboxes().get_specs(&ids)?)
    }
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
    let page = reads::search::<Specs>(state, caller, query, String::new()).await?;
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
    let found = reads::get::<Specs>(state, caller, query, String::new()).await?;
    Ok(web::Json(
        found
            .into_iter()
            .map(|s| s.map(SandboxSpecInfo::from))
            .collect(),
    ))
}
