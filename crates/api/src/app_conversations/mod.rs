//! App conversations, read and changed (spec §4.3; reference app-server §5.2): search,
//! count, batch get, PATCH, DELETE and send-message, in OpenHands' shapes ([`switch_profile`]
//! changes a running conversation's LLM). Another
//! organization's conversation, an unknown one, or another member's seen by a member is 404
//! `{"detail": "Conversation not found"}`. `POST /api/v1/app-conversations` and
//! `stream-start` (the start) are [`start`]'s; the workspace reads [`workspace`]'s, the
//! trajectory zip [`export`]'s and the pending messages [`pending_messages`]' (issue 22).

pub mod export;
pub mod pending_messages;
pub mod start;
pub mod start_tasks;
pub mod switch_profile;
pub mod workspace;

use actix_web::{delete, get, patch, post, web};
use serde_json::Value;
use switchboard_domain::batch::Batch;
use switchboard_domain::conversations::app::AppConversation;
use switchboard_domain::conversations::app::{
    AppConversationFilter, MAX_APP_CONVERSATION_BATCH, MAX_APP_CONVERSATION_PAGE, OrderedCursor,
    SortOrder,
};
use switchboard_domain::conversations::app::{AppConversationPatch, SendMessage};
use switchboard_domain::cursor::Keyset;
use switchboard_domain::sandboxes::records::Page;
use switchboard_domain::time_input::parse_datetime;
use switchboard_domain::validation::{
    datetime_parsing, greater_than, int_parsing, less_than_equal, not_one_of, refuse_nul,
    uuid_parsing, value_error,
};
use switchboard_domain::{ConversationId, OrgContext, SandboxId};
use switchboard_model::{ErrorType, ValidationError};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{
    AppConversationOut, AppConversationPage, ErrorDetail, SendMessageResponse, Success,
};
use crate::error::{ApiError, ApiResult};
use crate::extract::{Caller, QueryPairs, RawBody, conversation_id};
use crate::openapi::params::{InstantParam, OrderedSortName, PageLimit, TextParam};
use crate::reads::{self, Counts, Reads};
use crate::responses::ApiKeyErrors;

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(search_app_conversations)
        .service(count_app_conversations)
        .service(get_app_conversations)
        .service(patch_app_conversation)
        .service(delete_app_conversation)
        .service(send_message)
        .service(switch_profile::switch_profile);
}

/// `include_sub_conversations` as pydantic reads a boolean from a query string.
fn query_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" | "t" | "y" => Some(true),
        "false" | "0" | "no" | "off" | "f" | "n" => Some(false),
        _ => None,
    }
}

/// The search of spec §4.3 as read from the query: filters, and for the search its order,
/// cursor and limit.
#[derive(Debug, Default, PartialEq)]
struct SearchParams {
    filter: AppConversationFilter,
    order: SortOrder,
    after: Option<OrderedCursor>,
    limit: u32,
}

