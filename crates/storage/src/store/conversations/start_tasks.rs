//! Start tasks (`start_tasks`, migration `…000004`) and the conversation row a start creates.

use diesel::prelude::*;
use switchboard_domain::conversations::ExecutionStatus;
use switchboard_domain::conversations::app::SortOrder;
use switchboard_domain::conversations::start_tasks::{StartTask, StartTaskId, StartTaskStatus};
use switchboard_domain::ports::{
    JoinSandbox, StaleStarts, StartClaim, StartTaskQuery, StartTaskStore, StartedConversation,
};
use switchboard_domain::sandboxes::records::SandboxRecord;
use switchboard_domain::{ConversationId, SandboxId, StorageError};
use time::{OffsetDateTime, PrimitiveDateTime};

use crate::connection::DbConnection;
use crate::schema::{conversations, start_task_counts, start_tasks};
use crate::store::DieselStore;
use crate::store::rows::{db_err, from_db, parse_id, parse_opt_id, to_db};
use crate::store::sandboxes::grouping;

/// The statuses after which a task moves no more.
const FINAL: [&str; 2] = ["READY", "ERROR"];
/// How many unclaimed tasks one claim tries, oldest first.
const CLAIM_CANDIDATES: i64 = 8;

#[derive(Queryable, Selectable)]
#[diesel(table_name = start_tasks)]
struct StartTaskRow {
    id: String,
    org_id: String,
    created_by_user_id: String,
    status: String,
    detail: Option<String>,
    conversation_id: String,
    sandbox_id: Option<String>,
    agent_server_url: Option<String>,
    request: String,
    secrets_sealed: Option<String>,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

impl StartTaskRow {
    fn task(self) -> Result<StartTask, StorageError> {
        Ok(StartTask {
            id: parse_id(&self.id, "start task")?,
            org_id: parse_id(&self.org_id, "org")?,
            created_by_user_id: parse_id(&self.created_by_user_id, "user")?,
            status: StartTaskStatus::parse(&self.status).ok_or_else(|| {
                StorageError::Other(format!("stored start task status {:?}", self.status).into())
            })?,
            detail: self.detail,
            conversation_id: parse_id(&self.conversation_id, "conversation")?,
            sandbox_id: parse_opt_id(self.sandbox_id.as_deref(), "sandbox")?,
            agent_server_url: self.agent_server_url,
            request: serde_json::from_str(&self.request)
                .map_err(|e| StorageError::Other(Box::new(e)))?,
            secrets_sealed: self.secrets_sealed,
            created_at: from_db(self.created_at),
            updated_at: from_db(self.updated_at),
        })
    }
}

fn tasks(rows: Vec<StartTaskRow>) -> Result<Vec<StartTask>, StorageError> {
    rows.into_iter().map(StartTaskRow::task).collect()
}

/// The boxed query of a search or count: organization, creator and filters.
macro_rules! filtered {
    ($q:expr, $query:expr) => {{
        let query: &StartTaskQuery = $query;
        let mut q = $q
            .filter(start_tasks::org_id.eq(query.org.to_string()))
            .into_boxed();
        if let Some(creator) = query.creator {
            q = q.filter(start_tasks::created_by_user_id.eq(creator.to_string()));
        }
        if let Some(c) = query.filter.conversation_id_eq {
            q = q.filter(start_tasks::conversation_id.eq(c.to_string()));
        }
        if let Some(t) = query.filter.created_at_gte {
            q = q.filter(start_tasks::created_at.ge(to_db(t)));
        }
        q
    }};
}

impl StartTaskStore for DieselStore {
    fn insert_start_task(&self, task: &StartTask) -> Result<(), StorageError> {
        let request = task.request.to_string();
        self.write(|conn| {
            diesel::insert_into(start_tasks::table)
                .values((
                    start_tasks::id.eq(task.id.to_string()),
                    start_tasks::org_id.eq(task.org_id.to_string()),
                    start_tasks::created_by_user_id.eq(task.created_by_user_id.to_string()),
                    start_tasks::status.eq(task.status.as_str()),
                    start_tasks::detail.eq(&task.detail),
                    start_tasks::conversation_id.eq(task.conversation_id.to_string()),
                    start_tasks::sandbox_id.eq(task.sandbox_id.map(|s| s.to_string())),
                    start_tasks::agent_server_url.eq(&task.agent_server_url),
                    start_tasks::request.eq(&request),
                    start_tasks::secrets_sealed.eq(&task.secrets_sealed),
                    start_tasks::created_at.eq(to_db(task.created_at)),
                    start_tasks::updated_at.eq(to_db(task.updated_at)),
                ))
                .execute(conn)
                .map_err(db_err)?;
            Ok(())
        })
    }

