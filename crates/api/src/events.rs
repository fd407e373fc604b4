//! A conversation's events (spec §4.1; API.md, Events): search, count and batch get.

use actix_web::{HttpResponse, get, web};
use serde_json::Value;
use switchboard_domain::cursor::Keyset;
use switchboard_domain::events::{
    EventCursor, EventFilter, EventPageOut, MAX_BATCH_GET, MAX_PAGE_LIMIT, SearchQuery, SortOrder,
};
use switchboard_domain::time_input::parse_datetime;
use switchboard_domain::validation::{
    datetime_parsing, greater_than, int_parsing, less_than_equal, not_one_of, value_error,
};
use switchboard_domain::{ConversationId, OrgContext};
use switchboard_model::{ErrorType, EventKind};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::ErrorDetail;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Caller, QueryPairs, conversation_id};
use crate::openapi::params::{InstantParam, PageLimit};
use crate::reads::{self, Counts, Reads};
use crate::responses::ConversationErrors;

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(search_events)
        .service(count_events)
        .service(get_events);
}

/// The description of the `limit` parameter.
fn limit_description() -> String {
    format!("1..={MAX_PAGE_LIMIT}, default {MAX_PAGE_LIMIT}")
}

/// The schema of `kind__eq`: one of the event kinds ([`EventKind::NAMES`]).
struct EventKindName;

impl utoipa::PartialSchema for EventKindName {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(EventKind::NAMES.iter().copied()))
            .into()
    }
}

impl utoipa::ToSchema for EventKindName {}

/// The schema of `sort_order`: `TIMESTAMP` or `TIMESTAMP_DESC`.
struct SortOrderName;

impl utoipa::PartialSchema for SortOrderName {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(SORT_ORDERS.map(|(n, _)| n)))
            .into()
    }
}

impl utoipa::ToSchema for SortOrderName {}

/// A conversation's events, as [`reads`] reads them: the path names the conversation (judged
/// after authentication, like every input).
struct Events;

impl Reads for Events {
    type Scope = ConversationId;
    type Params = SearchQuery;
    type Page = EventPageOut;
    type Found = Vec<Option<String>>;

    fn scope(path: &str) -> Result<ConversationId, ApiError> {
        conversation_id(path)
    }

    fn params(query: &QueryPairs, paging: bool) -> Result<SearchQuery, ApiError> {
        parse_search(query, paging)
    }

    fn search(
        s: &AppState,
        ctx: &OrgContext,
        id: ConversationId,
        search: SearchQuery,
    ) -> Result<EventPageOut, ApiError> {
        Ok(s.services.events().search_events(ctx, id, &search)?)
    }

    fn get(
        s: &AppState,
        ctx: &OrgContext,
        id: ConversationId,
        query: &QueryPairs,
    ) -> Result<Self::Found, ApiError> {
        let ids = query.ids("id")?;
        Ok(s.services.events().get_events(ctx, id, &ids)?)
    }
}

impl Counts for Events {
    fn count(
        s: &AppState,
        ctx: &OrgContext,
        id: ConversationId,
        search: SearchQuery,
    ) -> Result<u64, ApiError> {
        let n = s.services.events().count_events(ctx, id, &search.filter)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}

/// The sort orders of spec §4.1, by wire name.
const SORT_ORDERS: [(&str, SortOrder); 2] = [
    ("TIMESTAMP", SortOrder::Timestamp),
    ("TIMESTAMP_DESC", SortOrder::TimestampDesc),
];

/// Reads the filters (and, for search, order, cursor and limit) of spec §4.1. Every malformed
/// value is a 422 entry; all of them are reported together.
fn parse_search(query: &QueryPairs, with_paging: bool) -> Result<SearchQuery, ApiError> {
    let mut errors = Vec::new();
    let mut search = SearchQuery {
        filter: EventFilter::default(),
        sort: SortOrder::Timestamp,
        after: None,
        limit: MAX_PAGE_LIMIT,
    };
    for (name, value) in &query.0 {
        let loc = || QueryPairs::loc(name);
        let input = || Value::String(value.clone());
        match name.as_str() {
            "kind__eq" => match EventKind::from_name(value) {
                Some(k) => search.filter.kind = Some(k),
                None => errors.push(not_one_of(
                    ErrorType::LiteralError,
                    loc(),
                    EventKind::NAMES,
                    &input(),
                )),
            },
            "timestamp__gte" | "timestamp__lt" => match parse_datetime(value) {
                Some(t) if name == "timestamp__gte" => search.filter.timestamp_gte = Some(t),
                Some(t) => search.filter.timestamp_lt = Some(t),
                None => errors.push(datetime_parsing(loc(), "invalid format", &input())),
            },
            "sort_order" if with_paging => match SORT_ORDERS.iter().find(|(n, _)| n == value) {
                Some((_, order)) => search.sort = *order,
                None => errors.push(not_one_of(
                    ErrorType::Enum,
                    loc(),
                    &SORT_ORDERS.map(|(n, _)| n),
                    &input(),
                )),
            },
            "page_id" if with_paging => match EventCursor::decode(value) {
                Some(c) => search.after = Some(c),
                None => errors.push(value_error(
                    loc(),
                    "page_id is not a cursor returned by this service",
                    &input(),
                )),
            },
            "limit" if with_paging => match value.trim().parse::<i64>() {
                Ok(n) if n <= 0 => errors.push(greater_than(loc(), 0, &input())),
                Ok(n) if n > i64::from(MAX_PAGE_LIMIT) => {
                    errors.push(less_than_equal(loc(), MAX_PAGE_LIMIT.into(), &input()));
                }
                Ok(n) => search.limit = n as u32,
                Err(_) => errors.push(int_parsing(loc(), value)),
            },
            _ => {}
        }
    }
    if errors.is_empty() {
        Ok(search)
    } else {
        Err(ApiError::Validation(errors))
    }
}

/// A JSON array of stored canonical JSON texts (`null` for `None`), written without
/// re-parsing them.
fn json_array<'a>(items: impl Iterator<Item = Option<&'a str>>, capacity: usize) -> String {
    let mut out = String::with_capacity(capacity + 2);
    out.push('[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item.unwrap_or("null"));
    }
    out.push(']');
    out
}

