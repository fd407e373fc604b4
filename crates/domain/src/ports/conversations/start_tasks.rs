//! Start tasks, and the conversation row a start creates.

use time::OffsetDateTime;

use crate::conversations::Conversation;
use crate::conversations::app::{OrderedCursor, SortOrder};
use crate::conversations::start_tasks::{StartTask, StartTaskFilter, StartTaskId};
use crate::error::StorageError;
use crate::ids::{ConversationId, OrgId, SandboxId, UserId};
use crate::sandboxes::grouping::SandboxGrouping;
use crate::sandboxes::records::SandboxRecord;

/// Which start tasks a search or count sees: one organization, and one creator unless the
/// caller sees the organization's conversations (spec §4.3 visibility).
#[derive(Debug, Clone, PartialEq)]
pub struct StartTaskQuery {
    /// The organization.
    pub org: OrgId,
    /// Only this creator's tasks, when set.
    pub creator: Option<UserId>,
    /// The filters.
    pub filter: StartTaskFilter,
    /// The order.
    pub order: SortOrder,
    /// Continue after this position (same order).
    pub after: Option<OrderedCursor>,
    /// At most this many rows.
    pub limit: u32,
}

/// The app-level fields a start writes on the conversation row (migration `…000004`).
#[derive(Debug, Clone, PartialEq)]
pub struct StartedConversation {
    /// The conversation (id, org, owner, sandbox, title, times).
    pub conversation: Conversation,
    /// `selected_repository`.
    pub selected_repository: Option<String>,
    /// `selected_branch`.
    pub selected_branch: Option<String>,
    /// `git_provider`.
    pub git_provider: Option<String>,
    /// `trigger` wire name.
    pub trigger: Option<&'static str>,
    /// `pr_number`, JSON array text.
    pub pr_number: String,
    /// `llm_model`.
    pub llm_model: Option<String>,
    /// `parent_conversation_id`.
    pub parent_conversation_id: Option<String>,
    /// `public`.
    pub public: Option<bool>,
    /// `tags`, JSON object text.
    pub tags: String,
    /// Its budget in USD (API.md, "Budgets": the member's, under the organization's
    /// ceiling), fixed now; `None`: none.
    pub max_budget_per_task: Option<f64>,
}

/// A replica's claim on start tasks: who runs them, and until when the claim holds unless
/// renewed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartClaim {
    /// The replica (its id, kept in its data directory).
    pub owner: String,
    /// The claim's end, UTC.
    pub until: OffsetDateTime,
}

/// Which unfinished tasks count as abandoned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleStarts {
    /// Claims that ended before this instant.
    pub now: OffsetDateTime,
    /// Every claim of this replica (at its start: its previous run's), when given.
    pub owner: Option<String>,
}

/// A start without `sandbox_id` looking for one of its member's sandboxes to join (sandbox
/// grouping, [`crate::sandboxes::grouping`]).
#[derive(Debug, Clone, PartialEq)]
pub struct JoinSandbox {
    /// The start task, bound to the sandbox chosen.
    pub task: StartTaskId,
    /// The organization of the start.
    pub org: OrgId,
    /// The member starting: only their own sandboxes in `org` are candidates.
    pub owner: UserId,
    /// Only sandboxes of this spec, when the request names one (any spec otherwise).
    pub spec_id: Option<String>,
    /// The member's strategy (never `NO_GROUPING`).
    pub strategy: SandboxGrouping,
    /// The per-sandbox conversation cap (`--sandbox-max-conversations`).
    pub max_conversations: u32,
    /// The join's time: the chosen sandbox's `last_used_at`.
    pub now: OffsetDateTime,
}

/// Start tasks.
pub trait StartTaskStore: Send + Sync {
    /// Inserts a new task.
    fn insert_start_task(&self, task: &StartTask) -> Result<(), StorageError>;
    /// Writes a task's `status`, `detail`, `conversation_id` (a start may take a fresh one
    /// when its id was taken meanwhile), `sandbox_id`, `agent_server_url` and `updated_at`;
    /// `Ok(false)` when it does not exist (deleted meanwhile) or is already `READY` or
    /// `ERROR` (a final task never moves again: a start whose claim expired and was failed
    /// cannot be revived by its late runner).
    fn update_start_task(&self, task: &StartTask) -> Result<bool, StorageError>;
    /// The tasks with these ids (any order; unknown ids left out).
    fn start_tasks_by_ids(&self, ids: &[StartTaskId]) -> Result<Vec<StartTask>, StorageError>;
    /// One page of a search, in `query.order` then id in the same direction.
    fn search_start_tasks(&self, query: &StartTaskQuery) -> Result<Vec<StartTask>, StorageError>;
    /// How many tasks the query's filters match (cursor and limit ignored).
    fn count_start_tasks(&self, query: &StartTaskQuery) -> Result<u64, StorageError>;
    /// Claims the oldest `WORKING` task no replica has claimed, for `claim.owner` until
    /// `claim.until`, and answers it; `Ok(None)` when there is none. Two callers never claim
    /// the same task (the claim is a conditional write).
    fn claim_start_task(&self, claim: &StartClaim) -> Result<Option<StartTask>, StorageError>;
    /// Extends `claim.owner`'s claims on these tasks (those still unfinished) to
    /// `claim.until`.
    fn renew_start_task_claims(
        &self,
        claim: &StartClaim,
        ids: &[StartTaskId],
    ) -> Result<(), StorageError>;
    /// The unfinished tasks (not `READY` or `ERROR`) no live replica runs: claimed until
    /// before `stale.now`, claimed by `stale.owner` when given (a previous run of this
    /// replica, at its start), or past `WORKING` without a claim (written before claims
    /// existed).
    fn stale_start_tasks(&self, stale: &StaleStarts) -> Result<Vec<StartTask>, StorageError>;
    /// Creates the conversation row a start runs, with its app fields, unless a row with that
    /// id exists: then its app fields are set when it is in the same organization and of the
    /// start's sandbox (its webhook came first; `Ok(true)`), and nothing is written otherwise
    /// (another organization's, or another sandbox's conversation: `Ok(false)`).
    fn create_started_conversation(
        &self,
        started: &StartedConversation,
        now: OffsetDateTime,
    ) -> Result<bool, StorageError>;
    /// Removes the conversation row a failed start wrote (with any events, and out of its
    /// organization's event usage) and records its deletion, so that no late webhook brings
    /// it back; the start's task stays, its `ERROR` saying why. `false` when there was none.
    fn forget_started_conversation(
        &self,
        id: crate::ids::ConversationId,
    ) -> Result<bool, StorageError>;
    /// Chooses the sandbox `join.task` joins ([`crate::sandboxes::grouping::choose`] over
    /// the owner's managed `STARTING`, `RUNNING` and `PAUSED` sandboxes in the organization,
    /// of the spec when given, each with the conversations holding it) and, in the same
    /// transaction, binds the task to it (its `sandbox_id`, while the task is unfinished) and
    /// records the use (`last_used_at`). Serialized with the owner's other joins and sandbox
    /// starts (PostgreSQL: the owner's advisory lock; SQLite: its single writer), so
    /// concurrent starts never fill a sandbox past the cap. `None` when none qualifies.
    fn join_sandbox(&self, join: &JoinSandbox) -> Result<Option<SandboxRecord>, StorageError>;
    /// How many conversations other than `except` hold `sandbox`: the conversations in it
    /// and those whose unfinished start task is bound to it, each once.
    fn others_in_sandbox(
        &self,
        sandbox: SandboxId,
        except: ConversationId,
    ) -> Result<u64, StorageError>;
}
