//! A conversation's budget (API.md, "Budgets"): the most its LLM calls may cost, in USD, fixed
//! when it starts, and what happens when its accumulated cost reaches it.
//!
//! The rule follows the OpenHands SDK's `LocalConversation.max_budget_per_run`
//! (`_budget_exceeded_detail` and `_emit_run_limit_error` in
//! `openhands/sdk/conversation/impl/local_conversation.py`, 1.58.2): once the combined
//! accumulated cost of every LLM the run used is at least the budget, and the run has not
//! finished, the conversation stops in `error` with a `ConversationErrorEvent` (source
//! `environment`, code `MaxBudgetReached`). The agent server 1.58.2 takes no budget in its
//! create request, so Switchboard applies it: the budget is the member's
//! `max_budget_per_task` preference with the organization's app setting as the ceiling
//! ([`effective_budget`]), the cost is what the agent server reports in its `stats`
//! ([`accumulated_cost`]).

use serde_json::{Map, Value, json};
use time::OffsetDateTime;

use crate::conversations::{Conversation, ExecutionStatus};
use crate::events::{NewEvent, prepare_batch};
use crate::ids::ConversationId;

/// The code of the `ConversationErrorEvent` a stopped conversation gets (the SDK's).
pub const MAX_BUDGET_REACHED: &str = "MaxBudgetReached";

/// What the store keeps of a conversation's budget, with the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetRecord {
    /// The conversation (its organization, owner, sandbox and the run state its agent server
    /// last reported).
    pub conversation: Conversation,
    /// Its budget in USD, fixed at its start; `None`: none.
    pub max_budget_per_task: Option<f64>,
    /// When its cost reached the budget and it was stopped; `None`: not reached.
    pub reached_at: Option<OffsetDateTime>,
    /// The metrics stored last (compact JSON of a `MetricsSnapshot`), if any.
    pub metrics: Option<String>,
}

/// The budget of a conversation a member starts: the member's `max_budget_per_task`, with the
/// organization's as the ceiling: the smaller of the two when both are set, the one set when
/// only one is, none when neither is.
pub fn effective_budget(member: Option<f64>, org_ceiling: Option<f64>) -> Option<f64> {
    match (usable(member), usable(org_ceiling)) {
        (Some(m), Some(o)) => Some(m.min(o)),
        (m, o) => m.or(o),
    }
}

/// A budget only when it is finite and above 0 (what both settings accept; anything else
/// stored by an older version sets none).
fn usable(budget: Option<f64>) -> Option<f64> {
    budget.filter(|b| b.is_finite() && *b > 0.0)
}

/// The member's `max_budget_per_task` among their stored app preferences (a number; `null` or
/// absent: none).
pub fn member_budget(preferences: &Map<String, Value>) -> Option<f64> {
    usable(
        preferences
            .get("max_budget_per_task")
            .and_then(Value::as_f64),
    )
}

/// The accumulated cost in USD of a metrics snapshot (compact JSON, as
/// [`RunDetails::metrics`](crate::conversations::RunDetails::metrics)): its
/// `accumulated_cost`; `None` when it does not say.
pub fn accumulated_cost(metrics: &str) -> Option<f64> {
    serde_json::from_str::<Value>(metrics)
        .ok()?
        .get("accumulated_cost")?
        .as_f64()
        .filter(|c| c.is_finite())
}

/// Whether `cost` has reached `budget` (the SDK stops when the cost is not below it).
pub fn is_reached(budget: f64, cost: f64) -> bool {
    cost >= budget
}

/// The SDK's detail: `Agent reached maximum budget limit ($X.XXXX); accumulated cost
/// $Y.YYYY.`, both in USD with four decimals.
pub fn budget_detail(budget: f64, cost: f64) -> String {
    format!("Agent reached maximum budget limit (${budget:.4}); accumulated cost ${cost:.4}.")
}

/// The id of a conversation's budget notice: the same every time (a UUID v5 of the
/// conversation id), so that it is stored once whichever replica or pass stores it.
pub fn budget_notice_id(conversation: ConversationId) -> String {
    const NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x5357_4254_4255_4447_4554_0000_0000_0001);
    uuid::Uuid::new_v5(&NAMESPACE, conversation.to_string().as_bytes()).to_string()
}

/// The event a stopped conversation gets: a `ConversationErrorEvent`, source `environment`,
/// code [`MAX_BUDGET_REACHED`], detail [`budget_detail`], id [`budget_notice_id`], stamped
/// `now` (UTC, without offset, as the SDK writes its timestamps).
pub fn budget_notice(
    conversation: ConversationId,
    budget: f64,
    cost: f64,
    now: OffsetDateTime,
) -> NewEvent {
    let stamp = crate::time_input::format_rfc3339_micros(now);
    let body = json!([{
        "kind": "ConversationErrorEvent",
        "id": budget_notice_id(conversation),
        "timestamp": stamp.trim_end_matches('Z'),
        "source": "environment",
        "code": MAX_BUDGET_REACHED,
        "detail": budget_detail(budget, cost),
    }]);
    let mut batch = prepare_batch(&body.to_string())
        .unwrap_or_else(|e| unreachable!("the budget notice is a valid event: {e:?}"));
    batch.events.remove(0)
}

