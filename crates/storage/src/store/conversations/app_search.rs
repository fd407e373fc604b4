//! The app-conversation search and count (issue 23): every order and filter on an index that
//! matches it (migration `2026-11-26-000001`), counts from the maintained counters, and
//! walks in the `UPDATED_AT` orders placed as of the instant they began (API.md, "Paging
//! while conversations change").

use std::collections::HashMap;

use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{Bool, Text};
use switchboard_domain::StorageError;
use switchboard_domain::conversations::app::{
    AppConversationFilter, AppConversationQuery, SortOrder,
};
use time::{OffsetDateTime, PrimitiveDateTime};

use super::app_row::AppConversationRow;
use crate::connection::{BackendKind, DbConnection};
use crate::schema::{conversation_counts, conversation_moves, conversations};
use crate::store::rows::ID_CHUNK;
use crate::store::rows::{contains_pattern, db_err, from_db, lower, to_db};

/// On SQLite, `title__contains` of three characters or more as an FTS5 phrase for the trigram
/// index `conversations_title` (a superset of the `LIKE`'s matches: the index folds case
/// beyond ASCII); shorter texts have no trigram and are matched by the `LIKE` alone.
/// PostgreSQL's trigram index serves the `LIKE` itself.
fn fts_phrase(kind: BackendKind, text: Option<&str>) -> Option<String> {
    let text = text?;
    (kind == BackendKind::Sqlite && text.chars().count() >= 3)
        .then(|| format!("\"{}\"", text.replace('"', "\"\"")))
}

/// At most this many titles matched through the FTS5 index are looked up by rowid; more
/// matches are dense enough for the order's index with the `LIKE` as a filter.
const FTS_ROWIDS: i64 = 2_000;

/// What a query narrows by, prepared once for search and count.
struct Narrowing {
    org: String,
    owner: Option<String>,
    pattern: Option<String>,
    /// SQLite: the rowids of the titles the FTS5 index matches, when few.
    rowids: Option<Vec<i64>>,
}

#[derive(QueryableByName)]
struct RowId {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    rowid: i64,
}

impl Narrowing {
    fn new(
        conn: &mut DbConnection,
        kind: BackendKind,
        query: &AppConversationQuery,
    ) -> Result<Self, StorageError> {
        let title = query.filter.title_contains.as_deref();
        let rowids = match fts_phrase(kind, title) {
            Some(phrase) => {
                // Every conversation's title, all organizations: the index has no org.
                let ids: Vec<RowId> = diesel::sql_query(
                    "SELECT rowid FROM conversations_title WHERE conversations_title MATCH ? LIMIT ?",
                )
                .bind::<Text, _>(phrase)
                .bind::<diesel::sql_types::BigInt, _>(FTS_ROWIDS + 1)
                .load(conn)
                .map_err(db_err)?;
                (ids.len() as i64 <= FTS_ROWIDS).then(|| ids.into_iter().map(|r| r.rowid).collect())
            }
            None => None,
        };
        Ok(Narrowing {
            org: query.org.to_string(),
            owner: query.owner.map(|o| o.to_string()),
            pattern: title.map(contains_pattern),
            rowids,
        })
    }
}

/// `conversations.rowid IN (…)` (SQLite), or false for none.
fn rowid_in(rowids: &[i64]) -> diesel::expression::SqlLiteral<Bool> {
    if rowids.is_empty() {
        return sql::<Bool>("1 = 0");
    }
    let list = rowids
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    sql::<Bool>(&format!("conversations.rowid IN ({list})"))
}

/// Narrows a boxed query of conversations to one organization (and owner) and an
/// [`AppConversationFilter`]: the one place the filters are written, for search and count.
/// Top-level conversations (`parent_conversation_id IS NULL`, the default) are read through
/// the partial indexes `conversations_top_*`, a member's through the `…_owner_…` ones.
macro_rules! matching {
    ($q:expr, $n:expr, $filter:expr) => {{
        let n: &Narrowing = $n;
        let filter: &AppConversationFilter = $filter;
        let mut q = $q.filter(conversations::org_id.eq(&n.org));
        if let Some(owner) = &n.owner {
            q = q.filter(conversations::owner_id.eq(owner));
        }
        if let Some(p) = &n.pattern {
            q = q.filter(lower(conversations::title).like(p).escape('\\'));
        }
        if let Some(rowids) = &n.rowids {
            q = q.filter(rowid_in(rowids));
        }
        if let Some(t) = filter.created_at_gte {
            q = q.filter(conversations::created_at.ge(to_db(t)));
        }
        if let Some(t) = filter.created_at_lt {
            q = q.filter(conversations::created_at.lt(to_db(t)));
        }
        if let Some(t) = filter.updated_at_gte {
            q = q.filter(conversations::updated_at.ge(to_db(t)));
        }
        if let Some(t) = filter.updated_at_lt {
            q = q.filter(conversations::updated_at.lt(to_db(t)));
        }
        if let Some(s) = filter.sandbox_id_eq {
            q = q.filter(conversations::sandbox_id.eq(s.to_string()));
        }
        if !filter.include_sub_conversations {
            q = q.filter(conversations::parent_conversation_id.is_null());
        }
        q
    }};
}

