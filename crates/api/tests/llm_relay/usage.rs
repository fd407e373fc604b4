//! Budgets and usage: the per-task and monthly budgets refuse before anything is forwarded,
//! and the usage reads equal what the upstream reported, for those allowed to read them.

use serde_json::{Value, json};
use switchboard_testkit::Backend;

use crate::common::{assert_one_error, status_json};
use crate::llm_relay::rig::{
    Relay, Route, RouteSpec, anthropic_error, around_today, day, first_of_month, openai_error,
};
use crate::llm_relay::upstream::{ANTHROPIC_USAGE, JSON_USAGE, NOCOST_USAGE, Reported, SSE_USAGE};

/// `POST chat/completions` with `route`'s token as a bearer, its body read: the status.
async fn chat_status(relay: &Relay, route: &Route) -> u16 {
    let (status, _) = status_json(relay.chat("chat/completions", &route.token).await).await;
    status
}

/// Asserts `route` is refused for a spent budget naming `what`, as a bearer (OpenAI's shape)
/// and as `x-api-key` (Anthropic's).
async fn assert_budget_refused(relay: &Relay, route: &Route, what: &str, backend: Backend) {
    crate::llm_relay::rig::past_cache().await;
    let (status, body) = status_json(relay.chat("chat/completions", &route.token).await).await;
    let message = openai_error(status, &body, 400, "budget_exceeded");
    assert!(message.contains(what), "{backend}: {message}");
    let (status, body) = relay.anthropic("anthropic/v1/messages", &route.token).await;
    let message = anthropic_error(status, &body, 400, "budget_exceeded");
    assert!(message.contains(what), "{backend}: {message}");
}

