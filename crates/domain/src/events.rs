//! Events: ingestion rules (API.md, Event ingestion), run state (spec §3), and search
//! semantics (spec §4.1, API.md, Events): filters compared as instants, keyset order over
//! `(instant, seq)`, an opaque cursor.

use serde_json::Value;
use switchboard_model::{ErrorType, Event, EventBody, EventKind, LocItem, ValidationError};
use time::OffsetDateTime;

use crate::ids::{ConversationId, OrgId, SandboxId, UserId};
use crate::time_input::truncate_micros;

/// At most this many events per page (spec §8).
pub const MAX_PAGE_LIMIT: u32 = 100;
/// At most this many ids per batch get (API.md).
pub const MAX_BATCH_GET: usize = 100;

/// A registered sandbox (an agent server) and who it acts for.
#[derive(Debug, Clone, PartialEq)]
pub struct Sandbox {
    /// Id.
    pub id: SandboxId,
    /// Owning organization: its conversations belong here.
    pub org_id: OrgId,
    /// Owning user: its conversations are theirs.
    pub owner_id: UserId,
    /// Creation time.
    pub created_at: OffsetDateTime,
}

/// A conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// Id.
    pub id: ConversationId,
    /// Organization.
    pub org_id: OrgId,
    /// Owner.
    pub owner_id: UserId,
    /// Sandbox it ran in.
    pub sandbox_id: Option<SandboxId>,
    /// Title.
    pub title: Option<String>,
    /// Run state (`idle`, `running`, `paused`, `waiting_for_confirmation`, `finished`,
    /// `error`, `stuck`).
    pub execution_status: Option<String>,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last change.
    pub updated_at: OffsetDateTime,
}

/// An event ready to store: the canonical payload and the columns searched on.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// Event id.
    pub event_id: String,
    /// Kind name.
    pub kind: &'static str,
    /// Source name.
    pub source: &'static str,
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

/// A position in a conversation's order: the last item of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// The item's instant.
    pub ts: OffsetDateTime,
    /// The item's sequence number.
    pub seq: i64,
}

const CURSOR_VERSION: &str = "v1";
const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn b64url_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

