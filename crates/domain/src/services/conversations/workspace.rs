//! A conversation's workspace (issue 22, "Workspace routes"): its files, its directories, its
//! git changes and diffs, its skills and hooks, read from the conversation's own agent server
//! with the sandbox's session key. Who may read: whoever sees the conversation (its creator,
//! and callers holding `view_org_conversations`; anyone else: not found). Its sandbox must be
//! `RUNNING` (else 409, `MISSING` and deleted included). Every path is confined to the
//! conversation's workspace (`conversations::workspace`), the real path resolved in the
//! sandbox before the agent server is asked for it.

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::app::{agent_failed, visible};
use crate::conversations::workspace::{
    DEFAULT_FILE, PathRefused, check_git_ref, confine, escapes, file_list_command, hooks_view,
    inside, parse_file_list, skills_request, skills_view,
};
use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::identity::session_keys::SessionKey;
use crate::ids::ConversationId;
use crate::ports::AppConversationStore;
use crate::sandboxes::agent_workspace::{FileAnswer, JsonAnswer};
use crate::sandboxes::runtime::{AgentServerClient, BashCommand, SandboxStatus};
use crate::services::SandboxService;

/// The time a path resolution or a listing may take in the sandbox.
const BASH_TIMEOUT: Duration = Duration::from_secs(30);

/// Reads conversations' workspaces through their agent servers.
#[derive(Clone)]
pub struct WorkspaceService {
    store: Arc<dyn AppConversationStore>,
    sandboxes: SandboxService,
}

/// A file read by the file route.
pub enum FileRead {
    /// The file's bytes, streamed from the agent server.
    Content(Box<dyn Read + Send>),
    /// No such file: OpenHands answers the empty string.
    Missing,
}

/// Which git read: `GET /api/git/changes` or `GET /api/git/diff` of the agent server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitRead {
    /// The changed files of a repository (`path`: the repository).
    Changes,
    /// One file's diff (`path`: the file).
    Diff,
}

impl GitRead {
    fn as_str(self) -> &'static str {
        match self {
            GitRead::Changes => "changes",
            GitRead::Diff => "diff",
        }
    }
}

/// The running agent server of a conversation and its workspace.
struct Workspace {
    url: String,
    key: SessionKey,
    /// The workspace as the agent server names it (`workspace.working_dir`), absolute.
    root: String,
    client: Arc<dyn AgentServerClient>,
}

impl Workspace {
    /// Runs `command` in the sandbox (in the workspace's directory's parent: any directory
    /// would do; the agent server's own is used).
    fn bash(&self, command: String) -> Result<crate::sandboxes::runtime::BashOutcome, DomainError> {
        self.client
            .execute_bash(
                &self.url,
                &self.key,
                &BashCommand {
                    command,
                    cwd: None,
                    timeout_secs: BASH_TIMEOUT.as_secs(),
                },
            )
            .map_err(agent_failed)
    }

    /// The real path of `requested` (confined lexically first), resolved in the sandbox with
    /// every symbolic link followed, and checked to be inside the workspace's real path.
    fn resolve(&self, requested: &str) -> Result<String, DomainError> {
        let path = confine(&self.root, requested).map_err(refused)?;
        let out = self.bash(format!(
            "realpath -m -z -- {} {}",
            quote(&self.root),
            quote(&path)
        ))?;
        let mut real = out.stdout.split('\0');
        let (Some(0), Some(root), Some(real_path)) = (out.exit_code, real.next(), real.next())
        else {
            return Err(DomainError::BadRequest(format!(
                "Path {requested:?} cannot be resolved in the sandbox: {}",
                out.stderr.trim().chars().take(300).collect::<String>()
            )));
        };
        if root.is_empty() || !real_path.starts_with('/') || !inside(root, real_path) {
            return Err(refused(escapes(requested, &self.root)));
        }
        Ok(real_path.to_owned())
    }
}