/// The search response `{"items": [...], "next_page_id": ...}`, built from the stored JSON.
fn page_json(page: &EventPageOut) -> String {
    let items = json_array(
        page.items.iter().map(|i| Some(i.as_str())),
        page.items.iter().map(|i| i.len() + 1).sum(),
    );
    let next = match &page.next_page_id {
        Some(p) => Value::String(p.clone()).to_string(),
        None => "null".to_owned(),
    };
    format!("{{\"items\":{items},\"next_page_id\":{next}}}")
}

/// Searches a conversation's events (spec §4.1).
#[utoipa::path(tag = "Events",
    params(
        ("conversation_id" = uuid::Uuid, Path, description = "Conversation UUID (dashed or 32 hex)"),
        ("kind__eq" = inline(Option<EventKindName>), Query, description = "Only this event kind"),
        ("timestamp__gte" = inline(Option<InstantParam>), Query, description = "Only events at or after (RFC 3339, naive ISO = UTC, date, or Unix seconds)"),
        ("timestamp__lt" = inline(Option<InstantParam>), Query, description = "Only events before"),
        ("sort_order" = inline(Option<SortOrderName>), Query, description = "TIMESTAMP (default) or TIMESTAMP_DESC"),
        ("page_id" = Option<String>, Query, description = "The `next_page_id` of the previous page (opaque; any other value is 422)"),
        ("limit" = inline(Option<PageLimit>), Query, description = limit_description()),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "EventPage: {items: [Event], next_page_id: string|null}", content_type = "application/json"),
        ConversationErrors,
    ))]
#[get("/api/v1/conversation/{conversation_id}/events/search")]
pub async fn search_events(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let page = reads::search::<Events>(state, caller, query, path.into_inner()).await?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(page_json(&page)))
}

/// Counts a conversation's events matching the filters of search: a bare integer.
#[utoipa::path(tag = "Events",
    params(
        ("conversation_id" = uuid::Uuid, Path, description = "Conversation UUID (dashed or 32 hex)"),
        ("kind__eq" = inline(Option<EventKindName>), Query, description = "Only this event kind"),
        ("timestamp__gte" = inline(Option<InstantParam>), Query, description = "Only events at or after (RFC 3339, naive ISO = UTC, date, or Unix seconds)"),
        ("timestamp__lt" = inline(Option<InstantParam>), Query, description = "Only events before"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = i64, content_type = "application/json"), ConversationErrors))]
#[get("/api/v1/conversation/{conversation_id}/events/count")]
pub async fn count_events(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let n = reads::count::<Events>(state, caller, query, path.into_inner()).await?;
    Ok(HttpResponse::Ok().json(n))
}

/// Gets events by id (`?id=…&id=…`, at most 100), in request order, `null` for unknown ids.
#[utoipa::path(tag = "Events",
    params(
        ("conversation_id" = uuid::Uuid, Path, description = "Conversation UUID (dashed or 32 hex)"),
        ("id" = Vec<String>, Query, min_items = 1, max_items = 100, description = "Event ids (repeat the parameter), 1 to 100; an unknown id (or one with NUL) gives null"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "JSON array of events or null", content_type = "application/json"),
        (status = 400, description = format!("More than {MAX_BATCH_GET} ids"), body = ErrorDetail),
        ConversationErrors,
    ))]
#[get("/api/v1/conversation/{conversation_id}/events")]
pub async fn get_events(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let found = reads::get::<Events>(state, caller, query, path.into_inner()).await?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(json_array(found.iter().map(Option::as_deref), 0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    use switchboard_model::LocItem;

    fn pairs(q: &str) -> QueryPairs {
        QueryPairs::parse(q)
    }

    #[test]
    fn query_rules() {
        let q = parse_search(
            &pairs(
                "kind__eq=PauseEvent&limit=7&sort_order=TIMESTAMP_DESC&timestamp__gte=2026-01-01",
            ),
            true,
        )
        .unwrap();
        assert_eq!(
            (q.limit, q.sort, q.filter.kind),
            (7, SortOrder::TimestampDesc, Some(EventKind::PauseEvent))
        );
        for (query, ty) in [
            ("limit=0", "greater_than"),
            ("limit=101", "less_than_equal"),
            ("limit=abc", "int_parsing"),
            ("kind__eq=Bogus", "literal_error"),
            ("sort_order=asc", "enum"),
            ("timestamp__lt=notadate", "datetime_from_date_parsing"),
            ("page_id=3", "value_error"),
        ] {
            let Err(ApiError::Validation(e)) = parse_search(&pairs(query), true) else {
                panic!("{query}")
            };
            assert_eq!(e[0].error_type.as_str(), ty, "{query}");
            assert_eq!(e[0].loc[0], LocItem::from("query"));
        }
        let Err(ApiError::Validation(e)) = parse_search(&pairs("limit=0&sort_order=x"), true)
        else {
            panic!()
        };
        assert_eq!(e.len(), 2, "all malformed parameters are reported");
    }
}
