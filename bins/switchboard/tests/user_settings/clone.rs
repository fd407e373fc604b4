//! The start's clone with the user's provider token (issue 21, "Use"), against a real git
//! server on loopback that requires a token (git's smart HTTP through `git http-backend`,
//! `crates/testkit/fixtures/git_http_server.py`), reached through `--git-provider-url`: the
//! owner's GitHub token for `github` (the operator's URL for the provider) and their GitLab
//! token for `gitlab` at the host stored with it (the operator's URL for that host) clone the
//! repository at its branch; a member with no token (the owner's stored, not theirs) ends
//! `ERROR` with a detail naming the missing token. After the clone, neither `git config
//! --list`, `.git/config`, the remote URL, the environment, the commands the agent server ran
//! nor the credential directory hold the token; the task, the events and the server's log
//! never do (`sealed.rs` greps every answer and the log).

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_testkit::Backend;

use crate::common::{TempDir, client, direct_agent_url, python};
use crate::user_settings::rig::{GITHUB_TOKEN, GITLAB_TOKEN, Rig};

/// The host the owner stores with their GitLab token, mapped by the operator to the server.
pub const GITLAB_HOST: &str = "git.test.internal";

/// The git server: its port, its request log, its process (killed on drop).
pub struct GitServer {
    pub port: u16,
    pub log: std::path::PathBuf,
    child: Child,
    _root: TempDir,
}

