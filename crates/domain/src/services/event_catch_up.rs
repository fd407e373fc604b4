//! The pull path (issue 19): reads back from an agent server Switchboard runs what its webhooks
//! did not deliver, and stores it through the same idempotent append as the webhooks (events
//! deduplicated by id, appended in the agent server's order, so live subscribers get them in
//! `seq` order like any other).
//!
//! Per conversation the engine remembers (in memory) how many events the agent server had
//! when every one of them was last found stored, and the id of the last one: a later check
//! asks the agent server for its count (one cheap call) and reads only from that event on
//! when the count moved. A conversation the agent server has and Switchboard does not (a
//! client created it on the sandbox directly) is stored with the agent server's
//! `ConversationInfo`, then caught up; one it knows takes the listing's `ConversationInfo`
//! too (its title, run state, LLM model and metrics: what the conversation answers once its
//! sandbox is gone; an info equal to the one stored writes nothing).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::conversations::{Conversation, ExecutionStatus, RunDetails};
use crate::error::DomainError;
use crate::events::{NewEvent, prepare_batch};
use crate::identity::session_keys::SessionKey;
use crate::ids::{ConversationId, SandboxId};
use crate::ports::{Append, ConversationStore, EventStore};
use crate::sandboxes::Sandbox;
use crate::sandboxes::agent_events::AGENT_PAGE_LIMIT;
use crate::sandboxes::runtime::{AgentServerClient, AgentServerError};
use crate::services::ConversationService;
use crate::time_input::now_micros;

/// The longest one call to an agent server may take (less when the deadline is nearer).
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// A conversation whose webhook stored something this recently is left to its webhook by a
/// periodic check (not by a forced one): its events are flowing.
const QUIET: Duration = Duration::from_secs(2);
/// The most events one append of the pull path carries (one transaction each).
const APPEND_CHUNK: usize = 1000;

/// How long a pause waits for the sandbox's events before it pauses anyway.
pub(super) const PAUSE_DRAIN: Duration = Duration::from_secs(5);
/// How long the cleanup of a deleted sandbox reads its events before it stops it anyway.
pub(super) const DELETE_DRAIN: Duration = Duration::from_secs(10);

/// Where to read: an agent server and the sandbox it runs as.
pub(crate) struct Target<'a> {
    /// The agent-server client.
    pub client: &'a dyn AgentServerClient,
    /// The agent server's base URL.
    pub url: &'a str,
    /// The sandbox's session key.
    pub key: &'a SessionKey,
    /// The sandbox: its organization and owner own what is stored.
    pub sandbox: &'a Sandbox,
}

/// What one catch-up of a sandbox did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatchUpOutcome {
    /// Conversations of the agent server looked at.
    pub conversations: usize,
    /// Conversations Switchboard did not know, stored with their `ConversationInfo`.
    pub discovered: usize,
    /// Events stored (missing before).
    pub stored: usize,
    /// Why it stopped before the end: the deadline passed, or the agent server failed.
    pub incomplete: Option<String>,
}

/// What is known to be stored of one conversation.
#[derive(Debug, Clone)]
struct Verified {
    /// The agent server's event count when every event was found stored.
    count: u64,
    /// The id of the agent server's last event then.
    last_id: String,
}

#[derive(Default)]
struct State {
    verified: HashMap<ConversationId, Verified>,
    /// Per sandbox: the agent server's conversation count at its last listing, and the ids.
    listed: HashMap<SandboxId, (u64, Vec<ConversationId>)>,
    /// Conversations being read now (one reader each; others wait).
    busy: HashSet<ConversationId>,
    /// The sandboxes seen `RUNNING` by the last periodic pass.
    running: HashSet<SandboxId>,
}

/// The pull path's engine; cheap to clone (shared memory).
#[derive(Clone)]
pub(crate) struct EventCatchUp {
    events: Arc<dyn EventStore>,
    conversations: Arc<dyn ConversationStore>,
    infos: ConversationService,
    state: Arc<(Mutex<State>, Condvar)>,
}

