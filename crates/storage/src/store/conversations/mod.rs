//! Conversations, one room (issue 20 item 2): here the conversation record
//! ([`ConversationStore`]): rows, the upsert of the agent server's `ConversationInfo`, and the
//! conversation upsert every event append makes ([`touch_conversation`]); `app.rs` app
//! conversations (`app_search.rs` their lists, `app_row.rs` the row both select), `start_tasks.rs` start tasks and the
//! conversation row a start creates, `pending.rs` the messages queued while a conversation
//! starts, `budgets.rs` their budgets.

mod app;
mod app_row;
mod app_search;
mod budgets;
mod pending;
mod start_tasks;
pub(super) mod tombstones;

use diesel::prelude::*;
use switchboard_domain::conversations::run_details::metrics_supersede;
use switchboard_domain::conversations::{Conversation, ExecutionStatus, RunDetails};
use switchboard_domain::ports::ConversationStore;
use switchboard_domain::{ConversationId, StorageError};
use time::{OffsetDateTime, PrimitiveDateTime};

use super::DieselStore;
use super::rows::{db_err, from_db, optional_row, parse_id, parse_opt_id, to_db};
use crate::connection::DbConnection;
use crate::schema::conversations;

#[derive(Queryable, Selectable)]
#[diesel(table_name = conversations)]
struct ConversationRow {
    id: String,
    org_id: String,
    owner_id: String,
    sandbox_id: Option<String>,
    title: Option<String>,
    execution_status: Option<String>,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

impl ConversationRow {
    fn conversation(self) -> Result<Conversation, StorageError> {
        Ok(Conversation {
            id: parse_id(&self.id, "conversation")?,
            org_id: parse_id(&self.org_id, "org")?,
            owner_id: parse_id(&self.owner_id, "user")?,
            sandbox_id: parse_opt_id(self.sandbox_id.as_deref(), "sandbox")?,
            title: self.title,
            // A value stored before statuses were checked, and not one OpenHands defines,
            // reads as unknown.
            execution_status: self
                .execution_status
                .as_deref()
                .and_then(ExecutionStatus::parse),
            created_at: from_db(self.created_at),
            updated_at: from_db(self.updated_at),
        })
    }
}

#[derive(QueryableByName)]
struct ReturnedCount {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    event_count: i64,
}

/// Creates the conversation if unknown, else sets its run state, LLM model and metrics (each
/// when given) and activity time, unless it belongs to another organization or was deleted
/// through the API (a tombstone and no row: [`tombstones`]): `None` then (nothing written), else how many events it has (the next event's position). One upsert
/// statement; concurrent first appends to a new conversation both succeed.
pub(super) fn touch_conversation(
    conn: &mut DbConnection,
    conv: &Conversation,
    status: Option<ExecutionStatus>,
    details: &RunDetails,
    now: OffsetDateTime,
) -> Result<Option<i64>, StorageError> {
    use diesel::sql_types::{BigInt, Nullable, Text, Timestamp};
    const UPSERT: &str = "INSERT INTO conversations (id, org_id, owner_id, sandbox_id, title, execution_status, metadata, llm_model, metrics, metrics_tokens, created_at, updated_at) \
        SELECT ?1, ?2, ?3, ?4, NULL, ?5, NULL, ?7, ?8, ?9, ?6, ?6 \
        WHERE NOT EXISTS (SELECT 1 FROM conversation_tombstones t WHERE t.id = ?1) \
        OR EXISTS (SELECT 1 FROM conversations k WHERE k.id = ?1) \
        ON CONFLICT (id) DO UPDATE SET execution_status = COALESCE(excluded.execution_status, conversations.execution_status), \
        llm_model = COALESCE(excluded.llm_model, conversations.llm_model), \
        metrics = CASE WHEN excluded.metrics IS NOT NULL AND (conversations.metrics_tokens IS NULL OR excluded.metrics_tokens >= conversations.metrics_tokens) THEN excluded.metrics ELSE conversations.metrics END, \
        metrics_tokens = CASE WHEN excluded.metrics IS NOT NULL AND (conversations.metrics_tokens IS NULL OR excluded.metrics_tokens >= conversations.metrics_tokens) THEN excluded.metrics_tokens ELSE conversations.metrics_tokens END, \
        updated_at = excluded.updated_at WHERE conversations.org_id = excluded.org_id AND conversations.owner_id = excluded.owner_id RETURNING event_count";
    let sql = match conn {
        DbConnection::Sqlite(_) => UPSERT.to_owned(),
        DbConnection::Postgres(_) => UPSERT.replace('?', "$"),
    };
    let q = diesel::sql_query(sql)
        .bind::<Text, _>(conv.id.to_string())
        .bind::<Text, _>(conv.org_id.to_string())
        .bind::<Text, _>(conv.owner_id.to_string())
        .bind::<Nullable<Text>, _>(conv.sandbox_id.map(|s| s.to_string()))
        .bind::<Nullable<Text>, _>(status.map(ExecutionStatus::as_str))
        .bind::<Timestamp, _>(to_db(now))
        .bind::<Nullable<Text>, _>(details.llm_model.as_deref())
        .bind::<Nullable<Text>, _>(details.metrics.as_deref())
        .bind::<Nullable<BigInt>, _>(details.metrics_tokens());
    let rows: Vec<ReturnedCount> = native!(conn, |c| q.load(c)).map_err(db_err)?;
    Ok(rows.first().map(|r| r.event_count))
}

/// What `upsert_conversation_info` reads of a stored conversation: org, owner, metadata,
/// title, run state, model, metrics and the tokens they count.
type StoredInfo = (
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
);

/// The org, owner, metadata and the columns an info sets, of a conversation if it exists.
fn conversation_org(conn: &mut DbConnection, id: &str) -> Result<Option<StoredInfo>, StorageError> {
    native!(conn, |c| conversations::table
        .filter(conversations::id.eq(id))
        .select((
            conversations::org_id,
            conversations::owner_id,
            conversations::metadata,
            conversations::title,
            conversations::execution_status,
            conversations::llm_model,
            conversations::metrics,
            conversations::metrics_tokens,
        ))
        .get_result::<StoredInfo>(c)
        .optional())
    .map_err(db_err)
}

/// Whether writing this info would change nothing: the same metadata, and every column it
/// sets already so (an event may have changed one since the info was stored).
fn unchanged(
    stored: &StoredInfo,
    conv: &Conversation,
    details: &RunDetails,
    metadata: &str,
) -> bool {
    let same =
        |given: Option<&str>, now: &Option<String>| given.is_none() || given == now.as_deref();
    stored.2.as_deref() == Some(metadata)
        && same(conv.title.as_deref(), &stored.3)
        && same(
            conv.execution_status.map(ExecutionStatus::as_str),
            &stored.4,
        )
        && same(details.llm_model.as_deref(), &stored.5)
        && same(details.metrics.as_deref(), &stored.6)
}

fn insert_conversation(
    conn: &mut DbConnection,
    conv: &Conversation,
    details: &RunDetails,
    metadata: Option<&str>,
) -> Result<(), StorageError> {
    diesel::insert_into(conversations::table)
        .values((
            conversations::id.eq(conv.id.to_string()),
            conversations::org_id.eq(conv.org_id.to_string()),
            conversations::owner_id.eq(conv.owner_id.to_string()),
            conversations::sandbox_id.eq(conv.sandbox_id.map(|s| s.to_string())),
            conversations::title.eq(&conv.title),
            conversations::execution_status.eq(conv.execution_status.map(ExecutionStatus::as_str)),
            conversations::metadata.eq(metadata),
            conversations::llm_model.eq(details.llm_model.as_deref()),
            conversations::metrics.eq(details.metrics.as_deref()),
            conversations::metrics_tokens.eq(details.metrics_tokens()),
            conversations::created_at.eq(to_db(conv.created_at)),
            conversations::updated_at.eq(to_db(conv.updated_at)),
        ))
        .execute(conn)
        .map_err(db_err)?;
    Ok(())
}

impl ConversationStore for DieselStore {
    fn conversation(&self, id: ConversationId) -> Result<Option<Conversation>, StorageError> {
        let mut conn = self.conn()?;
        let id = id.to_string();
        optional_row(
            native!(&mut *conn, |c| conversations::table
                .filter(conversations::id.eq(&id))
                .select(ConversationRow::as_select())
                .get_result(c)),
            ConversationRow::conversation,
        )
    }

