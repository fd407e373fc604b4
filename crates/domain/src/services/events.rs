//! Events: ingestion from agent servers (API.md, Event ingestion) and the search, count and
//! batch get of spec §4.1.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::batch::Batch;
use crate::conversations::Conversation;
use crate::cursor::Keyset;
use crate::error::DomainError;
use crate::events::{
    AppendOutcome, EventCursor, EventFilter, EventPageOut, PositionedEvent, SearchQuery,
    prepare_batch,
};
use crate::identity::OrgContext;
use crate::ids::ConversationId;
use crate::ports::{Append, EventStore};
use crate::sandboxes::Sandbox;
use crate::services::ConversationService;
use crate::time_input::now_micros;

/// Ingests and reads conversations' events.
#[derive(Clone)]
pub struct EventService {
    conversations: ConversationService,
    events: Arc<dyn EventStore>,
}

impl EventService {
    /// The service over the event store; `conversations` decides who sees a conversation.
    pub fn new(conversations: ConversationService, events: Arc<dyn EventStore>) -> Self {
        EventService {
            conversations,
            events,
        }
    }

    /// Ingests a webhook batch (API.md, Event ingestion): validated whole (422, nothing
    /// stored), stored atomically, ids already stored skipped, the conversation created if
    /// unknown (owned by the sandbox's owner and org), the run state updated in the same
    /// transaction. A batch whose every id is stored already writes nothing (one read); its
    /// outcome's `event_count` is then 0, as for a refused batch.
    ///
    /// A batch for a conversation the sandbox may not write (another organization's or
    /// another user's: a sandbox writes only its owner's) stores nothing and is answered as
    /// any other, so that a sandbox cannot learn which ids exist outside its own (issue 24
    /// item 5); the log says so.
    ///
    /// A batch that an event quota or the disk reserve refuses stores nothing
    /// ([`crate::event_quota`]).
    ///
    /// # Errors
    /// [`DomainError::Invalid`] (422 at `["body", i, …]`),
    /// [`DomainError::InsufficientStorage`] (507), storage failures.
    pub fn ingest_events(
        &self,
        sandbox: &Sandbox,
        conversation: ConversationId,
        body: &str,
    ) -> Result<AppendOutcome, DomainError> {
        let batch = prepare_batch(body)?;
        let received = batch.events.len();
        // The stream path stores most events before their webhook arrives: a batch whose ids
        // are all stored already is answered without a write (its run state was set when they
        // were stored), so each event costs one write, not two.
        let ids: Vec<String> = batch.events.iter().map(|e| e.event_id.clone()).collect();
        let known: HashSet<String> = self
            .events
            .get_events(conversation, &ids)?
            .into_iter()
            .map(|e| e.event_id)
            .collect();
        if ids.iter().all(|id| known.contains(id)) {
            return Ok(AppendOutcome {
                stored: 0,
                skipped: received,
                event_count: 0,
                refused: None,
            });
        }
        let now = now_micros();
        let outcome = self.events.append_events(Append {
            conversation: Conversation::in_sandbox(sandbox, conversation, now),
            events: batch.events,
            status: batch.status,
            details: batch.details,
            now,
        })?;
        if let Some(refusal) = outcome.and_then(|o| o.refused) {
            tracing::warn!(sandbox = %sandbox.id, %conversation, events = received, %refusal, "a webhook batch refused: nothing stored");
            return Err(DomainError::InsufficientStorage(refusal));
        }
        Ok(outcome.unwrap_or_else(|| {
            tracing::warn!(sandbox = %sandbox.id, %conversation, events = received, "a webhook for a conversation its sandbox may not write: nothing stored");
            AppendOutcome {
                stored: 0,
                skipped: received,
                event_count: 0,
                refused: None,
            }
        }))
    }

    /// One page of a conversation's events (spec §4.1): the next page continues after the
    /// last item, with no duplicates or gaps even while events arrive.
    ///
    /// # Errors
    /// [`DomainError::ConversationNotFound`] for an unknown conversation or another org's.
    pub fn search_events(
        &self,
        ctx: &OrgContext,
        conversation: ConversationId,
        query: &SearchQuery,
    ) -> Result<EventPageOut, DomainError> {
        self.conversations.visible_conversation(ctx, conversation)?;
        let mut rows = self.events.search_events(conversation, query)?;
        let more = rows.len() > query.limit as usize;
        rows.truncate(query.limit as usize);
        let next_page_id = if more {
            rows.last().map(|r| {
                EventCursor {
                    ts: r.ts,
                    seq: r.seq,
                }
                .encode()
            })
        } else {
            None
        };
        Ok(EventPageOut {
            items: rows.into_iter().map(|r| r.payload).collect(),
            next_page_id,
        })
    }

    /// How many events match (spec §4.1 filters).
    ///
    /// # Errors
    /// As [`EventService::search_events`].
    pub fn count_events(
        &self,
        ctx: &OrgContext,
        conversation: ConversationId,
        filter: &EventFilter,
    ) -> Result<i64, DomainError> {
        self.conversations.visible_conversation(ctx, conversation)?;
        Ok(self.events.count_events(conversation, filter)?)
    }