/// `POST /api/organizations/app` as the owner: `llm_monthly_budget` = `budget`.
async fn set_monthly(relay: &Relay, budget: Value) {
    let (status, body) = relay
        .app
        .post_settings(
            &relay.app.owner.key,
            &json!({ "llm_monthly_budget": budget }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["llm_monthly_budget"], budget, "{body}");
}

pub async fn budgets_refuse_before_forwarding(backend: Backend) {
    let relay = Relay::start(backend).await;
    // Per task: each conversation's first request costs 0.125 (the upstream's usage.cost).
    let over = relay.route(Some(0.1)).await;
    let at = relay.route(Some(JSON_USAGE.2)).await;
    let under = relay.route(Some(1.0)).await;
    for r in [&over, &at, &under] {
        assert_eq!(chat_status(&relay, r).await, 200, "{backend}");
    }
    relay.wait_requests(3).await;
    assert_budget_refused(&relay, &over, "max_budget_per_task", backend).await;
    assert_budget_refused(&relay, &at, "max_budget_per_task", backend).await;
    assert_eq!(chat_status(&relay, &under).await, 200, "{backend}");
    // Refused requests never reached the upstream.
    assert_eq!(relay.up.seen().len(), 4, "{backend}");
    relay.wait_requests(4).await;

    // The organization's month: 0.5 recorded so far. Last month's cost does not count.
    let free = relay.route(None).await;
    let before_month = first_of_month() - time::Duration::days(1);
    let member = relay.app.member.user_id;
    relay.add_usage(&free, member, before_month, 50.0).await;
    set_monthly(&relay, json!(1.0)).await;
    assert_eq!(chat_status(&relay, &free).await, 200, "{backend}");
    relay.wait_requests(5).await;
    // 0.625 so far; 0.375 more reaches 1.0: refused, for every conversation of the
    // organization, and only its.
    let today = time::OffsetDateTime::now_utc().date();
    relay.add_usage(&free, member, today, 0.375).await;
    assert_budget_refused(&relay, &free, "llm_monthly_budget", backend).await;
    let owners = relay
        .route_with(RouteSpec {
            org: relay.app.org,
            user: relay.app.owner.user_id,
            budget: None,
            upstream: &relay.upstream,
            sealer: &relay.sealer,
            bound_to: None,
        })
        .await;
    assert_budget_refused(&relay, &owners, "llm_monthly_budget", backend).await;
    let outsider = relay
        .route_with(RouteSpec {
            org: relay.app.other_org,
            user: relay.app.non_member.user_id,
            budget: None,
            upstream: &relay.upstream,
            sealer: &relay.sealer,
            bound_to: None,
        })
        .await;
    assert_eq!(chat_status(&relay, &outsider).await, 200, "{backend}");
    assert_eq!(relay.up.seen().len(), 6, "{backend}");
    // A raised budget lets requests through again; so does none.
    set_monthly(&relay, json!(2.0)).await;
    assert_eq!(chat_status(&relay, &free).await, 200, "{backend}");
    set_monthly(&relay, Value::Null).await;
    assert_eq!(chat_status(&relay, &owners).await, 200, "{backend}");
    assert_eq!(relay.up.seen().len(), 8, "{backend}");
    relay.stop().await;
}

/// Asserts a usage row: `requests` and the sums of `reported`.
#[track_caller]
fn assert_row(row: &Value, requests: u64, reported: &[Reported]) {
    let input: u64 = reported.iter().map(|r| r.0).sum();
    let output: u64 = reported.iter().map(|r| r.1).sum();
    let cost: f64 = reported.iter().map(|r| r.2).sum();
    assert_eq!(row["requests"], requests, "{row}");
    assert_eq!(row["input_tokens"], input, "{row}");
    assert_eq!(row["output_tokens"], output, "{row}");
    assert_eq!(row["cost_usd"].as_f64(), Some(cost), "{row}");
}

/// Sends one request of each answer's kind through `route`, every body read: an error status
/// first (never recorded), then whole JSON with a cost, a stream, an Anthropic answer and one
/// without a cost.
async fn one_of_each(relay: &Relay, route: &Route, backend: Backend) {
    let (status, body) =
        status_json(relay.chat("error/chat/completions", &route.token).await).await;
    assert_eq!(status, 500, "{backend}: {body}");
    // The provider's own error passes as it is.
    assert_eq!(
        body["error"]["message"], "upstream failed",
        "{backend}: {body}"
    );
    for path in [
        "chat/completions",
        "sse/chat/completions",
        "nocost/chat/completions",
    ] {
        let answer = relay.chat(path, &route.token).await;
        assert_eq!(answer.status(), 200, "{backend}: {path}");
        answer.bytes().await.unwrap();
    }
    let (status, body) = relay.anthropic("anthropic/v1/messages", &route.token).await;
    assert_eq!(status, 200, "{backend}: {body}");
}

pub async fn usage_is_what_the_upstream_reported(backend: Backend) {
    let relay = Relay::start(backend).await;
    let r = relay.route(None).await;
    one_of_each(&relay, &r, backend).await;
    let all = [JSON_USAGE, SSE_USAGE, NOCOST_USAGE, ANTHROPIC_USAGE];
    // By member (the default): the member's one row and the total.
    let page = relay.wait_requests(4).await;
    assert_eq!(page["group_by"], "member", "{backend}: {page}");
    assert_eq!(
        page["org_id"],
        relay.app.org.to_string(),
        "{backend}: {page}"
    );
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{backend}: {page}");
    assert_eq!(items[0]["user_id"], relay.app.member.user_id.to_string());
    assert_eq!(items[0]["day"], Value::Null, "{backend}: {page}");
    assert_row(&items[0], 4, &all);
    assert_row(&page["total"], 4, &all);
    // By day: today's row.
    let (status, page) = relay
        .org_usage(
            &relay.app.owner.key,
            &format!("{}&group_by=day", around_today()),
        )
        .await;
    assert_eq!(status, 200, "{backend}: {page}");
    assert_eq!(page["group_by"], "day", "{backend}: {page}");
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{backend}: {page}");
    assert_eq!(items[0]["day"], day(0), "{backend}: {page}");
    assert_eq!(items[0]["user_id"], Value::Null, "{backend}: {page}");
    assert_row(&items[0], 4, &all);
    // An admin reads it too; a member may not; an outsider does not see the organization.
    let (status, page) = relay.org_usage(&relay.app.admin.key, &around_today()).await;
    assert_eq!(status, 200, "{backend}: {page}");
    assert_row(&page["total"], 4, &all);
    let (status, body) = relay.org_usage(&relay.app.member.key, "").await;
    assert_eq!(status, 403, "{backend}: {body}");
    assert!(body.get("total").is_none(), "{backend}: {body}");
    let (status, body) = relay.org_usage(&relay.app.non_member.key, "").await;
    assert_eq!(status, 404, "{backend}: {body}");
    // The member's own, by day; the owner's own holds nothing.
    let mine = format!("/api/v1/users/me/llm-usage?{}", around_today());
    let (status, page) = relay.api(&relay.app.member.key, &mine).await;
    assert_eq!(status, 200, "{backend}: {page}");
    assert_eq!(
        page["org_id"],
        relay.app.org.to_string(),
        "{backend}: {page}"
    );
    assert_eq!(
        page["items"].as_array().unwrap().len(),
        1,
        "{backend}: {page}"
    );
    assert_eq!(page["items"][0]["day"], day(0), "{backend}: {page}");
    assert_row(&page["total"], 4, &all);
    let (status, page) = relay.api(&relay.app.owner.key, &mine).await;
    assert_eq!(status, 200, "{backend}: {page}");
    assert_eq!(page["items"], json!([]), "{backend}: {page}");
    assert_row(&page["total"], 0, &[]);
    // A span that ends before it starts: nothing, not an error.
    let reversed = format!("from={}&to={}", day(0), day(-1));
    let (status, page) = relay.org_usage(&relay.app.owner.key, &reversed).await;
    assert_eq!(status, 200, "{backend}: {page}");
    assert_eq!(page["items"], json!([]), "{backend}: {page}");
    assert_row(&page["total"], 0, &[]);
    // Malformed dates and groupings: 422 at the parameter.
    for (query, name) in [
        ("from=2026-02-30", "from"),
        ("to=yesterday", "to"),
        ("from=2026-1-5", "from"),
        ("group_by=week", "group_by"),
        ("group_by=", "group_by"),
    ] {
        let (status, body) = relay.org_usage(&relay.app.owner.key, query).await;
        assert_eq!(status, 422, "{backend}: {query}: {body}");
        assert_one_error(&body, &json!(["query", name]), "value_error");
    }
    let (status, body) = relay
        .api(
            &relay.app.member.key,
            "/api/v1/users/me/llm-usage?to=2026-13-01",
        )
        .await;
    assert_eq!(status, 422, "{backend}: {body}");
    assert_one_error(&body, &json!(["query", "to"]), "value_error");
    relay.stop().await;
}
