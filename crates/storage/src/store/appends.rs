//! The transaction of an event append (API.md, Event ingestion): the appends a group commit
//! gathered (`group_commit.rs`), written under the append lock with their positions, counts
//! and `NOTIFY`.

use std::collections::{HashMap, HashSet};

use diesel::prelude::*;
use switchboard_domain::StorageError;
use switchboard_domain::conversations::{ExecutionStatus, RunDetails};
use switchboard_domain::events::{AppendOutcome, NewEvent};
use switchboard_domain::ports::Append;
use time::PrimitiveDateTime;

use super::DieselStore;
use super::conversations::touch_conversation;
use super::group_commit::AppendResult;
use super::rows::{ID_CHUNK, db_err, to_db};
use crate::connection::DbConnection;
use crate::schema::{conversations, events};

/// The advisory lock every append transaction takes on PostgreSQL, so that transactions commit
/// in `seq` order (a reader following `seq` never skips an event committed late).
const APPEND_LOCK_KEY: i64 = 0x5357_4254_4556; // "SWBTEV"

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
    position: i64,
}

impl DieselStore {
    /// Appends `pending` through the group commit: returns once the transaction holding it
    /// committed (or failed).
    pub(super) fn append_grouped(&self, pending: Append) -> AppendResult {
        self.appends
            .clone()
            .append(pending, &|group| commit_group(self, group))
    }
}

/// Commits a group in one transaction ([`commit_or_split`]), then tells the append observer
/// of each conversation that gained events.
fn commit_group(store: &DieselStore, group: &[(u64, Append)]) -> Vec<(u64, AppendResult)> {
    let results = commit_or_split(store, group);
    if let Some(observer) = store.observer.get() {
        for ((_, pending), (_, result)) in group.iter().zip(&results) {
            if let Ok(Some(o)) = result
                && o.stored > 0
            {
                observer.appended(pending.conversation.id, o.event_count);
            }
        }
    }
    results
}

