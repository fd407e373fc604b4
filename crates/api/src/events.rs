//! Events endpoints (spec §4.1; API.md, Events) and the agent-server webhooks (API.md, Event
//! ingestion).

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Value, json};
use switchboard_domain::cursor::Keyset;
use switchboard_domain::events::{
    EventCursor, EventFilter, EventPageOut, MAX_PAGE_LIMIT, SearchQuery, SortOrder,
};
use switchboard_domain::time_input::parse_datetime;
use switchboard_domain::{ConversationId, parse_uuid};
use switchboard_model::{ErrorType, EventKind, LocItem, ValidationError};

use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Caller, RawBody, invalid_uuid};

/// Header carrying a sandbox session key on the webhook routes.
pub const SESSION_KEY_HEADER: &str = "X-Session-API-Key";
/// Body limit of the webhook routes: the agent server sends batches of up to 5 MiB (API.md).
pub const WEBHOOK_BODY_LIMIT: usize = 8 << 20;

fn query_pairs(req: &HttpRequest) -> Vec<(String, String)> {
    serde_urlencoded::from_str(req.query_string()).unwrap_or_default()
}

fn query_error(t: ErrorType, name: &str, msg: impl Into<String>, input: &str) -> ValidationError {
    ValidationError::new(t, vec![LocItem::from("query"), LocItem::from(name)], msg)
        .with_input(Value::String(input.to_owned()))
}

fn conversation_id(raw: &str) -> Result<ConversationId, ApiError> {
    parse_uuid(raw)
        .map(ConversationId)
        .ok_or_else(|| invalid_uuid(vec!["path".into(), "conversation_id".into()], raw).into())
}

/// Reads the filters (and, for search, order, cursor and limit) of spec §4.1. Every malformed
/// value is a 422 entry; all of them are reported together.
fn parse_search(pairs: &[(String, String)], with_paging: bool) -> Result<SearchQuery, ApiError> {
    let mut errors = Vec::new();
    let mut query = SearchQuery {
        filter: EventFilter::default(),
        sort: SortOrder::Timestamp,
        after: None,
        limit: MAX_PAGE_LIMIT,
    };
    for (name, value) in pairs {
        match name.as_str() {
            "kind__eq" => match EventKind::from_name(value) {
                Some(k) => query.filter.kind = Some(k),
                None => {
                    let expected = EventKind::NAMES
                        .iter()
                        .map(|k| format!("'{k}'"))
                        .collect::<Vec<_>>();
                    let expected = match expected.split_last() {
                        Some((last, init)) => format!("{} or {last}", init.join(", ")),
                        None => String::new(),
                    };
                    errors.push(
                        query_error(
                            ErrorType::LiteralError,
                            name,
                            format!("Input should be {expected}"),
                            value,
                        )
                        .with_ctx(json!({ "expected": expected })),
                    );
                }
            },
            "timestamp__gte" | "timestamp__lt" => match parse_datetime(value) {
                Some(t) if name == "timestamp__gte" => query.filter.timestamp_gte = Some(t),
                Some(t) => query.filter.timestamp_lt = Some(t),
                None => errors.push(
                    query_error(
                        ErrorType::DatetimeFromDateParsing,
                        name,
                        "Input should be a valid datetime or date, invalid format",
                        value,
                    )
                    .with_ctx(json!({ "error": "invalid format" })),
                ),
            },
            "sort_order" if with_paging => match value.as_str() {
                "TIMESTAMP" => query.sort = SortOrder::Timestamp,
                "TIMESTAMP_DESC" => query.sort = SortOrder::TimestampDesc,
                _ => errors.push(
                    query_error(
                        ErrorType::Enum,
                        name,
                        "Input should be 'TIMESTAMP' or 'TIMESTAMP_DESC'",
                        value,
                    )
                    .with_ctx(json!({ "expected": "'TIMESTAMP' or 'TIMESTAMP_DESC'" })),
                ),
            },
            "page_id" if with_paging => match EventCursor::decode(value) {
                Some(c) => query.after = Some(c),
                None => errors.push(query_error(
                    ErrorType::ValueError,
                    name,
                    "Value error, page_id is not a cursor returned by this service",
                    value,
                )),
            },
            "limit" if with_paging => match value.trim().parse::<i64>() {
                Ok(n) if n <= 0 => errors.push(
                    query_error(
                        ErrorType::GreaterThan,
                        name,
                        "Input should be greater than 0",
                        value,
                    )
                    .with_ctx(json!({ "gt": 0 })),
                ),
                Ok(n) if n > i64::from(MAX_PAGE_LIMIT) => errors.push(
                    query_error(
                        ErrorType::LessThanEqual,
                        name,
                        "Input should be less than or equal to 100",
                        value,
                    )
                    .with_ctx(json!({ "le": 100 })),
                ),
                Ok(n) => query.limit = n as u32,
                Err(_) => errors.push(query_error(
                    ErrorType::IntParsing,
                    name,
                    "Input should be a valid integer, unable to parse string as an integer",
                    value,
                )),
            },
            _ => {}
        }
    }
    if errors.is_empty() {
        Ok(query)
    } else {
        Err(ApiError::Validation(errors))
    }
}

