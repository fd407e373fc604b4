//! The transaction of an event append (API.md, Event ingestion): the appends a group commit
//! gathered (`group_commit.rs`), written under the append lock with their positions, counts
//! and `NOTIFY`.

use std::collections::{HashMap, HashSet};

use diesel::prelude::*;
use switchboard_domain::StorageError;
use switchboard_domain::conversations::RunDetails;
use switchboard_domain::event_quota::{AppendRefusal, EventQuota, Held};
use switchboard_domain::events::{AppendOutcome, NewEvent, quota_notice, quota_notice_id};
use switchboard_domain::ports::Append;
use time::PrimitiveDateTime;

use super::DieselStore;
use super::conversations::touch_conversation;
use super::event_usage::{ConversationUsage, add_org_usage, conversation_usage, org_bytes};
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
            // A refused append may have stored its conversation's quota notice.
            if let Ok(Some(o)) = result
                && (o.stored > 0 || (o.refused.is_some() && o.event_count > 0))
            {
                observer.appended(pending.conversation.id, o.event_count);
            }
        }
    }
    results
}

/// [`commit_group`]'s transaction: the group at once, or, when that fails, each append alone.
/// Under the disk reserve nothing is written: every append is refused as it is.
fn commit_or_split(store: &DieselStore, group: &[(u64, Append)]) -> Vec<(u64, AppendResult)> {
    if let Some(refusal) = store.disk_refusal() {
        return group
            .iter()
            .map(|(t, p)| {
                let refused = AppendOutcome {
                    stored: 0,
                    skipped: p.events.len(),
                    event_count: 0,
                    refused: Some(refusal),
                };
                (*t, Ok(Some(refused)))
            })
            .collect();
    }
    let quota = store.quota;
    let appends: Vec<&Append> = group.iter().map(|(_, p)| p).collect();
    match store.write(|conn| append_all(conn, &appends, &quota)) {
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
                        .write(|conn| append_all(conn, &[p], &quota))
                        .map(|mut o| o.remove(0)),
                )
            })
            .collect(),
        Err(e) => vec![(group[0].0, Err(e))],
    }
}

