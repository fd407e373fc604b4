//! The start's steps over the member's preferences ([`StartPreferences`]; issue 36): reading
//! them, and the git identity set in the sandbox.

use super::steps::{Agent, SHORT_COMMAND};
use super::{Failure, Run};
use crate::conversations::start_preferences::StartPreferences;

impl Run<'_> {
    /// The starting member's preferences (none without personal settings: a server with no
    /// user settings service).
    pub(super) fn start_preferences(&self) -> Result<StartPreferences, Failure> {
        match &self.svc.personal {
            Some(p) => p
                .preferences(self.task.org_id, self.task.created_by_user_id)
                .map(|prefs| StartPreferences::of(&prefs))
                .map_err(|e| Failure(format!("reading the user's settings failed: {e}"))),
            None => Ok(StartPreferences::default()),
        }
    }

    /// Sets the member's git identity in the sandbox, when they set one. A failure is
    /// logged and the start goes on (OpenHands: a warning).
    pub(super) fn configure_git_identity(
        &self,
        agent: &Agent<'_>,
        prefs: &StartPreferences,
        workdir: Option<&str>,
    ) {
        let Some(cmd) = prefs.identity_command() else {
            return;
        };
        match agent.bash(cmd, workdir.map(str::to_owned), SHORT_COMMAND) {
            Ok(out) if out.exit_code == Some(0) => {}
            Ok(out) => {
                tracing::warn!(task = %self.task.id, stderr = %self.tail(&out.stderr), "setting the git identity failed");
            }
            Err(e) => {
                tracing::warn!(task = %self.task.id, error = %e, "setting the git identity failed");
            }
        }
    }
}
