//! Conversations, one room (issue 20 item 2): here the conversation record
//! ([`ConversationStore`]): rows, the upsert of the agent server's `ConversationInfo`, and the
//! conversation upsert every event append makes ([`touch_conversation`]); `app.rs` app
//! conversations (`app_search.rs` their lists, `app_row.rs` the row both select), `start_tasks.rs` start tasks and the
//! conversation row a start creates, `pending.rs` the messages queued while a conversation
//! starts.

mod app;
mod app_row;
mod app_search;
mod pending;
mod start_tasks;

use diesel::prelude::*;
use switchboard_domain::conversations::{Conversation, ExecutionStatus};
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

/// Creates the conversation if unknown, else sets its run state (when given) and activity
/// time, unless it belongs to another organization: `None` then (nothing written), else how
/// many events it has (the next event's position). One upsert statement; concurrent first
/// appends to a new conversation both succeed.
pub(super) fn touch_conversation(
    conn: &mut DbConnection,
    conv: &Conversation,
    status: Option<ExecutionStatus>,
    now: OffsetDateTime,
) -> Result<Option<i64>, StorageError> {
    use diesel::sql_types::{Nullable, Text, Timestamp};
    const UPSERT: &str = "INSERT INTO conversations (id, org_id, owner_id, sandbox_id, title, execution_status, metadata, created_at, updated_at) \
        VALUES (?1, ?2, ?3, ?4, NULL, ?5, NULL, ?6, ?6) \
        ON CONFLICT (id) DO UPDATE SET execution_status = COALESCE(excluded.execution_status, conversations.execution_status), \
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
        .bind::<Timestamp, _>(to_db(now));
    let rows: Vec<ReturnedCount> = native!(conn, |c| q.load(c)).map_err(db_err)?;
    Ok(rows.first().map(|r| r.event_count))
}

/// The org and owner of a conversation, if it exists.
fn conversation_org(
    conn: &mut DbConnection,
    id: &str,
) -> Result<Option<(String, String)>, StorageError> {
    native!(conn, |c| conversations::table
        .filter(conversations::id.eq(id))
        .select((conversations::org_id, conversations::owner_id))
        .get_result::<(String, String)>(c)
        .optional())
    .map_err(db_err)
}

fn insert_conversation(
    conn: &mut DbConnection,
    conv: &Conversation,
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
        metadata: &str,
        now: OffsetDateTime,
    ) -> Result<bool, StorageError> {
        let conv_id = conversation.id.to_string();
        self.write(|conn| match conversation_org(conn, &conv_id)? {
            // A sandbox writes only its owner's conversations of its organization.
            Some((org, owner))
                if org != conversation.org_id.to_string()
                    || owner != conversation.owner_id.to_string() =>
            {
                Ok(false)
            }
            Some(_) => {
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
                Ok(true)
            }
            None => {
                insert_conversation(conn, conversation, Some(metadata))?;
                Ok(true)
            }
        })
    }
}