impl EventCatchUp {
    /// The engine over the event and conversation stores.
    pub(crate) fn new(
        events: Arc<dyn EventStore>,
        conversations: Arc<dyn ConversationStore>,
    ) -> Self {
        EventCatchUp {
            events,
            infos: ConversationService::new(conversations.clone()),
            conversations,
            state: Arc::default(),
        }
    }

    /// Records the sandboxes `RUNNING` now and answers those that were not at the last call
    /// (all of them at the first, and after [`EventCatchUp::forget_running`]).
    pub(crate) fn newly_running(&self, now: HashSet<SandboxId>) -> HashSet<SandboxId> {
        let mut state = self.state();
        let new = now.difference(&state.running).copied().collect();
        state.running = now;
        new
    }

    /// Forgets which sandboxes were `RUNNING` (a pass failed: its database may have been
    /// away), so the next pass reads every running sandbox as if seen again.
    pub(crate) fn forget_running(&self) {
        self.state().running.clear();
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Catches up every conversation of the agent server, stopping at `deadline`. `forced`:
    /// the conversations are relisted and read even when their webhook is busy (a sandbox seen
    /// `RUNNING` again, or about to stop); otherwise the conversation list is reused while the
    /// agent server's count of them has not moved, and conversations whose webhook stored
    /// something in the last [`QUIET`] are skipped.
    ///
    /// # Errors
    /// Storage failures (an agent server's failure ends the catch-up, named in
    /// [`CatchUpOutcome::incomplete`]).
    pub(crate) fn sandbox(
        &self,
        t: &Target<'_>,
        forced: bool,
        deadline: Instant,
    ) -> Result<CatchUpOutcome, DomainError> {
        let mut outcome = CatchUpOutcome::default();
        let ids = match self.list(t, forced, deadline, &mut outcome) {
            Ok(ids) => ids,
            Err(Stop::Storage(e)) => return Err(e),
            Err(Stop::Agent(why)) => {
                outcome.incomplete = Some(why);
                return Ok(outcome);
            }
        };
        outcome.conversations = ids.len();
        for id in ids {
            match self.conversation(t, id, forced, deadline) {
                Ok(n) => outcome.stored += n,
                Err(Stop::Storage(e)) => return Err(e),
                Err(Stop::Agent(why)) => {
                    outcome.incomplete = Some(why);
                    break;
                }
            }
        }
        Ok(outcome)
    }

    /// The agent server's conversations, unknown ones stored with their `ConversationInfo`.
    fn list(
        &self,
        t: &Target<'_>,
        forced: bool,
        deadline: Instant,
        outcome: &mut CatchUpOutcome,
    ) -> Result<Vec<ConversationId>, Stop> {
        let count = t
            .client
            .count_conversations(t.url, t.key, timeout(deadline)?)?;
        if !forced
            && let Some((n, ids)) = self.state().listed.get(&t.sandbox.id)
            && *n == count
        {
            return Ok(ids.clone());
        }
        let mut ids = Vec::new();
        let mut page_id: Option<String> = None;
        loop {
            let page = t.client.search_conversations(
                t.url,
                t.key,
                page_id.as_deref(),
                timeout(deadline)?,
            )?;
            for info in &page.items {
                let Some(id) = info
                    .get("id")
                    .and_then(Value::as_str)
                    .and_then(|s| uuid::Uuid::parse_str(s).ok())
                    .map(ConversationId)
                else {
                    continue;
                };
                let known = self.conversations.conversation(id)?.is_some();
                self.infos.ingest_conversation_info(t.sandbox, info)?;
                if !known {
                    tracing::info!(sandbox = %t.sandbox.id, conversation = %id, "a conversation only its agent server knew: stored with its ConversationInfo");
                    outcome.discovered += 1;
                }
                ids.push(id);
            }
            match page.next_page_id {
                Some(next) if !page.items.is_empty() => page_id = Some(next),
                _ => break,
            }
        }
        self.state()
            .listed
            .insert(t.sandbox.id, (count, ids.clone()));
        Ok(ids)
    }

    /// Catches up one conversation: the number of events stored.
    fn conversation(
        &self,
        t: &Target<'_>,
        id: ConversationId,
        forced: bool,
        deadline: Instant,
    ) -> Result<usize, Stop> {
        if !forced
            && let Some(c) = self.conversations.conversation(id)?
            && now_micros() - c.updated_at < QUIET
        {
            return Ok(0);
        }
        let _reading = self.begin(id, deadline)?;
        let count = t
            .client
            .count_events(t.url, t.key, id, timeout(deadline)?)?;
        let from = match self.state().verified.get(&id) {
            Some(v) if v.count == count => return Ok(0),
            Some(v) => Some(v.last_id.clone()),
            None => None,
        };
        if count == 0 {
            return Ok(0);
        }
        self.pull(t, id, from, count, deadline)
    }

    /// Reads the conversation's events from `from` (the first when `None`) to the end, and
    /// appends those not stored, in the agent server's order.
    fn pull(
        &self,
        t: &Target<'_>,
        id: ConversationId,
        from: Option<String>,
        count: u64,
        deadline: Instant,
    ) -> Result<usize, Stop> {
        let mut page_id = from;
        // Appended as the pages come, so memory stays bounded whatever the agent server
        // sends; at least one event waits for the last append, which carries the run state.
        let mut missing: Vec<NewEvent> = Vec::new();
        let mut stored = 0;
        let mut status: Option<ExecutionStatus> = None;
        let mut details = RunDetails::default();
        let mut last_id: Option<String> = None;
        let mut stop = None;
        loop {
            let page = match timeout(deadline).and_then(|limit| {
                Ok(t.client.search_events(
                    t.url,
                    t.key,
                    id,
                    page_id.as_deref(),
                    AGENT_PAGE_LIMIT,
                    limit,
                )?)
            }) {
                Ok(p) => p,
                Err(e) => {
                    stop = Some(e);
                    break;
                }
            };
            let ids: Vec<String> = page
                .items
                .iter()
                .filter_map(|e| e.get("id").and_then(Value::as_str).map(str::to_owned))
                .collect();
            let known: HashSet<String> = self
                .events
                .get_events(id, &ids)
                .map_err(DomainError::from)?
                .into_iter()
                .map(|e| e.event_id)
                .collect();
            for item in &page.items {
                let Some(event) = prepared(t, id, item) else {
                    continue;
                };
                if let Some(s) = event.1 {
                    status = Some(s);
                }
                details = details.then(event.2);
                let event = event.0;
                last_id = Some(event.event_id.clone());
                // A repeat within the scan is skipped by the append (ids are unique).
                if !known.contains(&event.event_id) {
                    missing.push(event);
                }
            }
            while missing.len() >= 2 * APPEND_CHUNK {
                let chunk: Vec<NewEvent> = missing.drain(..APPEND_CHUNK).collect();
                stored += self.append(t, id, chunk, None, RunDetails::default())?;
            }
            match page.next_page_id {
                Some(next) if !page.items.is_empty() => page_id = Some(next),
                _ => break,
            }
        }
        stored += self.append(t, id, missing, status, details)?;
        match stop {
            None => {
                if let Some(last_id) = last_id {
                    self.state()
                        .verified
                        .insert(id, Verified { count, last_id });
                }
                Ok(stored)
            }
            Some(Stop::Agent(why)) if stored > 0 => Err(Stop::Agent(format!(
                "{why} (after storing {stored} missing events)"
            ))),
            Some(e) => Err(e),
        }
    }

    /// Appends `missing` in chunks; the run state, model and metrics go with the last chunk.
    fn append(
        &self,
        t: &Target<'_>,
        id: ConversationId,
        missing: Vec<NewEvent>,
        status: Option<ExecutionStatus>,
        details: RunDetails,
    ) -> Result<usize, Stop> {
        let mut stored = 0;
        let chunks = missing.len().div_ceil(APPEND_CHUNK);
        let mut events = missing.into_iter();
        let mut details = Some(details);
        for i in 0..chunks {
            let chunk: Vec<NewEvent> = events.by_ref().take(APPEND_CHUNK).collect();
            let ids: Vec<String> = chunk.iter().map(|e| e.event_id.clone()).collect();
            let now = now_micros();
            let outcome = self.events.append_events(Append {
                conversation: Conversation::in_sandbox(t.sandbox, id, now),
                events: chunk,
                status: if i + 1 == chunks { status } else { None },
                details: if i + 1 == chunks {
                    details.take().unwrap_or_default()
                } else {
                    RunDetails::default()
                },
                now,
            });
            match outcome.map_err(DomainError::from)? {
                Some(o) if o.refused.is_some() => {
                    let refusal = o.refused.map(|r| r.to_string()).unwrap_or_default();
                    tracing::warn!(sandbox = %t.sandbox.id, conversation = %id, %refusal, "events the webhooks had not delivered refused: nothing stored");
                    break;
                }
                Some(o) => {
                    tracing::debug!(sandbox = %t.sandbox.id, conversation = %id, stored = o.stored, ids = ?ids, "stored by the pull path");
                    stored += o.stored;
                }
                None => {
                    tracing::warn!(sandbox = %t.sandbox.id, conversation = %id, "the agent server has a conversation its sandbox may not write: nothing stored");
                    break;
                }
            }
        }
        if stored > 0 {
            tracing::info!(sandbox = %t.sandbox.id, conversation = %id, stored, "events the webhooks had not delivered stored from the agent server");
        }
        Ok(stored)
    }

    /// Waits until no other catch-up reads conversation `id` (until `deadline`), then marks
    /// it read by the caller until the guard drops.
    fn begin(&self, id: ConversationId, deadline: Instant) -> Result<Reading<'_>, Stop> {
        let (lock, changed) = &*self.state;
        let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
        while state.busy.contains(&id) {
            let left = timeout(deadline)?;
            state = changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        state.busy.insert(id);
        Ok(Reading { engine: self, id })
    }
}

/// Marks a conversation read by one catch-up; dropping it lets the next one in.
struct Reading<'a> {
    engine: &'a EventCatchUp,
    id: ConversationId,
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        self.engine.state().busy.remove(&self.id);
        self.engine.state.1.notify_all();
    }
}