/// Searches a conversation's events (spec §4.1).
#[utoipa::path(get, path = "/api/v1/conversation/{conversation_id}/events/search", tag = "Events",
    params(
        ("conversation_id" = String, Path, description = "Conversation UUID"),
        ("kind__eq" = Option<String>, Query, description = "Only this event kind"),
        ("timestamp__gte" = Option<String>, Query, description = "Only events at or after (RFC 3339, naive ISO = UTC, date, or Unix seconds)"),
        ("timestamp__lt" = Option<String>, Query, description = "Only events before"),
        ("sort_order" = Option<String>, Query, description = "TIMESTAMP (default) or TIMESTAMP_DESC"),
        ("page_id" = Option<String>, Query, description = "The next_page_id of the previous page"),
        ("limit" = Option<i64>, Query, description = "1..=100, default 100"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "EventPage: {items: [Event], next_page_id: string|null}", content_type = "application/json"),
        (status = 401, body = crate::dto::ErrorDetail), (status = 403, body = crate::dto::ErrorDetail),
        (status = 404, description = "Unknown conversation, or another organization's", body = crate::dto::ErrorDetail),
        (status = 422, body = crate::dto::HTTPValidationError), (status = 500, body = crate::dto::ErrorDetail),
    ))]
pub async fn search_events(
    state: web::Data<AppState>,
    caller: Caller,
    req: HttpRequest,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let pairs = query_pairs(&req);
    let raw = path.into_inner();
    let page = caller
        .run(state, move |s, ctx| {
            let id = conversation_id(&raw)?;
            let query = parse_search(&pairs, true)?;
            Ok(s.services.events().search_events(&ctx, id, &query)?)
        })
        .await?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(page_json(&page)))
}

/// Counts a conversation's events matching the filters of search: a bare integer.
#[utoipa::path(get, path = "/api/v1/conversation/{conversation_id}/events/count", tag = "Events",
    params(
        ("conversation_id" = String, Path, description = "Conversation UUID"),
        ("kind__eq" = Option<String>, Query, description = "Only this event kind"),
        ("timestamp__gte" = Option<String>, Query, description = "Only events at or after"),
        ("timestamp__lt" = Option<String>, Query, description = "Only events before"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = i64),
        (status = 401, body = crate::dto::ErrorDetail), (status = 403, body = crate::dto::ErrorDetail),
        (status = 404, body = crate::dto::ErrorDetail), (status = 422, body = crate::dto::HTTPValidationError),
        (status = 500, body = crate::dto::ErrorDetail),
    ))]
pub async fn count_events(
    state: web::Data<AppState>,
    caller: Caller,
    req: HttpRequest,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let pairs = query_pairs(&req);
    let raw = path.into_inner();
    let n = caller
        .run(state, move |s, ctx| {
            let id = conversation_id(&raw)?;
            let query = parse_search(&pairs, false)?;
            Ok(s.services.events().count_events(&ctx, id, &query.filter)?)
        })
        .await?;
    Ok(HttpResponse::Ok().json(n))
}

/// Gets events by id (`?id=…&id=…`, at most 100), in request order, `null` for unknown ids.
#[utoipa::path(get, path = "/api/v1/conversation/{conversation_id}/events", tag = "Events",
    params(
        ("conversation_id" = String, Path, description = "Conversation UUID"),
        ("id" = Vec<String>, Query, description = "Event ids (repeat the parameter)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "JSON array of events or null", content_type = "application/json"),
        (status = 400, description = "More than 100 ids", body = crate::dto::ErrorDetail),
        (status = 401, body = crate::dto::ErrorDetail), (status = 403, body = crate::dto::ErrorDetail),
        (status = 404, body = crate::dto::ErrorDetail), (status = 422, body = crate::dto::HTTPValidationError),
        (status = 500, body = crate::dto::ErrorDetail),
    ))]