    /// The events with these ids, in request order, `None` for unknown ids (API.md) and for
    /// ids holding a NUL (API.md, NUL characters).
    ///
    /// # Errors
    /// [`DomainError::TooManyIds`] over [`Batch::EVENTS`]' most; as
    /// [`EventService::search_events`].
    pub fn get_events(
        &self,
        ctx: &OrgContext,
        conversation: ConversationId,
        ids: &[String],
    ) -> Result<Vec<Option<String>>, DomainError> {
        Batch::EVENTS.check(ids.len())?;
        self.conversations.visible_conversation(ctx, conversation)?;
        // No stored id holds a NUL (`prepare_batch` refuses them), and a text column cannot be
        // compared with one: such an id finds nothing without asking the store.
        let lookup: Vec<String> = ids.iter().filter(|i| !i.contains('\0')).cloned().collect();
        let found: HashMap<String, String> = self
            .events
            .get_events(conversation, &lookup)?
            .into_iter()
            .map(|e| (e.event_id, e.payload))
            .collect();
        Ok(ids.iter().map(|id| found.get(id).cloned()).collect())
    }

    /// Whether `ctx` may watch the conversation live (API.md, Live delivery): the same rule as
    /// reading its events.
    ///
    /// # Errors
    /// As [`EventService::search_events`].
    pub fn check_watch(
        &self,
        ctx: &OrgContext,
        conversation: ConversationId,
    ) -> Result<(), DomainError> {
        self.conversations.visible_conversation(ctx, conversation)?;
        Ok(())
    }

    /// Up to `limit` events after position `after` in position order (`since`: only those at
    /// or after that instant), for a subscriber whose access was checked with
    /// [`EventService::check_watch`].
    ///
    /// # Errors
    /// Storage failures.
    pub fn events_after(
        &self,
        conversation: ConversationId,
        after: i64,
        since: Option<time::OffsetDateTime>,
        limit: u32,
    ) -> Result<Vec<PositionedEvent>, DomainError> {
        Ok(self
            .events
            .events_after(conversation, after, since, limit)?)
    }

    /// How many events the conversation has (its next position).
    ///
    /// # Errors
    /// Storage failures.
    pub fn event_count(&self, conversation: ConversationId) -> Result<i64, DomainError> {
        Ok(self.events.event_count(conversation)?)
    }

    /// The conversation's state as a `ConversationStateUpdateEvent` with `key: "full_state"`
    /// (reference app-server §7: the first frame of every subscriber), built from what is
    /// stored: the latest stored `full_state` value with every later per-field update
    /// (`key` other than `full_state`) applied over it; without a stored snapshot, the
    /// conversation's id and run state with the field updates. A fresh event id, `source`
    /// `environment`, the current time.
    ///
    /// # Errors
    /// Storage failures.
    pub fn full_state(&self, conversation: ConversationId) -> Result<String, DomainError> {
        use serde_json::{Map, Value};
        let mut fields: Map<String, Value> = Map::new();
        let mut snapshot: Option<Map<String, Value>> = None;
        let mut after = None;
        'pages: loop {
            let query = SearchQuery {
                filter: EventFilter {
                    kind: Some(switchboard_model::EventKind::ConversationStateUpdateEvent),
                    ..EventFilter::default()
                },
                sort: crate::events::SortOrder::TimestampDesc,
                after,
                limit: crate::events::MAX_PAGE_LIMIT,
            };
            let rows = self.events.search_events(conversation, &query)?;
            let more = rows.len() > query.limit as usize;
            for r in rows.iter().take(query.limit as usize) {
                let Ok(Value::Object(mut e)) = serde_json::from_str::<Value>(&r.payload) else {
                    continue;
                };
                let Some(Value::String(key)) = e.remove("key") else {
                    continue;
                };
                let value = e.remove("value").unwrap_or(Value::Null);
                if key == "full_state" {
                    if let Value::Object(v) = value {
                        snapshot = Some(v);
                        break 'pages;
                    }
                } else if !fields.contains_key(&key) {
                    fields.insert(key, value);
                }
            }
            if !more {
                break;
            }
            after = rows.get(query.limit as usize - 1).map(|r| EventCursor {
                ts: r.ts,
                seq: r.seq,
            });
        }
        let mut state = match snapshot {
            Some(s) => s,
            None => {
                let mut s = Map::new();
                s.insert("id".into(), Value::String(conversation.to_string()));
                s
            }
        };
        for (k, v) in fields {
            state.insert(k, v);
        }
        let now = now_micros();
        let event = serde_json::json!({
            "id": uuid::Uuid::new_v4().to_string(),
            "timestamp": crate::time_input::format_rfc3339_micros(now).trim_end_matches('Z'),
            "source": "environment",
            "key": "full_state",
            "value": Value::Object(state),
            "kind": "ConversationStateUpdateEvent",
        });
        Ok(event.to_string())
    }
}