// Over 100 lines, on purpose: the one transaction of a group commit (quotas, dedup,
// positions, rows, counts, NOTIFY) kept in one place, so its order of reads and writes under
// the lock is read at once.
/// Appends a group in the current transaction, with a bounded number of statements whatever
/// its size: the append lock; one read of the group's stored conversations (organization,
/// owner, events, bytes) and, with an organization quota, of their organizations' usage; one
/// look-up of the ids already stored per conversation (with each conversation's quota notice);
/// the quotas judged per append in group order ([`judge`]: a refused append stores none of its
/// events; its conversation gets its notice the first time); one upsert per distinct
/// conversation with something to store (the last run state, model and metrics of its
/// accepted appends, in group order; it returns the conversation's event count); the inserts;
/// and per conversation that gained events the new count and bytes, its organization's usage
/// and, on PostgreSQL, a `NOTIFY` (API.md, Live delivery). An event id repeated within an
/// append or across the group's appends to one conversation counts for its first occurrence;
/// ids already stored are skipped. Each stored event gets the next dense position of its
/// conversation: under the append lock (PostgreSQL) or the single writer (SQLite) no other
/// append runs, so positions have no gap.
fn append_all(
    conn: &mut DbConnection,
    appends: &[&Append],
    quota: &EventQuota,
) -> Result<Vec<Option<AppendOutcome>>, StorageError> {
    lock_appends(conn)?;
    let ids: Vec<String> = appends
        .iter()
        .map(|p| p.conversation.id.to_string())
        .collect();
    let mut order: Vec<&str> = Vec::new();
    for id in &ids {
        if !order.contains(&id.as_str()) {
            order.push(id);
        }
    }
    let usage = conversation_usage(conn, &order)?;
    // Every (conversation, id) of the group and each conversation's quota notice: which are
    // stored already.
    let mut wanted: HashSet<(&str, &str)> = HashSet::new();
    for (i, p) in appends.iter().enumerate() {
        wanted.extend(
            p.events
                .iter()
                .map(|e| (ids[i].as_str(), e.event_id.as_str())),
        );
    }
    let notice_ids: HashMap<&str, String> = order
        .iter()
        .map(|c| {
            (
                *c,
                quota_notice_id(appends[first_of(&ids, c)].conversation.id),
            )
        })
        .collect();
    wanted.extend(notice_ids.iter().map(|(c, n)| (*c, n.as_str())));
    let stored_ids = already_stored(conn, &order, &wanted)?;
    let noticed: HashSet<&str> = notice_ids
        .iter()
        .filter(|(c, n)| stored_ids.contains(&((**c).to_owned(), (*n).clone())))
        .map(|(c, _)| *c)
        .collect();
    let Judged {
        refused,
        notices,
        kept,
    } = judge(
        conn,
        appends,
        &ids,
        &order,
        &usage,
        &stored_ids,
        &noticed,
        quota,
    )?;
    // One touch per conversation with something to store, in first-appearance order;
    // `next` holds the next position of each conversation that accepted the append (-1:
    // nothing to store, and writable).
    let mut next: HashMap<&str, Option<i64>> = HashMap::new();
    for conv in &order {
        let accepted = || {
            appends
                .iter()
                .enumerate()
                .filter(|(i, _)| ids[*i] == *conv && refused[*i].is_none())
                .map(|(_, q)| *q)
        };
        let first = appends[first_of(&ids, conv)];
        if accepted().next().is_none() && !notices.contains_key(conv) {
            // Every append refused and the notice already there: nothing to write. A
            // conversation of another organization or owner stays refused as such.
            let writable = usage.get(*conv).is_none_or(|u| {
                u.org_id == first.conversation.org_id.to_string()
                    && u.owner_id == first.conversation.owner_id.to_string()
            });
            next.insert(conv, writable.then_some(-1));
            continue;
        }
        let status = accepted().filter_map(|q| q.status).next_back();
        let details = accepted().fold(RunDetails::default(), |d, q| d.then(q.details.clone()));
        let now = appends
            .iter()
            .zip(&ids)
            .filter(|(_, id)| id == conv)
            .map(|(q, _)| q.now)
            .max()
            .unwrap_or(first.now);
        next.insert(
            conv,
            touch_conversation(conn, &first.conversation, status, &details, now)?,
        );
    }
    let first_count: HashMap<&str, i64> = next
        .iter()
        .filter_map(|(c, n)| n.map(|n| (*c, n)))
        .collect();
    let mut rows: Vec<EventRow<'_>> = Vec::new();
    let mut stored = vec![0usize; appends.len()];
    let mut added_bytes: HashMap<&str, i64> = HashMap::new();
    let notice_rows = notices.values().map(|(i, n)| (*i, n));
    for (i, e) in kept.into_iter().chain(notice_rows) {
        let conv = ids[i].as_str();
        let slot = next.get_mut(conv).and_then(Option::as_mut);
        let Some(position) = slot.filter(|p| **p >= 0) else {
            continue;
        };
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
        *added_bytes.entry(conv).or_default() += e.payload.len() as i64;
        if refused[i].is_none() {
            stored[i] += 1;
        }
    }
    insert_rows(conn, &rows)?;
    for conv in &order {
        let (Some(Some(count)), Some(before)) = (next.get(conv), first_count.get(conv)) else {
            continue;
        };
        if count == before {
            continue;
        }
        let bytes = added_bytes.get(conv).copied().unwrap_or(0);
        native!(&mut *conn, |c| diesel::update(
            conversations::table.filter(conversations::id.eq(*conv))
        )
        .set((
            conversations::event_count.eq(*count),
            conversations::event_bytes.eq(conversations::event_bytes + bytes),
        ))
        .execute(c))
        .map_err(db_err)?;
        let org = usage.get(*conv).map_or_else(
            || {
                appends[first_of(&ids, conv)]
                    .conversation
                    .org_id
                    .to_string()
            },
            |u| u.org_id.clone(),
        );
        add_org_usage(conn, &org, count - before, bytes)?;
        notify_appended(conn, conv, *count)?;
    }
    Ok(appends
        .iter()
        .enumerate()
        .map(|(i, p)| {
            next[ids[i].as_str()].map(|count| AppendOutcome {
                stored: stored[i],
                skipped: p.events.len() - stored[i],
                event_count: count.max(0),
                refused: refused[i],
            })
        })
        .collect())
}

/// The index of the group's first append to `conv`.
fn first_of(ids: &[String], conv: &str) -> usize {
    ids.iter().position(|i| i == conv).unwrap_or(0)
}

