//! The stream path (issue 19): every conversation of a `RUNNING` sandbox Switchboard runs (the
//! newest [`STREAMS_PER_SANDBOX`] of each) is streamed from its agent server's own event
//! websocket ([`AgentEventStreams`]), and each event is stored as it arrives, through the same
//! validation and idempotent append as the webhooks. The webhooks and the pull path stay as
//! the safety nets: whichever path stores an event first, the others store nothing (the
//! append skips ids the conversation has; the stream path also reads which ids are stored
//! before it appends, so a repeat costs one read, not a write).
//!
//! One job, `agent-event-streams`, drives it ([`SandboxService::stream_events`]): each step
//! lists what to stream when due (every [`LIST_EVERY`], and at once after a sandbox changed
//! or a conversation started), waits at most [`RECEIVE_WAIT`] for frames, and stores them.
//! Streams of sandboxes no longer `RUNNING` (paused, stopped, deleted) are closed at that
//! listing.
//!
//! Across replicas every replica streams (API.md, "Event delivery"): duplicates are harmless
//! (idempotent by id) and cheap (a read of the ids on the replicas that come second).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::conversations::app::{AppConversationFilter, AppConversationQuery, SortOrder};
use crate::conversations::{Conversation, ExecutionStatus};
use crate::error::DomainError;
use crate::events::{NewEvent, SearchQuery, prepare_batch};
use crate::ids::ConversationId;
use crate::ports::{AppConversationStore, Append, EventStore};
use crate::sandboxes::Sandbox;
use crate::sandboxes::event_streams::{AgentEventStreams, StreamFrame, StreamTarget};
use crate::sandboxes::runtime::SandboxStatus;
use crate::services::sandboxes::SandboxService;
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
    apps: Arc<dyn AppConversationStore>,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// When the streamed set was last listed; `None`: list at the next step.
    listed_at: Option<Instant>,
    /// Each streamed conversation's sandbox (its organization and owner own what is stored).
    owners: HashMap<ConversationId, Sandbox>,
    /// Conversations of another organization than their sandbox's (logged once each).
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

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lists again at the next step.
    fn relist(&self) {
        self.state().listed_at = None;
    }

    fn due(&self) -> bool {
        self.state()
            .listed_at
            .is_none_or(|at| at.elapsed() >= LIST_EVERY)
    }

    /// The instant of the newest stored event of `conversation` (where a first connection's
    /// resend starts).
    fn newest_stored(
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
    fn store(&self, frames: &[StreamFrame]) -> Result<(), DomainError> {
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
        let mut prepared: Vec<(NewEvent, Option<ExecutionStatus>)> =
            Vec::with_capacity(texts.len());
        for text in texts {
            match prepare_batch(&format!("[{text}]")) {
                Ok(mut batch) => {
                    if let Some(event) = batch.events.pop() {
                        prepared.push((event, batch.status));
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
        let ids: Vec<String> = prepared.iter().map(|(e, _)| e.event_id.clone()).collect();
        let known: HashSet<String> = self
            .events
            .get_events(id, &ids)?
            .into_iter()
            .map(|e| e.event_id)
            .collect();
        prepared.retain(|(e, _)| !known.contains(&e.event_id));
        if prepared.is_empty() {
            return Ok(());
        }
        // The run state of a status event already stored was set when it was (an older one
        // resent must not set it back).
        let status = prepared.iter().rev().find_map(|(_, s)| *s);
        let events: Vec<NewEvent> = prepared.into_iter().map(|(e, _)| e).collect();
        let ids: Vec<String> = events.iter().map(|e| e.event_id.clone()).collect();
        let now = now_micros();
        let outcome = self.events.append_events(Append {
            conversation: Conversation::in_sandbox(sandbox, id, now),
            events,
            status,
            now,
        })?;
        match outcome {
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

impl SandboxService {
    /// The same service, streaming its sandboxes' events with `engine`.
    #[must_use]
    pub(super) fn with_streaming(mut self, engine: EventStreaming) -> Self {
        self.streaming = Some(engine);
        self
    }

    /// One step of the stream path (job `agent-event-streams`): lists what to stream when due,
    /// waits at most [`RECEIVE_WAIT`] for frames and stores them. Without managed sandboxes
    /// or an [`AgentEventStreams`] it does nothing.
    ///
    /// # Errors
    /// Storage failures (listing or storing; what was not stored is left to the webhook and
    /// the pull path).
    pub fn stream_events(&self) -> Result<(), DomainError> {
        let (Some(port), Some(engine)) = (self.event_streams(), &self.streaming) else {
            return Ok(());
        };
        let listed = if engine.due() {
            let listed = self.stream_targets(engine);
            if let Ok(wanted) = &listed {
                port.keep(wanted.clone());
            }
            engine.state().listed_at = Some(Instant::now());
            listed.map(|_| ())
        } else {
            Ok(())
        };
        let received = port.receive(RECEIVE_WAIT);
        if received.interrupted {
            engine.relist();
        }
        engine.store(&received.frames)?;
        listed
    }

    /// Tells the stream path that a conversation was just created on one of its sandboxes'
    /// agent servers (the start pipeline): it is streamed at once, not at the next listing.
    pub fn conversation_started(&self) {
        if let (Some(port), Some(engine)) = (self.event_streams(), &self.streaming) {
            engine.relist();
            port.interrupt();
        }
    }

    fn event_streams(&self) -> Option<Arc<dyn AgentEventStreams>> {
        self.managed.as_deref()?.m.event_streams.clone()
    }

    /// What to stream: the newest [`STREAMS_PER_SANDBOX`] conversations of every `RUNNING`
    /// managed sandbox with an owner, a URL and a session key. A conversation not streamed
    /// yet resends from its newest stored event.
    fn stream_targets(&self, engine: &EventStreaming) -> Result<Vec<StreamTarget>, DomainError> {
        let mut wanted = Vec::new();
        let mut owners = HashMap::new();
        for record in self.sandboxes.live_sandboxes()? {
            if !record.is_managed() || record.status != SandboxStatus::Running {
                continue;
            }
            let (Some(sandbox), Some(url), Some(key)) = (
                record.owned(),
                self.agent_url(&record),
                self.session_key(&record),
            ) else {
                continue;
            };
            let conversations = engine
                .apps
                .search_app_conversations(&AppConversationQuery {
                    org: sandbox.org_id,
                    owner: None,
                    filter: AppConversationFilter {
                        sandbox_id_eq: Some(sandbox.id),
                        include_sub_conversations: true,
                        ..AppConversationFilter::default()
                    },
                    order: SortOrder::CreatedAtDesc,
                    after: None,
                    as_of: None,
                    limit: STREAMS_PER_SANDBOX,
                })?;
            for (info, _) in conversations {
                let streamed = engine.state().owners.contains_key(&info.id);
                let resend_from = if streamed {
                    None
                } else {
                    engine.newest_stored(info.id)?
                };
                wanted.push(StreamTarget {
                    conversation: info.id,
                    sandbox: sandbox.id,
                    base_url: url.clone(),
                    key: key.clone(),
                    resend_from,
                });
                owners.insert(info.id, sandbox.clone());
            }
        }
        engine.state().owners = owners;
        Ok(wanted)
    }
}
