//! Budgets enforced (API.md, "Budgets"; the rule: [`crate::conversations::budget`]):
//! [`BudgetWatch`] stands between the event services and the event store, so that every path
//! that stores an agent server's events (the webhook, the stream path, the pull path) reports
//! the cost it carries; the first report at or over a conversation's budget stops it: a
//! conditional mark (once, whichever replica or path gets there first), the SDK's
//! `MaxBudgetReached` error event, and a pause of its run on its agent server, made by the
//! `budget-stops` job under the supervisor, never on the request that brought the cost.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use time::OffsetDateTime;

use crate::conversations::RunDetails;
use crate::conversations::budget::{self, BudgetRecord};
use crate::error::{DomainError, StorageError};
use crate::events::{AppendOutcome, EventFilter, PositionedEvent, SearchQuery, StoredEvent};
use crate::ids::ConversationId;
use crate::jobs::{Job, Schedule};
use crate::ports::{Append, BudgetStore, EventPayload, EventStore};
use crate::sandboxes::runtime::{AgentServerError, SandboxStatus};
use crate::services::SandboxService;
use crate::time_input::now_micros;

/// How often the `budget-stops` job runs when not woken (its sweep's pace).
const STOP_EVERY: Duration = Duration::from_secs(5);
/// How many times a failed pause is tried (1 s, 2 s, 4 s, … apart) before it is left to the
/// sweep.
const PAUSE_ATTEMPTS: u32 = 5;
/// A stopped conversation its agent server still reports `running` this long after its mark
/// is paused again by any replica (the pause was lost: its replica stopped, or every attempt
/// failed); a pause that took has reported `paused` by then.
const SWEEP_AFTER: time::Duration = time::Duration::seconds(30);
/// Marks older than this are no longer swept (an agent server that kept saying `running`
/// this long is not answering pauses; its sandbox's own lifecycle ends it).
const SWEEP_WITHIN: time::Duration = time::Duration::minutes(10);
/// The most stopped conversations one sweep pauses.
const SWEEP_LIMIT: u32 = 50;
/// A conversation this replica paused is not paused again by its sweep for this long.
const REPAUSE_AFTER: Duration = Duration::from_secs(30);

/// The event store, watching the costs appended to it (see the module's text); cheap to
/// clone (shared).
#[derive(Clone)]
pub struct BudgetWatch {
    events: Arc<dyn EventStore>,
    budgets: Arc<dyn BudgetStore>,
    stops: Arc<Mutex<Stops>>,
    /// Wakes the supervisor's woken jobs (the `budget-stops` job among them): set when the
    /// job is made, from the sandbox service's wake-up.
    wake: Arc<OnceLock<Arc<dyn Fn() + Send + Sync>>>,
}

/// The pauses this replica owes, and when it last paused each conversation.
#[derive(Default)]
struct Stops {
    due: VecDeque<Pause>,
    paused: HashMap<ConversationId, Instant>,
}

/// One pause to make.
#[derive(Debug, Clone, Copy)]
struct Pause {
    conversation: ConversationId,
    /// Attempts made already.
    attempts: u32,
    /// Not before.
    at: Instant,
    /// Found by the sweep: its error event is stored again if missing (its id is stable).
    swept: bool,
}

impl BudgetWatch {
    /// The watch over the event store `events` and the conversations' budgets.
    pub fn new(events: Arc<dyn EventStore>, budgets: Arc<dyn BudgetStore>) -> Self {
        BudgetWatch {
            events,
            budgets,
            stops: Arc::default(),
            wake: Arc::default(),
        }
    }

    fn stops(&self) -> MutexGuard<'_, Stops> {
        self.stops.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// After an append that stored events reporting `cost` (USD) for `conversation`: stops it
    /// when that reaches its budget ([`budget::to_stop`]) and this call wins the mark.
    pub(crate) fn watch(
        &self,
        conversation: ConversationId,
        cost: f64,
    ) -> Result<(), StorageError> {
        let Some(record) = self.budgets.conversation_budget(conversation)? else {
            return Ok(());
        };
        let Some(limit) = budget::to_stop(&record, cost) else {
            return Ok(());
        };
        let now = now_micros();
        if !self.budgets.mark_budget_reached(conversation, cost, now)? {
            return Ok(());
        }
        tracing::info!(%conversation, budget = limit, cost, "a conversation reached its budget: stopped, its run to be paused");
        self.owe(Pause {
            conversation,
            attempts: 0,
            at: Instant::now(),
            swept: false,
        });
        self.store_notice(&record, limit, cost, now)
    }

