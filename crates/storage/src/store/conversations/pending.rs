//! Pending messages ([`PendingMessageStore`], issue 22): the `pending_messages` table.

use diesel::prelude::*;
use switchboard_domain::conversations::workspace::PendingMessage;
use switchboard_domain::ports::PendingMessageStore;
use switchboard_domain::{ConversationId, StorageError};
use time::PrimitiveDateTime;

use crate::schema::pending_messages;
use crate::store::DieselStore;
use crate::store::rows::{db_err, from_db, parse_id, to_db};

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = pending_messages)]
struct PendingRow {
    id: String,
    conversation_id: String,
    org_id: String,
    created_by_user_id: String,
    body: String,
    created_at: PrimitiveDateTime,
}

impl PendingRow {
    fn message(self) -> Result<PendingMessage, StorageError> {
        Ok(PendingMessage {
            id: parse_id(&self.id, "pending message")?,
            conversation_id: parse_id(&self.conversation_id, "conversation")?,
            org_id: parse_id(&self.org_id, "org")?,
            created_by_user_id: parse_id(&self.created_by_user_id, "user")?,
            body: serde_json::from_str(&self.body).map_err(|e| {
                StorageError::Other(format!("stored pending message is not JSON: {e}").into())
            })?,
            created_at: from_db(self.created_at),
        })
    }
}

impl PendingMessageStore for DieselStore {
    /// One write transaction: the conversation's count, then the insert.
    fn queue_pending_message(
        &self,
        message: &PendingMessage,
        max: u64,
    ) -> Result<Option<u64>, StorageError> {
        let conversation = message.conversation_id.to_string();
        let row = PendingRow {
            id: message.id.to_string(),
            conversation_id: conversation.clone(),
            org_id: message.org_id.to_string(),
            created_by_user_id: message.created_by_user_id.to_string(),
            body: message.body.to_string(),
            created_at: to_db(message.created_at),
        };
        self.write(|conn| {
            let queued: i64 = pending_messages::table
                .filter(pending_messages::conversation_id.eq(&conversation))
                .count()
                .get_result(conn)
                .map_err(db_err)?;
            let queued = u64::try_from(queued).unwrap_or(0);
            if queued >= max {
                return Ok(None);
            }
            diesel::insert_into(pending_messages::table)
                .values(&row)
                .execute(conn)
                .map_err(db_err)?;
            Ok(Some(queued + 1))
        })
    }

    /// One write transaction: the rows read, then deleted by id (a row another caller took
    /// first is not returned).
    fn take_pending_messages(
        &self,
        conversation: ConversationId,
    ) -> Result<Vec<PendingMessage>, StorageError> {
        let conversation = conversation.to_string();
        self.write(|conn| {
            let rows: Vec<PendingRow> = pending_messages::table
                .filter(pending_messages::conversation_id.eq(&conversation))
                .order((pending_messages::created_at, pending_messages::id))
                .select(PendingRow::as_select())
                .load(conn)
                .map_err(db_err)?;
            let mut taken = Vec::with_capacity(rows.len());
            for row in rows {
                let n = diesel::delete(pending_messages::table.find(&row.id))
                    .execute(conn)
                    .map_err(db_err)?;
                if n == 1 {
                    taken.push(row.message()?);
                }
            }
            Ok(taken)
        })
    }
}
