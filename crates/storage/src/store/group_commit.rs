//! Group commit of event appends ("flat combining"): concurrent appends share one write
//! transaction, so the commit, its fsync and the PostgreSQL append lock are paid once per
//! group rather than once per batch.

use std::collections::{HashMap, HashSet};

use diesel::prelude::*;
use switchboard_domain::StorageError;
use switchboard_domain::conversations::ExecutionStatus;
use switchboard_domain::events::AppendOutcome;
use switchboard_domain::ports::Append;
use time::PrimitiveDateTime;

use super::DieselStore;
use super::conversations::touch_conversation;
use super::events::ID_CHUNK;
use super::rows::{db_err, to_db};
use crate::connection::DbConnection;
use crate::schema::events;

/// The advisory lock every append transaction takes on PostgreSQL, so that transactions commit
/// in `seq` order (a reader following `seq` never skips an event committed late).
const APPEND_LOCK_KEY: i64 = 0x5357_4254_4556; // "SWBTEV"

/// At most this many appends per group transaction.
const MAX_GROUP: usize = 64;

#[derive(Insertable)]
#[diesel(table_name = events)]
struct EventRow<'a> {
    conversation_id: &'a str,
    event_id: &'a str,
    kind: &'a str,
    source: &'a str,
    timestamp: &'a str,
    ts: PrimitiveDateTime,
    payload: &'a str,
}

type AppendResult = Result<Option<AppendOutcome>, StorageError>;

#[derive(Default)]
struct CombinerQueue {
    next_ticket: u64,
    waiting: Vec<(u64, Append)>,
    done: HashMap<u64, AppendResult>,
}

/// Group commit for appends ("flat combining"): each caller queues its append; whoever holds
/// the leader lock drains the queue and commits every queued append in one transaction, in
/// queue order, then hands each caller its result. A caller returns only after the transaction
/// holding its events committed, so a 2xx still means durable. If a group transaction fails,
/// its appends are retried one by one, so one bad append cannot fail the others.
#[derive(Default)]
pub(crate) struct AppendCombiner {
    queue: std::sync::Mutex<CombinerQueue>,
    finished: std::sync::Condvar,
    leader: std::sync::Mutex<()>,
}

impl AppendCombiner {
    fn lock_queue(&self) -> std::sync::MutexGuard<'_, CombinerQueue> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues `pending` and returns once the transaction holding it committed (or failed).
    pub(super) fn append(&self, store: &DieselStore, pending: Append) -> AppendResult {
        let ticket = {
            let mut q = self.lock_queue();
            q.next_ticket += 1;
            let t = q.next_ticket;
            q.waiting.push((t, pending));
            t
        };
        loop {
            if let Some(r) = self.lock_queue().done.remove(&ticket) {
                return r;
            }
            match self.leader.try_lock() {
                Ok(_leader) => {
                    let group: Vec<(u64, Append)> = {
                        let mut q = self.lock_queue();
                        let n = q.waiting.len().min(MAX_GROUP);
                        q.waiting.drain(..n).collect()
                    };
                    if group.is_empty() {
                        continue;
                    }
                    let results = commit_group(store, &group);
                    self.lock_queue().done.extend(results);
                    self.finished.notify_all();
                }
                Err(_) => {
                    let q = self.lock_queue();
                    if !q.done.contains_key(&ticket) {
                        // Bounded: a missed wake-up costs at most this long.
                        let _ = self
                            .finished
                            .wait_timeout(q, std::time::Duration::from_millis(5));
                    }
                }
            }
        }
    }
}

/// Commits a group in one transaction; on failure, each append alone.
fn commit_group(store: &DieselStore, group: &[(u64, Append)]) -> Vec<(u64, AppendResult)> {
    let appends: Vec<&Append> = group.iter().map(|(_, p)| p).collect();
    match store.write(|conn| append_all(conn, &appends)) {
        Ok(outcomes) => group
            .iter()
            .map(|(t, _)| *t)
            .zip(outcomes.into_iter().map(Ok))
            .collect(),
        Err(_) if group.len() > 1 => group
            .iter()
            .map(|(t, p)| {
                (
                    *t,
                    store
                        .write(|conn| append_all(conn, &[p]))
                        .map(|mut o| o.remove(0)),
                )
            })
            .collect(),
        Err(e) => vec![(group[0].0, Err(e))],
    }
}