/// The instant a row is listed at in `order` (outside a walk's moved rows).
fn sort_at(order: SortOrder, row: &AppConversationRow) -> PrimitiveDateTime {
    if order.by_updated() {
        row.updated_at
    } else {
        row.created_at
    }
}

/// Whether `(at, id)` comes after the cursor's position in its order.
fn after_cursor(
    order: SortOrder,
    at: PrimitiveDateTime,
    id: &str,
    c: &(PrimitiveDateTime, String),
) -> bool {
    let key = (at, id);
    let cur = (c.0, c.1.as_str());
    if order.descending() {
        key < cur
    } else {
        key > cur
    }
}

/// One page of a search: the rows with the instant each is listed at. With `query.as_of` in
/// an `UPDATED_AT` order, the rows unchanged since then are read by the index (bounded by
/// `updated_at <= as_of`) and merged with those that moved since, placed where they stood
/// ([`moved_since`]).
pub(super) fn search(
    conn: &mut DbConnection,
    kind: BackendKind,
    query: &AppConversationQuery,
) -> Result<Vec<(AppConversationRow, OffsetDateTime)>, StorageError> {
    let n = Narrowing::new(conn, kind, query)?;
    let order = query.order;
    let as_of = query.as_of.filter(|_| order.by_updated()).map(to_db);
    let after = query
        .after
        .map(|a| (to_db(a.at), a.id.hyphenated().to_string()));
    let limit = query.limit as usize;
    let rows = ordered_page(conn, &n, query, as_of, after.as_ref())?;
    let mut listed: Vec<(AppConversationRow, PrimitiveDateTime)> = rows
        .into_iter()
        .map(|r| (sort_at(order, &r), r))
        .map(|(at, r)| (r, at))
        .collect();
    if let Some(t0) = as_of {
        listed.extend(moved_page(conn, &n, query, t0, after.as_ref())?);
        listed.sort_by(|(a, at_a), (b, at_b)| {
            let o = (at_a, &a.id).cmp(&(at_b, &b.id));
            if order.descending() { o.reverse() } else { o }
        });
        listed.truncate(limit);
    }
    Ok(listed.into_iter().map(|(r, at)| (r, from_db(at))).collect())
}

/// The keyset query of a page: `limit` rows after the cursor in `query.order`, with
/// `updated_at <= as_of` in a walk.
fn ordered_page(
    conn: &mut DbConnection,
    n: &Narrowing,
    query: &AppConversationQuery,
    as_of: Option<PrimitiveDateTime>,
    after: Option<&(PrimitiveDateTime, String)>,
) -> Result<Vec<AppConversationRow>, StorageError> {
    let order = query.order;
    let limit = i64::from(query.limit);
    native!(conn, |c| {
        let mut q = matching!(
            conversations::table
                .select(AppConversationRow::as_select())
                .into_boxed(),
            n,
            &query.filter
        );
        // A descending page after a cursor (placed at or before T0) is bounded by the
        // cursor alone: a second upper bound made SQLite range on `<= T0` and filter 50,000
        // rows by the cursor at depth 50,000.
        let bounded_by_cursor =
            order.descending() && after.is_some_and(|(t, _)| as_of.is_some_and(|t0| *t <= t0));
        if let Some(t0) = as_of.filter(|_| !bounded_by_cursor) {
            q = q.filter(conversations::updated_at.le(t0));
        }
        // The redundant `>=` / `<=` bound gives the planner an index range (the OR alone
        // may be a full scan on PostgreSQL).
        use SortOrder as O;
        if let Some((t, id)) = after {
            q = match order {
                O::CreatedAt => q.filter(conversations::created_at.ge(*t)).filter(
                    conversations::created_at
                        .gt(*t)
                        .or(conversations::created_at
                            .eq(*t)
                            .and(conversations::id.gt(id))),
                ),
                O::CreatedAtDesc => q.filter(conversations::created_at.le(*t)).filter(
                    conversations::created_at
                        .lt(*t)
                        .or(conversations::created_at
                            .eq(*t)
                            .and(conversations::id.lt(id))),
                ),
                O::UpdatedAt => q.filter(conversations::updated_at.ge(*t)).filter(
                    conversations::updated_at
                        .gt(*t)
                        .or(conversations::updated_at
                            .eq(*t)
                            .and(conversations::id.gt(id))),
                ),
                O::UpdatedAtDesc => q.filter(conversations::updated_at.le(*t)).filter(
                    conversations::updated_at
                        .lt(*t)
                        .or(conversations::updated_at
                            .eq(*t)
                            .and(conversations::id.lt(id))),
                ),
            };
        }
        q = match order {
            O::CreatedAt => q.order((conversations::created_at.asc(), conversations::id.asc())),
            O::CreatedAtDesc => {
                q.order((conversations::created_at.desc(), conversations::id.desc()))
            }
            O::UpdatedAt => q.order((conversations::updated_at.asc(), conversations::id.asc())),
            O::UpdatedAtDesc => {
                q.order((conversations::updated_at.desc(), conversations::id.desc()))
            }
        };
        q.limit(limit).load(c)
    })
    .map_err(db_err)
}

