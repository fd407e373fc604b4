//! Sandboxes: registered agent servers and the ones Switchboard runs (design: Sandboxes).
//! Deleted sandboxes are tombstones: every read but [`SandboxStore::pending_cleanups`] skips
//! them.

use time::OffsetDateTime;

use crate::error::StorageError;
use crate::identity::session_keys::SessionKeyHash;
use crate::ids::{OrgId, SandboxId, UserId};
use crate::sandboxes::Sandbox;
use crate::sandboxes::quotas::{QuotaExceeded, SandboxQuota};
use crate::sandboxes::records::{SandboxCursor, SandboxRecord};
use crate::sandboxes::runtime::SandboxStatus;

/// The per-user running limit applied in the transaction of a start or a resume
/// (`--max-running-sandboxes`, issue 9): beyond `max` running (or starting) sandboxes of
/// `owner`, the least recently used are marked `PAUSED`; the caller then pauses them in
/// their runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunningLimit {
    /// Whose sandboxes.
    pub owner: UserId,
    /// The most that may run at once, the new one included (at least 1).
    pub max: u32,
}

/// A start: claim a warm-pool sandbox when one is ready, else insert `record`.
#[derive(Debug, Clone)]
pub struct StartSandbox {
    /// The new sandbox (`STARTING`, not yet launched), inserted when no warm one is claimed.
    pub record: SandboxRecord,
    /// Its session key's hash.
    pub key_hash: SessionKeyHash,
    /// When set, claim a `RUNNING` unowned sandbox of this spec and runtime instead (in one
    /// transaction: organization, owner, creation and use times assigned; PostgreSQL skips
    /// rows other transactions have locked).
    pub claim_warm: Option<WarmClaim>,
    /// The running limit of the new sandbox's owner.
    pub limit: RunningLimit,
    /// The quotas checked first, in the same transaction (issue 18, Quotas).
    pub quota: SandboxQuota,
    /// The start task the sandbox is for, bound to it (its `sandbox_id`) in the same
    /// transaction, so a concurrent grouped start counts it at once
    /// ([`crate::sandboxes::grouping`]).
    pub bind_task: Option<crate::conversations::start_tasks::StartTaskId>,
}

/// What a start did: started, or refused by a quota (nothing written).
#[derive(Debug, Clone)]
pub enum StartOutcome {
    /// Claimed or inserted.
    Started(Box<StartedSandbox>),
    /// A quota is reached.
    OverQuota(QuotaExceeded),
}

/// Which warm-pool sandbox a start may claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarmClaim {
    /// The spec.
    pub spec_id: String,
    /// The runtime.
    pub runtime: String,
}

/// What a start did.
#[derive(Debug, Clone)]
pub struct StartedSandbox {
    /// The sandbox: the claimed one (`RUNNING`) or the inserted one (`STARTING`).
    pub record: SandboxRecord,
    /// Whether it came from the warm pool.
    pub claimed: bool,
    /// The owner's sandboxes marked `PAUSED` by the running limit, to pause in their runtime.
    pub displaced: Vec<SandboxRecord>,
}

/// A resume: `id` becomes `STARTING` (a new run beginning `now`) under the running limit.
#[derive(Debug, Clone, Copy)]
pub struct ResumeSandbox {
    /// The sandbox (must be `PAUSED`).
    pub id: SandboxId,
    /// The resume time.
    pub now: OffsetDateTime,
    /// Its owner's running limit.
    pub limit: RunningLimit,
}

/// Which sandboxes a search lists: an organization's, or one member's there.
#[derive(Debug, Clone, Copy)]
pub struct SandboxQuery {
    /// The organization.
    pub org: OrgId,
    /// Only this creator's (members see only their own).
    pub owner: Option<UserId>,
    /// Continue after this position.
    pub after: Option<SandboxCursor>,
    /// How many rows to read (callers ask one more than a page to know whether more follow).
    pub limit: u32,
}

/// A conditional change of a sandbox: applied only when its `updated_at` is still
/// `expected_updated_at` (what the caller read), so a reconciliation never overwrites a pause,
/// resume or delete that happened meanwhile. Fields left `None` keep their value.
#[derive(Debug, Clone)]
pub struct SandboxUpdate {
    /// The sandbox.
    pub id: SandboxId,
    /// The version read.
    pub expected_updated_at: OffsetDateTime,
    /// The new version (strictly later).
    pub updated_at: OffsetDateTime,
    /// The new status.
    pub status: Option<SandboxStatus>,
    /// Why the new status (`ERROR`, `MISSING`); written whenever `status` is set, so any
    /// other status clears it. Ignored when `status` is `None`.
    pub status_message: Option<String>,
    /// The runtime handle (JSON) once launched.
    pub handle: Option<String>,
    /// The agent server's URL once launched.
    pub agent_server_url: Option<String>,
    /// The beginning of the current run.
    pub started_at: Option<OffsetDateTime>,
}

