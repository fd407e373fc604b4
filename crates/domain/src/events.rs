//! Events: ingestion rules (API.md, Event ingestion), the run state events imply (spec §3),
//! and search semantics (spec §4.1, API.md, Events): filters compared as instants, keyset
//! order over `(instant, seq)`, an opaque cursor ([`EventCursor`]).

use serde_json::Value;
use switchboard_model::{Event, EventBody, EventKind, LocItem, Source, ValidationError};
use time::OffsetDateTime;

use crate::conversations::{ExecutionStatus, RunDetails};
use crate::cursor::{Keyset, instant_field, parse_instant_field};
use crate::ids::ConversationId;
use crate::time_input::truncate_micros;
use crate::validation;

/// At most this many events per page (spec §8).
pub const MAX_PAGE_LIMIT: u32 = 100;
/// At most this many ids per batch get (API.md).
pub const MAX_BATCH_GET: usize = 100;

/// An event ready to store: the canonical payload and the columns searched on.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// Event id.
    pub event_id: String,
    /// Kind.
    pub kind: EventKind,
    /// Source.
    pub source: Source,
    /// Timestamp as received.
    pub timestamp: String,
    /// Timestamp as an instant (naive = UTC), microseconds.
    pub ts: OffsetDateTime,
    /// Canonical JSON (the SDK's persisted form).
    pub payload: String,
}

/// Result of an append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendOutcome {
    /// Events stored.
    pub stored: usize,
    /// Events skipped because their id was already stored in the conversation.
    pub skipped: usize,
    /// Events the conversation has after the append: the last event's position plus one
    /// (API.md, Live delivery).
    pub event_count: i64,
    /// Why none of the batch was stored though the conversation may be written (a quota or
    /// the disk reserve: `event_quota`); `stored` is then 0 and `skipped` the batch's events.
    pub refused: Option<crate::event_quota::AppendRefusal>,
}

/// Sort order of a search (spec §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortOrder {
    /// Oldest first; ties by arrival order.
    #[default]
    Timestamp,
    /// The exact reverse.
    TimestampDesc,
}

/// Filters of search and count (spec §4.1), compared as instants.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventFilter {
    /// Only this kind.
    pub kind: Option<EventKind>,
    /// Only events at or after this instant.
    pub timestamp_gte: Option<OffsetDateTime>,
    /// Only events strictly before this instant.
    pub timestamp_lt: Option<OffsetDateTime>,
}

/// A position in a conversation's order: the last item of a page. Its cursor is
/// `v1:<unix µs>:<seq>` ([`Keyset`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventCursor {
    /// The item's instant.
    pub ts: OffsetDateTime,
    /// The item's sequence number.
    pub seq: i64,
}

impl Keyset for EventCursor {
    const VERSION: &'static str = "v1";

    fn to_fields(&self) -> Vec<String> {
        vec![instant_field(self.ts), self.seq.to_string()]
    }

    fn from_fields(fields: &[&str]) -> Option<Self> {
        let [ts, seq] = fields else { return None };
        let seq: i64 = seq.parse().ok()?;
        if seq < 0 {
            return None;
        }
        Some(EventCursor {
            ts: parse_instant_field(ts)?,
            seq,
        })
    }
}

/// One search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchQuery {
    /// Filters.
    pub filter: EventFilter,
    /// Order.
    pub sort: SortOrder,
    /// Continue after this position.
    pub after: Option<EventCursor>,
    /// Page size, 1..=100.
    pub limit: u32,
}

/// An event as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// Global sequence number.
    pub seq: i64,
    /// Instant.
    pub ts: OffsetDateTime,
    /// Canonical JSON.
    pub payload: String,
}

/// An event with its position in its conversation (API.md, Live delivery).
#[derive(Debug, Clone, PartialEq)]
pub struct PositionedEvent {
    /// Dense 0-based position in the conversation.
    pub position: i64,
    /// Instant.
    pub ts: OffsetDateTime,
    /// Canonical JSON.
    pub payload: String,
}

/// A page of search results: canonical JSON items and the cursor of the next page.
#[derive(Debug, Clone, PartialEq)]
pub struct EventPageOut {
    /// Items, each one event's canonical JSON.
    pub items: Vec<String>,
    /// `page_id` of the next page, present exactly when more items match.
    pub next_page_id: Option<String>,
}

