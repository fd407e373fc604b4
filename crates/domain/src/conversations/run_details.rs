//! What an agent server reports of a conversation besides its run state, kept so that the
//! conversation still answers it once its sandbox is paused, deleted or lost (issue 31, "A
//! conversation keeps what it was"; API.md, "What a conversation keeps after its sandbox"):
//! the LLM model it runs on and its metrics.
//!
//! Sources, as OpenHands' app server reads them (reference app-server §2.2, §2.3):
//! - the agent server's `ConversationInfo` (the conversations webhook, and the pull path's
//!   listing): `llm_model` from `agent.llm.model` (an ACP agent: `current_model_id`, then
//!   `agent.acp_model`), `metrics` from `stats` combined over every LLM usage
//!   (`stats.get_combined_metrics()`), else its own `metrics` object;
//! - the events: a `ConversationStateUpdateEvent` with key `stats` (the value is the
//!   `ConversationStats`) or `full_state` (the value's `stats` and `agent.llm.model`).

use serde_json::{Map, Value, json};

/// The LLM model and metrics an agent server last reported of a conversation; `None`: not
/// reported (what is stored stays).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunDetails {
    /// The LLM model (`agent.llm.model`), NUL characters replaced by U+FFFD (a text column).
    pub llm_model: Option<String>,
    /// OpenHands' `MetricsSnapshot` of the whole conversation as compact JSON:
    /// `{"model_name", "accumulated_cost", "max_budget_per_task", "accumulated_token_usage"}`.
    pub metrics: Option<String>,
}

impl RunDetails {
    /// Whether nothing was reported.
    pub fn is_empty(&self) -> bool {
        self.llm_model.is_none() && self.metrics.is_none()
    }

    /// These details updated by `later` ones: the model `later` reports replaces this one's;
    /// its metrics replace these unless they count fewer tokens ([`metrics_supersede`]:
    /// sources race, and spend only grows).
    pub fn then(self, later: RunDetails) -> RunDetails {
        let metrics = match (self.metrics, later.metrics) {
            (Some(old), Some(new)) => Some(
                if metrics_supersede(metrics_tokens(&new), metrics_tokens(&old)) {
                    new
                } else {
                    old
                },
            ),
            (old, new) => new.or(old),
        };
        RunDetails {
            llm_model: later.llm_model.or(self.llm_model),
            metrics,
        }
    }

    /// The tokens the reported metrics count ([`metrics_tokens`]); `None` when none are
    /// reported or they do not say.
    pub fn metrics_tokens(&self) -> Option<i64> {
        self.metrics.as_deref().and_then(metrics_tokens)
    }

    /// What a `ConversationInfo` (or a `full_state` snapshot, which has the same `agent` and
    /// `stats`) reports: its agent's model and its combined metrics (else its `metrics`
    /// object). Anything of another shape is not reported.
    pub fn of_info(info: &Value) -> RunDetails {
        let metrics = info
            .get("stats")
            .and_then(combined_metrics)
            .or_else(|| info.get("metrics").filter(|m| m.is_object()).cloned());
        RunDetails {
            llm_model: model_of(info),
            metrics: metrics.map(|m| m.to_string()),
        }
    }

    /// What a `ConversationStateUpdateEvent` reports: `stats` (the value is the
    /// `ConversationStats`) its metrics, `full_state` as [`RunDetails::of_info`]; other keys
    /// nothing.
    pub fn of_state_update(key: &str, value: &Value) -> RunDetails {
        match key {
            "stats" => RunDetails {
                llm_model: None,
                metrics: combined_metrics(value).map(|m| m.to_string()),
            },
            "full_state" => RunDetails::of_info(value),
            _ => RunDetails::default(),
        }
    }
}

/// The tokens a metrics snapshot (compact JSON, as [`RunDetails::metrics`]) counts:
/// `accumulated_token_usage.prompt_tokens + completion_tokens`; `None` when it does not say.
/// A conversation's accumulated usage only grows, so it orders two snapshots of one
/// conversation that arrive by different paths (the stream, the pull path, a webhook) in
/// either order.
pub fn metrics_tokens(metrics: &str) -> Option<i64> {
    let v: Value = serde_json::from_str(metrics).ok()?;
    let usage = v.get("accumulated_token_usage")?;
    let count = |k: &str| usage.get(k).and_then(Value::as_i64).unwrap_or(0);
    usage
        .is_object()
        .then(|| count("prompt_tokens").saturating_add(count("completion_tokens")))
}