    /// Group commit: concurrent appends are combined into one transaction (see
    /// `AppendCombiner` in this module), so the commit, its fsync and the append lock are paid once per
    /// group rather than once per batch.
    fn upsert_conversation_info(
        &self,
        conversation: &Conversation,
        details: &RunDetails,
        metadata: &str,
        now: OffsetDateTime,
    ) -> Result<bool, StorageError> {
        let conv_id = conversation.id.to_string();
        self.write(|conn| match conversation_org(conn, &conv_id)? {
            // A sandbox writes only its owner's conversations of its organization.
            Some((org, owner, ..))
                if org != conversation.org_id.to_string()
                    || owner != conversation.owner_id.to_string() =>
            {
                Ok(false)
            }
            // The same info again (a listing of the pull path): nothing changes.
            Some(stored) if unchanged(&stored, conversation, details, metadata) => Ok(true),
            Some(stored) => {
                let target = conversations::table.filter(conversations::id.eq(&conv_id));
                diesel::update(target)
                    .set((
                        conversations::metadata.eq(Some(metadata)),
                        conversations::updated_at.eq(to_db(now)),
                    ))
                    .execute(conn)
                    .map_err(db_err)?;
                if let Some(t) = &conversation.title {
                    diesel::update(target)
                        .set(conversations::title.eq(Some(t)))
                        .execute(conn)
                        .map_err(db_err)?;
                }
                if let Some(s) = conversation.execution_status {
                    diesel::update(target)
                        .set(conversations::execution_status.eq(Some(s.as_str())))
                        .execute(conn)
                        .map_err(db_err)?;
                }
                if let Some(m) = &details.llm_model {
                    diesel::update(target)
                        .set(conversations::llm_model.eq(Some(m)))
                        .execute(conn)
                        .map_err(db_err)?;
                }
                if let Some(m) = &details.metrics
                    && metrics_supersede(details.metrics_tokens(), stored.7)
                {
                    diesel::update(target)
                        .set((
                            conversations::metrics.eq(Some(m)),
                            conversations::metrics_tokens.eq(details.metrics_tokens()),
                        ))
                        .execute(conn)
                        .map_err(db_err)?;
                }
                Ok(true)
            }
            // A conversation deleted through the API stays deleted (its agent server's
            // `deleting` info, or a listing of it, may arrive after the delete).
            None if tombstones::buried(conn, &conv_id)? => Ok(false),
            None => {
                insert_conversation(conn, conversation, details, Some(metadata))?;
                Ok(true)
            }
        })
    }
}