/// Whether a conversation whose agent server reports `cost` is to be stopped now: it has a
/// budget, has not been stopped, has not finished (the SDK leaves a run that finished on its
/// last step as it is) and `cost` reached the budget. Answers the budget.
pub fn to_stop(record: &BudgetRecord, cost: f64) -> Option<f64> {
    let budget = record.max_budget_per_task?;
    let finished = record.conversation.execution_status == Some(ExecutionStatus::Finished);
    (record.reached_at.is_none() && !finished && is_reached(budget, cost)).then_some(budget)
}

/// The run state a conversation answers: `error` once its budget stopped it (its agent
/// server, paused by Switchboard, reports `paused` afterwards), else the one last reported.
pub fn answered_status(
    reported: Option<ExecutionStatus>,
    budget_reached: bool,
) -> Option<ExecutionStatus> {
    if budget_reached {
        Some(ExecutionStatus::Error)
    } else {
        reported
    }
}

/// The `MetricsSnapshot` a conversation answers: the one reported with its
/// `max_budget_per_task` set to the conversation's budget (the agent server reports none);
/// with a budget and nothing reported yet, a snapshot of no cost (`model_name` `default`, as
/// OpenHands' `MetricsSnapshot` defaults); without a budget, what was reported.
pub fn answered_metrics(metrics: Option<Value>, budget: Option<f64>) -> Option<Value> {
    let Some(budget) = budget else {
        return metrics;
    };
    let mut m = match metrics {
        Some(Value::Object(m)) => m,
        _ => {
            let mut m = Map::new();
            m.insert("model_name".into(), json!("default"));
            m.insert("accumulated_cost".into(), json!(0.0));
            m.insert("accumulated_token_usage".into(), Value::Null);
            m
        }
    };
    m.insert("max_budget_per_task".into(), json!(budget));
    Some(Value::Object(m))
}

