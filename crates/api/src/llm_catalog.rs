//! The LLM model and provider catalogs (issue 25; OpenHands' `GET /api/v1/config/models/search`
//! and `/api/v1/config/providers/search`, shapes `LLMModelPage` and `ProviderPage`): the
//! domain's [`LlmCatalog`] (LiteLLM's list as shipped, narrowed by the operator's
//! `--llm-model-allow`), searched and paged. Any member's key reads them.

use actix_web::{get, web};
use serde::Serialize;
use switchboard_domain::cursor::Keyset;
use switchboard_domain::llm_catalog::{CatalogCursor, LlmCatalog, ModelQuery, ProviderQuery};
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::error::ApiResult;
use crate::extract::{Caller, QueryPairs};
use crate::responses::ApiKeyErrors;

/// The largest `limit` (OpenHands': 100).
pub const MAX_CATALOG_LIMIT: u32 = 100;
/// `limit` when absent (OpenHands': 50).
pub const DEFAULT_CATALOG_LIMIT: u32 = 50;

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(search_models).service(search_providers);
}

/// One model (OpenHands' `LLMModel`, with the `free` and `default` flags OpenHands' browser
/// client reads, always `false` here: Switchboard serves no models of its own).
#[derive(Debug, Serialize, ToSchema)]
pub struct LlmModel {
    /// The provider (LiteLLM's routing prefix); the setting's model is `provider/name`.
    pub provider: Option<String>,
    /// The model's name under its provider.
    pub name: String,
    /// Verified by OpenHands.
    pub verified: bool,
    /// Free to use on OpenHands' own provider: never here.
    pub free: bool,
    /// The provider's default model: none here.
    pub default: bool,
}

/// A page of models (OpenHands' `LLMModelPage`).
#[derive(Debug, Serialize, ToSchema)]
pub struct LlmModelPage {
    /// The models.
    pub items: Vec<LlmModel>,
    /// The cursor of the next page, `null` on the last.
    pub next_page_id: Option<String>,
}

/// One provider (OpenHands' `Provider`).
#[derive(Debug, Serialize, ToSchema)]
pub struct LlmProvider {
    /// The provider's name.
    pub name: String,
    /// Whether OpenHands verifies models of it.
    pub verified: bool,
}

/// A page of providers (OpenHands' `ProviderPage`).
#[derive(Debug, Serialize, ToSchema)]
pub struct LlmProviderPage {
    /// The providers.
    pub items: Vec<LlmProvider>,
    /// The cursor of the next page, `null` on the last.
    pub next_page_id: Option<String>,
}

/// The models members may pick, in provider then name order: `query` a case-insensitive
/// substring of the name, `verified__eq` and `provider__eq` exact; `limit` 1 to 100 (default
/// 50). 422 for a `limit` out of range or not an integer, a `page_id` this service did not
/// write, a `verified__eq` that is not a boolean.
#[utoipa::path(tag = "Config",
    params(
        ("page_id" = Option<String>, Query, description = "next_page_id of the previous page"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "At most this many (default 50)"),
        ("query" = Option<String>, Query, description = "Names containing this (case-insensitive)"),
        ("verified__eq" = Option<bool>, Query, description = "Verified by OpenHands, or not"),
        ("provider__eq" = Option<String>, Query, description = "This provider exactly"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = LlmModelPage), ApiKeyErrors))]
#[get("/api/v1/config/models/search")]
pub async fn search_models(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<web::Json<LlmModelPage>> {
    let catalog = state.llm_catalog.clone();
    caller
        .run(state, move |_, _| {
            let (after, limit) =
                query.paging_or::<CatalogCursor>(MAX_CATALOG_LIMIT, DEFAULT_CATALOG_LIMIT)?;
            let q = ModelQuery {
                query: query.all("query").pop(),
                verified: query.flag("verified__eq")?,
                provider: query.all("provider__eq").pop(),
            };
            Ok(models_page(&catalog, &q, after, limit))
        })
        .await
        .map(web::Json)
}

fn models_page(
    catalog: &LlmCatalog,
    q: &ModelQuery,
    after: Option<CatalogCursor>,
    limit: u32,
) -> LlmModelPage {
    let page = catalog.search_models(q, after, limit as usize);
    LlmModelPage {
        items: page
            .items
            .into_iter()
            .map(|m| LlmModel {
                provider: Some(m.provider),
                name: m.name,
                verified: m.verified,
                free: false,
                default: false,
            })
            .collect(),
        next_page_id: page.next.map(|c| c.encode()),
    }
}

/// The providers of the models members may pick, verified first, then by name: `query` a
/// case-insensitive substring, `verified__eq` exact; `limit` 1 to 100 (default 50). 422 as
/// the model search.
#[utoipa::path(tag = "Config",
    params(
        ("page_id" = Option<String>, Query, description = "next_page_id of the previous page"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "At most this many (default 50)"),
        ("query" = Option<String>, Query, description = "Names containing this (case-insensitive)"),
        ("verified__eq" = Option<bool>, Query, description = "Verified by OpenHands, or not"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = LlmProviderPage), ApiKeyErrors))]
#[get("/api/v1/config/providers/search")]
pub async fn search_providers(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<web::Json<LlmProviderPage>> {
    let catalog = state.llm_catalog.clone();
    caller
        .run(state, move |_, _| {
            let (after, limit) =
                query.paging_or::<CatalogCursor>(MAX_CATALOG_LIMIT, DEFAULT_CATALOG_LIMIT)?;
            let q = ProviderQuery {
                query: query.all("query").pop(),
                verified: query.flag("verified__eq")?,
            };
            let page = catalog.search_providers(&q, after, limit as usize);
            Ok(LlmProviderPage {
                items: page
                    .items
                    .into_iter()
                    .map(|p| LlmProvider {
                        name: p.name,
                        verified: p.verified,
                    })
                    .collect(),
                next_page_id: page.next.map(|c| c.encode()),
            })
        })
        .await
        .map(web::Json)
}
