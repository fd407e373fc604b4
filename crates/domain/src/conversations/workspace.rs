//! A conversation's workspace as the workspace routes see it (issue 22, "Workspace routes"):
//! the rules that keep a requested path inside the workspace, the directory listing read from
//! the sandbox, OpenHands' answers for skills and hooks, and the pending messages queued for a
//! conversation that is still starting. No I/O here: the service
//! (`services/conversations/workspace.rs`) asks the agent server.
//!
//! Confinement, in two steps (docs/API.md, "Workspace routes"):
//! 1. lexically, here ([`confine`]): a `..` segment is refused outright; an absolute path must
//!    be the workspace or below it; a relative one is taken below the workspace;
//! 2. in the sandbox, by the service: the agent server's bash endpoint resolves the real path
//!    of the workspace and of the path (`realpath -m`, every symbolic link followed), and a
//!    path whose real path leaves the workspace's real path is refused ([`inside`]); the
//!    agent server is then asked for the *resolved* path, never the requested one.

use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::ids::{ConversationId, OrgId, UserId};

/// The most messages queued for one conversation (OpenHands' pending-message limit: 10;
/// the 11th is 429).
pub const MAX_PENDING_MESSAGES: u64 = 10;

/// The most paths the file listing answers (`GET …/files`): a larger tree is cut, the first
/// ones in bytewise order kept. Agent Canvas itself shows at most 2 000.
pub const MAX_LISTED_FILES: usize = 10_000;

/// The longest path the file listing answers, in bytes (Linux's `PATH_MAX`); a longer one is
/// left out. With [`MAX_LISTED_FILES`] it bounds the answer near 40 MiB at the very worst.
pub const MAX_LISTED_PATH: usize = 4096;

/// The directories the file listing does not descend into, wherever they are: those Agent
/// Canvas 1.20.0 prunes from its own `find` (`hooks/query/use-workspace-files.ts`).
pub const PRUNED_DIRS: [&str; 14] = [
    ".git",
    "node_modules",
    ".venv",
    "venv",
    "__pycache__",
    "dist",
    "build",
    ".next",
    ".cache",
    ".pytest_cache",
    ".mypy_cache",
    ".turbo",
    ".parcel-cache",
    "target",
];

/// The tag the start pipeline gives a conversation with its working directory (the agent
/// server's `workspace.working_dir`), shown as the conversation's `workspace.working_dir`.
pub const WORKING_DIR_TAG: &str = "workingdir";

/// The file the file route reads without `file_path`: OpenHands' default is
/// `/workspace/project/PLAN.md`, its workspace's `PLAN.md`; here the conversation's own.
pub const DEFAULT_FILE: &str = "PLAN.md";

/// Why a requested path was refused (a 400 with this text as `detail`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRefused(pub String);

/// The absolute, lexically normal path of `requested` inside `workspace` (itself absolute):
/// `.` and empty segments dropped, a relative path taken below the workspace, the empty path
/// the workspace itself.
///
/// # Errors
/// [`PathRefused`] for a `..` segment anywhere, or an absolute path that is not the workspace
/// or below it.
pub fn confine(workspace: &str, requested: &str) -> Result<String, PathRefused> {
    let root = normal(workspace);
    if requested.split('/').any(|s| s == "..") {
        return Err(PathRefused(format!(
            "Path {requested:?} contains a '..' segment: paths must stay inside the conversation's workspace ({root})"
        )));
    }
    let path = if requested.starts_with('/') {
        normal(requested)
    } else {
        normal(&format!("{root}/{requested}"))
    };
    if inside(&root, &path) {
        Ok(path)
    } else {
        Err(PathRefused(format!(
            "Path {requested:?} is outside the conversation's workspace ({root})"
        )))
    }
}

/// Whether `path` is `root` or below it (both absolute and normal).
pub fn inside(root: &str, path: &str) -> bool {
    let root = root.trim_end_matches('/');
    path == root || root.is_empty() || path.strip_prefix(root).is_some_and(|r| r.starts_with('/'))
}

/// `path` with `.` and empty segments dropped, as an absolute path (`/` for none).
fn normal(path: &str) -> String {
    let segments: Vec<&str> = path
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    format!("/{}", segments.join("/"))
}

/// The refusal for a path whose real path leaves the workspace.
pub fn escapes(requested: &str, workspace: &str) -> PathRefused {
    PathRefused(format!(
        "Path {requested:?} resolves outside the conversation's workspace ({workspace}): a symbolic link points out of it"
    ))
}

