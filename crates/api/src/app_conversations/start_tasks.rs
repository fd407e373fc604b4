//! The start tasks of app conversations (issue 10; reference app-server §5.2, §5.3):
//! `GET /api/v1/app-conversations/start-tasks?ids=`, `…/start-tasks/search` and
//! `…/start-tasks/count` read tasks the caller sees (the creator; the organization's admins
//! and owners). The starts that write them are `app_conversations::start`'s.

use actix_web::{get, web};
use serde_json::Value;
use switchboard_domain::ConversationId;
use switchboard_domain::OrgContext;
use switchboard_domain::batch::Batch;
use switchboard_domain::conversations::app::{MAX_APP_CONVERSATION_PAGE, OrderedCursor, SortOrder};
use switchboard_domain::conversations::start_tasks::{StartTask, StartTaskFilter, StartTaskId};
use switchboard_domain::sandboxes::records::Page;
use switchboard_domain::time_input::parse_datetime;
use switchboard_domain::validation::{datetime_parsing, not_one_of, uuid_parsing, value_error};
use switchboard_model::ErrorType;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{AppConversationStartTask, AppConversationStartTaskPage, ErrorDetail};
use crate::error::{ApiError, ApiResult};
use crate::extract::{Caller, QueryPairs};
use crate::openapi::params::{InstantParam, OrderedSortName, PageLimit};
use crate::reads::{self, Counts, Reads};
use crate::responses::ApiKeyErrors;

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(search_start_tasks)
        .service(count_start_tasks)
        .service(get_start_tasks);
}

/// Reads the filters of the start-task search and count (and the sort order).
fn parse_filters(query: &QueryPairs) -> Result<(StartTaskFilter, SortOrder), ApiError> {
    let mut filter = StartTaskFilter::default();
    let mut order = SortOrder::default();
    let mut errors = Vec::new();
    for (name, value) in &query.0 {
        let input = || Value::String(value.clone());
        match name.as_str() {
            "conversation_id__eq" => match value.parse::<ConversationId>() {
                Ok(id) => filter.conversation_id_eq = Some(id),
                Err(_) => errors.push(uuid_parsing(QueryPairs::loc(name), value)),
            },
            "created_at__gte" => match parse_datetime(value) {
                Some(t) => filter.created_at_gte = Some(t),
                None => errors.push(datetime_parsing(
                    QueryPairs::loc(name),
                    "invalid character in year",
                    &input(),
                )),
            },
            "sort_order" => match SortOrder::parse(value) {
                Some(o) => order = o,
                None => {
                    let names: Vec<&str> = SortOrder::ALL.iter().map(|o| o.as_str()).collect();
                    errors.push(not_one_of(
                        ErrorType::Enum,
                        QueryPairs::loc(name),
                        &names,
                        &input(),
                    ));
                }
            },
            _ => {}
        }
    }
    if errors.is_empty() {
        Ok((filter, order))
    } else {
        Err(ApiError::Validation(errors))
    }
}

/// What a start-task search reads: its filters, its order and (not for a count) its page.
struct StartTaskParams {
    filter: StartTaskFilter,
    order: SortOrder,
    after: Option<OrderedCursor>,
    limit: u32,
}

/// Start tasks, as [`reads`] reads them.
struct StartTasks;

impl Reads for StartTasks {
    type Scope = ();
    type Params = StartTaskParams;
    type Page = Page<StartTask>;
    type Found = Vec<Option<StartTask>>;

    fn scope(_path: &str) -> Result<(), ApiError> {
        Ok(())
    }

    fn params(query: &QueryPairs, paging: bool) -> Result<StartTaskParams, ApiError> {
        let (filter, order) = parse_filters(query)?;
        let (after, limit) = if paging {
            query.paging::<OrderedCursor>(MAX_APP_CONVERSATION_PAGE)?
        } else {
            (None, MAX_APP_CONVERSATION_PAGE)
        };
        if let Some(a) = &after
            && a.order != order
        {
            return Err(value_error(
                QueryPairs::loc("page_id"),
                "page_id was issued for another sort_order",
                &Value::String(query.all("page_id").concat()),
            )
            .into());
        }
        Ok(StartTaskParams {
            filter,
            order,
            after,
            limit,
        })
    }