    /// Stores the conversation's `MaxBudgetReached` error event (once: its id is stable). It
    /// sets no run state: the stored one keeps following the agent server (the sweep reads
    /// it) and the answer says `error` ([`budget::answered_status`]).
    fn store_notice(
        &self,
        record: &BudgetRecord,
        limit: f64,
        cost: f64,
        now: OffsetDateTime,
    ) -> Result<(), StorageError> {
        let id = record.conversation.id;
        self.events.append_events(Append {
            conversation: record.conversation.clone(),
            events: vec![budget::budget_notice(id, limit, cost, now)],
            status: None,
            details: RunDetails::default(),
            now,
        })?;
        Ok(())
    }

    /// Queues a pause and wakes the job.
    fn owe(&self, pause: Pause) {
        self.stops().due.push_back(pause);
        if let Some(wake) = self.wake.get() {
            wake();
        }
    }

    /// The `budget-stops` job: woken when a conversation is stopped, else every 5 s; each
    /// pass makes the pauses due through `sandboxes`' agent-server client.
    pub fn job(&self, sandboxes: SandboxService) -> Job {
        if let Ok(m) = sandboxes.managed_config()
            && let Some(wake) = &m.wake
        {
            let _ = self.wake.set(wake.clone());
        }
        let watch = self.clone();
        Job::new("budget-stops", Schedule::Woken(STOP_EVERY), move || {
            watch.stop_pass(&sandboxes)
        })
    }

    /// One pass: the pauses due (a failed one tried again later, 5 times in all), then the
    /// sweep: conversations stopped between 30 s and 10 min ago whose agent server still
    /// reports them `running`, not paused by this replica in the last 30 s.
    ///
    /// # Errors
    /// The sweep's storage failure (the pauses due were made).
    pub fn stop_pass(&self, sandboxes: &SandboxService) -> Result<(), DomainError> {
        let now = Instant::now();
        let due: Vec<Pause> = {
            let mut stops = self.stops();
            stops.paused.retain(|_, at| at.elapsed() < REPAUSE_AFTER);
            let (due, later): (VecDeque<Pause>, VecDeque<Pause>) =
                stops.due.drain(..).partition(|p| p.at <= now);
            stops.due = later;
            due.into()
        };
        for pause in due {
            self.pause(sandboxes, pause);
        }
        let at = now_micros();
        let swept =
            self.budgets
                .budget_stops_running(at - SWEEP_WITHIN, at - SWEEP_AFTER, SWEEP_LIMIT)?;
        for conversation in swept {
            let owed = {
                let stops = self.stops();
                stops.paused.contains_key(&conversation)
                    || stops.due.iter().any(|p| p.conversation == conversation)
            };
            if !owed {
                tracing::warn!(%conversation, "a conversation stopped by its budget still runs: paused again");
                self.pause(
                    sandboxes,
                    Pause {
                        conversation,
                        attempts: 0,
                        at: now,
                        swept: true,
                    },
                );
            }
        }
        Ok(())
    }

    /// Makes one pause; a failure is logged and queued again, up to [`PAUSE_ATTEMPTS`].
    fn pause(&self, sandboxes: &SandboxService, pause: Pause) {
        match self.try_pause(sandboxes, pause) {
            Ok(()) => {
                self.stops()
                    .paused
                    .insert(pause.conversation, Instant::now());
            }
            Err(e) if pause.attempts + 1 < PAUSE_ATTEMPTS => {
                let wait = Duration::from_secs(1 << pause.attempts);
                tracing::warn!(conversation = %pause.conversation, error = %e, "pausing a conversation stopped by its budget failed; trying again in {wait:?}");
                self.stops().due.push_back(Pause {
                    attempts: pause.attempts + 1,
                    at: Instant::now() + wait,
                    ..pause
                });
            }
            Err(e) => {
                tracing::warn!(conversation = %pause.conversation, error = %e, "pausing a conversation stopped by its budget failed; left to the sweep");
            }
        }
    }

