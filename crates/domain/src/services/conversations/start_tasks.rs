//! Reading start tasks (spec §4.3, reference app-server §5.2): batch get, search and count,
//! each limited to what the caller sees (the creator; the organization's admins and owners
//! with `view_org_conversations`; another organization's task never).

use std::collections::HashMap;
use std::sync::Arc;

use crate::batch::Batch;
use crate::conversations::app::{OrderedCursor, SortOrder};
use crate::conversations::start_tasks::{StartTask, StartTaskFilter, StartTaskId};
use crate::cursor::Keyset;
use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::permissions::Permission;
use crate::ports::{StartTaskQuery, StartTaskStore};
use crate::sandboxes::records::Page;

/// Start tasks as their callers see them.
#[derive(Clone)]
pub struct StartTaskService {
    tasks: Arc<dyn StartTaskStore>,
}

/// Whether the caller sees `task`.
pub(super) fn task_visible(ctx: &OrgContext, task: &StartTask) -> bool {
    task.org_id == ctx.org.id
        && (task.created_by_user_id == ctx.principal.user_id
            || ctx.role.grants(Permission::ViewOrgConversations))
}

impl StartTaskService {
    /// The service over the start-task store.
    pub fn new(tasks: Arc<dyn StartTaskStore>) -> Self {
        StartTaskService { tasks }
    }

    /// The tasks with these ids in request order, `None` for unknown or not visible ones
    /// (reference app-server §5.2 `GET /start-tasks?ids=`).
    ///
    /// # Errors
    /// [`DomainError::TooManyIds`] over [`Batch::START_TASKS`]' most; storage failures.
    pub fn get_start_tasks(
        &self,
        ctx: &OrgContext,
        ids: &[StartTaskId],
    ) -> Result<Vec<Option<StartTask>>, DomainError> {
        Batch::START_TASKS.check(ids.len())?;
        let found: HashMap<StartTaskId, StartTask> = self
            .tasks
            .start_tasks_by_ids(ids)?
            .into_iter()
            .filter(|t| task_visible(ctx, t))
            .map(|t| (t.id, t))
            .collect();
        Ok(ids.iter().map(|id| found.get(id).cloned()).collect())
    }

    /// The query of the caller's search or count.
    fn query(
        ctx: &OrgContext,
        filter: StartTaskFilter,
        order: SortOrder,
        after: Option<OrderedCursor>,
        limit: u32,
    ) -> StartTaskQuery {
        StartTaskQuery {
            org: ctx.org.id,
            creator: (!ctx.role.grants(Permission::ViewOrgConversations))
                .then_some(ctx.principal.user_id),
            filter,
            order,
            after,
            limit,
        }
    }

    /// One page of the tasks the caller sees, in `order` (ties by id), continuing after
    /// `after` (a cursor of another order starts from the beginning: the API refuses it
    /// first).
    ///
    /// # Errors
    /// Storage failures.
    pub fn search_start_tasks(
        &self,
        ctx: &OrgContext,
        filter: StartTaskFilter,
        order: SortOrder,
        after: Option<OrderedCursor>,
        limit: u32,
    ) -> Result<Page<StartTask>, DomainError> {
        let mut rows =
            self.tasks
                .search_start_tasks(&Self::query(ctx, filter, order, after, limit + 1))?;
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let next_page_id = more
            .then(|| rows.last())
            .flatten()
            .map(|t| OrderedCursor {
                order,
                at: if order.by_updated() {
                    t.updated_at
                } else {
                    t.created_at
                },
                id: t.id.0,
                as_of: None,
            })
            .map(|c| c.encode());
        Ok(Page {
            items: rows,
            next_page_id,
        })
    }

    /// How many tasks the caller sees match `filter`.
    ///
    /// # Errors
    /// Storage failures.
    pub fn count_start_tasks(
        &self,
        ctx: &OrgContext,
        filter: StartTaskFilter,
    ) -> Result<u64, DomainError> {
        Ok(self.tasks.count_start_tasks(&Self::query(
            ctx,
            filter,
            SortOrder::default(),
            None,
            0,
        ))?)
    }
}
