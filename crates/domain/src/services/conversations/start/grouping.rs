//! Sandbox grouping in the start pipeline (docs/API.md, "Sandbox grouping"; the rule is
//! [`crate::sandboxes::grouping`]): a start without `sandbox_id` whose member's strategy is
//! not `NO_GROUPING` joins one of the member's own sandboxes with room, bound to it in the
//! store's transaction that chose it; a `PAUSED` one is resumed, as an explicit `sandbox_id`
//! is. Only when none qualifies does the start start a new sandbox.

use super::{Failure, Run};
use crate::conversations::start_request::StartRequest;
use crate::ids::SandboxId;
use crate::ports::JoinSandbox;
use crate::sandboxes::runtime::SandboxStatus;
use crate::time_input::now_micros;

impl Run<'_> {
    /// The member's sandbox this start joins, when their strategy groups and one qualifies;
    /// `None` otherwise (the start then starts a new sandbox). Sets `grouped` when the
    /// strategy groups, new sandbox or not. A joined sandbox is never the start's to delete
    /// (`created_sandbox` stays unset). A `PAUSED` one that does not resume (its process
    /// gone) is left for a new sandbox.
    pub(super) fn grouped_sandbox(
        &mut self,
        request: &StartRequest,
    ) -> Result<Option<SandboxId>, Failure> {
        let svc = self.svc;
        let Some(personal) = &svc.personal else {
            return Ok(None);
        };
        let (org, owner) = (self.task.org_id, self.task.created_by_user_id);
        let strategy = personal
            .sandbox_grouping(org, owner)
            .map_err(|e| Failure(format!("reading the user's settings failed: {e}")))?;
        if !strategy.groups() {
            return Ok(None);
        }
        self.grouped = true;
        let max_conversations = svc
            .sandboxes
            .managed_config()
            .map_err(|e| Failure(e.to_string()))?
            .settings
            .max_conversations_per_sandbox;
        let joined = svc
            .tasks
            .join_sandbox(&JoinSandbox {
                task: self.task.id,
                org,
                owner,
                spec_id: request.sandbox_spec_id.clone(),
                strategy,
                max_conversations,
                now: now_micros(),
            })
            .map_err(|e| Failure(format!("choosing a sandbox to join failed: {e}")))?;
        let Some(record) = joined else {
            tracing::debug!(task = %self.task.id, strategy = strategy.as_str(), "no sandbox of the member has room: a new one");
            return Ok(None);
        };
        tracing::info!(task = %self.task.id, sandbox = %record.id, status = %record.status, strategy = strategy.as_str(), "the start joins a sandbox of its member");
        if record.status == SandboxStatus::Paused
            && let Err(e) = svc.sandboxes.resume_sandbox(self.ctx, record.id)
        {
            tracing::info!(task = %self.task.id, sandbox = %record.id, error = %e, "the paused sandbox chosen did not resume: a new one");
            return Ok(None);
        }
        Ok(Some(record.id))
    }
}