/// A `ref` for the git routes: any ref name git takes, but never one git would read as an
/// option (a leading `-`).
///
/// # Errors
/// [`PathRefused`] naming the rule.
pub fn check_git_ref(git_ref: &str) -> Result<(), PathRefused> {
    if git_ref.starts_with('-') {
        return Err(PathRefused("ref must not start with '-'".into()));
    }
    Ok(())
}

/// The shell command that lists, below `dir` (quoted already), every regular file (symbolic
/// links are not followed, nor listed) as its path relative to `dir`, NUL-terminated, in
/// bytewise order, the [`PRUNED_DIRS`] not entered, at most [`MAX_LISTED_FILES`] of them.
pub fn file_list_command(dir_quoted: &str) -> String {
    let prune = PRUNED_DIRS
        .iter()
        .map(|d| format!("-name '{d}'"))
        .collect::<Vec<_>>()
        .join(" -o ");
    format!(
        "find {dir_quoted} -mindepth 1 \\( -type d \\( {prune} \\) -prune \\) -o -type f -printf '%P\\0' \
         | LC_ALL=C sort -z | head -z -n {MAX_LISTED_FILES}"
    )
}

/// The paths of the output of [`file_list_command`], in its order; empty records and paths
/// longer than [`MAX_LISTED_PATH`] are left out.
pub fn parse_file_list(stdout: &str) -> Vec<String> {
    stdout
        .split('\0')
        .filter(|p| !p.is_empty() && p.len() <= MAX_LISTED_PATH)
        .take(MAX_LISTED_FILES)
        .map(str::to_owned)
        .collect()
}

/// The agent server's `POST /api/skills` body for a conversation's workspace: the user's and
/// the project's skills. Public skills (a clone of OpenHands' extensions repository from
/// GitHub) and organization skills (repositories of a git provider) are not loaded:
/// Switchboard configures neither (docs/API.md).
pub fn skills_request(project_dir: &str) -> Value {
    json!({
        "load_public": false,
        "load_user": true,
        "load_project": true,
        "load_org": false,
        "project_dir": project_dir,
    })
}

/// OpenHands' answer of `GET …/skills` from the agent server's `SkillsResponse`:
/// `{"skills": [{"name", "type", "content", "triggers"}]}`, `type` being `agentskills` for a
/// skill in the AgentSkills format, else the agent server's (`repo` or `knowledge`).
pub fn skills_view(answer: &Value) -> Value {
    let skills: Vec<Value> = answer
        .get("skills")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|s| {
            let kind = if s.get("is_agentskills_format") == Some(&Value::Bool(true)) {
                json!("agentskills")
            } else {
                s.get("type").cloned().unwrap_or(json!("repo"))
            };
            json!({
                "name": s.get("name").cloned().unwrap_or(Value::Null),
                "type": kind,
                "content": s.get("content").cloned().unwrap_or(json!("")),
                "triggers": s.get("triggers").filter(|t| t.is_array()).cloned().unwrap_or(json!([])),
            })
        })
        .collect();
    json!({ "skills": skills })
}

/// The hook event types OpenHands lists, in its order.
const HOOK_EVENT_TYPES: [&str; 6] = [
    "pre_tool_use",
    "post_tool_use",
    "user_prompt_submit",
    "session_start",
    "session_end",
    "stop",
];

/// OpenHands' answer of `GET …/hooks` from the agent server's `HooksResponse`
/// (`{"hook_config": HookConfig | null}`): `{"hooks": [{"event_type", "matchers": [{"matcher",
/// "hooks": [{"type", "command", "timeout", "async"}]}]}]}`, event types without matchers left
/// out.
pub fn hooks_view(answer: &Value) -> Value {
    let config = answer.get("hook_config").and_then(Value::as_object);
    let hooks: Vec<Value> = HOOK_EVENT_TYPES
        .iter()
        .filter_map(|event| {
            let matchers = config?.get(*event)?.as_array()?;
            (!matchers.is_empty()).then(|| {
                json!({
                    "event_type": event,
                    "matchers": matchers.iter().map(matcher_view).collect::<Vec<_>>(),
                })
            })
        })
        .collect();
    json!({ "hooks": hooks })
}