/// The conversations of the organization whose `updated_at` changed after `t0`, each with
/// its `updated_at` as of `t0` (the old value of its first move after `t0`); those created
/// after `t0` have none and are left out. Read from `conversation_moves` by
/// `(org_id, new_updated_at)`: as many rows as moves since the walk began.
fn moved_since(
    conn: &mut DbConnection,
    org: &str,
    t0: PrimitiveDateTime,
) -> Result<HashMap<String, PrimitiveDateTime>, StorageError> {
    let moves: Vec<(String, PrimitiveDateTime, PrimitiveDateTime)> = native!(conn, |c| {
        conversation_moves::table
            .filter(conversation_moves::org_id.eq(org))
            .filter(conversation_moves::new_updated_at.gt(t0))
            .order(conversation_moves::new_updated_at.asc())
            .select((
                conversation_moves::conversation_id,
                conversation_moves::old_updated_at,
                conversation_moves::new_updated_at,
            ))
            .load(c)
    })
    .map_err(db_err)?;
    let mut first: HashMap<String, PrimitiveDateTime> = HashMap::new();
    let mut seen = std::collections::HashSet::new();
    for (id, old, _) in moves {
        if seen.insert(id.clone()) && old <= t0 {
            first.insert(id, old);
        }
    }
    Ok(first)
}

/// The rows of a walk begun at `t0` that moved since, placed at their `updated_at` as of
/// `t0`: the first `limit` after the cursor that still match the query (now `updated_at >
/// t0`; a row moved back to `t0` or before is read by [`ordered_page`]).
fn moved_page(
    conn: &mut DbConnection,
    n: &Narrowing,
    query: &AppConversationQuery,
    t0: PrimitiveDateTime,
    after: Option<&(PrimitiveDateTime, String)>,
) -> Result<Vec<(AppConversationRow, PrimitiveDateTime)>, StorageError> {
    let order = query.order;
    let mut candidates: Vec<(PrimitiveDateTime, String)> = moved_since(conn, &n.org, t0)?
        .into_iter()
        .map(|(id, at)| (at, id))
        .filter(|(at, id)| after.is_none_or(|c| after_cursor(order, *at, id, c)))
        .collect();
    candidates.sort();
    if order.descending() {
        candidates.reverse();
    }
    let limit = query.limit as usize;
    let mut out = Vec::new();
    for chunk in candidates.chunks(ID_CHUNK) {
        let ids: Vec<&str> = chunk.iter().map(|(_, id)| id.as_str()).collect();
        let rows: Vec<AppConversationRow> = native!(&mut *conn, |c| {
            matching!(
                conversations::table
                    .select(AppConversationRow::as_select())
                    .into_boxed(),
                n,
                &query.filter
            )
            .filter(conversations::id.eq_any(&ids))
            .filter(conversations::updated_at.gt(t0))
            .load(c)
        })
        .map_err(db_err)?;
        let mut by_id: HashMap<String, AppConversationRow> =
            rows.into_iter().map(|r| (r.id.clone(), r)).collect();
        for (at, id) in chunk {
            if let Some(r) = by_id.remove(id) {
                out.push((r, *at));
                if out.len() == limit {
                    return Ok(out);
                }
            }
        }
    }
    Ok(out)
}

/// How many conversations match: from `conversation_counts` (one row per owner and kind)
/// when the query narrows by organization, owner and `include_sub_conversations` only;
/// otherwise counted on the indexes that serve the search.
pub(super) fn count(
    conn: &mut DbConnection,
    kind: BackendKind,
    query: &AppConversationQuery,
) -> Result<u64, StorageError> {
    let f = &query.filter;
    let counted = AppConversationFilter {
        include_sub_conversations: f.include_sub_conversations,
        ..AppConversationFilter::default()
    };
    let n = Narrowing::new(conn, kind, query)?;
    if *f == counted {
        let rows: Vec<i64> = native!(conn, |c| {
            let mut q = conversation_counts::table
                .filter(conversation_counts::org_id.eq(&n.org))
                .select(conversation_counts::n)
                .into_boxed();
            if let Some(owner) = &n.owner {
                q = q.filter(conversation_counts::owner_id.eq(owner));
            }
            if !f.include_sub_conversations {
                q = q.filter(conversation_counts::sub.eq(false));
            }
            q.load(c)
        })
        .map_err(db_err)?;
        return Ok(rows.into_iter().sum::<i64>().max(0) as u64);
    }
    let total: i64 = native!(conn, |c| matching!(
        conversations::table.into_boxed(),
        &n,
        f
    )
    .count()
    .get_result(c))
    .map_err(db_err)?;
    Ok(total.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fts_phrases_are_quoted_and_need_three_characters() {
        assert_eq!(fts_phrase(BackendKind::Sqlite, Some("ab")), None);
        assert_eq!(
            fts_phrase(BackendKind::Sqlite, Some("a\"bc")).as_deref(),
            Some("\"a\"\"bc\"")
        );
        assert_eq!(fts_phrase(BackendKind::Postgres, Some("abc")), None);
    }
}