/// Whether metrics counting `new` tokens replace stored ones counting `old` (issue 31:
/// metrics never go back): when the stored say nothing, or the new count at least as many.
/// New metrics that do not say never replace stored ones that do.
pub fn metrics_supersede(new: Option<i64>, old: Option<i64>) -> bool {
    match (new, old) {
        (_, None) => true,
        (Some(n), Some(o)) => n >= o,
        (None, Some(_)) => false,
    }
}

/// The model a `ConversationInfo` or state names: `agent.llm.model`; for an ACP agent (no
/// `llm`) `current_model_id`, then `agent.acp_model`.
fn model_of(info: &Value) -> Option<String> {
    let text = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(|s| crate::validation::nul_replaced(s.to_owned()))
    };
    let agent = info.get("agent");
    text(agent.and_then(|a| a.pointer("/llm/model")))
        .or_else(|| text(info.get("current_model_id")))
        .or_else(|| text(agent.and_then(|a| a.get("acp_model"))))
}

/// OpenHands' `ConversationStats.get_combined_metrics()` as a `MetricsSnapshot`: every
/// usage's `Metrics` merged into a new one (`model_name` "default", costs added, the first
/// `max_budget_per_task` set, token usages added as `TokenUsage.__add__` does: counts summed,
/// `context_window` the largest, `per_turn_token` the last, `model` and `response_id` the
/// first's). `None` when `stats` has no `usage_to_metrics` object or no usage in it.
pub fn combined_metrics(stats: &Value) -> Option<Value> {
    let usages = stats.get("usage_to_metrics")?.as_object()?;
    if usages.is_empty() {
        return None;
    }
    let mut cost = 0.0;
    let mut budget: Option<f64> = None;
    let mut tokens: Option<Map<String, Value>> = None;
    for metrics in usages.values() {
        cost += metrics
            .get("accumulated_cost")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        if budget.is_none() {
            budget = metrics.get("max_budget_per_task").and_then(Value::as_f64);
        }
        if let Some(usage) = metrics
            .get("accumulated_token_usage")
            .and_then(Value::as_object)
        {
            tokens = Some(match tokens {
                None => token_usage(usage, None),
                Some(sum) => token_usage(usage, Some(&sum)),
            });
        }
    }
    Some(json!({
        "model_name": "default",
        "accumulated_cost": cost,
        "max_budget_per_task": budget,
        "accumulated_token_usage": tokens,
    }))
}

/// The counters of a `TokenUsage`, summed by `TokenUsage.__add__`.
const SUMMED: [&str; 5] = [
    "prompt_tokens",
    "completion_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
];

