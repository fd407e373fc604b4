//! The stream path's engine ([`EventStreaming`]): which conversations of which sandboxes are
//! streamed, and storing each frame as it arrives; `event_streams.rs` drives it from the
//! sandbox service (issue 19).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::conversations::{Conversation, ExecutionStatus, RunDetails};
use crate::error::DomainError;
use crate::events::{NewEvent, SearchQuery, prepare_batch};
use crate::ids::ConversationId;
use crate::ports::{AppConversationStore, Append, EventStore};
use crate::sandboxes::Sandbox;
use crate::sandboxes::event_streams::StreamFrame;
use crate::time_input::now_micros;

/// The most conversations of one sandbox streamed at once (its newest); older ones rely on
/// the webhook and the pull path.
pub const STREAMS_PER_SANDBOX: u32 = 16;
/// How often the set of streamed conversations is listed again without a signal.
pub const LIST_EVERY: Duration = Duration::from_secs(1);
/// The longest one step waits for frames (and so the longest a shutdown waits for it).
pub const RECEIVE_WAIT: Duration = Duration::from_millis(250);

/// The stream path's memory; cheap to clone (shared).
#[derive(Clone)]
pub(crate) struct EventStreaming {
    events: Arc<dyn EventStore>,
    pub(super) apps: Arc<dyn AppConversationStore>,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
pub(super) struct State {
    /// When the streamed set was last listed; `None`: list at the next step.
    pub(super) listed_at: Option<Instant>,
    /// Each streamed conversation's sandbox (its organization and owner own what is stored).
    pub(super) owners: HashMap<ConversationId, Sandbox>,
    /// Conversations of another organization than their sandbox's, or whose events a quota
    /// or the disk reserve refused (logged once each).
    refused: HashSet<ConversationId>,
}

impl EventStreaming {
    /// The stream path over the event store and the conversations (to list a sandbox's).
    pub(crate) fn new(events: Arc<dyn EventStore>, apps: Arc<dyn AppConversationStore>) -> Self {
        EventStreaming {
            events,
            apps,
            state: Arc::default(),
        }
    }

    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lists again at the next step.
    pub(super) fn relist(&self) {
        self.state().listed_at = None;
    }

    pub(super) fn due(&self) -> bool {
        self.state()
            .listed_at
            .is_none_or(|at| at.elapsed() >= LIST_EVERY)
    }

    /// The instant of the newest stored event of `conversation` (where a first connection's
    /// resend starts).
    pub(super) fn newest_stored(
        &self,
        conversation: ConversationId,
    ) -> Result<Option<time::OffsetDateTime>, DomainError> {
        let newest = self.events.search_events(
            conversation,
            &SearchQuery {
                filter: Default::default(),
                sort: crate::events::SortOrder::TimestampDesc,
                after: None,
                limit: 1,
            },
        )?;
        Ok(newest.first().map(|e| e.ts))
    }

    /// Stores the frames: per conversation, in arrival order, the events not stored yet.
    pub(super) fn store(&self, frames: &[StreamFrame]) -> Result<(), DomainError> {
        let mut order: Vec<ConversationId> = Vec::new();
        let mut by_conversation: HashMap<ConversationId, Vec<&str>> = HashMap::new();
        for f in frames {
            by_conversation
                .entry(f.conversation)
                .or_insert_with(|| {
                    order.push(f.conversation);
                    Vec::new()
                })
                .push(&f.text);
        }
        for id in order {
            let owner = self.state().owners.get(&id).cloned();
            let Some(sandbox) = owner else {
                continue;
            };
            self.store_one(&sandbox, id, &by_conversation[&id])?;
        }
        Ok(())
    }

    /// Stores one conversation's frames: each validated as a webhook event would be, those
    /// already stored left out, the rest appended in one batch with the run state of the last
    /// new status event.
    fn store_one(
        &self,
        sandbox: &Sandbox,
        id: ConversationId,
        texts: &[&str],
    ) -> Result<(), DomainError> {
        let mut prepared: Vec<(NewEvent, Option<ExecutionStatus>, RunDetails)> =
            Vec::with_capacity(texts.len());
        for text in texts {
            match prepare_batch(&format!("[{text}]")) {
                Ok(mut batch) => {
                    if let Some(event) = batch.events.pop() {
                        prepared.push((event, batch.status, batch.details));
                    }
                }
                Err(e) => {
                    tracing::warn!(sandbox = %sandbox.id, conversation = %id, error = %e.msg, "an event of the agent server's stream that cannot be stored: skipped");
                }
            }
        }
        if prepared.is_empty() {
            return Ok(());
        }
        let ids: Vec<String> = prepared.iter().map(|(e, ..)| e.event_id.clone()).collect();
        let known: HashSet<String> = self
            .events
            .get_events(id, &ids)?
            .into_iter()
            .map(|e| e.event_id)
            .collect();
        prepared.retain(|(e, ..)| !known.contains(&e.event_id));
        if prepared.is_empty() {
            return Ok(());
        }
        // The run state of a status event already stored was set when it was (an older one
        // resent must not set it back); so were the model and metrics.
        let status = prepared.iter().rev().find_map(|(_, s, _)| *s);
        let mut details = RunDetails::default();
        let mut events: Vec<NewEvent> = Vec::with_capacity(prepared.len());
        for (e, _, d) in prepared {
            details = details.then(d);
            events.push(e);
        }
        let ids: Vec<String> = events.iter().map(|e| e.event_id.clone()).collect();
        let now = now_micros();
        let outcome = self.events.append_events(Append {
            conversation: Conversation::in_sandbox(sandbox, id, now),
            events,
            status,
            details,
            now,
        })?;
        match outcome {
            Some(o) if o.refused.is_some() => {
                if self.state().refused.insert(id) {
                    let refusal = o.refused.map(|r| r.to_string()).unwrap_or_default();
                    tracing::warn!(sandbox = %sandbox.id, conversation = %id, %refusal, "events from the agent server's stream refused: nothing stored");
                }
            }
            Some(o) => {
                tracing::debug!(sandbox = %sandbox.id, conversation = %id, stored = o.stored, ids = ?ids, "stored from the agent server's event stream");
            }
            None => {
                if self.state().refused.insert(id) {
                    tracing::warn!(sandbox = %sandbox.id, conversation = %id, "the agent server streams a conversation its sandbox may not write: nothing stored");
                }
            }
        }
        Ok(())
    }
}