    fn search(
        s: &AppState,
        ctx: &OrgContext,
        (): (),
        p: StartTaskParams,
    ) -> Result<Self::Page, ApiError> {
        Ok(s.services
            .start_tasks()
            .search_start_tasks(ctx, p.filter, p.order, p.after, p.limit)?)
    }

    fn get(
        s: &AppState,
        ctx: &OrgContext,
        (): (),
        query: &QueryPairs,
    ) -> Result<Self::Found, ApiError> {
        let ids: Vec<StartTaskId> = query.batch_ids("ids", Batch::START_TASKS)?;
        Ok(s.services.start_tasks().get_start_tasks(ctx, &ids)?)
    }
}

impl Counts for StartTasks {
    fn count(s: &AppState, ctx: &OrgContext, (): (), p: StartTaskParams) -> Result<u64, ApiError> {
        Ok(s.services.start_tasks().count_start_tasks(ctx, p.filter)?)
    }
}

/// The start tasks the caller sees, in `sort_order` (default `CREATED_AT_DESC`; ties by id),
/// with a keyset `page_id` that stays correct while tasks are created.
#[utoipa::path(tag = "App conversations",
    params(
        ("conversation_id__eq" = Option<uuid::Uuid>, Query, description = "Only the tasks of this conversation"),
        ("created_at__gte" = inline(Option<InstantParam>), Query, description = "Only tasks created at or after (RFC 3339, naive ISO = UTC, date, or Unix seconds)"),
        ("sort_order" = inline(Option<OrderedSortName>), Query, description = "CREATED_AT, CREATED_AT_DESC (default), UPDATED_AT or UPDATED_AT_DESC"),
        ("page_id" = Option<String>, Query, description = "The next_page_id of the previous page (of the same sort_order; opaque: any other value is 422)"),
        ("limit" = inline(Option<PageLimit>), Query, description = "1..=100, default 100"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = AppConversationStartTaskPage), ApiKeyErrors))]
#[get("/api/v1/app-conversations/start-tasks/search")]
pub async fn search_start_tasks(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<web::Json<AppConversationStartTaskPage>> {
    let page = reads::search::<StartTasks>(state.clone(), caller, query, String::new()).await?;
    Ok(web::Json(AppConversationStartTaskPage::present(
        page,
        state.proxy.public(),
    )))
}

/// How many start tasks the caller sees match the filters.
#[utoipa::path(tag = "App conversations",
    params(
        ("conversation_id__eq" = Option<uuid::Uuid>, Query, description = "Only the tasks of this conversation"),
        ("created_at__gte" = inline(Option<InstantParam>), Query, description = "Only tasks created at or after"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = u64, content_type = "application/json"), ApiKeyErrors))]
#[get("/api/v1/app-conversations/start-tasks/count")]
pub async fn count_start_tasks(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<web::Json<u64>> {
    let n = reads::count::<StartTasks>(state, caller, query, String::new()).await?;
    Ok(web::Json(n))
}

/// Start tasks by id (`?ids=…&ids=…`, at most 100), in request order: `null` for an unknown
/// one or one the caller does not see. More than 100 is a 400, an invalid UUID a 422.
#[utoipa::path(tag = "App conversations",
    params(
        ("ids" = Vec<uuid::Uuid>, Query, max_items = 100, description = "Start task ids (repeat the parameter; at most 100)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = Vec<Option<AppConversationStartTask>>),
        (status = 400, description = "More than 100 ids", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[get("/api/v1/app-conversations/start-tasks")]
pub async fn get_start_tasks(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<web::Json<Vec<Option<AppConversationStartTask>>>> {
    let found = reads::get::<StartTasks>(state.clone(), caller, query, String::new()).await?;
    Ok(web::Json(
        found
            .iter()
            .map(|t| {
                t.as_ref()
                    .map(|t| AppConversationStartTask::present(t, state.proxy.public()))
            })
            .collect(),
    ))
}