/// Appends a group in the current transaction, with a fixed number of statements whatever its
/// size: the append lock, one upsert per distinct conversation (its last run state in group
/// order), and one multi-row insert (PostgreSQL; SQLite inserts row by row in process). An
/// event id repeated within an append or across the group's appends to one conversation counts
/// for its first occurrence; ids already stored are skipped by the unique index.
fn append_all(
    conn: &mut DbConnection,
    appends: &[&Append],
) -> Result<Vec<Option<AppendOutcome>>, StorageError> {
    lock_appends(conn)?;
    let ids: Vec<String> = appends
        .iter()
        .map(|p| p.conversation.id.to_string())
        .collect();
    // One touch per conversation, in first-appearance order, with the last status and time.
    let mut allowed: HashMap<&str, bool> = HashMap::new();
    for (i, p) in appends.iter().enumerate() {
        if allowed.contains_key(ids[i].as_str()) {
            continue;
        }
        let same = || {
            appends
                .iter()
                .zip(&ids)
                .filter(|(_, id)| *id == &ids[i])
                .map(|(q, _)| *q)
        };
        let status: Option<ExecutionStatus> = same().filter_map(|q| q.status).next_back();
        let now = same().map(|q| q.now).max().unwrap_or(p.now);
        allowed.insert(
            &ids[i],
            touch_conversation(conn, &p.conversation, status, now)?,
        );
    }
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    let mut rows: Vec<EventRow<'_>> = Vec::new();
    let mut owner: Vec<usize> = Vec::new();
    for (i, p) in appends.iter().enumerate() {
        if !allowed[ids[i].as_str()] {
            continue;
        }
        for e in &p.events {
            if seen.insert((ids[i].as_str(), e.event_id.as_str())) {
                rows.push(EventRow {
                    conversation_id: &ids[i],
                    event_id: &e.event_id,
                    kind: e.kind.as_str(),
                    source: e.source.as_str(),
                    timestamp: &e.timestamp,
                    ts: to_db(e.ts),
                    payload: &e.payload,
                });
                owner.push(i);
            }
        }
    }
    let mut stored = vec![0usize; appends.len()];
    match conn {
        DbConnection::Postgres(c) => {
            for (chunk, owners) in rows.chunks(ID_CHUNK).zip(owner.chunks(ID_CHUNK)) {
                let inserted: Vec<(String, String)> = diesel::insert_into(events::table)
                    .values(chunk)
                    .on_conflict((events::conversation_id, events::event_id))
                    .do_nothing()
                    .returning((events::conversation_id, events::event_id))
                    .get_results(c)
                    .map_err(db_err)?;
                let inserted: HashSet<(&str, &str)> = inserted
                    .iter()
                    .map(|(c, e)| (c.as_str(), e.as_str()))
                    .collect();
                for (row, &i) in chunk.iter().zip(owners) {
                    if inserted.contains(&(row.conversation_id, row.event_id)) {
                        stored[i] += 1;
                    }
                }
            }
        }
        // diesel runs a SQLite batch insert in a transaction of its own, which cannot nest in
        // ours: one cached single-row INSERT per event instead (in process, no round trips).
        DbConnection::Sqlite(c) => {
            for (row, &i) in rows.iter().zip(&owner) {
                stored[i] += diesel::insert_into(events::table)
                    .values(row)
                    .on_conflict((events::conversation_id, events::event_id))
                    .do_nothing()
                    .execute(c)
                    .map_err(db_err)?;
            }
        }
    }
    Ok(appends
        .iter()
        .enumerate()
        .map(|(i, p)| {
            allowed[ids[i].as_str()].then(|| AppendOutcome {
                stored: stored[i],
                skipped: p.events.len() - stored[i],
            })
        })
        .collect())
}

/// On PostgreSQL, the advisory lock that makes appends of all processes commit in `seq` order
/// (ARCHITECTURE.md, Storage); SQLite has one writer anyway.
fn lock_appends(conn: &mut DbConnection) -> Result<(), StorageError> {
    if let DbConnection::Postgres(c) = conn {
        use diesel::connection::SimpleConnection;
        c.batch_execute(&format!("SELECT pg_advisory_xact_lock({APPEND_LOCK_KEY})"))
            .map_err(db_err)?;
    }
    Ok(())
}