/// Reads the filters (and, with `with_paging`, `sort_order`, `page_id`, `limit`). Every
/// malformed value is a 422 entry; all are reported together. Unknown parameters are
/// ignored, as FastAPI does.
fn parse_search(query: &QueryPairs, with_paging: bool) -> Result<SearchParams, ApiError> {
    let mut errors = Vec::new();
    let mut p = SearchParams {
        limit: MAX_APP_CONVERSATION_PAGE,
        ..SearchParams::default()
    };
    for (name, value) in &query.0 {
        let at = || QueryPairs::loc(name);
        let input = || Value::String(value.clone());
        let instant = |errors: &mut Vec<ValidationError>| {
            let t = parse_datetime(value);
            if t.is_none() {
                errors.push(datetime_parsing(at(), "invalid format", &input()));
            }
            t
        };
        match name.as_str() {
            "title__contains" => match refuse_nul(at, value) {
                Ok(()) => p.filter.title_contains = Some(value.clone()),
                Err(e) => errors.push(e),
            },
            "created_at__gte" => p.filter.created_at_gte = instant(&mut errors),
            "created_at__lt" => p.filter.created_at_lt = instant(&mut errors),
            "updated_at__gte" => p.filter.updated_at_gte = instant(&mut errors),
            "updated_at__lt" => p.filter.updated_at_lt = instant(&mut errors),
            "sandbox_id__eq" => match value.parse::<SandboxId>() {
                Ok(s) => p.filter.sandbox_id_eq = Some(s),
                Err(_) => errors.push(uuid_parsing(at(), value)),
            },
            "include_sub_conversations" => match query_bool(value) {
                Some(b) => p.filter.include_sub_conversations = b,
                None => errors.push(
                    ValidationError::new(
                        ErrorType::BoolType,
                        at(),
                        "Input should be a valid boolean, unable to interpret input",
                    )
                    .with_input(input()),
                ),
            },
            "sort_order" if with_paging => match SortOrder::parse(value) {
                Some(o) => p.order = o,
                None => errors.push(not_one_of(
                    ErrorType::Enum,
                    at(),
                    &SortOrder::ALL.map(SortOrder::as_str),
                    &input(),
                )),
            },
            "page_id" if with_paging => match OrderedCursor::decode(value) {
                Some(c) => p.after = Some(c),
                None => errors.push(value_error(
                    at(),
                    "page_id is not a cursor returned by this service",
                    &input(),
                )),
            },
            "limit" if with_paging => {
                match value.trim().parse::<i64>() {
                    Ok(n) if n <= 0 => errors.push(greater_than(at(), 0, &input())),
                    Ok(n) if n > i64::from(MAX_APP_CONVERSATION_PAGE) => errors.push(
                        less_than_equal(at(), MAX_APP_CONVERSATION_PAGE.into(), &input()),
                    ),
                    Ok(n) => p.limit = n as u32,
                    Err(_) => errors.push(int_parsing(at(), value)),
                }
            }
            _ => {}
        }
    }
    if let Some(a) = p.after
        && a.order != p.order
        && errors.is_empty()
    {
        errors.push(value_error(
            QueryPairs::loc("page_id"),
            "page_id was returned by a search in another sort_order",
            &Value::String(a.encode()),
        ));
    }
    if errors.is_empty() {
        Ok(p)
    } else {
        Err(ApiError::Validation(errors))
    }
}

/// App conversations, as [`reads`] reads them.
struct AppConversations;

impl Reads for AppConversations {
    type Scope = ();
    type Params = SearchParams;
    type Page = Page<AppConversation>;
    type Found = Vec<Option<AppConversation>>;

    fn scope(_path: &str) -> Result<(), ApiError> {
        Ok(())
    }

    fn params(query: &QueryPairs, paging: bool) -> Result<SearchParams, ApiError> {
        parse_search(query, paging)
    }

    fn search(
        s: &AppState,
        ctx: &OrgContext,
        (): (),
        p: SearchParams,
    ) -> Result<Self::Page, ApiError> {
        Ok(s.services
            .app_conversations()
            .search(ctx, p.filter, p.order, p.after, p.limit)?)
    }

    fn get(
        s: &AppState,
        ctx: &OrgContext,
        (): (),
        query: &QueryPairs,
    ) -> Result<Self::Found, ApiError> {
        let ids: Vec<ConversationId> = query.batch_ids("ids", Batch::APP_CONVERSATIONS)?;
        Ok(s.services.app_conversations().get(ctx, &ids)?)
    }
}

impl Counts for AppConversations {
    fn count(s: &AppState, ctx: &OrgContext, (): (), p: SearchParams) -> Result<u64, ApiError> {
        Ok(s.services.app_conversations().count(ctx, p.filter)?)
    }
}

/// The conversations the caller sees in the effective organization (members: their own;
/// admins and owners: all), filtered, in `sort_order` (default `CREATED_AT_DESC`; ties by id),
/// paged by an opaque keyset cursor that stays exact while conversations are created. Sandbox
/// statuses and run states are the stored ones: no agent server is called.
#[utoipa::path(tag = "App conversations",
    params(
        ("title__contains" = inline(Option<TextParam>), Query, description = "The title contains this text (ASCII case ignored; % and _ are plain characters)"),
        ("created_at__gte" = inline(Option<InstantParam>), Query, description = "Created at or after (RFC 3339, naive ISO = UTC, date, or Unix seconds)"),
        ("created_at__lt" = inline(Option<InstantParam>), Query, description = "Created before"),
        ("updated_at__gte" = inline(Option<InstantParam>), Query, description = "Changed at or after"),
        ("updated_at__lt" = inline(Option<InstantParam>), Query, description = "Changed before"),
        ("sandbox_id__eq" = Option<uuid::Uuid>, Query, description = "Only those running in this sandbox"),
        ("include_sub_conversations" = Option<bool>, Query, description = "Also list sub-conversations (default false)"),
        ("sort_order" = inline(Option<OrderedSortName>), Query, description = "CREATED_AT, CREATED_AT_DESC (default), UPDATED_AT or UPDATED_AT_DESC"),
        ("page_id" = Option<String>, Query, description = "The next_page_id of the previous page of the same sort_order (opaque; any other value is 422)"),
        ("limit" = inline(Option<PageLimit>), Query, description = "1..=100, default 100"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = AppConversationPage), ApiKeyErrors))]
