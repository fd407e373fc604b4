//! A conversation's workspace (issue 22; OpenHands' app-conversation routes `…/file`,
//! `…/git/changes`, `…/git/diff`, `…/skills`, `…/hooks`, and `…/files`, the workspace's file
//! list as OpenHands' enterprise `list_conversation_files` answers it to Agent Canvas): read from the conversation's agent server, which Switchboard
//! calls itself with the sandbox's session key. Whoever sees the conversation may read it;
//! anyone else gets 404. A sandbox not `RUNNING` is 409 (`MISSING` or deleted included); a path
//! outside the workspace (`..`, an absolute path elsewhere, a symbolic link out) is 400.

use actix_web::web::Bytes;
use actix_web::{HttpResponse, get, web};
use futures_util::Stream;
use serde_json::Value;
use switchboard_domain::services::{FileRead, GitRead, WorkspaceService};
use switchboard_domain::validation::{missing, refuse_nul};
use switchboard_domain::{ConversationId, DomainError, OrgContext};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{ErrorDetail, GetHooksResponse, SkillsResponse};
use crate::error::{ApiError, ApiResult};
use crate::extract::{Caller, QueryPairs, conversation_id};
use crate::openapi::params::{GitRefParam, TextParam};
use crate::responses::ApiKeyErrors;

/// How many bytes of a file are read from the agent server at a time.
const READ_CHUNK: usize = 64 << 10;

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(read_file)
        .service(list_files)
        .service(git_changes)
        .service(git_diff)
        .service(skills)
        .service(hooks);
}

/// The last value of the query parameter `name` (FastAPI's rule for a scalar); a NUL in it is
/// a 422.
fn text(query: &QueryPairs, name: &str) -> Result<Option<String>, ApiError> {
    let Some((_, v)) = query.0.iter().rev().find(|(k, _)| k == name) else {
        return Ok(None);
    };
    refuse_nul(|| QueryPairs::loc(name), v).map_err(|e| ApiError::Validation(vec![e]))?;
    Ok(Some(v.clone()))
}

/// As [`text`], and required (422 `missing`).
fn required(query: &QueryPairs, name: &str) -> Result<String, ApiError> {
    text(query, name)?
        .ok_or_else(|| ApiError::Validation(vec![missing(QueryPairs::loc(name), Value::Null)]))
}

