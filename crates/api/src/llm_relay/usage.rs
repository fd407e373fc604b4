//! The LLM pass-through's usage reads (issue 38; docs/API.md, "LLM pass-through"): an
//! organization's by member or by day (owners and admins), and a member's own by day. What
//! the providers reported for the requests forwarded, so keys a member holds themselves
//! (sent to their sandbox as they are) are not in them.

use actix_web::{get, web};
use serde::Serialize;
use switchboard_domain::OrgId;
use switchboard_domain::llm_relay::{UsageGroup, UsageRow};
use time::Date;
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::HTTPValidationError;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Caller, QueryPairs, path_uuid};
use crate::responses::ApiKeyErrors;

/// Registers the usage routes and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(org_usage).service(my_usage);
}

/// How the organization's rows are summed.
#[derive(Debug, Clone, Copy, ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum GroupBy {
    /// One row per member.
    Member,
    /// One row per UTC day.
    Day,
}

/// One summed row.
#[derive(Debug, Serialize, ToSchema)]
pub struct UsageItem {
    /// The member (grouped by member), else null.
    pub user_id: Option<String>,
    /// The UTC day `YYYY-MM-DD` (grouped by day), else null.
    pub day: Option<String>,
    /// Requests forwarded.
    pub requests: u64,
    /// Prompt (input) tokens the providers reported.
    pub input_tokens: u64,
    /// Completion (output) tokens the providers reported.
    pub output_tokens: u64,
    /// Cost in USD the providers reported (0 where they report none).
    pub cost_usd: f64,
}

/// A usage answer: the span, the grouping, the rows and their sum.
#[derive(Debug, Serialize, ToSchema)]
pub struct UsagePage {
    /// The organization.
    pub org_id: String,
    /// First day, inclusive (`YYYY-MM-DD`, UTC).
    pub from: String,
    /// Last day, inclusive.
    pub to: String,
    /// `member` or `day`.
    pub group_by: String,
    /// The rows: by member in member-id order, by day in day order; empty ones absent.
    pub items: Vec<UsageItem>,
    /// The sum of the rows (`user_id` and `day` null).
    pub total: UsageItem,
}

/// The organization's LLM usage through the pass-through, days `from..=to` (default: this
/// calendar month, UTC, to today; none when `to` is before `from`), `group_by` `member`
/// (default) or `day`. Owners and admins (`view_billing`). 422 for a malformed date or
/// grouping.
#[utoipa::path(tag = "LLM pass-through",
    params(("org_id" = uuid::Uuid, Path, description = "Organization"),
        ("from" = Option<String>, Query, format = Date, description = "First day, inclusive (YYYY-MM-DD, UTC)"),
        ("to" = Option<String>, Query, format = Date, description = "Last day, inclusive"),
        ("group_by" = inline(Option<GroupBy>), Query, description = "`member` (default) or `day`"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = UsagePage), ApiKeyErrors,
        (status = 422, description = "Malformed id, date or grouping", body = HTTPValidationError)))]
#[get("/api/organizations/{org_id}/llm-usage")]
pub async fn org_usage(
    state: web::Data<AppState>,
    caller: Caller,
    org_id: web::Path<String>,
    query: QueryPairs,
) -> ApiResult<web::Json<UsagePage>> {
    let raw = org_id.into_inner();
    caller
        .run(state, move |s, ctx| {
            let org = OrgId(path_uuid(&raw, "org_id")?);
            let group = match query.all("group_by").pop().as_deref() {
                None | Some("member") => UsageGroup::Member,
                Some("day") => UsageGroup::Day,
                Some(other) => return Err(bad_query("group_by", other, "'member' or 'day'")),
            };
            let span = span(&query)?;
            let role = s.services.members().caller_role(&ctx, org)?;
            let rows = s.services.llm_relay().org_usage(org, role, group, span)?;
            Ok(web::Json(page(org, span, group, rows)))
        })
        .await
}

/// The caller's own LLM usage through the pass-through in the organization (`X-Org-Id`, else
/// their current one), by day, days `from..=to` (default: this calendar month, UTC).
#[utoipa::path(tag = "LLM pass-through",
    params(("from" = Option<String>, Query, format = Date, description = "First day, inclusive (YYYY-MM-DD, UTC)"),
        ("to" = Option<String>, Query, format = Date, description = "Last day, inclusive"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = UsagePage), ApiKeyErrors,
        (status = 422, description = "Malformed date", body = HTTPValidationError)))]
#[get("/api/v1/users/me/llm-usage")]
pub async fn my_usage(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<web::Json<UsagePage>> {
    caller
        .run(state, move |s, ctx| {
            let span = span(&query)?;
            let rows = s.services.llm_relay().my_usage(&ctx, span.0, span.1)?;
            Ok(web::Json(page(ctx.org.id, span, UsageGroup::Day, rows)))
        })
        .await
}

/// `from` and `to` (`YYYY-MM-DD`): default the first of this month and today (UTC).
fn span(query: &QueryPairs) -> Result<(Date, Date), ApiError> {
    let today = time::OffsetDateTime::now_utc().date();
    let day = |name: &str, default: Date| -> Result<Date, ApiError> {
        match query.all(name).pop() {
            None => Ok(default),
            Some(v) => Date::parse(&v, DAY).map_err(|_| bad_query(name, &v, "a date YYYY-MM-DD")),
        }
    };
    let from = day("from", today.replace_day(1).unwrap_or(today))?;
    Ok((from, day("to", today)?))
}

/// `YYYY-MM-DD`.
const DAY: &[time::format_description::BorrowedFormatItem<'static>] =
    time::macros::format_description!("[year]-[month]-[day]");

/// 422 at `["query", name]`.
fn bad_query(name: &str, input: &str, expected: &str) -> ApiError {
    switchboard_model::ValidationError::new(
        switchboard_model::ErrorType::ValueError,
        QueryPairs::loc(name),
        format!("Value error, {name} must be {expected}"),
    )
    .with_input(serde_json::Value::String(input.to_owned()))
    .into()
}

fn item(r: &UsageRow) -> UsageItem {
    UsageItem {
        user_id: r.user_id.map(|u| u.to_string()),
        day: r.day.and_then(|d| d.format(DAY).ok()),
        requests: r.requests,
        input_tokens: r.input_tokens,
        output_tokens: r.output_tokens,
        cost_usd: r.cost_usd,
    }
}

fn page(org: OrgId, (from, to): (Date, Date), group: UsageGroup, rows: Vec<UsageRow>) -> UsagePage {
    let mut total = UsageItem {
        user_id: None,
        day: None,
        requests: 0,
        input_tokens: 0,
        output_tokens: 0,
        cost_usd: 0.0,
    };
    for r in &rows {
        total.requests += r.requests;
        total.input_tokens += r.input_tokens;
        total.output_tokens += r.output_tokens;
        total.cost_usd += r.cost_usd;
    }
    UsagePage {
        org_id: org.to_string(),
        from: from.format(DAY).unwrap_or_default(),
        to: to.format(DAY).unwrap_or_default(),
        group_by: match group {
            UsageGroup::Member => "member".into(),
            UsageGroup::Day => "day".into(),
        },
        items: rows.iter().map(item).collect(),
        total,
    }
}