    fn update_start_task(&self, task: &StartTask) -> Result<bool, StorageError> {
        let id = task.id.to_string();
        self.write(|conn| {
            let n = diesel::update(
                start_tasks::table
                    .filter(start_tasks::id.eq(&id))
                    .filter(start_tasks::status.ne_all(FINAL)),
            )
            .set((
                start_tasks::status.eq(task.status.as_str()),
                start_tasks::detail.eq(&task.detail),
                start_tasks::conversation_id.eq(task.conversation_id.to_string()),
                start_tasks::sandbox_id.eq(task.sandbox_id.map(|s| s.to_string())),
                start_tasks::agent_server_url.eq(&task.agent_server_url),
                start_tasks::updated_at.eq(to_db(task.updated_at)),
            ))
            .execute(conn)
            .map_err(db_err)?;
            Ok(n == 1)
        })
    }

    fn start_tasks_by_ids(&self, ids: &[StartTaskId]) -> Result<Vec<StartTask>, StorageError> {
        let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
        let mut conn = self.conn()?;
        tasks(
            native!(&mut *conn, |c| start_tasks::table
                .filter(start_tasks::id.eq_any(&ids))
                .select(StartTaskRow::as_select())
                .load(c))
            .map_err(db_err)?,
        )
    }

    fn search_start_tasks(&self, query: &StartTaskQuery) -> Result<Vec<StartTask>, StorageError> {
        let limit = i64::from(query.limit);
        let after = query
            .after
            .filter(|a| a.order == query.order)
            .map(|a| (to_db(a.at), a.id.hyphenated().to_string()));
        let mut conn = self.conn()?;
        tasks(
            native!(&mut *conn, |c| {
                let mut q = filtered!(start_tasks::table, query)
                    .select(StartTaskRow::as_select())
                    .limit(limit);
                q = match query.order {
                    SortOrder::CreatedAt => {
                        q.order((start_tasks::created_at.asc(), start_tasks::id.asc()))
                    }
                    SortOrder::CreatedAtDesc => {
                        q.order((start_tasks::created_at.desc(), start_tasks::id.desc()))
                    }
                    SortOrder::UpdatedAt => {
                        q.order((start_tasks::updated_at.asc(), start_tasks::id.asc()))
                    }
                    SortOrder::UpdatedAtDesc => {
                        q.order((start_tasks::updated_at.desc(), start_tasks::id.desc()))
                    }
                };
                if let Some((t, id)) = &after {
                    q = match query.order {
                        SortOrder::CreatedAt => q.filter(
                            start_tasks::created_at
                                .gt(*t)
                                .or(start_tasks::created_at.eq(*t).and(start_tasks::id.gt(id))),
                        ),
                        SortOrder::CreatedAtDesc => q.filter(
                            start_tasks::created_at
                                .lt(*t)
                                .or(start_tasks::created_at.eq(*t).and(start_tasks::id.lt(id))),
                        ),
                        SortOrder::UpdatedAt => q.filter(
                            start_tasks::updated_at
                                .gt(*t)
                                .or(start_tasks::updated_at.eq(*t).and(start_tasks::id.gt(id))),
                        ),
                        SortOrder::UpdatedAtDesc => q.filter(
                            start_tasks::updated_at
                                .lt(*t)
                                .or(start_tasks::updated_at.eq(*t).and(start_tasks::id.lt(id))),
                        ),
                    };
                }
                q.load(c)
            })
            .map_err(db_err)?,
        )
    }

