//! Events: ingestion from agent servers (API.md, Event ingestion) and the search, count and
//! batch get of spec §4.1.

use std::collections::HashMap;
use std::sync::Arc;

use crate::conversations::Conversation;
use crate::cursor::Keyset;
use crate::error::DomainError;
use crate::events::{
    AppendOutcome, EventCursor, EventFilter, EventPageOut, MAX_BATCH_GET, SearchQuery,
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
    /// transaction.
    ///
    /// # Errors
    /// [`DomainError::Invalid`] (422 at `["body", i, …]`), [`DomainError::ConversationNotFound`]
    /// when the conversation belongs to another organization.
    pub fn ingest_events(
        &self,
        sandbox: &Sandbox,
        conversation: ConversationId,
        body: &str,
    ) -> Result<AppendOutcome, DomainError> {
        let batch = prepare_batch(body)?;
        let now = now_micros();
        self.events
            .append_events(Append {
                conversation: Conversation::in_sandbox(sandbox, conversation, now),
                events: batch.events,
                status: batch.status,
                now,
            })?
            .ok_or(DomainError::ConversationNotFound)
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

    /// The events with these ids, in request order, `None` for unknown ids (API.md).
    ///
    /// # Errors
    /// [`DomainError::TooManyIds`] over [`MAX_BATCH_GET`] ids; as
    /// [`EventService::search_events`].
    pub fn get_events(
        &self,
        ctx: &OrgContext,
        conversation: ConversationId,
        ids: &[String],
    ) -> Result<Vec<Option<String>>, DomainError> {
        if ids.len() > MAX_BATCH_GET {
            return Err(DomainError::TooManyIds(ids.len()));
        }
        self.conversations.visible_conversation(ctx, conversation)?;
        let found: HashMap<String, String> = self
            .events
            .get_events(conversation, ids)?
            .into_iter()
            .map(|e| (e.event_id, e.payload))
            .collect();
        Ok(ids.iter().map(|id| found.get(id).cloned()).collect())
    }
}
