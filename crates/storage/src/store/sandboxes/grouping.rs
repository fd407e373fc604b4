//! Sandbox grouping's transaction ([`StartTaskStore::join_sandbox`]): the member's sandboxes
//! with what holds each, the choice ([`choose`], the domain's rule), the task bound to the
//! chosen one; and what holds a sandbox, for the conversation delete and a failed start.
//!
//! A conversation holds a sandbox while its row names it, and from the moment its start task
//! is bound to it (a join, or the start that created or claimed it:
//! [`bind_task`]) until that task is `READY` (its row then names the sandbox) or `ERROR`.
//!
//! [`StartTaskStore::join_sandbox`]: switchboard_domain::ports::StartTaskStore::join_sandbox

use std::collections::{HashMap, HashSet};

use diesel::prelude::*;
use switchboard_domain::StorageError;
use switchboard_domain::conversations::start_tasks::{StartTaskId, StartTaskStatus};
use switchboard_domain::ports::JoinSandbox;
use switchboard_domain::sandboxes::grouping::{GroupCandidate, choose};
use switchboard_domain::sandboxes::quotas::HOLDING_STATUSES;
use switchboard_domain::sandboxes::records::{EXTERNAL_RUNTIME, SandboxRecord};
use switchboard_domain::sandboxes::runtime::SandboxStatus;
use switchboard_domain::{ConversationId, SandboxId};

use super::row::{SandboxRow, records};
use super::starts::lock_owner;
use crate::connection::DbConnection;
use crate::schema::{conversations, sandboxes, start_tasks};
use crate::store::rows::{db_err, to_db};

/// The conversations holding each of `ids` (sandbox id → conversation ids): the rows naming
/// it and the unfinished start tasks bound to it, each conversation once. A sandbox nothing
/// holds is absent.
///
/// # Errors
/// A failed statement.
pub(in crate::store) fn holders(
    conn: &mut DbConnection,
    ids: &[String],
) -> Result<HashMap<String, HashSet<String>>, StorageError> {
    let mut out: HashMap<String, HashSet<String>> = HashMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let rows: Vec<(Option<String>, String)> = native!(&mut *conn, |c| conversations::table
        .filter(conversations::sandbox_id.eq_any(ids))
        .select((conversations::sandbox_id, conversations::id))
        .load(c))
    .map_err(db_err)?;
    let unfinished: Vec<&str> = StartTaskStatus::ALL
        .into_iter()
        .filter(|s| !s.is_final())
        .map(StartTaskStatus::as_str)
        .collect();
    let starting: Vec<(Option<String>, String)> = native!(&mut *conn, |c| start_tasks::table
        .filter(start_tasks::status.eq_any(&unfinished))
        .filter(start_tasks::sandbox_id.eq_any(ids))
        .select((start_tasks::sandbox_id, start_tasks::conversation_id))
        .load(c))
    .map_err(db_err)?;
    for (sandbox, conversation) in rows.into_iter().chain(starting) {
        if let Some(sandbox) = sandbox {
            out.entry(sandbox).or_default().insert(conversation);
        }
    }
    Ok(out)
}

/// How many conversations but `except` hold `sandbox` ([`holders`]).
///
/// # Errors
/// A failed statement.
pub(in crate::store) fn others_in(
    conn: &mut DbConnection,
    sandbox: SandboxId,
    except: Option<ConversationId>,
) -> Result<u64, StorageError> {
    let except = except.map(|c| c.to_string());
    let held = holders(conn, &[sandbox.to_string()])?;
    let n = held
        .values()
        .flatten()
        .filter(|c| Some(*c) != except.as_ref())
        .count();
    Ok(n as u64)
}

/// Binds start task `task` to `sandbox` (its `sandbox_id`) while the task is unfinished; a
/// task closed meanwhile is left as it is (its run ends at its next step).
///
/// # Errors
/// A failed statement.
pub(in crate::store) fn bind_task(
    conn: &mut DbConnection,
    task: StartTaskId,
    sandbox: SandboxId,
) -> Result<(), StorageError> {
    let finals = [StartTaskStatus::Ready, StartTaskStatus::Error].map(StartTaskStatus::as_str);
    diesel::update(
        start_tasks::table
            .filter(start_tasks::id.eq(task.to_string()))
            .filter(start_tasks::status.ne_all(finals)),
    )
    .set(start_tasks::sandbox_id.eq(Some(sandbox.to_string())))
    .execute(conn)
    .map_err(db_err)?;
    Ok(())
}

/// The join, in the caller's write transaction: the owner's lock, their candidates with what
/// holds each, the domain's choice, then the task bound and the sandbox's use recorded.
///
/// # Errors
/// A failed statement, an unreadable row.
pub(in crate::store) fn join(
    conn: &mut DbConnection,
    join: &JoinSandbox,
) -> Result<Option<SandboxRecord>, StorageError> {
    lock_owner(conn, join.owner)?;
    let org = join.org.to_string();
    let owner = join.owner.to_string();
    let statuses = HOLDING_STATUSES.map(SandboxStatus::as_str);
    let rows = native!(&mut *conn, |c| {
        let mut q = sandboxes::table
            .filter(sandboxes::org_id.eq(&org))
            .filter(sandboxes::owner_id.eq(&owner))
            .filter(sandboxes::deleted_at.is_null())
            .filter(sandboxes::runtime.ne(EXTERNAL_RUNTIME))
            .filter(sandboxes::status.eq_any(statuses))
            .select(SandboxRow::as_select())
            .into_boxed();
        if let Some(spec) = &join.spec_id {
            q = q.filter(sandboxes::spec_id.eq(spec));
        }
        q.load(c)
    })
    .map_err(db_err)?;
    let mine = records(rows)?;
    let ids: Vec<String> = mine.iter().map(|r| r.id.to_string()).collect();
    let held = holders(conn, &ids)?;
    let candidates: Vec<GroupCandidate> = mine
        .iter()
        .map(|r| GroupCandidate {
            id: r.id,
            status: r.status,
            created_at: r.created_at,
            last_used_at: r.last_used_at,
            conversations: held.get(&r.id.to_string()).map_or(0, |h| h.len() as u64),
        })
        .collect();
    let Some(chosen) = choose(join.strategy, &candidates, join.max_conversations) else {
        return Ok(None);
    };
    bind_task(conn, join.task, chosen)?;
    // A use, as a resume is: it also keeps the running limit from pausing it first. The
    // version (`updated_at`) stays: nothing a reconciliation compares changed.
    diesel::update(sandboxes::table.filter(sandboxes::id.eq(chosen.to_string())))
        .set(sandboxes::last_used_at.eq(Some(to_db(join.now))))
        .execute(conn)
        .map_err(db_err)?;
    Ok(mine.into_iter().find(|r| r.id == chosen).map(|mut r| {
        r.last_used_at = Some(join.now);
        r
    }))
}
