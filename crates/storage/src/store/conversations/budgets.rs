//! Conversations' budgets ([`BudgetStore`]; migration `2026-12-08-000001_conversation_budgets`):
//! the budget columns read with the conversation, the conditional update that stops a
//! conversation once, and the sweep's list of stopped conversations still running.

use diesel::prelude::*;
use switchboard_domain::conversations::ExecutionStatus;
use switchboard_domain::conversations::budget::BudgetRecord;
use switchboard_domain::ports::BudgetStore;
use switchboard_domain::{ConversationId, StorageError};
use time::{OffsetDateTime, PrimitiveDateTime};

use super::ConversationRow;
use crate::connection::DbConnection;
use crate::schema::conversations;
use crate::store::DieselStore;
use crate::store::rows::{db_err, from_db, optional_row, parse_id, to_db};

/// The conversation row with its budget columns and stored metrics.
type BudgetRow = (
    ConversationRow,
    Option<f64>,
    Option<PrimitiveDateTime>,
    Option<String>,
);

impl BudgetStore for DieselStore {
    fn conversation_budget(
        &self,
        id: ConversationId,
    ) -> Result<Option<BudgetRecord>, StorageError> {
        let mut conn = self.conn()?;
        let id = id.to_string();
        optional_row(
            native!(&mut *conn, |c| conversations::table
                .filter(conversations::id.eq(&id))
                .select((
                    ConversationRow::as_select(),
                    conversations::max_budget_per_task,
                    conversations::budget_reached_at,
                    conversations::metrics,
                ))
                .get_result::<BudgetRow>(c)),
            |(row, max_budget_per_task, reached_at, metrics)| {
                Ok(BudgetRecord {
                    conversation: row.conversation()?,
                    max_budget_per_task,
                    reached_at: reached_at.map(from_db),
                    metrics,
                })
            },
        )
    }

    fn mark_budget_reached(
        &self,
        id: ConversationId,
        cost: f64,
        now: OffsetDateTime,
    ) -> Result<bool, StorageError> {
        let id = id.to_string();
        let finished = ExecutionStatus::Finished.as_str();
        let at = to_db(now);
        let marked = self.write(|conn: &mut DbConnection| {
            diesel::update(
                conversations::table
                    .filter(conversations::id.eq(&id))
                    .filter(conversations::budget_reached_at.is_null())
                    .filter(conversations::max_budget_per_task.le(cost))
                    .filter(
                        conversations::execution_status
                            .is_null()
                            .or(conversations::execution_status.ne(finished)),
                    ),
            )
            .set((
                conversations::budget_reached_at.eq(Some(at)),
                conversations::updated_at.eq(at),
            ))
            .execute(conn)
            .map_err(db_err)
        })?;
        Ok(marked == 1)
    }

    fn budget_stops_running(
        &self,
        after: OffsetDateTime,
        before: OffsetDateTime,
        limit: u32,
    ) -> Result<Vec<ConversationId>, StorageError> {
        let mut conn = self.conn()?;
        let running = ExecutionStatus::Running.as_str();
        let ids: Vec<String> = native!(&mut *conn, |c| conversations::table
            .filter(conversations::budget_reached_at.gt(to_db(after)))
            .filter(conversations::budget_reached_at.le(to_db(before)))
            .filter(conversations::execution_status.eq(running))
            .order(conversations::budget_reached_at.asc())
            .select(conversations::id)
            .limit(i64::from(limit))
            .load(c))
        .map_err(db_err)?;
        ids.iter().map(|id| parse_id(id, "conversation")).collect()
    }
}