/// The file's content as a JSON string (OpenHands' answer), streamed as the agent server sends
/// it: never held whole. A file that does not exist is `""`, as OpenHands answers; bytes that
/// are not UTF-8 become U+FFFD (OpenHands answers `""` for such a file).
#[utoipa::path(tag = "App conversations",
    params(
        ("conversation_id" = uuid::Uuid, Path, description = "Conversation id (dashed or 32 hex)"),
        ("file_path" = inline(Option<TextParam>), Query, description = "The file: absolute inside the conversation's workspace, or relative to it (default PLAN.md, also when empty)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "The file's text (\"\" when there is no such file)", body = String, content_type = "application/json"),
        (status = 400, description = "A path outside the workspace (.., elsewhere, a symbolic link out) or not a file", body = ErrorDetail),
        (status = 404, description = "Unknown, another organization's, or another member's seen by a member", body = ErrorDetail),
        (status = 409, description = "The sandbox is not RUNNING (MISSING or deleted included), or not run by Switchboard", body = ErrorDetail),
        (status = 502, description = "The agent server failed", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[get("/api/v1/app-conversations/{conversation_id}/file")]
pub async fn read_file(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
    query: QueryPairs,
) -> ApiResult<HttpResponse> {
    let raw = path.into_inner();
    let read = caller
        .run(state, move |s, ctx| {
            let id = conversation_id(&raw)?;
            // Empty reads as absent: the default file, not the workspace itself.
            let file_path = text(&query, "file_path")?.filter(|p| !p.is_empty());
            Ok(s.services
                .workspaces()
                .read_file(&ctx, id, file_path.as_deref())?)
        })
        .await?;
    let mut ok = HttpResponse::Ok();
    ok.content_type("application/json");
    Ok(match read {
        FileRead::Missing => ok.body("\"\""),
        FileRead::Content(reader) => ok.streaming(json_text(reader)),
    })
}

/// Every regular file below a directory of the workspace (default: the workspace), as paths
/// relative to it (`src/index.html`), in bytewise order: the answer of OpenHands' enterprise
/// `list_conversation_files`, which Agent Canvas's Files tab reads
/// (`api/cloud/conversation-service.api.ts`, `listCloudConversationFiles`). Symbolic links are
/// neither followed nor listed; `.git`, `node_modules`, `target` and the other directories
/// Agent Canvas prunes are not entered; at most 10 000 paths (the first in that order), none
/// longer than 4 096 bytes (docs/API.md, "Workspace routes").
#[utoipa::path(tag = "App conversations",
    params(
        ("conversation_id" = uuid::Uuid, Path, description = "Conversation id (dashed or 32 hex)"),
        ("path" = inline(Option<TextParam>), Query, description = "The directory: absolute inside the workspace, or relative to it (default: the workspace)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "The files' paths, relative to the directory", body = Vec<String>),
        (status = 400, description = "A path outside the workspace (.., elsewhere, a symbolic link out) or not a directory", body = ErrorDetail),
        (status = 404, description = "Unknown conversation (or one the caller does not see), or no such directory", body = ErrorDetail),
        (status = 409, description = "The sandbox is not RUNNING (MISSING or deleted included), or not run by Switchboard", body = ErrorDetail),
        (status = 502, description = "The agent server failed", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[get("/api/v1/app-conversations/{conversation_id}/files")]
pub async fn list_files(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
    query: QueryPairs,
) -> ApiResult<web::Json<Vec<String>>> {
    let raw = path.into_inner();
    let files = caller
        .run(state, move |s, ctx| {
            let id = conversation_id(&raw)?;
            let dir = text(&query, "path")?;
            Ok(s.services
                .workspaces()
                .list_files(&ctx, id, dir.as_deref())?)
        })
        .await?;
    Ok(web::Json(files))
}

/// A git read (`changes` or `diff`) of the workspace, as the agent server answers it.
async fn git(
    state: web::Data<AppState>,
    caller: Caller,
    raw: String,
    query: QueryPairs,
    what: GitRead,
) -> ApiResult<web::Json<Value>> {
    let answer = caller
        .run(state, move |s, ctx| {
            let id = conversation_id(&raw)?;
            let path = required(&query, "path")?;
            let git_ref = text(&query, "ref")?;
            Ok(s.services
                .workspaces()
                .git(&ctx, id, what, &path, git_ref.as_deref())?)
        })
        .await?;
    Ok(web::Json(answer))
}

/// The changed files of the git repository at `path` against `ref` (default: the agent
/// server's choice: the upstream or default branch), as the agent server answers them: a list
/// of `{"status": "ADDED" | "UPDATED" | "DELETED" | "MOVED", "path"}`.
#[utoipa::path(tag = "App conversations",
    params(
        ("conversation_id" = uuid::Uuid, Path, description = "Conversation id (dashed or 32 hex)"),
        ("path" = inline(TextParam), Query, description = "The repository's root: absolute inside the workspace, or relative to it"),
        ("ref" = inline(Option<GitRefParam>), Query, description = "The git ref to compare with (not starting with -)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "The agent server's GitChange list", body = Vec<Object>),
        (status = 400, description = "A path outside the workspace, a ref starting with -, or git failed", body = ErrorDetail),
        (status = 404, description = "Unknown, another organization's, or another member's seen by a member", body = ErrorDetail),
        (status = 409, description = "The sandbox is not RUNNING (MISSING or deleted included), or not run by Switchboard", body = ErrorDetail),
        (status = 502, description = "The agent server failed", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[get("/api/v1/app-conversations/{conversation_id}/git/changes")]
pub async fn git_changes(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
    query: QueryPairs,
) -> ApiResult<web::Json<Value>> {
    git(state, caller, path.into_inner(), query, GitRead::Changes).await
}

/// One file's diff against `ref`, as the agent server answers it: `{"modified": text | null,
/// "original": text | null}`.
#[utoipa::path(tag = "App conversations",
    params(
        ("conversation_id" = uuid::Uuid, Path, description = "Conversation id (dashed or 32 hex)"),
        ("path" = inline(TextParam), Query, description = "The file: absolute inside the workspace, or relative to it"),
        ("ref" = inline(Option<GitRefParam>), Query, description = "The git ref to compare with (not starting with -)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "The agent server's GitDiff", body = Object),
        (status = 400, description = "A path outside the workspace, a ref starting with -, or git failed", body = ErrorDetail),
        (status = 404, description = "Unknown, another organization's, or another member's seen by a member", body = ErrorDetail),
        (status = 409, description = "The sandbox is not RUNNING (MISSING or deleted included), or not run by Switchboard", body = ErrorDetail),
        (status = 502, description = "The agent server failed", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[get("/api/v1/app-conversations/{conversation_id}/git/diff")]
pub async fn git_diff(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
    query: QueryPairs,
) -> ApiResult<web::Json<Value>> {
    git(state, caller, path.into_inner(), query, GitRead::Diff).await
}

/// The skills the conversation's user and workspace hold (the agent server loads them; public
/// and organization skills are not loaded: docs/API.md).
#[utoipa::path(tag = "App conversations",
    params(
        ("conversation_id" = uuid::Uuid, Path, description = "Conversation id (dashed or 32 hex)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = SkillsResponse),
        (status = 404, description = "Unknown, another organization's, or another member's seen by a member", body = ErrorDetail),
        (status = 409, description = "The sandbox is not RUNNING (MISSING or deleted included), or not run by Switchboard", body = ErrorDetail),
        (status = 502, description = "The agent server failed", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[get("/api/v1/app-conversations/{conversation_id}/skills")]
pub async fn skills(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
) -> ApiResult<web::Json<Value>> {
    workspace_json(state, caller, path.into_inner(), WorkspaceService::skills).await
}

/// The hooks of the workspace's `.openhands/hooks.json`, read now.
#[utoipa::path(tag = "App conversations",
    params(
        ("conversation_id" = uuid::Uuid, Path, description = "Conversation id (dashed or 32 hex)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = GetHooksResponse),
        (status = 404, description = "Unknown, another organization's, or another member's seen by a member", body = ErrorDetail),
        (status = 409, description = "The sandbox is not RUNNING (MISSING or deleted included), or not run by Switchboard", body = ErrorDetail),
        (status = 502, description = "The agent server failed", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[get("/api/v1/app-conversations/{conversation_id}/hooks")]
pub async fn hooks(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
) -> ApiResult<web::Json<Value>> {
    workspace_json(state, caller, path.into_inner(), WorkspaceService::hooks).await
}

/// One JSON read of the conversation's workspace (`read`: its skills, its hooks) for a caller
/// who sees the conversation.
async fn workspace_json(
    state: web::Data<AppState>,
    caller: Caller,
    raw: String,
    read: fn(&WorkspaceService, &OrgContext, ConversationId) -> Result<Value, DomainError>,
) -> ApiResult<web::Json<Value>> {
    let answer = caller
        .run(state, move |s, ctx| {
            let id = conversation_id(&raw)?;
            Ok(read(s.services.workspaces(), &ctx, id)?)
        })
        .await?;
    Ok(web::Json(answer))
}

/// A file's bytes as the text of a JSON string: `"`, each chunk escaped as it is read from the
/// agent server (one chunk read per blocking call, when the previous one was taken: the
/// client's pace), `"`. A read that fails ends the stream with an error (the connection is
/// aborted rather than a truncated string answered as complete).
fn json_text(
    reader: Box<dyn std::io::Read + Send>,
) -> impl Stream<Item = Result<Bytes, actix_web::Error>> {
    futures_util::stream::unfold(Some(JsonText::new(reader)), |text| async move {
        let text = text?;
        match web::block(move || {
            let mut text = text;
            let chunk = text.next_chunk();
            (text, chunk)
        })
        .await
        {
            Ok((text, Ok(Some(chunk)))) => Some((Ok(chunk), Some(text))),
            Ok((_, Ok(None))) => None,
            Ok((_, Err(e))) => {
                tracing::warn!(error = %e, "reading a file from the agent server failed");
                Some((Err(actix_web::error::ErrorBadGateway(e)), None))
            }
            Err(e) => Some((Err(e.into()), None)),
        }
    })
}

/// The state of [`json_text`]: the reader, the bytes of a character cut by a chunk's end,
/// and how far the string is.
struct JsonText {
    reader: Box<dyn std::io::Read + Send>,
    carry: Vec<u8>,
    opened: bool,
    closed: bool,
}

impl JsonText {
    fn new(reader: Box<dyn std::io::Read + Send>) -> Self {
        JsonText {
            reader,
            carry: Vec::new(),
            opened: false,
            closed: false,
        }
    }

    /// The next piece of the string's text; `None` after the closing quote.
    fn next_chunk(&mut self) -> std::io::Result<Option<Bytes>> {
        if self.closed {
            return Ok(None);
        }
        let mut out = String::new();
        if !self.opened {
            self.opened = true;
            out.push('"');
        }
        let mut buf = vec![0u8; READ_CHUNK];
        let n = loop {
            match self.reader.read(&mut buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        self.carry.extend_from_slice(&buf[..n]);
        let kept = escape_utf8(&self.carry, n == 0, &mut out);
        self.carry.drain(..self.carry.len() - kept);
        if n == 0 {
            self.closed = true;
            out.push('"');
        }
        Ok(Some(Bytes::from(out)))
    }
}

/// Appends `bytes` to `out` escaped for a JSON string, invalid UTF-8 as U+FFFD; answers how
/// many bytes at the end were kept back (an incomplete character, unless `last`).
fn escape_utf8(bytes: &[u8], last: bool, out: &mut String) -> usize {
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                push_escaped(s, out);
                return 0;
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                push_escaped(std::str::from_utf8(valid).unwrap_or_default(), out);
                match e.error_len() {
                    Some(bad) => {
                        out.push('\u{FFFD}');
                        rest = &after[bad..];
                    }
                    None if last => {
                        out.push('\u{FFFD}');
                        return 0;
                    }
                    None => return after.len(),
                }
            }
        }
    }
}

/// `s` escaped for the inside of a JSON string.
fn push_escaped(s: &str, out: &mut String) {
    let quoted = serde_json::to_string(s).unwrap_or_default();
    out.push_str(&quoted[1..quoted.len().saturating_sub(1).max(1)]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_across_chunks() {
        let mut out = String::new();
        let bytes = "a\"é\n".as_bytes();
        // The é cut in two: its first byte is kept back.
        let kept = escape_utf8(&bytes[..3], false, &mut out);
        assert_eq!((out.as_str(), kept), ("a\\\"", 1));
        let mut text = JsonText::new(Box::new(std::io::Cursor::new(b"x\xffy\"".to_vec())));
        let mut all = String::new();
        while let Some(c) = text.next_chunk().unwrap() {
            all.push_str(std::str::from_utf8(&c).unwrap());
        }
        assert_eq!(
            serde_json::from_str::<String>(&all).unwrap(),
            "x\u{FFFD}y\""
        );
    }
}
