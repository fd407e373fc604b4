//! The workspace routes' port (issue 22): what Switchboard reads from a conversation's agent
//! server to answer `…/file`, `…/files`, `…/git/*`, `…/skills` and `…/hooks`. The agent
//! server's own routes (openhands-agent-server 1.58.2), each with the sandbox's
//! `X-Session-API-Key`:
//! - `GET /api/conversations/{id}`: the conversation's `ConversationInfo`, whose
//!   `workspace.working_dir` is the conversation's workspace;
//! - `GET /api/file/download?path=` (absolute path): the file's bytes, streamed (404 `File not
//!   found`, 400 `Path is not a file`);
//! - `GET /api/git/changes?path=[&ref=]` (a `GitChange` list) and `GET /api/git/diff?path=[&ref=]`
//!   (a `GitDiff`); 400 with a `detail` for a git failure;
//! - `POST /api/skills` (`SkillsRequest` → `SkillsResponse`) and `POST /api/hooks`
//!   (`{"project_dir"}` → `{"hook_config"}`);
//! - `POST /api/file/upload?path=` (multipart, field `file`): writes a file (the start's clone
//!   hands a provider token to git this way, never in a command line: issue 21).
//!
//! Listing a directory and resolving real paths go through the bash endpoint
//! ([`AgentServerClient::execute_bash`](crate::sandboxes::runtime::AgentServerClient::execute_bash)).

use std::io::Read;

use serde_json::Value;

use crate::identity::session_keys::SessionKey;
use crate::ids::ConversationId;
use crate::sandboxes::agent_server_error::AgentServerError;

/// The answer of a file download.
pub enum FileAnswer {
    /// The file's bytes, read as the agent server sends them (never all held at once), and
    /// their length when the agent server said it.
    Found {
        /// The body.
        body: Box<dyn Read + Send>,
        /// `Content-Length`, when given.
        length: Option<u64>,
    },
    /// No such file (the agent server's 404).
    NotFound,
    /// The path is a directory or something else that is not a file (its 400).
    NotAFile,
}

impl std::fmt::Debug for FileAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileAnswer::Found { length, .. } => write!(f, "Found({length:?})"),
            FileAnswer::NotFound => f.write_str("NotFound"),
            FileAnswer::NotAFile => f.write_str("NotAFile"),
        }
    }
}

/// A JSON answer of the agent server, or its refusal of the request.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonAnswer {
    /// 200 with this body.
    Ok(Value),
    /// 400 or 422: the agent server's `detail` (its text, or the JSON of a validation list).
    Refused(String),
}

/// The agent server's workspace reads. Blocking; each call has its own time limit (30 s; a
/// download 30 s to connect and between reads).
pub trait AgentServerWorkspace: Send + Sync {
    /// `GET {base_url}/api/conversations/{id hex}`: the conversation's `ConversationInfo`;
    /// `None` when the agent server does not know it (404).
    ///
    /// # Errors
    /// Transport failures, a timeout, any other status or a body that is not an object.
    fn conversation_info(
        &self,
        base_url: &str,
        key: &SessionKey,
        conversation: ConversationId,
    ) -> Result<Option<Value>, AgentServerError>;

    /// `GET {base_url}/api/file/download?path=`: the file at the absolute `path`.
    ///
    /// # Errors
    /// As [`AgentServerWorkspace::conversation_info`].
    fn download_file(
        &self,
        base_url: &str,
        key: &SessionKey,
        path: &str,
    ) -> Result<FileAnswer, AgentServerError>;

    /// `GET {base_url}/api/git/{what}?path=[&ref=]`, `what` being `changes` or `diff`.
    ///
    /// # Errors
    /// As [`AgentServerWorkspace::conversation_info`].
    fn git(
        &self,
        base_url: &str,
        key: &SessionKey,
        what: &str,
        path: &str,
        git_ref: Option<&str>,
    ) -> Result<JsonAnswer, AgentServerError>;

    /// `POST {base_url}/api/{what}` with `body`, `what` being `skills` or `hooks`.
    ///
    /// # Errors
    /// As [`AgentServerWorkspace::conversation_info`].
    fn load(
        &self,
        base_url: &str,
        key: &SessionKey,
        what: &str,
        body: &Value,
    ) -> Result<JsonAnswer, AgentServerError>;

    /// `POST {base_url}/api/file/upload?path=` with `bytes` as the multipart field `file`:
    /// writes the file at the absolute `path` (its parent created). The bytes may be a
    /// secret: they are never logged or put in an error.
    ///
    /// # Errors
    /// Transport failures, a timeout, or a status other than 200.
    fn upload_file(
        &self,
        base_url: &str,
        key: &SessionKey,
        path: &str,
        bytes: &[u8],
    ) -> Result<(), AgentServerError>;
}