fn b64url_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let vals: Option<Vec<u32>> = s
        .bytes()
        .map(|c| B64.iter().position(|&b| b == c).map(|p| p as u32))
        .collect();
    let vals = vals?;
    for chunk in vals.chunks(4) {
        if chunk.len() == 1 {
            return None;
        }
        let mut n = 0u32;
        for (i, v) in chunk.iter().enumerate() {
            n |= v << (18 - 6 * i);
        }
        for i in 0..chunk.len() - 1 {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

impl Cursor {
    /// The opaque `page_id`: base64url (no padding) of `v1:<unix micros>:<seq>`.
    pub fn encode(&self) -> String {
        let micros = self.ts.unix_timestamp_nanos() / 1_000;
        b64url_encode(format!("{CURSOR_VERSION}:{micros}:{}", self.seq).as_bytes())
    }

    /// Reads a `page_id`; `None` when it is not one this service wrote.
    pub fn decode(page_id: &str) -> Option<Cursor> {
        let raw = String::from_utf8(b64url_decode(page_id)?).ok()?;
        let mut parts = raw.split(':');
        if parts.next()? != CURSOR_VERSION {
            return None;
        }
        let micros: i128 = parts.next()?.parse().ok()?;
        let seq: i64 = parts.next()?.parse().ok()?;
        if parts.next().is_some() || seq < 0 {
            return None;
        }
        let ts = OffsetDateTime::from_unix_timestamp_nanos(micros.checked_mul(1_000)?).ok()?;
        Some(Cursor { ts, seq })
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
    pub after: Option<Cursor>,
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

/// A page of search results: canonical JSON items and the cursor of the next page.
#[derive(Debug, Clone, PartialEq)]
pub struct EventPageOut {
    /// Items, each one event's canonical JSON.
    pub items: Vec<String>,
    /// `page_id` of the next page, present exactly when more items match.
    pub next_page_id: Option<String>,
}

impl EventPageOut {
    /// The response body `{"items": [...], "next_page_id": ...}`, built without re-parsing
    /// the stored JSON.
    pub fn to_json(&self) -> String {
        let mut out =
            String::with_capacity(self.items.iter().map(|i| i.len() + 1).sum::<usize>() + 48);
        out.push_str("{\"items\":[");
        for (i, item) in self.items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(item);
        }
        out.push_str("],\"next_page_id\":");
        match &self.next_page_id {
            Some(p) => out.push_str(&Value::String(p.clone()).to_string()),
            None => out.push_str("null"),
        }
        out.push('}');
        out
    }
}

/// The run state an event implies (spec §3; API.md, Event ingestion):
/// `ConversationStateUpdateEvent` with key `execution_status` (or a `full_state` snapshot's
/// `execution_status`) sets it; `InterruptEvent` → `paused`; `ConversationErrorEvent` → `error`.
pub fn status_effect(event: &Event) -> Option<String> {
    match &event.body {
        EventBody::ConversationStateUpdateEvent(u) if u.key == "execution_status" => {
            u.value.as_str().map(str::to_owned)
        }
        EventBody::ConversationStateUpdateEvent(u) if u.key == "full_state" => u
            .value
            .get("execution_status")
            .and_then(Value::as_str)
            .map(str::to_owned),
        EventBody::InterruptEvent(_) => Some("paused".to_owned()),
        EventBody::ConversationErrorEvent(_) => Some("error".to_owned()),
        _ => None,
    }
}

/// Validates a webhook batch (a JSON array of events) and prepares it for storage: the whole
/// batch or nothing (API.md). `StreamingDeltaEvent`s are dropped (never stored); every other
/// event's timestamp must be an ISO-8601 date-time. Returns the events to store and the run
/// state the batch leaves, if any.
///
/// # Errors
/// The first invalid event, as a 422 entry at `["body", <index>, …]`.
pub fn prepare_batch(body: &str) -> Result<(Vec<NewEvent>, Option<String>), ValidationError> {
    let events = switchboard_model::parse_event_batch(body).map_err(|e| {
        if e.error_type == ErrorType::JsonInvalid {
            e.prefixed([LocItem::from("body"), LocItem::Index(0)])
        } else {
            e.prefixed([LocItem::from("body")])
        }
    })?;
    let mut out = Vec::with_capacity(events.len());
    let mut status = None;
    for (i, event) in events.iter().enumerate() {
        if event.kind() == EventKind::StreamingDeltaEvent {
            continue;
        }
        let Some(ts) = event.timestamp_instant() else {
            return Err(ValidationError::new(
                ErrorType::DatetimeFromDateParsing,
                vec!["body".into(), i.into(), "timestamp".into()],
                "Input should be a valid datetime, the event timestamp must be ISO-8601",
            )
            .with_input(Value::String(event.timestamp.clone())));
        };
        if let Some(s) = status_effect(event) {
            status = Some(s);
        }
        out.push(NewEvent {
            event_id: event.id.clone(),
            kind: event.kind_name(),
            source: event.source.as_str(),
            timestamp: event.timestamp.clone(),
            ts: truncate_micros(ts),
            payload: event.to_json_string(),
        });
    }
    Ok((out, status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_garbage() {
        let c = Cursor {
            ts: time::macros::datetime!(2026-11-21 09:08:18.014821 UTC),
            seq: 42,
        };
        let s = c.encode();
        assert!(
            s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{s}"
        );
        assert_eq!(Cursor::decode(&s), Some(c));
        let old = Cursor {
            ts: time::macros::datetime!(1969-12-31 23:59:59.5 UTC),
            seq: 0,
        };
        assert_eq!(Cursor::decode(&old.encode()), Some(old));
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
            assert_eq!(Cursor::decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn batches_drop_deltas_and_derive_status() {
        let body = r#"[
            {"id":"a","timestamp":"2026-11-21T09:00:00","kind":"ConversationStateUpdateEvent","key":"execution_status","value":"running"},
            {"id":"d","timestamp":"2026-11-21T09:00:01","content":"x","kind":"StreamingDeltaEvent"},
            {"id":"b","timestamp":"2026-11-21T09:00:02.5Z","source":"environment","code":"X","detail":"y","kind":"ConversationErrorEvent"}
        ]"#;
        let (events, status) = prepare_batch(body).unwrap();
        assert_eq!(
            events
                .iter()
                .map(|e| e.event_id.as_str())
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(status.as_deref(), Some("error"));
        let bad = r#"[{"kind":"PauseEvent"},{"timestamp":"yesterday","kind":"PauseEvent"}]"#;
        let e = prepare_batch(bad).unwrap_err();
        assert_eq!(e.loc, [LocItem::from("body"), 1.into(), "timestamp".into()]);
        let e = prepare_batch(r#"[{"kind":"PauseEvent","x":1}]"#).unwrap_err();
        assert_eq!(e.loc, [LocItem::from("body"), 0.into(), "x".into()]);
    }
}