/// What [`judge`] decided: each append's refusal (beside the group), the notice each refused
/// conversation gets now (with the index of an append to it), and the events to store (with
/// their append's index), in group order.
struct Judged<'a, 'e> {
    refused: Vec<Option<AppendRefusal>>,
    notices: HashMap<&'a str, (usize, NewEvent)>,
    kept: Vec<(usize, &'e NewEvent)>,
}

/// Judges the group's appends by `quota` in group order, each as if alone after the ones
/// before it: what its conversation and organization hold (stored, plus the accepted appends
/// and notices before it) and its new events (the first occurrence of each id not stored
/// already, nor taken by an accepted append before it). A refused append's conversation gets
/// its notice unless it has one (`noticed`) or one is already due; the notice then counts as
/// held for the appends after it.
#[allow(clippy::too_many_arguments)]
fn judge<'a, 'e>(
    conn: &mut DbConnection,
    appends: &[&'e Append],
    ids: &'a [String],
    order: &[&'a str],
    usage: &HashMap<String, ConversationUsage>,
    stored_ids: &HashSet<(String, String)>,
    noticed: &HashSet<&str>,
    quota: &EventQuota,
) -> Result<Judged<'a, 'e>, StorageError> {
    let org_of = |conv: &str| {
        usage.get(conv).map_or_else(
            || appends[first_of(ids, conv)].conversation.org_id.to_string(),
            |u| u.org_id.clone(),
        )
    };
    let mut org_held: HashMap<String, i64> = match quota.max_bytes_per_org {
        Some(_) => {
            let orgs: Vec<String> = order.iter().map(|c| org_of(c)).collect();
            let orgs: Vec<&str> = orgs.iter().map(String::as_str).collect();
            org_bytes(conn, &orgs)?
        }
        None => HashMap::new(),
    };
    let mut conv_held: HashMap<&str, (i64, i64)> = order
        .iter()
        .map(|c| (*c, usage.get(*c).map_or((0, 0), |u| (u.events, u.bytes))))
        .collect();
    let mut taken: HashSet<(&str, &str)> = HashSet::new();
    let mut judged = Judged {
        refused: vec![None; appends.len()],
        notices: HashMap::new(),
        kept: Vec::new(),
    };
    for (i, conv) in ids.iter().enumerate() {
        let mut mine: HashSet<&str> = HashSet::new();
        let new: Vec<&'e NewEvent> = appends[i]
            .events
            .iter()
            .filter(|e| {
                !taken.contains(&(conv.as_str(), e.event_id.as_str()))
                    && !stored_ids.contains(&(conv.clone(), e.event_id.clone()))
                    && mine.insert(e.event_id.as_str())
            })
            .collect();
        let bytes: i64 = new.iter().map(|e| e.payload.len() as i64).sum();
        let org = org_of(conv);
        let (conversation_events, conversation_bytes) = conv_held[conv.as_str()];
        let held = Held {
            conversation_events,
            conversation_bytes,
            org_bytes: org_held.get(&org).copied().unwrap_or(0),
        };
        let (events, bytes) = match quota.exceeded_by(held, new.len() as i64, bytes) {
            None => {
                taken.extend(new.iter().map(|e| (conv.as_str(), e.event_id.as_str())));
                let n = new.len() as i64;
                judged.kept.extend(new.into_iter().map(|e| (i, e)));
                (n, bytes)
            }
            Some(exceeded) => {
                judged.refused[i] = Some(AppendRefusal::Quota(exceeded));
                if noticed.contains(conv.as_str()) || judged.notices.contains_key(conv.as_str()) {
                    continue;
                }
                let notice = quota_notice(appends[i].conversation.id, &exceeded);
                let size = notice.payload.len() as i64;
                judged.notices.insert(conv, (i, notice));
                (1, size)
            }
        };
        if let Some(h) = conv_held.get_mut(conv.as_str()) {
            *h = (h.0 + events, h.1 + bytes);
        }
        *org_held.entry(org).or_default() += bytes;
    }
    Ok(judged)
}

/// Inserts the rows: one multi-row insert per chunk on PostgreSQL; on SQLite one cached
/// single-row INSERT per event (diesel runs a SQLite batch insert in a transaction of its
/// own, which cannot nest in ours; in process, no round trips).
fn insert_rows(conn: &mut DbConnection, rows: &[EventRow<'_>]) -> Result<(), StorageError> {
    match conn {
        DbConnection::Postgres(c) => {
            for chunk in rows.chunks(ID_CHUNK) {
                diesel::insert_into(events::table)
                    .values(chunk)
                    .execute(c)
                    .map_err(db_err)?;
            }
        }
        DbConnection::Sqlite(c) => {
            for row in rows {
                diesel::insert_into(events::table)
                    .values(row)
                    .execute(c)
                    .map_err(db_err)?;
            }
        }
    }
    Ok(())
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