    /// Pauses the conversation's run on its agent server while its sandbox runs (nothing to
    /// pause otherwise: a paused sandbox's processes are stopped, a deleted one's gone).
    fn try_pause(&self, sandboxes: &SandboxService, pause: Pause) -> Result<(), String> {
        let id = pause.conversation;
        let Some(record) = self
            .budgets
            .conversation_budget(id)
            .map_err(|e| e.to_string())?
        else {
            return Ok(());
        };
        if pause.swept
            && let (Some(limit), Some(reached)) = (record.max_budget_per_task, record.reached_at)
        {
            let cost = record
                .metrics
                .as_deref()
                .and_then(budget::accumulated_cost)
                .unwrap_or(limit);
            self.store_notice(&record, limit, cost, reached)
                .map_err(|e| e.to_string())?;
        }
        let Some(sandbox_id) = record.conversation.sandbox_id else {
            return Ok(());
        };
        let sandbox = match sandboxes.sandbox_record(sandbox_id) {
            Ok(Some(s)) if s.status == SandboxStatus::Running => s,
            Ok(_) => return Ok(()),
            Err(e) => return Err(e.to_string()),
        };
        let Some((url, key)) = sandboxes
            .agent_target(&sandbox)
            .map_err(|e| e.to_string())?
        else {
            return Ok(());
        };
        let m = sandboxes.managed().map_err(|e| e.to_string())?;
        match m.m.client.pause_conversation(&url, &key, id) {
            Ok(()) => {
                tracing::info!(conversation = %id, sandbox = %sandbox_id, "paused on its agent server: its budget was reached");
                Ok(())
            }
            // The agent server has the pause and holds it until the run's current step ends (a
            // long command): asking again would only queue more; the sweep checks it took.
            Err(AgentServerError::Timeout { timeout, .. }) => {
                tracing::info!(conversation = %id, sandbox = %sandbox_id, "the pause waits for the run's current step (no answer within {timeout:?})");
                Ok(())
            }
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Every read and write goes to the store; an append that stored events reporting a cost
/// is watched (the module's text) once it committed: a failure there is logged, never the
/// append's (its events are stored).
impl EventStore for BudgetWatch {
    fn append_events(&self, append: Append) -> Result<Option<AppendOutcome>, StorageError> {
        let cost = append
            .details
            .metrics
            .as_deref()
            .and_then(budget::accumulated_cost);
        let conversation = append.conversation.id;
        let outcome = self.events.append_events(append)?;
        if let (Some(cost), Some(o)) = (cost, &outcome)
            && o.stored > 0
            && let Err(e) = self.watch(conversation, cost)
        {
            tracing::warn!(%conversation, error = %e, "checking a conversation's budget failed");
        }
        Ok(outcome)
    }

    fn search_events(
        &self,
        conversation: ConversationId,
        query: &SearchQuery,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        self.events.search_events(conversation, query)
    }

    fn count_events(
        &self,
        conversation: ConversationId,
        filter: &EventFilter,
    ) -> Result<i64, StorageError> {
        self.events.count_events(conversation, filter)
    }

    fn get_events(
        &self,
        conversation: ConversationId,
        ids: &[String],
    ) -> Result<Vec<EventPayload>, StorageError> {
        self.events.get_events(conversation, ids)
    }

    fn events_after(
        &self,
        conversation: ConversationId,
        after: i64,
        since: Option<OffsetDateTime>,
        limit: u32,
    ) -> Result<Vec<PositionedEvent>, StorageError> {
        self.events.events_after(conversation, after, since, limit)
    }

    fn event_count(&self, conversation: ConversationId) -> Result<i64, StorageError> {
        self.events.event_count(conversation)
    }
}