/// One `HookMatcher` as OpenHands answers it.
fn matcher_view(m: &Value) -> Value {
    let hooks: Vec<Value> = m
        .get("hooks")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|h| {
            let mut out = Map::new();
            out.insert(
                "type".into(),
                h.get("type").cloned().unwrap_or(json!("command")),
            );
            out.insert(
                "command".into(),
                h.get("command").cloned().unwrap_or(Value::Null),
            );
            out.insert(
                "timeout".into(),
                h.get("timeout").cloned().unwrap_or(json!(60)),
            );
            out.insert(
                "async".into(),
                h.get("async").cloned().unwrap_or(json!(false)),
            );
            Value::Object(out)
        })
        .collect();
    json!({
        "matcher": m.get("matcher").cloned().unwrap_or(json!("*")),
        "hooks": hooks,
    })
}

/// A message queued for a conversation that is still starting (OpenHands' `PendingMessage`),
/// delivered to its agent server when the start is `READY`.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingMessage {
    /// Its id (answered as `id`).
    pub id: Uuid,
    /// The conversation it is for (the start task's conversation id).
    pub conversation_id: ConversationId,
    /// The conversation's organization.
    pub org_id: OrgId,
    /// Who queued it.
    pub created_by_user_id: UserId,
    /// The agent server's `SendMessageRequest` (`{"role", "content", "run"}`), as sent.
    pub body: Value,
    /// When it was queued (UTC, microseconds).
    pub created_at: OffsetDateTime,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_workspace() {
        let ws = "/home/u/ws/abc";
        assert_eq!(confine(ws, "a/./b.txt").unwrap(), "/home/u/ws/abc/a/b.txt");
        assert_eq!(confine(ws, "").unwrap(), ws);
        assert_eq!(
            confine(ws, "/home/u/ws/abc//x").unwrap(),
            "/home/u/ws/abc/x"
        );
        assert_eq!(confine("/home/u/ws/abc/", ".").unwrap(), ws);
        for bad in [
            "../x",
            "a/../../x",
            "a/..",
            "/home/u/ws/abc/../abd",
            "/etc/passwd",
            "/home/u/ws/abcd",
        ] {
            assert!(confine(ws, bad).is_err(), "{bad}");
        }
        assert!(inside("/a/b", "/a/b/c") && inside("/a/b", "/a/b") && !inside("/a/b", "/a/bc"));
        assert!(check_git_ref("--output=/x").is_err() && check_git_ref("HEAD~1").is_ok());
    }

    #[test]
    fn file_lists_parse_and_bound() {
        let long = "d/".repeat(MAX_LISTED_PATH);
        let out = format!("a.txt\0sub/b c.txt\0\0{long}\0z\n.txt\0");
        assert_eq!(parse_file_list(&out), ["a.txt", "sub/b c.txt", "z\n.txt"]);
        let many = "f\0".repeat(MAX_LISTED_FILES + 5);
        assert_eq!(parse_file_list(&many).len(), MAX_LISTED_FILES);
        let cmd = file_list_command("'/w'");
        assert!(cmd.starts_with("find '/w' -mindepth 1 "), "{cmd}");
        assert!(
            cmd.contains("-name 'node_modules'") && cmd.contains("-prune"),
            "{cmd}"
        );
        assert!(
            cmd.ends_with(&format!("head -z -n {MAX_LISTED_FILES}")),
            "{cmd}"
        );
    }

    #[test]
    fn hooks_and_skills_take_openhands_shapes() {
        let h = hooks_view(
            &json!({"hook_config": {"pre_tool_use": [{"matcher": "terminal",
            "hooks": [{"type": "command", "command": "echo hi", "timeout": 5, "async": false}]}],
            "stop": []}}),
        );
        assert_eq!(h["hooks"].as_array().unwrap().len(), 1);
        assert_eq!(h["hooks"][0]["event_type"], "pre_tool_use");
        assert_eq!(
            h["hooks"][0]["matchers"][0]["hooks"][0]["command"],
            "echo hi"
        );
        assert_eq!(
            hooks_view(&json!({"hook_config": null})),
            json!({"hooks": []})
        );
        let s = skills_view(
            &json!({"skills": [{"name": "a", "type": "knowledge", "content": "c",
            "triggers": ["x"], "is_agentskills_format": true}]}),
        );
        assert_eq!(
            s["skills"][0],
            json!({"name": "a", "type": "agentskills", "content": "c", "triggers": ["x"]})
        );
    }
}