    /// From `start_task_counts` (kept by triggers) when only the organization and creator
    /// narrow; otherwise counted on the `(org_id, …)` indexes.
    fn count_start_tasks(&self, query: &StartTaskQuery) -> Result<u64, StorageError> {
        let mut conn = self.conn()?;
        if query.filter.conversation_id_eq.is_none() && query.filter.created_at_gte.is_none() {
            let org = query.org.to_string();
            let creator = query.creator.map(|c| c.to_string());
            let rows: Vec<i64> = native!(&mut *conn, |c| {
                let mut q = start_task_counts::table
                    .filter(start_task_counts::org_id.eq(&org))
                    .select(start_task_counts::n)
                    .into_boxed();
                if let Some(creator) = &creator {
                    q = q.filter(start_task_counts::created_by_user_id.eq(creator));
                }
                q.load(c)
            })
            .map_err(db_err)?;
            return Ok(u64::try_from(rows.into_iter().sum::<i64>()).unwrap_or(0));
        }
        let n: i64 = native!(&mut *conn, |c| filtered!(start_tasks::table, query)
            .count()
            .get_result(c))
        .map_err(db_err)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    fn claim_start_task(&self, claim: &StartClaim) -> Result<Option<StartTask>, StorageError> {
        let until = to_db(claim.until);
        self.write(|conn| {
            // The oldest few candidates; each claim is conditional, so a task another replica
            // claimed meanwhile is skipped for the next.
            let candidates: Vec<String> = start_tasks::table
                .filter(start_tasks::status.eq(StartTaskStatus::Working.as_str()))
                .filter(start_tasks::claimed_by.is_null())
                .order((start_tasks::created_at.asc(), start_tasks::id.asc()))
                .select(start_tasks::id)
                .limit(CLAIM_CANDIDATES)
                .load(conn)
                .map_err(db_err)?;
            for id in candidates {
                let n = diesel::update(
                    start_tasks::table
                        .filter(start_tasks::id.eq(&id))
                        .filter(start_tasks::status.eq(StartTaskStatus::Working.as_str()))
                        .filter(start_tasks::claimed_by.is_null()),
                )
                .set((
                    start_tasks::claimed_by.eq(&claim.owner),
                    start_tasks::claim_expires_at.eq(until),
                ))
                .execute(conn)
                .map_err(db_err)?;
                if n == 1 {
                    let row = start_tasks::table
                        .filter(start_tasks::id.eq(&id))
                        .select(StartTaskRow::as_select())
                        .first(conn)
                        .map_err(db_err)?;
                    return row.task().map(Some);
                }
            }
            Ok(None)
        })
    }

    fn renew_start_task_claims(
        &self,
        claim: &StartClaim,
        ids: &[StartTaskId],
    ) -> Result<(), StorageError> {
        let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
        self.write(|conn| {
            diesel::update(
                start_tasks::table
                    .filter(start_tasks::id.eq_any(&ids))
                    .filter(start_tasks::claimed_by.eq(&claim.owner))
                    .filter(start_tasks::status.ne_all(FINAL)),
            )
            .set(start_tasks::claim_expires_at.eq(to_db(claim.until)))
            .execute(conn)
            .map_err(db_err)?;
            Ok(())
        })
    }

    fn stale_start_tasks(&self, stale: &StaleStarts) -> Result<Vec<StartTask>, StorageError> {
        let now = to_db(stale.now);
        let mut conn = self.conn()?;
        let rows = native!(&mut *conn, |c| {
            let expired = start_tasks::claim_expires_at.lt(now);
            let unclaimed_past_working = start_tasks::claimed_by
                .is_null()
                .and(start_tasks::status.ne(StartTaskStatus::Working.as_str()));
            let mut q = start_tasks::table
                .filter(start_tasks::status.ne_all(FINAL))
                .into_boxed();
            q = match &stale.owner {
                Some(owner) => q.filter(
                    expired
                        .or(start_tasks::claimed_by.eq(owner))
                        .or(unclaimed_past_working),
                ),
                None => q.filter(expired.or(unclaimed_past_working)),
            };
            q.select(StartTaskRow::as_select()).load(c)
        })
        .map_err(db_err)?;
        tasks(rows)
    }

    fn create_started_conversation(
        &self,
        s: &StartedConversation,
        now: OffsetDateTime,
    ) -> Result<bool, StorageError> {
        let conv = &s.conversation;
        let id = conv.id.to_string();
        self.write(|conn| {
            let existing: Option<(String, Option<String>)> = conversations::table
                .filter(conversations::id.eq(&id))
                .select((conversations::org_id, conversations::sandbox_id))
                .first(conn)
                .optional()
                .map_err(db_err)?;
            let sandbox = conv.sandbox_id.map(|s| s.to_string());
            match existing {
                Some((org, of)) if org != conv.org_id.to_string() || of != sandbox => Ok(false),
                Some(_) => {
                    diesel::update(conversations::table.filter(conversations::id.eq(&id)))
                        .set((
                            conversations::sandbox_id.eq(conv.sandbox_id.map(|s| s.to_string())),
                            conversations::updated_at.eq(to_db(now)),
                        ))
                        .execute(conn)
                        .map_err(db_err)?;
                    set_app_fields(conn, &id, s)?;
                    Ok(true)
                }
                None => {
                    diesel::insert_into(conversations::table)
                        .values((
                            conversations::id.eq(&id),
                            conversations::org_id.eq(conv.org_id.to_string()),
                            conversations::owner_id.eq(conv.owner_id.to_string()),
                            conversations::sandbox_id.eq(conv.sandbox_id.map(|s| s.to_string())),
                            conversations::title.eq(&conv.title),
                            conversations::execution_status
                                .eq(conv.execution_status.map(ExecutionStatus::as_str)),
                            conversations::created_at.eq(to_db(conv.created_at)),
                            conversations::updated_at.eq(to_db(conv.updated_at)),
                        ))
                        .execute(conn)
                        .map_err(db_err)?;
                    set_app_fields(conn, &id, s)?;
                    Ok(true)
                }
            }
        })
    }

    fn forget_started_conversation(&self, id: ConversationId) -> Result<bool, StorageError> {
        let id = id.to_string();
        self.write(|conn| super::app::remove_conversation(conn, &id, false))
            .map(|removed| removed.is_some())
    }

    fn join_sandbox(&self, join: &JoinSandbox) -> Result<Option<SandboxRecord>, StorageError> {
        self.write(|conn| grouping::join(conn, join))
    }

    fn others_in_sandbox(
        &self,
        sandbox: SandboxId,
        except: ConversationId,
    ) -> Result<u64, StorageError> {
        grouping::others_in(&mut *self.conn()?, sandbox, Some(except))
    }
}

fn set_app_fields(
    conn: &mut DbConnection,
    id: &str,
    s: &StartedConversation,
) -> Result<(), StorageError> {
    diesel::update(conversations::table.filter(conversations::id.eq(id)))
        .set((
            conversations::selected_repository.eq(&s.selected_repository),
            conversations::selected_branch.eq(&s.selected_branch),
            conversations::git_provider.eq(&s.git_provider),
            conversations::conversation_trigger.eq(s.trigger),
            conversations::pr_number.eq(&s.pr_number),
            conversations::llm_model.eq(&s.llm_model),
            conversations::parent_conversation_id.eq(&s.parent_conversation_id),
            conversations::public.eq(s.public),
            conversations::tags.eq(&s.tags),
            conversations::max_budget_per_task.eq(s.max_budget_per_task),
        ))
        .execute(conn)
        .map_err(db_err)?;
    if let Some(t) = &s.conversation.title {
        // A title a webhook set first wins; the start's title only fills an empty one.
        diesel::update(
            conversations::table
                .filter(conversations::id.eq(id))
                .filter(conversations::title.is_null()),
        )
        .set(conversations::title.eq(t))
        .execute(conn)
        .map_err(db_err)?;
    }
    Ok(())
}
