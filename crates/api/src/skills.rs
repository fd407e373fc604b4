//! `GET /api/v1/skills/search` (issue 25; OpenHands' `SkillPage` of `SkillInfo`): the global
//! skills and the caller's own from the operator's skills directory
//! ([`switchboard_domain::skills::SkillLibrary`], `switchboard serve --skills-dir`). The
//! skills of a conversation's sandbox are `GET /api/v1/app-conversations/{id}/skills`.

use actix_web::{get, web};
use serde::Serialize;
use switchboard_domain::cursor::Keyset;
use switchboard_domain::skills::SkillCursor;
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::error::ApiResult;
use crate::extract::{Caller, QueryPairs};
use crate::responses::ApiKeyErrors;

/// The largest `limit`, and its default (OpenHands': 100).
pub const MAX_SKILLS_LIMIT: u32 = 100;

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(search_skills);
}

/// One skill (OpenHands' `SkillInfo`).
#[derive(Debug, Serialize, ToSchema)]
pub struct SkillInfo {
    /// The skill's name.
    pub name: String,
    /// `knowledge`, `repo` or `task`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `global` or `user`.
    pub source: String,
    /// The words that trigger it, `null` without any.
    pub triggers: Option<Vec<String>>,
}

/// A page of skills (OpenHands' `SkillPage`).
#[derive(Debug, Serialize, ToSchema)]
pub struct SkillPage {
    /// The skills.
    pub items: Vec<SkillInfo>,
    /// The cursor of the next page, `null` on the last.
    pub next_page_id: Option<String>,
}

/// The global skills and the caller's, by source (`global` first) then name; `limit` 1 to 100
/// (default 100). 422 for a `limit` out of range or not an integer, or a `page_id` this
/// service did not write.
#[utoipa::path(tag = "Skills",
    params(
        ("page_id" = Option<String>, Query, description = "next_page_id of the previous page"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "At most this many (default 100)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = SkillPage), ApiKeyErrors))]
#[get("/api/v1/skills/search")]
pub async fn search_skills(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<web::Json<SkillPage>> {
    caller
        .run(state, move |s, ctx| {
            let (after, limit) = query.paging::<SkillCursor>(MAX_SKILLS_LIMIT)?;
            let (items, more) =
                s.skills
                    .search(ctx.principal.user_id, after.as_ref(), limit as usize);
            let next_page_id = more.then(|| items.last()).flatten().map(|last| {
                SkillCursor {
                    source: last.source.to_owned(),
                    name: last.name.clone(),
                }
                .encode()
            });
            Ok(SkillPage {
                items: items
                    .into_iter()
                    .map(|k| SkillInfo {
                        name: k.name,
                        kind: k.kind,
                        source: k.source.to_owned(),
                        triggers: k.triggers,
                    })
                    .collect(),
                next_page_id,
            })
        })
        .await
        .map(web::Json)
}
