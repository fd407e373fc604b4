//! The event log ([`EventStore`]): appends (group-committed, [`super::group_commit`]), keyset
//! search, count and batch get.

use diesel::prelude::*;
use switchboard_domain::events::{
    AppendOutcome, EventFilter, PositionedEvent, SearchQuery, SortOrder, StoredEvent,
};
use switchboard_domain::ports::{Append, EventPayload, EventStore};
use switchboard_domain::{ConversationId, StorageError};
use time::{OffsetDateTime, PrimitiveDateTime};

use super::DieselStore;
use super::rows::{ID_CHUNK, db_err, from_db, to_db};
use crate::connection::DbConnection;
use crate::schema::{conversations, events};

/// Narrows a boxed query of a conversation's events to those matching an [`EventFilter`]
/// (spec §4.1: kind, instants at or after, strictly before): the one place the filter is
/// written, for search and count alike, on either backend's boxed query.
macro_rules! matching {
    ($query:expr, $filter:expr) => {{
        let filter: &EventFilter = $filter;
        let mut q = $query;
        if let Some(k) = filter.kind {
            q = q.filter(events::kind.eq(k.as_str()));
        }
        if let Some(t) = filter.timestamp_gte {
            q = q.filter(events::ts.ge(to_db(t)));
        }
        if let Some(t) = filter.timestamp_lt {
            q = q.filter(events::ts.lt(to_db(t)));
        }
        q
    }};
}

impl EventStore for DieselStore {
    /// Group commit: concurrent appends are combined into one transaction (see
    /// `AppendCombiner`), so the commit, its fsync and the append lock are paid once per group
    /// rather than once per batch.
    fn append_events(&self, append: Append) -> Result<Option<AppendOutcome>, StorageError> {
        self.append_grouped(append)
    }

    fn search_events(
        &self,
        conversation: ConversationId,
        query: &SearchQuery,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        let mut conn = self.conn()?;
        let conv = conversation.to_string();
        let rows: Vec<(i64, PrimitiveDateTime, String)> = native!(&mut *conn, |c| {
            let mut q = matching!(
                events::table
                    .filter(events::conversation_id.eq(&conv))
                    .select((events::seq, events::ts, events::payload))
                    .into_boxed(),
                &query.filter
            );
            match (query.sort, query.after) {
                // The redundant `ts >=` / `ts <=` bound gives the planner an index range
                // (ARCHITECTURE.md: the OR alone is a full scan on PostgreSQL).
                (SortOrder::Timestamp, Some(after)) => {
                    let t = to_db(after.ts);
                    q = q.filter(events::ts.ge(t)).filter(
                        events::ts
                            .gt(t)
                            .or(events::ts.eq(t).and(events::seq.gt(after.seq))),
                    );
                }
                (SortOrder::TimestampDesc, Some(after)) => {
                    let t = to_db(after.ts);
                    q = q.filter(events::ts.le(t)).filter(
                        events::ts
                            .lt(t)
                            .or(events::ts.eq(t).and(events::seq.lt(after.seq))),
                    );
                }
                _ => {}
            }
            q = match query.sort {
                SortOrder::Timestamp => q.order((events::ts.asc(), events::seq.asc())),
                SortOrder::TimestampDesc => q.order((events::ts.desc(), events::seq.desc())),
            };
            q.limit(i64::from(query.limit) + 1).load(c)
        })
        .map_err(db_err)?;
        Ok(rows
            .into_iter()
            .map(|(seq, ts, payload)| StoredEvent {
                seq,
                ts: from_db(ts),
                payload,
            })
            .collect())
    }

    fn count_events(
        &self,
        conversation: ConversationId,
        filter: &EventFilter,
    ) -> Result<i64, StorageError> {
        if filter.kind.is_none() && filter.timestamp_gte.is_none() && filter.timestamp_lt.is_none()
        {
            return self.event_count(conversation);
        }
        let mut conn = self.conn()?;
        let conv = conversation.to_string();
        native!(&mut *conn, |c| matching!(
            events::table
                .filter(events::conversation_id.eq(&conv))
                .into_boxed(),
            filter
        )
        .count()
        .get_result(c))
        .map_err(db_err)
    }

    fn get_events(
        &self,
        conversation: ConversationId,
        ids: &[String],
    ) -> Result<Vec<EventPayload>, StorageError> {
        let mut conn = self.conn()?;
        let conv = conversation.to_string();
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(ID_CHUNK) {
            let rows: Vec<(String, String)> = native!(&mut *conn, |c| events::table
                .filter(events::conversation_id.eq(&conv))
                .filter(events::event_id.eq_any(chunk))
                .select((events::event_id, events::payload))
                .load(c))
            .map_err(db_err)?;
            out.extend(
                rows.into_iter()
                    .map(|(event_id, payload)| EventPayload { event_id, payload }),
            );
        }
        Ok(out)
    }

    fn events_after(
        &self,
        conversation: ConversationId,
        after: i64,
        since: Option<OffsetDateTime>,
        limit: u32,
    ) -> Result<Vec<PositionedEvent>, StorageError> {
        let mut conn = self.conn()?;
        let conv = conversation.to_string();
        let rows: Vec<(i64, PrimitiveDateTime, String)> = native!(&mut *conn, |c| {
            let mut q = events::table
                .filter(events::conversation_id.eq(&conv))
                .filter(events::position.gt(after))
                .select((events::position, events::ts, events::payload))
                .into_boxed();
            if let Some(t) = since {
                q = q.filter(events::ts.ge(to_db(t)));
            }
            q.order(events::position.asc())
                .limit(i64::from(limit))
                .load(c)
        })
        .map_err(db_err)?;
        Ok(rows
            .into_iter()
            .map(|(position, ts, payload)| PositionedEvent {
                position,
                ts: from_db(ts),
                payload,
            })
            .collect())
    }

    fn event_count(&self, conversation: ConversationId) -> Result<i64, StorageError> {
        let mut conn = self.conn()?;
        let conv = conversation.to_string();
        let count: Option<i64> = native!(&mut *conn, |c| conversations::table
            .filter(conversations::id.eq(&conv))
            .select(conversations::event_count)
            .get_result(c)
            .optional())
        .map_err(db_err)?;
        Ok(count.unwrap_or(0))
    }
}
