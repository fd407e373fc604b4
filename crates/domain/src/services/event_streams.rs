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

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use crate::conversations::app::{AppConversationFilter, AppConversationQuery, SortOrder};
use crate::error::DomainError;
use crate::sandboxes::event_streams::{AgentEventStreams, StreamTarget};
use crate::sandboxes::runtime::SandboxStatus;
use crate::services::sandboxes::SandboxService;

use super::event_streaming::{EventStreaming, RECEIVE_WAIT, STREAMS_PER_SANDBOX};

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
            let Some(sandbox) = record.owned() else {
                continue;
            };
            // A listener that is not the sandbox's gets no stream (the refusal is logged).
            let Ok(Some((url, key))) = self.agent_target(&record) else {
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