impl SandboxUpdate {
    /// A change of status only.
    pub fn status(record: &SandboxRecord, status: SandboxStatus, now: OffsetDateTime) -> Self {
        SandboxUpdate {
            id: record.id,
            expected_updated_at: record.updated_at,
            updated_at: later(record.updated_at, now),
            status: Some(status),
            status_message: None,
            handle: None,
            agent_server_url: None,
            started_at: None,
        }
    }

    /// A change to `status` (`ERROR` or `MISSING`) with the reason `message`.
    pub fn failed(
        record: &SandboxRecord,
        status: SandboxStatus,
        now: OffsetDateTime,
        message: String,
    ) -> Self {
        SandboxUpdate {
            status_message: Some(message),
            ..SandboxUpdate::status(record, status, now)
        }
    }
}

/// `now`, or one microsecond after `previous` when the clock has not moved past it: versions
/// strictly increase.
pub fn later(previous: OffsetDateTime, now: OffsetDateTime) -> OffsetDateTime {
    if now > previous {
        now
    } else {
        previous + time::Duration::microseconds(1)
    }
}

/// Sandboxes and their session keys.
pub trait SandboxStore: Send + Sync {
    /// Registers an external sandbox (`switchboard sandboxes register`) with its hashed
    /// session key: runtime and spec `external`, status `RUNNING`.
    fn create_sandbox(
        &self,
        sandbox: &Sandbox,
        key_hash: &SessionKeyHash,
    ) -> Result<(), StorageError>;

    /// The owned, not deleted sandbox whose session key has this hash.
    fn sandbox_by_key_hash(&self, hash: &SessionKeyHash) -> Result<Option<Sandbox>, StorageError>;

    /// Inserts a sandbox as it is (the warm pool's unowned ones).
    fn insert_sandbox(
        &self,
        record: &SandboxRecord,
        key_hash: &SessionKeyHash,
    ) -> Result<(), StorageError>;

    /// Starts a sandbox for a user in one transaction: counts what the owner (and, with a
    /// per-organization quota, the organization) holds and refuses the start at a quota,
    /// else claims a warm one or inserts the new one, then applies the running limit. The
    /// count and the insert are serialized per owner and per organization across processes
    /// (PostgreSQL: advisory locks; SQLite: its single writer).
    fn start_sandbox(&self, start: &StartSandbox) -> Result<StartOutcome, StorageError>;

    /// Resumes a `PAUSED` sandbox in one transaction: it becomes `STARTING` with `started_at`
    /// and `last_used_at` = `now`, then the running limit is applied. `None` when it is not
    /// (or no longer) `PAUSED`.
    fn resume_sandbox(
        &self,
        resume: &ResumeSandbox,
    ) -> Result<Option<Vec<SandboxRecord>>, StorageError>;

    /// A sandbox that is not deleted.
    fn sandbox(&self, id: SandboxId) -> Result<Option<SandboxRecord>, StorageError>;

    /// The sandboxes with these ids that are not deleted, in any order.
    fn sandboxes_by_ids(&self, ids: &[SandboxId]) -> Result<Vec<SandboxRecord>, StorageError>;

    /// One page of an organization's sandboxes, newest first (`created_at`, then id,
    /// descending), after the cursor.
    fn search_sandboxes(&self, query: &SandboxQuery) -> Result<Vec<SandboxRecord>, StorageError>;

    /// Every sandbox that is not deleted, owned or not, registered or managed (for
    /// reconciliation, the warm pool and the status metrics).
    fn live_sandboxes(&self) -> Result<Vec<SandboxRecord>, StorageError>;

    /// Applies a conditional update; `false` when the sandbox changed meanwhile (or is
    /// deleted).
    fn update_sandbox(&self, update: &SandboxUpdate) -> Result<bool, StorageError>;

    /// Records a use (`last_used_at = now`).
    fn touch_sandbox(&self, id: SandboxId, now: OffsetDateTime) -> Result<(), StorageError>;

    /// Tombstones a sandbox: `deleted_at` set; its session key no longer authenticates. The
    /// sealed key is erased now when the sandbox was never launched (no handle), else by
    /// [`SandboxStore::cleanup_done`]: the cleanup reads the agent server's last events with
    /// it first (issue 19). `false` when it was already deleted or never existed.
    fn delete_sandbox(&self, id: SandboxId, now: OffsetDateTime) -> Result<bool, StorageError>;

    /// Tombstones sandbox `id` only while it is unowned (waiting in the warm pool), in one
    /// conditional statement, so that a start claiming it at the same moment wins: `false`
    /// when it was claimed, is deleted, or does not exist.
    fn delete_unowned_sandbox(
        &self,
        id: SandboxId,
        now: OffsetDateTime,
    ) -> Result<bool, StorageError>;

    /// Deleted sandboxes whose runtime has not cleaned up yet (a handle is still set).
    fn pending_cleanups(&self) -> Result<Vec<SandboxRecord>, StorageError>;

    /// Records that the runtime cleaned up a deleted sandbox (its handle and sealed key are
    /// cleared).
    fn cleanup_done(&self, id: SandboxId) -> Result<(), StorageError>;
}