/// Why a run of a conversation is refused (a send-message with `run: true`): it was stopped
/// by its budget, or the cost it reports is at or over its budget; `None` when it may run.
pub fn run_refusal(
    budget: Option<f64>,
    budget_reached: bool,
    metrics: Option<&Value>,
) -> Option<String> {
    let budget = budget?;
    let cost = metrics
        .and_then(|m| m.get("accumulated_cost"))
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    (budget_reached || is_reached(budget, cost)).then(|| {
        format!(
            "The conversation reached its budget (max_budget_per_task ${budget:.4}; accumulated cost ${cost:.4}): it does not run again. Start a new conversation."
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{OrgId, UserId};

    #[test]
    fn the_organization_caps_its_members() {
        // Both set: the smaller, whichever it is.
        assert_eq!(effective_budget(Some(5.0), Some(2.0)), Some(2.0));
        assert_eq!(effective_budget(Some(0.5), Some(2.0)), Some(0.5));
        assert_eq!(effective_budget(Some(2.0), Some(2.0)), Some(2.0));
        // One set: that one.
        assert_eq!(effective_budget(Some(0.25), None), Some(0.25));
        assert_eq!(effective_budget(None, Some(3.0)), Some(3.0));
        // None: none.
        assert_eq!(effective_budget(None, None), None);
        // A value neither setting accepts counts as unset.
        assert_eq!(effective_budget(Some(0.0), Some(3.0)), Some(3.0));
        assert_eq!(effective_budget(Some(f64::NAN), None), None);
        assert_eq!(effective_budget(Some(1.0), Some(-1.0)), Some(1.0));
        assert_eq!(effective_budget(Some(f64::INFINITY), Some(4.0)), Some(4.0));
    }

    #[test]
    fn a_member_budget_is_a_positive_number() {
        let prefs = |v: Value| {
            let mut m = Map::new();
            m.insert("max_budget_per_task".into(), v);
            m
        };
        assert_eq!(member_budget(&prefs(json!(1.5))), Some(1.5));
        assert_eq!(member_budget(&prefs(json!(2))), Some(2.0));
        assert_eq!(member_budget(&prefs(Value::Null)), None);
        assert_eq!(member_budget(&prefs(json!("1.5"))), None);
        assert_eq!(member_budget(&Map::new()), None);
    }

    fn record(budget: Option<f64>, status: Option<ExecutionStatus>, reached: bool) -> BudgetRecord {
        let now = crate::time_input::now_micros();
        BudgetRecord {
            conversation: Conversation {
                id: ConversationId::new_random(),
                org_id: OrgId::new_random(),
                owner_id: UserId::new_random(),
                sandbox_id: None,
                title: None,
                execution_status: status,
                created_at: now,
                updated_at: now,
            },
            max_budget_per_task: budget,
            reached_at: reached.then_some(now),
            metrics: None,
        }
    }

    #[test]
    fn a_run_stops_once_when_its_cost_reaches_the_budget() {
        let running = Some(ExecutionStatus::Running);
        assert_eq!(
            to_stop(&record(Some(0.001), running, false), 0.001),
            Some(0.001)
        );
        assert_eq!(to_stop(&record(Some(0.001), running, false), 0.0007), None);
        // No budget, stopped already, or finished: left as it is.
        assert_eq!(to_stop(&record(None, running, false), 9.0), None);
        assert_eq!(to_stop(&record(Some(0.001), running, true), 9.0), None);
        let finished = Some(ExecutionStatus::Finished);
        assert_eq!(to_stop(&record(Some(0.001), finished, false), 9.0), None);
        assert_eq!(
            to_stop(
                &record(Some(0.001), Some(ExecutionStatus::Paused), false),
                9.0
            ),
            Some(0.001)
        );
    }

    #[test]
    fn the_notice_is_the_sdks_error_with_a_stable_id() {
        let c = ConversationId::new_random();
        let now = time::macros::datetime!(2026-12-08 10:00:00.25 UTC);
        let n = budget_notice(c, 0.0001, 0.00035, now);
        assert_eq!(n.event_id, budget_notice_id(c));
        assert_ne!(
            budget_notice_id(c),
            budget_notice_id(ConversationId::new_random())
        );
        assert_ne!(budget_notice_id(c), crate::events::quota_notice_id(c));
        assert_eq!(n.kind.as_str(), "ConversationErrorEvent");
        assert_eq!(n.source.as_str(), "environment");
        assert_eq!(n.timestamp, "2026-12-08T10:00:00.250000");
        let v: Value = serde_json::from_str(&n.payload).unwrap();
        assert_eq!(v["code"], "MaxBudgetReached");
        assert_eq!(
            v["detail"],
            "Agent reached maximum budget limit ($0.0001); accumulated cost $0.0003."
        );
        assert_eq!(
            budget_detail(2.5, 2.50004),
            "Agent reached maximum budget limit ($2.5000); accumulated cost $2.5000."
        );
    }

    #[test]
    fn costs_are_read_from_metrics() {
        assert_eq!(
            accumulated_cost(r#"{"accumulated_cost":0.0007,"model_name":"default"}"#),
            Some(0.0007)
        );
        assert_eq!(accumulated_cost(r#"{"model_name":"default"}"#), None);
        assert_eq!(accumulated_cost("not json"), None);
        assert!(is_reached(0.5, 0.5) && is_reached(0.5, 0.6) && !is_reached(0.5, 0.4));
    }

    #[test]
    fn a_stopped_conversation_answers_error_and_its_budget() {
        let paused = Some(ExecutionStatus::Paused);
        assert_eq!(answered_status(paused, true), Some(ExecutionStatus::Error));
        assert_eq!(answered_status(paused, false), paused);
        let reported = json!({"model_name": "default", "accumulated_cost": 0.0007,
            "max_budget_per_task": null, "accumulated_token_usage": {"prompt_tokens": 200}});
        let m = answered_metrics(Some(reported.clone()), Some(0.0001)).unwrap();
        assert_eq!(m["max_budget_per_task"], 0.0001);
        assert_eq!(m["accumulated_cost"], 0.0007);
        assert_eq!(m["accumulated_token_usage"]["prompt_tokens"], 200);
        assert_eq!(
            answered_metrics(Some(reported.clone()), None),
            Some(reported)
        );
        assert_eq!(answered_metrics(None, None), None);
        let fresh = answered_metrics(None, Some(2.0)).unwrap();
        assert_eq!(
            fresh,
            json!({"model_name": "default", "accumulated_cost": 0.0,
                "max_budget_per_task": 2.0, "accumulated_token_usage": null})
        );
    }

    #[test]
    fn runs_over_budget_are_refused() {
        let spent = json!({"accumulated_cost": 0.0007});
        assert!(run_refusal(Some(0.0001), false, Some(&spent)).is_some());
        assert!(run_refusal(Some(1.0), true, None).is_some());
        assert_eq!(run_refusal(Some(1.0), false, Some(&spent)), None);
        assert_eq!(run_refusal(None, false, Some(&spent)), None);
        let why = run_refusal(Some(0.0001), true, Some(&spent)).unwrap();
        assert!(why.contains("$0.0001") && why.contains("$0.0007"), "{why}");
    }
}
