//! The LLM pass-through's metrics (issue 38): requests by outcome, tokens and cost forwarded,
//! and the time to the provider's first byte.

use std::time::Duration;

use prometheus::{Counter, Histogram, HistogramOpts, IntCounterVec, Opts, Registry};
use switchboard_domain::llm_relay::usage::Usage;
use switchboard_domain::services::llm_relay::Refusal;

use super::families::{counters, register};

/// The pass-through's families.
#[derive(Clone)]
pub struct LlmRelayMetrics {
    requests: IntCounterVec,
    tokens: IntCounterVec,
    cost: Counter,
    first_byte: Histogram,
}

impl LlmRelayMetrics {
    /// The families, registered in `registry`.
    ///
    /// # Panics
    /// When registered twice (a programming error).
    pub fn new(registry: &Registry) -> Self {
        LlmRelayMetrics {
            requests: counters(
                registry,
                "llm_relay_requests_total",
                "LLM pass-through requests by outcome: forwarded, unknown_token, task_budget, monthly_budget, key_unavailable, upstream_failed.",
                &["outcome"],
            ),
            tokens: counters(
                registry,
                "llm_relay_tokens_total",
                "Tokens the providers reported for forwarded requests, by kind (input, output).",
                &["kind"],
            ),
            cost: register(
                registry,
                Counter::with_opts(Opts::new(
                    "llm_relay_cost_usd_total",
                    "Cost in USD the providers reported for forwarded requests.",
                ))
                .expect("valid metric"),
            ),
            first_byte: register(
                registry,
                Histogram::with_opts(
                    HistogramOpts::new(
                        "llm_relay_first_byte_seconds",
                        "Seconds from a pass-through request's arrival to the provider's answer headers.",
                    )
                    .buckets(vec![
                        0.001, 0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
                    ]),
                )
                .expect("valid metric"),
            ),
        }
    }

    /// A refused request.
    pub fn refused(&self, why: &Refusal) {
        let outcome = match why {
            Refusal::UnknownToken => "unknown_token",
            Refusal::TaskBudget { .. } => "task_budget",
            Refusal::MonthlyBudget { .. } => "monthly_budget",
            Refusal::KeyUnavailable => "key_unavailable",
        };
        self.requests.with_label_values(&[outcome]).inc();
    }

    /// A request whose upstream could not be reached or did not answer.
    pub fn upstream_failed(&self) {
        self.requests.with_label_values(&["upstream_failed"]).inc();
    }

    /// The provider's answer headers arrived `after` the request did.
    pub fn first_byte(&self, after: Duration) {
        self.first_byte.observe(after.as_secs_f64());
    }

    /// A forwarded request's answer ended, having reported `usage` (if any).
    pub fn answered(&self, usage: Option<&Usage>) {
        self.requests.with_label_values(&["forwarded"]).inc();
        if let Some(u) = usage {
            self.tokens
                .with_label_values(&["input"])
                .inc_by(u.input_tokens);
            self.tokens
                .with_label_values(&["output"])
                .inc_by(u.output_tokens);
            if let Some(c) = u.cost_usd.filter(|c| c.is_finite() && *c > 0.0) {
                self.cost.inc_by(c);
            }
        }
    }
}