/// Why a catch-up stopped early.
enum Stop {
    /// Storage failed: the caller's error.
    Storage(DomainError),
    /// The agent server failed, or the deadline passed: said in the outcome.
    Agent(String),
}

impl From<DomainError> for Stop {
    fn from(e: DomainError) -> Self {
        Stop::Storage(e)
    }
}

impl From<crate::error::StorageError> for Stop {
    fn from(e: crate::error::StorageError) -> Self {
        Stop::Storage(e.into())
    }
}

impl From<AgentServerError> for Stop {
    fn from(e: AgentServerError) -> Self {
        Stop::Agent(e.to_string())
    }
}

/// The time left before `deadline`, at most [`CALL_TIMEOUT`].
fn timeout(deadline: Instant) -> Result<Duration, Stop> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(Stop::Agent("the time allowed ran out".to_owned()))
    } else {
        Ok(left.min(CALL_TIMEOUT))
    }
}

/// One event of the agent server's search, ready to store, with the run state, model and
/// metrics it implies; an event the webhook would refuse is logged and skipped.
fn prepared(
    t: &Target<'_>,
    id: ConversationId,
    item: &Value,
) -> Option<(NewEvent, Option<ExecutionStatus>, RunDetails)> {
    match prepare_batch(&format!("[{item}]")) {
        Ok(mut batch) => batch.events.pop().map(|e| (e, batch.status, batch.details)),
        Err(e) => {
            tracing::warn!(sandbox = %t.sandbox.id, conversation = %id, error = %e.msg, "an event of the agent server that cannot be stored: skipped");
            None
        }
    }
}