pub async fn get_events(
    state: web::Data<AppState>,
    caller: Caller,
    req: HttpRequest,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let ids: Vec<String> = query_pairs(&req)
        .into_iter()
        .filter(|(k, _)| k == "id")
        .map(|(_, v)| v)
        .collect();
    let raw = path.into_inner();
    let found = caller
        .run(state, move |s, ctx| {
            let id = conversation_id(&raw)?;
            if ids.is_empty() {
                return Err(ValidationError::new(
                    ErrorType::Missing,
                    vec!["query".into(), "id".into()],
                    "Field required",
                )
                .with_input(Value::Null)
                .into());
            }
            Ok(s.services.events().get_events(&ctx, id, &ids)?)
        })
        .await?;
    let body = json_array(found.iter().map(Option::as_deref), 0);
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(body))
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

/// The search response `{"items": [...], "next_page_id": ...}`.
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

fn session_key(req: &HttpRequest) -> Option<String> {
    req.headers()
        .get(SESSION_KEY_HEADER)
        .map(|v| v.to_str().unwrap_or("").to_owned())
}

/// Receives a batch of events from an agent server: validated whole, stored atomically, ids
/// already stored skipped (retries never duplicate). `{"success": true}` means every event is
/// durable.
#[utoipa::path(post, path = "/api/v1/webhooks/events/{conversation_id}", tag = "Webhooks",
    params(
        ("conversation_id" = String, Path, description = "Conversation UUID (dashed or 32 hex)"),
    ),
    security(("SessionKeyHeader" = [])),
    request_body(content = Vec<Object>, description = "JSON array of events"),
    responses(
        (status = 200, description = "{\"success\": true}"),
        (status = 401, description = "Missing or invalid session key", body = crate::dto::ErrorDetail),
        (status = 404, description = "The conversation belongs to another organization", body = crate::dto::ErrorDetail),
        (status = 413, body = crate::dto::ErrorDetail),
        (status = 422, description = "An invalid event (loc names its index and field): nothing stored", body = crate::dto::HTTPValidationError),
        (status = 500, body = crate::dto::ErrorDetail),
    ))]
pub async fn webhook_events(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: RawBody,
) -> ApiResult<HttpResponse> {
    let key = session_key(&req);
    let raw = path.into_inner();
    let st = state.clone();
    st.blocking(move || {
        let sandbox = state.services.sandboxes().authenticate_sandbox(key.as_deref())?;
        let id = conversation_id(&raw)?;
        let bytes = body.bytes()?;
        let text = std::str::from_utf8(&bytes).map_err(|e| {
            ApiError::from(ValidationError::new(ErrorType::JsonInvalid, vec!["body".into(), LocItem::Index(e.valid_up_to())], "JSON decode error"))
        })?;
        let outcome = state.services.events().ingest_events(&sandbox, id, text)?;
        tracing::debug!(stored = outcome.stored, skipped = outcome.skipped, conversation = %id, "events ingested");
        Ok(())
    })
    .await?;
    Ok(HttpResponse::Ok().json(json!({ "success": true })))
}

/// Receives an agent server's `ConversationInfo`: updates the conversation's title, run state
/// and metadata (creating the conversation if need be).
#[utoipa::path(post, path = "/api/v1/webhooks/conversations", tag = "Webhooks",
    security(("SessionKeyHeader" = [])),
    request_body(content = Object, description = "The agent server's ConversationInfo"),
    responses(
        (status = 200, description = "{\"success\": true}"),
        (status = 401, body = crate::dto::ErrorDetail), (status = 404, body = crate::dto::ErrorDetail),
        (status = 413, body = crate::dto::ErrorDetail), (status = 422, body = crate::dto::HTTPValidationError),
        (status = 500, body = crate::dto::ErrorDetail),
    ))]
pub async fn webhook_conversations(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: RawBody,
) -> ApiResult<HttpResponse> {
    let key = session_key(&req);
    let st = state.clone();
    st.blocking(move || {
        let sandbox = state
            .services
            .sandboxes()
            .authenticate_sandbox(key.as_deref())?;
        let info = body.json()?;
        Ok(state
            .services
            .conversations()
            .ingest_conversation_info(&sandbox, &info)?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(json!({ "success": true })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(q: &str) -> Vec<(String, String)> {
        serde_urlencoded::from_str(q).unwrap()
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