impl WorkspaceService {
    /// The service over the app-conversation store and the sandbox service (the one running
    /// sandboxes, when this server does).
    pub fn new(store: Arc<dyn AppConversationStore>, sandboxes: SandboxService) -> Self {
        WorkspaceService { store, sandboxes }
    }

    /// The file at `file_path` (default `PLAN.md` in the workspace), streamed.
    ///
    /// # Errors
    /// Those of the workspace (below); [`DomainError::BadRequest`] for a path outside the
    /// workspace or one that is not a file.
    pub fn read_file(
        &self,
        ctx: &OrgContext,
        id: ConversationId,
        file_path: Option<&str>,
    ) -> Result<FileRead, DomainError> {
        let ws = self.workspace(ctx, id)?;
        let requested = file_path.unwrap_or(DEFAULT_FILE);
        let path = ws.resolve(requested)?;
        match ws
            .client
            .download_file(&ws.url, &ws.key, &path)
            .map_err(agent_failed)?
        {
            FileAnswer::Found { body, .. } => Ok(FileRead::Content(body)),
            FileAnswer::NotFound => Ok(FileRead::Missing),
            FileAnswer::NotAFile => Err(DomainError::BadRequest(format!(
                "Path {requested:?} is not a file"
            ))),
        }
    }

    /// Every regular file below the directory at `path` (default: the workspace), as paths
    /// relative to it, in bytewise order: OpenHands' `list_conversation_files` answer as Agent
    /// Canvas reads it. Symbolic links are not followed; the bounds and pruned directories are
    /// those of [`file_list_command`].
    ///
    /// # Errors
    /// Those of the workspace; [`DomainError::BadRequest`] for a path outside the workspace
    /// or one that is not a directory; [`DomainError::NotFound`] when there is none.
    pub fn list_files(
        &self,
        ctx: &OrgContext,
        id: ConversationId,
        path: Option<&str>,
    ) -> Result<Vec<String>, DomainError> {
        let ws = self.workspace(ctx, id)?;
        let requested = path.unwrap_or("");
        let dir = ws.resolve(requested)?;
        let q = quote(&dir);
        let out = ws.bash(format!(
            "if [ -d {q} ]; then {}; elif [ -e {q} ]; then exit 3; else exit 4; fi",
            file_list_command(&q)
        ))?;
        match out.exit_code {
            Some(0) => Ok(parse_file_list(&out.stdout)),
            Some(3) => Err(DomainError::BadRequest(format!(
                "Path {requested:?} is not a directory"
            ))),
            Some(4) => Err(DomainError::NotFound("Directory not found".into())),
            _ => Err(DomainError::AgentServerFailed(
                "listing the files failed in the sandbox".into(),
            )),
        }
    }

    /// The agent server's git changes of the repository at `path`, or diff of the file at
    /// `path`, against `git_ref` (default: its own choice), as it answers them.
    ///
    /// # Errors
    /// Those of the workspace; [`DomainError::BadRequest`] for a path outside the workspace,
    /// a `ref` starting with `-`, or a git failure the agent server reports.
    pub fn git(
        &self,
        ctx: &OrgContext,
        id: ConversationId,
        what: GitRead,
        path: &str,
        git_ref: Option<&str>,
    ) -> Result<Value, DomainError> {
        if let Some(r) = git_ref {
            check_git_ref(r).map_err(refused)?;
        }
        let ws = self.workspace(ctx, id)?;
        let path = ws.resolve(path)?;
        match ws
            .client
            .git(&ws.url, &ws.key, what.as_str(), &path, git_ref)
            .map_err(agent_failed)?
        {
            JsonAnswer::Ok(v) => Ok(v),
            JsonAnswer::Refused(detail) => Err(DomainError::BadRequest(format!(
                "git {} failed: {}",
                what.as_str(),
                detail.chars().take(500).collect::<String>()
            ))),
        }
    }