/// [`commit_group`]'s transaction: the group at once, or, when that fails, each append alone.
fn commit_or_split(store: &DieselStore, group: &[(u64, Append)]) -> Vec<(u64, AppendResult)> {
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

// Over 100 lines, on purpose: the one transaction of a group commit (dedup, positions, rows,
// counts, NOTIFY) kept in one place, so its order of reads and writes under the lock is read
// at once.
/// Appends a group in the current transaction, with a bounded number of statements whatever
/// its size: the append lock, one upsert per distinct conversation (its last run state, model
/// and metrics in group order; it returns the conversation's event count), one look-up of the ids already stored per
/// conversation, the inserts (one multi-row insert per chunk on PostgreSQL; row by row in
/// process on SQLite), and per conversation that gained events the new count and, on
/// PostgreSQL, a `NOTIFY` (API.md, Live delivery). An event id repeated within an append or
/// across the group's appends to one conversation counts for its first occurrence; ids already
/// stored are skipped. Each stored event gets the next dense position of its conversation:
/// under the append lock (PostgreSQL) or the single writer (SQLite) no other append runs, so
/// positions have no gap.
fn append_all(
    conn: &mut DbConnection,
    appends: &[&Append],
) -> Result<Vec<Option<AppendOutcome>>, StorageError> {
    lock_appends(conn)?;
    let ids: Vec<String> = appends
        .iter()
        .map(|p| p.conversation.id.to_string())
        .collect();
    // One touch per conversation, in first-appearance order, with the last status and time;
    // `next` holds the next position of each conversation that accepted the append.
    let mut next: HashMap<&str, Option<i64>> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    for (i, p) in appends.iter().enumerate() {
        if next.contains_key(ids[i].as_str()) {
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
        let details = same().fold(RunDetails::default(), |d, q| d.then(q.details.clone()));
        let now = same().map(|q| q.now).max().unwrap_or(p.now);
        next.insert(
            &ids[i],
            touch_conversation(conn, &p.conversation, status, &details, now)?,
        );
        order.push(&ids[i]);
    }
    // The candidates: first occurrence of each (conversation, id) in group order.
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    let mut candidates: Vec<(usize, &NewEvent)> = Vec::new();
    for (i, p) in appends.iter().enumerate() {
        if next[ids[i].as_str()].is_none() {
            continue;
        }
        for e in &p.events {
            if seen.insert((ids[i].as_str(), e.event_id.as_str())) {
                candidates.push((i, e));
            }
        }
    }
    let stored_ids = already_stored(conn, &order, &seen)?;
    let first_count: HashMap<&str, i64> = next
        .iter()
        .filter_map(|(c, n)| n.map(|n| (*c, n)))
        .collect();
    let mut rows: Vec<EventRow<'_>> = Vec::new();
    let mut stored = vec![0usize; appends.len()];
    for (i, e) in candidates {
        let conv = ids[i].as_str();
        if stored_ids.contains(&(conv.to_owned(), e.event_id.clone())) {
            continue;
        }
        let slot = next.get_mut(conv).and_then(Option::as_mut);
        let Some(position) = slot else { continue };
        rows.push(EventRow {
            conversation_id: conv,
            event_id: &e.event_id,
            kind: e.kind.as_str(),
            source: e.source.as_str(),
            timestamp: &e.timestamp,
            ts: to_db(e.ts),
            payload: &e.payload,
            position: *position,
        });
        *position += 1;
        stored[i] += 1;
    }
    match conn {
        DbConnection::Postgres(c) => {
            for chunk in rows.chunks(ID_CHUNK) {
                diesel::insert_into(events::table)
                    .values(chunk)
                    .execute(c)
                    .map_err(db_err)?;
            }
        }
        // diesel runs a SQLite batch insert in a transaction of its own, which cannot nest in
        // ours: one cached single-row INSERT per event instead (in process, no round trips).
        DbConnection::Sqlite(c) => {
            for row in &rows {
                diesel::insert_into(events::table)
                    .values(row)
                    .execute(c)
                    .map_err(db_err)?;
            }
        }
    }
    for conv in &order {
        let (Some(Some(count)), Some(before)) = (next.get(conv), first_count.get(conv)) else {
            continue;
        };
        if count == before {
            continue;
        }
        native!(&mut *conn, |c| diesel::update(
            conversations::table.filter(conversations::id.eq(*conv))
        )
        .set(conversations::event_count.eq(*count))
        .execute(c))
        .map_err(db_err)?;
        notify_appended(conn, conv, *count)?;
    }
    Ok(appends
        .iter()
        .enumerate()
        .map(|(i, p)| {
            next[ids[i].as_str()].map(|count| AppendOutcome {
                stored: stored[i],
                skipped: p.events.len() - stored[i],
                event_count: count,
            })
        })
        .collect())
}

/// The (conversation, event id) pairs among `wanted` that are already stored: one query per
/// conversation and chunk of ids.
fn already_stored(
    conn: &mut DbConnection,
    conversations: &[&str],
    wanted: &HashSet<(&str, &str)>,
) -> Result<HashSet<(String, String)>, StorageError> {
    let mut found = HashSet::new();
    for conv in conversations {
        let ids: Vec<&str> = wanted
            .iter()
            .filter(|(c, _)| c == conv)
            .map(|(_, e)| *e)
            .collect();
        for chunk in ids.chunks(ID_CHUNK) {
            let rows: Vec<String> = native!(&mut *conn, |c| events::table
                .filter(events::conversation_id.eq(*conv))
                .filter(events::event_id.eq_any(chunk))
                .select(events::event_id)
                .load(c))
            .map_err(db_err)?;
            found.extend(rows.into_iter().map(|e| ((*conv).to_owned(), e)));
        }
    }
    Ok(found)
}

/// The channel of the append notifications on PostgreSQL (API.md, Live delivery).
pub const NOTIFY_CHANNEL: &str = "switchboard_events";

/// On PostgreSQL, `NOTIFY switchboard_events, '<conversation id>:<last position>'`, delivered
/// to every listener when the transaction commits; nothing on SQLite (one process: the
/// in-process observer wakes subscribers).
fn notify_appended(conn: &mut DbConnection, conv: &str, count: i64) -> Result<(), StorageError> {
    if let DbConnection::Postgres(c) = conn {
        diesel::sql_query("SELECT pg_notify($1, $2)")
            .bind::<diesel::sql_types::Text, _>(NOTIFY_CHANNEL)
            .bind::<diesel::sql_types::Text, _>(format!("{conv}:{}", count - 1))
            .execute(c)
            .map_err(db_err)?;
    }
    Ok(())
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