impl Drop for GitServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `git` in `dir`, panicking on failure.
fn git(dir: &std::path::Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

impl GitServer {
    /// Serves `team/private` (branches `main` and `work`, README `main`/`work`) to the owner's
    /// GitHub and GitLab tokens.
    pub fn start() -> GitServer {
        let root = TempDir::new();
        let src = root.path().join("src");
        std::fs::create_dir_all(&src).unwrap();
        git(&src, &["init", "-q", "-b", "main"]);
        std::fs::write(src.join("README"), "main\n").unwrap();
        git(&src, &["add", "."]);
        git(&src, &["commit", "-q", "-m", "main"]);
        git(&src, &["checkout", "-q", "-b", "work"]);
        std::fs::write(src.join("README"), "work\n").unwrap();
        git(&src, &["commit", "-q", "-am", "work"]);
        git(&src, &["checkout", "-q", "main"]);
        let served = root.path().join("served");
        std::fs::create_dir_all(served.join("team")).unwrap();
        git(
            root.path(),
            &["clone", "-q", "--bare", "src", "served/team/private.git"],
        );
        let log = root.path().join("requests.jsonl");
        let mut child = Command::new(python())
            .arg(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../../crates/testkit/fixtures/git_http_server.py"),
            )
            .arg("--root")
            .arg(&served)
            .args(["--token", GITHUB_TOKEN, "--token", GITLAB_TOKEN, "--log"])
            .arg(&log)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().rsplit(' ').next().unwrap().parse().unwrap();
        GitServer {
            port,
            log,
            child,
            _root: root,
        }
    }

    /// The requests served so far.
    fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// Runs `command` in the sandbox through its agent server (the stand-in's bash endpoint):
/// standard output, asserting exit 0.
fn sh(url: &str, session: &str, command: &str) -> String {
    let out: Value = client()
        .post(format!(
            "{}/api/bash/execute_bash_command",
            direct_agent_url(url)
        ))
        .header("X-Session-API-Key", session)
        .json(&json!({"command": command, "timeout": 30}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(out["exit_code"], 0, "{command}: {out}");
    out["stdout"].as_str().unwrap().to_owned()
}

/// Starts a conversation of `key` in `sandbox` cloning `extra`'s repository; waits until it
/// is READY or ERROR and answers the task.
fn start(r: &Rig, key: &str, sandbox: &str, extra: Value) -> Value {
    let mut body = json!({"sandbox_id": sandbox,
        "initial_message": {"role": "user", "content": [{"type": "text", "text": "hi"}], "run": false}});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let (code, task) = r.post("/api/v1/app-conversations", key, body);
    assert_eq!(code, 200, "{task}");
    let id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, t) = r.get(
            &format!("/api/v1/app-conversations/start-tasks?ids={id}"),
            key,
        );
        if matches!(t[0]["status"].as_str(), Some("READY" | "ERROR")) {
            return t[0].clone();
        }
        assert!(Instant::now() < deadline, "stuck: {t}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Checks the workspace of `task`'s conversation: the repository at `branch`, no token in its
/// configuration, remote URL or the environment, the credential directory gone. Returns the
/// working directory.
fn check_workspace(url: &str, session: &str, task: &Value, branch: &str, origin: &str) -> String {
    let conv = task["app_conversation_id"]
        .as_str()
        .unwrap()
        .replace('-', "");
    // A start into a named sandbox works in a folder of its own below the sandbox's project
    // directory (issue 31), as the agent server was told.
    let info: Value = client()
        .get(format!(
            "{}/api/conversations/{conv}",
            direct_agent_url(url)
        ))
        .header("X-Session-API-Key", session)
        .send()
        .unwrap()
        .json()
        .unwrap();
    let ws = info["workspace"]["working_dir"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(ws.ends_with(&format!("workspace/project/{conv}")), "{ws}");
    let in_ws = |c: &str| sh(url, session, &format!("cd '{ws}' && {c}"));
    assert_eq!(in_ws("cat README").trim(), branch);
    assert_eq!(in_ws("git rev-parse --abbrev-ref HEAD").trim(), branch);
    assert_eq!(in_ws("git remote get-url origin").trim(), origin);
    let seen = [
        in_ws("git config --list --show-origin"),
        in_ws("cat .git/config"),
        in_ws("env"),
        sh(url, session, "cat ~/.gitconfig 2>/dev/null; ls -a /tmp"),
    ];
    for text in seen {
        for token in [GITHUB_TOKEN, GITLAB_TOKEN] {
            assert!(!text.contains(token), "the token in: {text}");
        }
    }
    // The commands the agent server ran (which it keeps as events) name the credential
    // directory, never the token; the directory is gone.
    let commands: Value = client()
        .get(format!("{}/standin/commands", direct_agent_url(url)))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let commands = commands.to_string();
    for token in [GITHUB_TOKEN, GITLAB_TOKEN] {
        assert!(
            !commands.contains(token),
            "the token in a command: {commands}"
        );
    }
    let (_, last) = commands
        .rsplit_once("rm -rf -- '")
        .expect("the clone removes its credential directory");
    let dir = last.split('\'').next().unwrap();
    assert_eq!(
        sh(
            url,
            session,
            &format!("test -e '{dir}' && echo left || echo gone")
        )
        .trim(),
        "gone"
    );
    ws
}

pub fn clones_with_the_users_token(
    r: &Rig,
    backend: Backend,
    (mine, session, url): (&str, &str, &str),
) {
    let git = &r.git;
    let base = format!("http://127.0.0.1:{}", git.port);
    // The owner's git identity (issue 36); clones are shallow by default.
    let (code, b) = r.post(
        "/api/v1/settings",
        &r.owner,
        json!({"git_user_name": "Ada O'Neil", "git_user_email": "ada@example.com"}),
    );
    assert_eq!(code, 200, "{b}");
    // GitHub through the operator's URL for the provider, with the owner's token.
    let task = start(
        r,
        &r.owner,
        mine,
        json!({"selected_repository": "team/private", "git_provider": "github", "selected_branch": "work"}),
    );
    assert_eq!(task["status"], "READY", "{backend}: {task}");
    let ws = check_workspace(
        url,
        session,
        &task,
        "work",
        &format!("{base}/team/private.git"),
    );
    let in_ws = |c: &str| sh(url, session, &format!("cd '{ws}' && {c}"));
    assert_eq!(
        in_ws("git rev-parse --is-shallow-repository").trim(),
        "true",
        "{backend}: git_full_clone is false by default"
    );
    assert_eq!(
        (
            in_ws("git config user.name").trim(),
            in_ws("git config user.email").trim()
        ),
        ("Ada O'Neil", "ada@example.com"),
        "{backend}"
    );
    // The agent is told the history is shallow.
    let creates: Value = client()
        .get(format!("{}/standin/creates", direct_agent_url(url)))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let suffix = creates.as_array().unwrap().last().unwrap()["agent"]["agent_context"]
        ["system_message_suffix"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        suffix.contains("git fetch --unshallow"),
        "{backend}: {suffix:?}"
    );
    let (code, b) = r.post(
        "/api/v1/settings",
        &r.owner,
        json!({"git_full_clone": true}),
    );
    assert_eq!(code, 200, "{b}");
    let users: Vec<Value> = git.requests().iter().map(|q| q["user"].clone()).collect();
    assert!(
        users.contains(&json!("x-access-token")),
        "{backend}: {users:?}"
    );
    // GitLab at the host stored with the token, mapped by the operator.
    let (code, b) = r.post(
        "/api/v1/secrets/git-providers",
        &r.owner,
        json!({"provider_tokens": {"github": {}, "gitlab": {"token": GITLAB_TOKEN, "host": GITLAB_HOST}}}),
    );
    assert_eq!(code, 200, "{b}");
    let task = start(
        r,
        &r.owner,
        mine,
        json!({"selected_repository": "team/private", "git_provider": "gitlab"}),
    );
    assert_eq!(task["status"], "READY", "{backend}: {task}");
    let ws = check_workspace(
        url,
        session,
        &task,
        "main",
        &format!("{base}/team/private.git"),
    );
    assert_eq!(
        sh(
            url,
            session,
            &format!("cd '{ws}' && git rev-parse --is-shallow-repository")
        )
        .trim(),
        "false",
        "{backend}: git_full_clone"
    );
    assert!(
        git.requests()
            .iter()
            .any(|q| q["user"] == "oauth2" && q["authorized"] == true),
        "{backend}: GitLab's user name"
    );
    // A member without a token (the owner's is not theirs): ERROR, saying so.
    let (theirs, _, _) = r.sandbox(&r.member);
    let before = git.requests().len();
    let task = start(
        r,
        &r.member,
        &theirs,
        json!({"selected_repository": "team/private", "git_provider": "github"}),
    );
    assert_eq!(task["status"], "ERROR", "{backend}: {task}");
    let detail = task["detail"].as_str().unwrap();
    assert!(
        detail.contains("cloning the repository failed")
            && detail.contains("no github token is stored for this user"),
        "{backend}: {detail}"
    );
    let after = git.requests();
    assert!(
        after.len() > before && after[before..].iter().all(|q| q["authorized"] == false),
        "{backend}: the member's clone reached the server unauthorized: {after:?}"
    );
    // The events of the owner's conversations hold no token (the answers are recorded for
    // `sealed.rs`).
    let (_, page) = r.get("/api/v1/app-conversations/search?limit=100", &r.owner);
    for c in page["items"].as_array().unwrap() {
        let id = c["id"].as_str().unwrap();
        let (code, _) = r.get(
            &format!("/api/v1/conversation/{id}/events/search?limit=100"),
            &r.owner,
        );
        assert_eq!(code, 200);
    }
}