    /// The skills of the conversation's workspace and user (OpenHands' `{"skills": [...]}`).
    ///
    /// # Errors
    /// Those of the workspace; [`DomainError::AgentServerFailed`] when the agent server
    /// refuses.
    pub fn skills(&self, ctx: &OrgContext, id: ConversationId) -> Result<Value, DomainError> {
        let ws = self.workspace(ctx, id)?;
        let body = skills_request(&ws.root);
        Ok(skills_view(&self.load(&ws, "skills", &body)?))
    }

    /// The hooks of the workspace's `.openhands/hooks.json` (OpenHands' `{"hooks": [...]}`).
    ///
    /// # Errors
    /// As [`WorkspaceService::skills`].
    pub fn hooks(&self, ctx: &OrgContext, id: ConversationId) -> Result<Value, DomainError> {
        let ws = self.workspace(ctx, id)?;
        let body = json!({ "project_dir": ws.root });
        Ok(hooks_view(&self.load(&ws, "hooks", &body)?))
    }

    /// `POST /api/{what}` on the agent server; a refusal is its failure.
    fn load(&self, ws: &Workspace, what: &str, body: &Value) -> Result<Value, DomainError> {
        match ws
            .client
            .load(&ws.url, &ws.key, what, body)
            .map_err(agent_failed)?
        {
            JsonAnswer::Ok(v) => Ok(v),
            JsonAnswer::Refused(_) => Err(DomainError::AgentServerFailed(format!(
                "it refused to load the {what}"
            ))),
        }
    }

    /// The conversation's running agent server and workspace, when the caller sees the
    /// conversation.
    ///
    /// # Errors
    /// [`DomainError::ConversationNotFound`]; [`DomainError::ConversationSandboxNotManaged`]
    /// (409) for a sandbox Switchboard does not run; [`DomainError::Conflict`] (409) for one
    /// not `RUNNING` (`MISSING` and deleted included), or a conversation its agent server does
    /// not know;
    /// [`DomainError::AgentServerFailed`] (502).
    fn workspace(&self, ctx: &OrgContext, id: ConversationId) -> Result<Workspace, DomainError> {
        let info = self
            .store
            .app_conversations_by_ids(&[id])?
            .into_iter()
            .find(|i| visible(ctx, i))
            .ok_or(DomainError::ConversationNotFound)?;
        let record = match info.sandbox_id {
            Some(s) => self.sandboxes.sandboxes.sandbox(s)?,
            None => None,
        }
        .filter(|r| r.status != SandboxStatus::Missing)
        .ok_or_else(|| {
            DomainError::Conflict(
                "Sandbox is MISSING: the conversation's workspace is gone with it".into(),
            )
        })?;
        if !record.is_managed() {
            return Err(DomainError::ConversationSandboxNotManaged);
        }
        if record.status != SandboxStatus::Running {
            return Err(DomainError::Conflict(format!(
                "Sandbox is {}: the conversation's workspace can be read only while it is RUNNING (resume it with POST /api/v1/sandboxes/{}/resume)",
                record.status, record.id
            )));
        }
        let Some((url, key)) = self.sandboxes.agent_target(&record)? else {
            return Err(DomainError::ConversationSandboxNotManaged);
        };
        let client = self.sandboxes.managed()?.m.client.clone();
        let root = client
            .conversation_info(&url, &key, id)
            .map_err(agent_failed)?
            .as_ref()
            .and_then(|c| c.pointer("/workspace/working_dir"))
            .and_then(Value::as_str)
            .filter(|w| w.starts_with('/'))
            .map(str::to_owned)
            .ok_or_else(|| {
                DomainError::Conflict(
                    "The conversation is not on its agent server (its start has not finished)"
                        .into(),
                )
            })?;
        Ok(Workspace {
            url,
            key,
            root,
            client,
        })
    }
}

/// A refused path as its 400.
fn refused(e: PathRefused) -> DomainError {
    DomainError::BadRequest(e.0)
}

/// `s` quoted for a POSIX shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn quoting() {
        assert_eq!(super::quote("a'b"), r"'a'\''b'");
    }
}