/// `usage` as a `TokenUsage` (every field, defaults for missing ones), or `sum + usage`.
fn token_usage(usage: &Map<String, Value>, sum: Option<&Map<String, Value>>) -> Map<String, Value> {
    let int = |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_u64).unwrap_or(0);
    let text =
        |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let first = sum.unwrap_or(usage);
    let mut out = Map::new();
    out.insert("model".into(), json!(text(first, "model")));
    for k in SUMMED {
        let before = sum.map_or(0, |s| int(s, k));
        out.insert(k.into(), json!(before.saturating_add(int(usage, k))));
    }
    let window = int(usage, "context_window").max(sum.map_or(0, |s| int(s, "context_window")));
    out.insert("context_window".into(), json!(window));
    out.insert("per_turn_token".into(), json!(int(usage, "per_turn_token")));
    out.insert("response_id".into(), json!(text(first, "response_id")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(model: &str, prompt: u64, window: u64, turn: u64) -> Value {
        json!({"model": model, "prompt_tokens": prompt, "completion_tokens": 10,
            "cache_read_tokens": 0, "cache_write_tokens": 0, "reasoning_tokens": 1,
            "context_window": window, "per_turn_token": turn, "response_id": "r"})
    }

    fn details(tokens: Option<(u64, u64)>) -> RunDetails {
        let usage = tokens.map_or(
            json!(null),
            |(p, c)| json!({"prompt_tokens": p, "completion_tokens": c}),
        );
        RunDetails {
            llm_model: None,
            metrics: Some(
                json!({"model_name": "default", "accumulated_token_usage": usage}).to_string(),
            ),
        }
    }

    #[test]
    fn metrics_never_go_back() {
        let (small, big, unknown) = (
            details(Some((300, 30))),
            details(Some((410, 40))),
            details(None),
        );
        assert_eq!(big.metrics_tokens(), Some(450));
        assert_eq!(unknown.metrics_tokens(), None);
        assert_eq!(RunDetails::default().metrics_tokens(), None);
        // Whatever the order two snapshots arrive in, the larger is kept.
        assert_eq!(small.clone().then(big.clone()).metrics, big.metrics);
        assert_eq!(big.clone().then(small.clone()).metrics, big.metrics);
        // One that does not say never replaces one that does; one that says replaces it.
        assert_eq!(big.clone().then(unknown.clone()).metrics, big.metrics);
        assert_eq!(unknown.clone().then(small.clone()).metrics, small.metrics);
        // Nothing reported keeps what was; equal counts take the later.
        assert_eq!(big.clone().then(RunDetails::default()).metrics, big.metrics);
        assert!(metrics_supersede(Some(5), Some(5)));
        assert!(!metrics_supersede(Some(4), Some(5)));
        assert!(metrics_supersede(None, None));
    }

    #[test]
    fn stats_combine_as_openhands_does() {
        let stats = json!({"usage_to_metrics": {
            "agent": {"model_name": "openai/a", "accumulated_cost": 0.25, "max_budget_per_task": null,
                "accumulated_token_usage": usage("openai/a", 300, 8000, 110), "costs": []},
            "title": {"model_name": "openai/b", "accumulated_cost": 0.5, "max_budget_per_task": 3.0,
                "accumulated_token_usage": usage("openai/b", 40, 4000, 7)},
        }});
        let m = combined_metrics(&stats).unwrap();
        assert_eq!(m["model_name"], "default");
        assert_eq!(m["accumulated_cost"], 0.75);
        assert_eq!(m["max_budget_per_task"], 3.0);
        let t = &m["accumulated_token_usage"];
        assert_eq!(
            (&t["model"], &t["prompt_tokens"], &t["completion_tokens"]),
            (&json!("openai/a"), &json!(340), &json!(20))
        );
        assert_eq!(
            (
                &t["reasoning_tokens"],
                &t["context_window"],
                &t["per_turn_token"]
            ),
            (&json!(2), &json!(8000), &json!(7))
        );
        // Nothing to combine: not reported.
        for empty in [
            json!({"usage_to_metrics": {}}),
            json!([""]),
            json!(3.25),
            json!({}),
        ] {
            assert_eq!(combined_metrics(&empty), None, "{empty}");
        }
        let no_tokens = combined_metrics(&json!({"usage_to_metrics": {"agent": {}}})).unwrap();
        assert_eq!(no_tokens["accumulated_token_usage"], Value::Null);
        assert_eq!(no_tokens["accumulated_cost"], 0.0);
    }

    #[test]
    fn details_of_infos_and_state_updates() {
        let state = json!({"agent": {"llm": {"model": "openai/fake\u{0}model"}},
            "stats": {"usage_to_metrics": {"agent": {"accumulated_cost": 1.0}}}});
        let d = RunDetails::of_state_update("full_state", &state);
        assert_eq!(d.llm_model.as_deref(), Some("openai/fake\u{fffd}model"));
        let m: Value = serde_json::from_str(d.metrics.as_deref().unwrap()).unwrap();
        assert_eq!(m["accumulated_cost"], 1.0);
        let stats = RunDetails::of_state_update("stats", &state["stats"]);
        assert_eq!((stats.llm_model, stats.metrics), (None, d.metrics.clone()));
        assert!(RunDetails::of_state_update("execution_status", &json!("finished")).is_empty());
        // An ACP agent; an info with only its own metrics.
        let acp = RunDetails::of_info(
            &json!({"agent": {"acp_model": "claude"}, "current_model_id": "",
            "metrics": {"accumulated_cost": 2.0}, "stats": {"usage_to_metrics": {}}}),
        );
        assert_eq!(acp.llm_model.as_deref(), Some("claude"));
        assert_eq!(acp.metrics.as_deref(), Some(r#"{"accumulated_cost":2.0}"#));
        // A later report replaces only what it reports.
        let merged = d.clone().then(RunDetails {
            llm_model: Some("openai/next".into()),
            metrics: None,
        });
        assert_eq!(merged.llm_model.as_deref(), Some("openai/next"));
        assert_eq!(merged.metrics, d.metrics);
    }
}