/// The run state an event implies (spec §3; API.md, Event ingestion):
/// `ConversationStateUpdateEvent` with key `execution_status` (or a `full_state` snapshot's
/// `execution_status`) sets it; `InterruptEvent` → `paused`; `ConversationErrorEvent` → `error`.
/// A status OpenHands does not define leaves the run state as it is (the event is stored).
pub fn status_effect(event: &Event) -> Option<ExecutionStatus> {
    match &event.body {
        EventBody::ConversationStateUpdateEvent(u) if u.key == "execution_status" => {
            u.value.as_str().and_then(ExecutionStatus::parse)
        }
        EventBody::ConversationStateUpdateEvent(u) if u.key == "full_state" => u
            .value
            .get("execution_status")
            .and_then(Value::as_str)
            .and_then(ExecutionStatus::parse),
        EventBody::InterruptEvent(_) => Some(ExecutionStatus::Paused),
        EventBody::ConversationErrorEvent(_) => Some(ExecutionStatus::Error),
        _ => None,
    }
}

/// The LLM model and metrics an event reports (API.md, "What a conversation keeps after its
/// sandbox"): a `ConversationStateUpdateEvent` with key `stats` or `full_state`
/// ([`RunDetails::of_state_update`]); any other event nothing.
pub fn details_effect(event: &Event) -> RunDetails {
    match &event.body {
        EventBody::ConversationStateUpdateEvent(u) => RunDetails::of_state_update(&u.key, &u.value),
        _ => RunDetails::default(),
    }
}

/// A webhook batch ready to store.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedBatch {
    /// The events to store, in batch order.
    pub events: Vec<NewEvent>,
    /// The run state the batch leaves, if it implies one.
    pub status: Option<ExecutionStatus>,
    /// The LLM model and metrics the batch leaves, as far as it reports them (each its last
    /// report in the batch).
    pub details: RunDetails,
}

/// Validates a webhook batch (a JSON array of events) and prepares it for storage: the whole
/// batch or nothing (API.md). `StreamingDeltaEvent`s are dropped (never stored); every other
/// event's timestamp must be an ISO-8601 date-time and its id must hold no NUL (the id is a
/// column; NUL anywhere else in an event is kept: API.md, NUL characters).
///
/// # Errors
/// The first invalid event, as a 422 entry at `["body", <index>, …]`.
pub fn prepare_batch(body: &str) -> Result<PreparedBatch, ValidationError> {
    let events = switchboard_model::parse_event_batch(body).map_err(|e| {
        if e.error_type == switchboard_model::ErrorType::JsonInvalid {
            e.prefixed([LocItem::from("body"), LocItem::Index(0)])
        } else {
            e.prefixed([LocItem::from("body")])
        }
    })?;
    let mut out = Vec::with_capacity(events.len());
    let mut status = None;
    let mut details = RunDetails::default();
    for (i, event) in events.iter().enumerate() {
        if event.kind() == EventKind::StreamingDeltaEvent {
            continue;
        }
        // The id is a column (a text column cannot hold NUL; the payload keeps any other NUL).
        validation::refuse_nul(|| vec!["body".into(), i.into(), "id".into()], &event.id)?;
        let Some(ts) = event.timestamp_instant() else {
            return Err(validation::datetime_parsing(
                vec!["body".into(), i.into(), "timestamp".into()],
                "the event timestamp must be ISO-8601",
                &Value::String(event.timestamp.clone()),
            ));
        };
        if let Some(s) = status_effect(event) {
            status = Some(s);
        }
        details = details.then(details_effect(event));
        out.push(NewEvent {
            event_id: event.id.clone(),
            kind: event.kind(),
            source: event.source(),
            timestamp: event.timestamp.clone(),
            ts: truncate_micros(ts),
            payload: event.to_json_string(),
        });
    }
    Ok(PreparedBatch {
        events: out,
        status,
        details,
    })
}

/// The id of a conversation's quota notice: the same for every refusal of that conversation
/// (a UUID v5 of the conversation id), so that the notice is stored once.
pub fn quota_notice_id(conversation: ConversationId) -> String {
    const NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x5357_4254_5155_4f54_4100_0000_0000_0001);
    uuid::Uuid::new_v5(&NAMESPACE, conversation.to_string().as_bytes()).to_string()
}