#[get("/api/v1/app-conversations/search")]
pub async fn search_app_conversations(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<web::Json<AppConversationPage>> {
    let page =
        reads::search::<AppConversations>(state.clone(), caller, query, String::new()).await?;
    Ok(web::Json(AppConversationPage::present(
        page,
        state.proxy.public(),
    )))
}

/// How many conversations the caller sees match the filters of the search.
#[utoipa::path(tag = "App conversations",
    params(
        ("title__contains" = inline(Option<TextParam>), Query, description = "As in the search"),
        ("created_at__gte" = inline(Option<InstantParam>), Query, description = "As in the search"),
        ("created_at__lt" = inline(Option<InstantParam>), Query, description = "As in the search"),
        ("updated_at__gte" = inline(Option<InstantParam>), Query, description = "As in the search"),
        ("updated_at__lt" = inline(Option<InstantParam>), Query, description = "As in the search"),
        ("sandbox_id__eq" = Option<uuid::Uuid>, Query, description = "As in the search"),
        ("include_sub_conversations" = Option<bool>, Query, description = "As in the search"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = u64, content_type = "application/json"), ApiKeyErrors))]
#[get("/api/v1/app-conversations/count")]
pub async fn count_app_conversations(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<web::Json<u64>> {
    let n = reads::count::<AppConversations>(state, caller, query, String::new()).await?;
    Ok(web::Json(n))
}

/// App conversations by id (`?ids=…&ids=…`, at most 100), in request order: `null` for an
/// unknown one or one the caller does not see.
#[utoipa::path(tag = "App conversations",
    params(
        ("ids" = Vec<uuid::Uuid>, Query, max_items = 100, description = "Conversation ids, dashed or 32 hex (repeat the parameter; at most 100)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = Vec<Option<AppConversationOut>>),
        (status = 400, description = format!("More than {MAX_APP_CONVERSATION_BATCH} ids"), body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[get("/api/v1/app-conversations")]
pub async fn get_app_conversations(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<web::Json<Vec<Option<AppConversationOut>>>> {
    let found = reads::get::<AppConversations>(state.clone(), caller, query, String::new()).await?;
    Ok(web::Json(
        found
            .into_iter()
            .map(|c| c.map(|c| AppConversationOut::present(c, state.proxy.public())))
            .collect(),
    ))
}

/// Changes `title`, `public`, `selected_repository`, `selected_branch` and `git_provider`:
/// only the fields sent; `null` clears one; any other field is a 422. Sets `updated_at`.
#[utoipa::path(tag = "App conversations",
    params(
        ("conversation_id" = uuid::Uuid, Path, description = "Conversation id (dashed or 32 hex)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    request_body = AppConversationPatch,
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = AppConversationOut),
        (status = 404, description = "Unknown, another organization's, or another member's seen by a member", body = ErrorDetail),
        (status = 413, description = "Body over 1 MiB", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[patch("/api/v1/app-conversations/{conversation_id}")]
pub async fn patch_app_conversation(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
    body: RawBody,
) -> ApiResult<web::Json<AppConversationOut>> {
    let ctx = caller.authenticate(&state).await?;
    let body = body.read().await?;
    let raw = path.into_inner();
    let s = state.clone();
    let updated = state
        .blocking(move || {
            let id = conversation_id(&raw)?;
            let patch = body.typed::<AppConversationPatch>()?;
            Ok(s.services.app_conversations().patch(&ctx, id, &patch)?)
        })
        .await?;
    Ok(web::Json(AppConversationOut::present(
        updated,
        state.proxy.public(),
    )))
}

/// Deletes a conversation: on its agent server first when its sandbox is `RUNNING`, then its
/// record, events and start tasks in one transaction, then its sandbox when Switchboard runs
/// it and no other conversation uses it (stopped in the background).
#[utoipa::path(tag = "App conversations",
    params(
        ("conversation_id" = uuid::Uuid, Path, description = "Conversation id (dashed or 32 hex)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = Success),
        (status = 404, description = "Unknown, another organization's, or another member's seen by a member", body = ErrorDetail),
        (status = 502, description = "The agent server failed the delete (nothing was deleted)", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[delete("/api/v1/app-conversations/{conversation_id}")]
pub async fn delete_app_conversation(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
) -> ApiResult<web::Json<Success>> {
    let raw = path.into_inner();
    caller
        .run(state, move |s, ctx| {
            let id = conversation_id(&raw)?;
            s.services.app_conversations().delete(&ctx, id)?;
            Ok(())
        })
        .await?;
    Ok(web::Json(Success { success: true }))
}

/// Sends a user message to the conversation's agent server (`POST
/// /api/conversations/{id}/events` there). A `PAUSED` sandbox is resumed first and a
/// `STARTING` one waited for (up to the sandbox start timeout): OpenHands answers 409 instead.
#[utoipa::path(tag = "App conversations",
    params(
        ("conversation_id" = uuid::Uuid, Path, description = "Conversation id (dashed or 32 hex)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    request_body = SendMessage,
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = SendMessageResponse),
        (status = 404, description = "Unknown, another organization's, or another member's seen by a member", body = ErrorDetail),
        (status = 410, description = "The sandbox is MISSING or deleted", body = ErrorDetail),
        (status = 413, description = "Body over 1 MiB", body = ErrorDetail),
        (status = 502, description = "The agent server failed", body = ErrorDetail),
        (status = 409, description = "The sandbox is not run by Switchboard (registered: no agent server URL or key), or `run: true` for a conversation over its budget (`max_budget_per_task`)", body = ErrorDetail),
        (status = 503, description = "The sandbox is ERROR or did not become RUNNING in time", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[post("/api/v1/app-conversations/{conversation_id}/send-message")]
pub async fn send_message(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
    body: RawBody,
) -> ApiResult<web::Json<SendMessageResponse>> {
    let ctx = caller.authenticate(&state).await?;
    let body = body.read().await?;
    let raw = path.into_inner();
    let s = state.clone();
    let sent = state
        .blocking(move || {
            let id = conversation_id(&raw)?;
            let message = body.typed::<SendMessage>()?;
            Ok(s.services
                .app_conversations()
                .send_message(&ctx, id, &message)?)
        })
        .await?;
    Ok(web::Json(SendMessageResponse {
        success: true,
        sandbox_status: sent.sandbox_status.into(),
        message: sent.resumed.then(|| "Sandbox resumed".to_owned()),
    }))
}

#[cfg(test)]
mod tests {

    use super::*;

    fn types(e: ApiError) -> Vec<&'static str> {
        let ApiError::Validation(e) = e else {
            panic!("not a 422: {e}")
        };
        e.iter().map(|x| x.error_type.as_str()).collect()
    }

    #[test]
    fn search_parameters() {
        let p = parse_search(
            &QueryPairs::parse(
                "title__contains=a&sort_order=UPDATED_AT&limit=3&include_sub_conversations=true",
            ),
            true,
        )
        .unwrap();
        assert_eq!(
            (p.order, p.limit, p.filter.include_sub_conversations),
            (SortOrder::UpdatedAt, 3, true)
        );
        let e = parse_search(
            &QueryPairs::parse("sort_order=x&limit=0&created_at__gte=nope&sandbox_id__eq=1&include_sub_conversations=maybe&page_id=zz"),
            true,
        )
        .unwrap_err();
        assert_eq!(types(e).len(), 6);
        // The count takes no paging parameters: they are ignored.
        assert!(parse_search(&QueryPairs::parse("limit=0"), false).is_ok());
        let c = OrderedCursor {
            order: SortOrder::CreatedAt,
            at: time::OffsetDateTime::UNIX_EPOCH,
            id: uuid::Uuid::nil(),
            as_of: None,
        };
        let other_order = format!("page_id={}&sort_order=UPDATED_AT", c.encode());
        assert_eq!(
            types(parse_search(&QueryPairs::parse(&other_order), true).unwrap_err()),
            ["value_error"]
        );
    }
}
