//! Who runs a start task, and the restart rule (docs/API.md, "App conversations: start";
//! issue 20). The `conversation-start` job of every replica claims `WORKING` tasks (a claim
//! names the replica and holds for a lease, renewed while the task runs), so any replica may
//! run a task and no two run the same one. The rule for a start cut off by its replica's end:
//! it is **failed**, never resumed (a clone, a setup script or a create call half done cannot
//! safely run again; the client starts again): at a replica's start every unfinished task it
//! had claimed, and at every pass of any replica's job every unfinished task whose claim has
//! expired, is set `ERROR` and a sandbox the start created is deleted.

use std::time::Duration;

use crate::conversations::start_tasks::{StartTask, StartTaskId, StartTaskStatus};
use crate::error::DomainError;
use crate::identity::{OrgContext, Principal};
use crate::ids::ApiKeyId;
use crate::jobs::{Job, Schedule, Work};
use crate::ports::{StaleStarts, StartClaim};
use crate::time_input::now_micros;

use super::ConversationStartService;

/// The longest the job waits between two passes when nothing wakes it.
const PASS_EVERY: Duration = Duration::from_secs(5);

/// Removes a task from the running set when its run ends, however it ends.
struct Running<'a>(&'a ConversationStartService, StartTaskId);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if let Ok(mut running) = self.0.running.lock() {
            running.remove(&self.1);
        }
    }
}

impl ConversationStartService {
    /// The start pipeline's job, for the supervisor: `conversation-start`, woken by every
    /// start (and every sandbox wake-up), else every few seconds (at most a third of the
    /// lease). Each pass renews this replica's claims and fails the tasks whose claim expired
    /// (the restart rule); then the supervisor claims `WORKING` tasks while fewer than
    /// `workers` run, and runs each to `READY` or `ERROR` on a worker of its own.
    pub fn jobs(&self) -> Vec<Job> {
        let pass = PASS_EVERY.min(self.claims.lease / 3);
        let s = self.clone();
        let c = self.clone();
        vec![
            Job::new("conversation-start", Schedule::Woken(pass), move || {
                s.keep_claims()
            })
            .with_pool(self.claims.workers, move || c.claim_next()),
        ]
    }

    /// The claim this replica writes now: its id, until one lease from now.
    fn claim(&self) -> StartClaim {
        StartClaim {
            owner: self.claims.replica.clone(),
            until: now_micros() + self.claims.lease,
        }
    }

    /// One pass of upkeep: the claims of the tasks this replica runs renewed, then every
    /// unfinished task whose claim expired failed.
    ///
    /// # Errors
    /// Storage failures.
    pub fn keep_claims(&self) -> Result<(), DomainError> {
        let running: Vec<StartTaskId> = self
            .running
            .lock()
            .expect("running starts poisoned")
            .iter()
            .copied()
            .collect();
        if !running.is_empty() {
            self.tasks
                .renew_start_task_claims(&self.claim(), &running)?;
        }
        let stale = self.tasks.stale_start_tasks(&StaleStarts {
            now: now_micros(),
            owner: None,
        })?;
        for task in stale {
            self.close_stale(task, "a claim expired")?;
        }
        Ok(())
    }

    /// Claims the oldest unclaimed `WORKING` task for this replica, and answers the work
    /// of running it; `None` when there is none (or this server runs no sandboxes).
    ///
    /// # Errors
    /// Storage failures.
    pub fn claim_next(&self) -> Result<Option<Work>, DomainError> {
        if self.sandboxes.managed_config().is_err() {
            return Ok(None);
        }
        let Some(task) = self.tasks.claim_start_task(&self.claim())? else {
            return Ok(None);
        };
        self.running
            .lock()
            .expect("running starts poisoned")
            .insert(task.id);
        let svc = self.clone();
        Ok(Some(Box::new(move || svc.run_claimed(task))))
    }

    /// Runs a claimed task as its creator (their membership as it is now); a creator no
    /// longer a member fails it.
    fn run_claimed(&self, task: StartTask) {
        let _running = Running(self, task.id);
        match self.creator_context(&task) {
            Ok(ctx) => {
                self.run(&ctx, task);
            }
            Err(detail) => {
                let mut task = task;
                task.status = StartTaskStatus::Error;
                task.detail = Some(detail);
                task.updated_at = now_micros().max(task.updated_at);
                match self.tasks.update_start_task(&task) {
                    Ok(_) => self.feed.publish(&task),
                    Err(e) => {
                        tracing::warn!(task = %task.id, error = %e, "failing a start task failed");
                    }
                }
            }
        }
    }

    /// The context a start runs in: its creator, a member of its organization with their
    /// role now. The principal carries no API key (the nil key id): the job acts for the
    /// creator, not through one of their keys.
    fn creator_context(&self, task: &StartTask) -> Result<OrgContext, String> {
        let user = task.created_by_user_id;
        let membership = self
            .identity
            .org_membership(task.org_id, user)
            .map_err(|e| format!("reading the creator's membership failed: {e}"))?;
        let (org, role) = match membership {
            Some(m) => (m.org, m.role),
            None => return Err("the organization no longer exists".into()),
        };
        let role = role.ok_or("the creator is no longer a member of the organization")?;
        Ok(OrgContext {
            principal: Principal {
                user_id: user,
                key_id: ApiKeyId(uuid::Uuid::nil()),
                bound_org: Some(org.id),
                current_org: Some(org.id),
            },
            org,
            role,
        })
    }

    /// At a replica's start: every unfinished task its previous run had claimed (and any
    /// whose claim expired) is failed by the restart rule. Returns how many were closed.
    ///
    /// # Errors
    /// Storage failures.
    pub fn recover_unfinished(&self) -> Result<usize, DomainError> {
        let stale = self.tasks.stale_start_tasks(&StaleStarts {
            now: now_micros(),
            owner: Some(self.claims.replica.clone()),
        })?;
        let mut closed = 0;
        for task in stale {
            closed += usize::from(self.close_stale(task, "at startup")?);
        }
        Ok(closed)
    }

    /// Fails one abandoned task (unless it became final meanwhile) and deletes the sandbox
    /// the start created itself (the request named none), unless another conversation holds
    /// it (one the start joined by sandbox grouping, or another start joined). Whether it was
    /// closed here.
    fn close_stale(&self, mut task: StartTask, why: &str) -> Result<bool, DomainError> {
        let was = task.status;
        task.status = StartTaskStatus::Error;
        task.detail = Some(format!(
            "Switchboard restarted while this start was {}; start the conversation again",
            was.as_str()
        ));
        task.updated_at = now_micros().max(task.updated_at);
        if !self.tasks.update_start_task(&task)? {
            return Ok(false);
        }
        self.feed.publish(&task);
        let named = task.request.get("sandbox_id").is_some_and(|v| !v.is_null());
        if let Some(sandbox) = task.sandbox_id.filter(|_| !named)
            && self
                .tasks
                .others_in_sandbox(sandbox, task.conversation_id)?
                == 0
        {
            self.sandboxes.delete_sandbox_internal(sandbox)?;
        }
        tracing::info!(task = %task.id, was = was.as_str(), why, "unfinished start task closed");
        Ok(true)
    }
}