/// The event stored once in a conversation whose batch a quota refused: a
/// `ConversationErrorEvent` (source `environment`, code `EventQuotaExceeded`) whose detail is
/// the refusal's text, stamped now, with [`quota_notice_id`].
pub fn quota_notice(
    conversation: ConversationId,
    exceeded: &crate::event_quota::QuotaExceeded,
) -> NewEvent {
    let now = crate::time_input::now_micros()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let body = serde_json::json!([{
        "kind": "ConversationErrorEvent",
        "id": quota_notice_id(conversation),
        "timestamp": now,
        "source": "environment",
        "code": "EventQuotaExceeded",
        "detail": format!("Switchboard stores no more events of this conversation: {exceeded}"),
    }]);
    let mut batch = prepare_batch(&body.to_string())
        .unwrap_or_else(|e| unreachable!("the quota notice is a valid event: {e:?}"));
    batch.events.remove(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_garbage() {
        use crate::cursor::b64url_encode;
        let c = EventCursor {
            ts: time::macros::datetime!(2026-11-21 09:08:18.014821 UTC),
            seq: 42,
        };
        let s = c.encode();
        assert!(
            s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{s}"
        );
        assert_eq!(EventCursor::decode(&s), Some(c));
        let old = EventCursor {
            ts: time::macros::datetime!(1969-12-31 23:59:59.5 UTC),
            seq: 0,
        };
        assert_eq!(EventCursor::decode(&old.encode()), Some(old));
        for bad in [
            "",
            "x",
            "3",
            "!!!!",
            &b64url_encode(b"v2:1:2"),
            &b64url_encode(b"v1:1"),
            &b64url_encode(b"v1:a:2"),
            &b64url_encode(b"v1:1:-2"),
        ] {
            assert_eq!(EventCursor::decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn batches_drop_deltas_and_derive_status() {
        let body = r#"[
            {"id":"a","timestamp":"2026-11-21T09:00:00","kind":"ConversationStateUpdateEvent","key":"execution_status","value":"running"},
            {"id":"d","timestamp":"2026-11-21T09:00:01","content":"x","kind":"StreamingDeltaEvent"},
            {"id":"b","timestamp":"2026-11-21T09:00:02.5Z","source":"environment","code":"X","detail":"y","kind":"ConversationErrorEvent"}
        ]"#;
        let PreparedBatch { events, status, .. } = prepare_batch(body).unwrap();
        assert_eq!(
            events
                .iter()
                .map(|e| e.event_id.as_str())
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(status.map(ExecutionStatus::as_str), Some("error"));
        let bad = r#"[{"kind":"PauseEvent"},{"timestamp":"yesterday","kind":"PauseEvent"}]"#;
        let e = prepare_batch(bad).unwrap_err();
        assert_eq!(e.loc, [LocItem::from("body"), 1.into(), "timestamp".into()]);
        let e = prepare_batch(r#"[{"kind":"PauseEvent","x":1}]"#).unwrap_err();
        assert_eq!(e.loc, [LocItem::from("body"), 0.into(), "x".into()]);
        let nul =
            r#"[{"kind":"PauseEvent","parent_id":"\u0000"},{"id":"a\u0000","kind":"PauseEvent"}]"#;
        let e = prepare_batch(nul).unwrap_err();
        assert_eq!(e.loc, [LocItem::from("body"), 1.into(), "id".into()]);
        assert_eq!(e.error_type.as_str(), "string_pattern_mismatch");
    }

    #[test]
    fn batches_report_the_last_model_and_metrics() {
        let stats = |prompt: u64| {
            format!(
                r#"{{"usage_to_metrics":{{"agent":{{"accumulated_cost":0.5,"accumulated_token_usage":{{"prompt_tokens":{prompt}}}}}}}}}"#
            )
        };
        let update = |id: &str, key: &str, value: &str| {
            format!(
                r#"{{"id":"{id}","timestamp":"2026-11-29T07:00:00","kind":"ConversationStateUpdateEvent","key":"{key}","value":{value}}}"#
            )
        };
        let body = format!(
            "[{},{},{}]",
            update(
                "a",
                "full_state",
                &format!(
                    r#"{{"agent":{{"llm":{{"model":"m1"}}}},"stats":{}}}"#,
                    stats(1)
                )
            ),
            update("b", "stats", &stats(7)),
            update("c", "stats", "[\"\"]"),
        );
        let batch = prepare_batch(&body).unwrap();
        assert_eq!(batch.details.llm_model.as_deref(), Some("m1"));
        let m: Value = serde_json::from_str(batch.details.metrics.as_deref().unwrap()).unwrap();
        assert_eq!(m["accumulated_token_usage"]["prompt_tokens"], 7);
        let none = prepare_batch(&format!(
            "[{}]",
            update("d", "execution_status", "\"idle\"")
        ))
        .unwrap();
        assert!(none.details.is_empty());
    }

    #[test]
    fn the_notice_is_a_conversation_error_with_a_stable_id() {
        let c = ConversationId::new_random();
        let exceeded = crate::event_quota::QuotaExceeded {
            scope: crate::event_quota::QuotaScope::Conversation,
            measure: crate::event_quota::QuotaMeasure::Events,
            limit: 10,
            used: 10,
        };
        let n = quota_notice(c, &exceeded);
        assert_eq!(n.event_id, quota_notice_id(c));
        assert_eq!(quota_notice_id(c), quota_notice_id(c));
        assert_ne!(
            quota_notice_id(c),
            quota_notice_id(ConversationId::new_random())
        );
        assert_eq!(n.kind.as_str(), "ConversationErrorEvent");
        assert!(
            n.payload.contains("--max-events-per-conversation"),
            "{}",
            n.payload
        );
        assert!(n.payload.contains("EventQuotaExceeded"), "{}", n.payload);
    }
}
