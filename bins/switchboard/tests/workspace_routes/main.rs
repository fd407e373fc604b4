//! The workspace routes of issue 22 against the real agent server (openhands-agent-server
//! 1.58.2, with the fake LLM), on both backends; without it on this machine each test says so
//! and passes.
//!
//! One conversation is started through Switchboard's start pipeline; while it starts, two
//! pending messages are queued (by `task-<id>` and by the bare task id), and each must reach
//! the agent server exactly once, as a user `MessageEvent`, and Switchboard's store too; one
//! sent once it is ready is delivered at once. Then files, a directory, a git repository with
//! changes, symbolic links (one inside, one out), `AGENTS.md` and `.openhands/hooks.json` are
//! written into its workspace through the agent server's bash endpoint, and every route must
//! answer what the workspace holds: the file (a 3 MB one compared byte for byte), the
//! listings, git changes and a diff, skills, hooks. Path escapes (`..`, absolute elsewhere, a
//! symbolic link out, a `ref` taken for an option) are 400; a member who does not own the
//! conversation and another organization's owner get 404 on every route; the download is a zip
//! holding `meta.json` and every stored event, in order, as stored; a paused sandbox is 409
//! for the workspace reads while the download still answers.

use crate::common;
use crate::event_catch_up::rig;

mod files_tab;

use std::time::{Duration, Instant};

use common::*;
use rig::{Agent, Rig, START_WITHIN};
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const BASE: &str = "/api/v1/app-conversations";

#[test]
fn workspace_routes_sqlite() {
    workspace_routes(Backend::Sqlite);
}

#[test]
fn workspace_routes_postgres() {
    workspace_routes(Backend::Postgres);
}

/// The other callers: a member of the organization (not the conversation's owner) and the
/// owner of another organization.
struct Others {
    member: String,
    stranger: String,
}

fn others(rig: &Rig, db: &str) -> Others {
    let org = rig.server.bootstrapped.as_ref().unwrap()["org_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, member) = add_member(db, &org, "member@example.com", "member");
    let other = cli_json(
        db,
        &[
            "bootstrap",
            "--org-name",
            "acme",
            "--email",
            "root@acme.test",
        ],
    );
    Others {
        member,
        stranger: str_of(&other, "api_key").to_owned(),
    }
}

fn get(rig: &Rig, key: &str, path: &str) -> (u16, Value) {
    send_json(
        client()
            .get(rig.server.url(path))
            .header("X-Access-Token", key),
    )
}

fn pending(rig: &Rig, key: &str, target: &str, text: &str) -> (u16, Value) {
    send_json(
        client()
            .post(
                rig.server
                    .url(&format!("/api/v1/conversations/{target}/pending-messages")),
            )
            .header("X-Access-Token", key)
            .json(&json!({"role": "user", "content": [{"type": "text", "text": text}]})),
    )
}

/// Starts a conversation and queues two pending messages while it starts; its id, its agent
/// server and the task's id once `READY`.
fn start_with_pending(rig: &Rig) -> (String, Agent) {
    let (status, task) = send_json(
        client()
            .post(rig.server.url(BASE))
            .header("X-Access-Token", &rig.key)
            .json(&json!({"initial_message": {"role": "user",
                "content": [{"type": "text", "text": "say hello"}]}})),
    );
    assert!(status == 200 || status == 201, "{task}");
    let task_id = task["id"].as_str().unwrap().to_owned();
    let (status, q1) = pending(rig, &rig.key, &format!("task-{task_id}"), "pending-one");
    assert_eq!(
        (status, &q1["queued"], &q1["position"]),
        (201, &json!(true), &json!(1)),
        "{q1}"
    );
    let (status, q2) = pending(rig, &rig.key, &task_id, "pending-two");
    assert_eq!(
        (status, &q2["queued"], &q2["position"]),
        (201, &json!(true), &json!(2)),
        "{q2}"
    );
    let deadline = Instant::now() + START_WITHIN;
    loop {
        let (_, tasks) = get(rig, &rig.key, &format!("{BASE}/start-tasks?ids={task_id}"));
        let t = &tasks[0];
        match t["status"].as_str() {
            Some("READY") => {
                let conversation = t["app_conversation_id"].as_str().unwrap().to_owned();
                return (conversation, rig.agent(t["sandbox_id"].as_str().unwrap()));
            }
            Some("ERROR") => panic!("the start failed: {t}"),
            _ => {}
        }
        assert!(
            Instant::now() < deadline,
            "the start is still {}",
            t["status"]
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// How many user `MessageEvent`s among `events` carry `text`.
fn user_messages(events: &[Value], text: &str) -> usize {
    events
        .iter()
        .filter(|e| e["kind"] == "MessageEvent" && e["source"] == "user")
        .filter(|e| e.to_string().contains(text))
        .count()
}

/// Waits until the agent server and Switchboard's store each hold one user message with
/// each of `texts`, and checks it stays one.
fn assert_delivered_once(rig: &Rig, agent: &Agent, conversation: &str, texts: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let events = agent.events(conversation);
        let stored = rig.stored(conversation);
        let counts: Vec<(usize, usize)> = texts
            .iter()
            .map(|t| (user_messages(&events, t), user_messages(&stored, t)))
            .collect();
        if counts.iter().all(|c| *c == (1, 1)) {
            return;
        }
        assert!(
            counts.iter().all(|(a, s)| *a <= 1 && *s <= 1),
            "a pending message was delivered twice: {counts:?}"
        );
        assert!(
            Instant::now() < deadline,
            "not delivered: {texts:?} {counts:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Runs `command` in the sandbox through the agent server's bash endpoint; its stdout.
fn bash(agent: &Agent, command: &str) -> String {
    let (status, out) = send_json(
        client()
            .post(format!("{}/api/bash/execute_bash_command", agent.url))
            .header("X-Session-API-Key", &agent.key)
            .json(&json!({"command": command, "timeout": 60})),
    );
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["exit_code"], 0, "{command}: {out}");
    out["stdout"].as_str().unwrap_or("").to_owned()
}

/// The conversation's workspace as the agent server names it.
fn workspace_dir(agent: &Agent, conversation: &str) -> String {
    let (status, info) = send_json(
        client()
            .get(format!(
                "{}/api/conversations/{}",
                agent.url,
                conversation.replace('-', "")
            ))
            .header("X-Session-API-Key", &agent.key),
    );
    assert_eq!(status, 200, "{info}");
    info["workspace"]["working_dir"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Fills the workspace: a committed repository with changes, a directory, a symbolic link in
/// and one out, `AGENTS.md`, hooks and a 3 MB file. Answers the big file's SHA-256.
fn fill(agent: &Agent, ws: &str) -> String {
    bash(
        agent,
        &format!(
            "set -e; cd '{ws}'; printf 'hello plan' > PLAN.md; mkdir -p sub; printf 'x' > sub/a.txt; \
             git init -q .; git config user.email t@example.com; git config user.name t; \
             git add PLAN.md sub; git commit -qm init; printf 'changed plan' > PLAN.md; \
             printf 'new' > new.txt; ln -s /etc escape; ln -s sub inner; \
             mkdir -p sub/node_modules/m; printf 'm' > sub/node_modules/m/i.js; \
             printf 'workspace-agents-marker\\n' > AGENTS.md; mkdir -p .openhands; \
             printf '%s' '{{\"hooks\": {{\"PreToolUse\": [{{\"matcher\": \"terminal\", \"hooks\": [{{\"type\": \"command\", \"command\": \"echo hook-marker\", \"timeout\": 5}}]}}]}}}}' > .openhands/hooks.json; \
             head -c 3000000 /dev/urandom | base64 > big.txt"
        ),
    );
    bash(agent, &format!("sha256sum '{ws}/big.txt' | cut -d' ' -f1"))
        .trim()
        .to_owned()
}

fn workspace_routes(backend: Backend) {
    let Some(agent_server) = switchboard_testkit::real_agent_server() else {
        eprintln!("no real agent server on this machine (scripts/e2e.sh installs it): skipped");
        return;
    };
    let db = TestDatabase::new(backend);
    let rig = Rig::start(db.url(), &agent_server, false, true);
    let others = others(&rig, db.url());

    let (conv, agent) = start_with_pending(&rig);
    assert_delivered_once(&rig, &agent, &conv, &["pending-one", "pending-two"]);
    let (status, q) = pending(&rig, &rig.key, &conv, "pending-ready");
    assert_eq!((status, &q["queued"]), (201, &json!(false)), "{q}");
    assert_delivered_once(&rig, &agent, &conv, &["pending-ready"]);
    for key in [&others.member, &others.stranger] {
        let (status, _) = pending(&rig, key, &conv, "nope");
        assert_eq!(status, 404, "{backend}");
    }

    // OpenHands' project directory, as every confined sandbox sees its own (issue 31); the
    // files are in the sandbox's directory on the host.
    let ws = workspace_dir(&agent, &conv);
    assert_eq!(ws, "/workspace/project", "{backend}");
    // Programs in the sandbox find the real agent server at localhost:$AGENT_SERVER_PORT
    // (the port it listens on; the agent server passes the variable on to its commands).
    let inside = bash(
        &agent,
        "echo $AGENT_SERVER_PORT; curl -fsS -o /dev/null -w '%{http_code}' \
         \"http://localhost:$AGENT_SERVER_PORT/alive\"",
    );
    let port = agent.url.rsplit(':').next().unwrap().trim_end_matches('/');
    assert_eq!(
        inside.lines().collect::<Vec<_>>(),
        [port, "200"],
        "{backend}: {inside}"
    );
    let big_sha = fill(&agent, &ws);
    let on_host = std::path::Path::new(&rig.data_dir)
        .join("sandboxes")
        .join(
            uuid::Uuid::parse_str(&agent.sandbox)
                .unwrap()
                .hyphenated()
                .to_string(),
        )
        .join("workspace/project/PLAN.md");
    assert_eq!(
        std::fs::read_to_string(&on_host).unwrap(),
        "changed plan",
        "{backend}"
    );
    reads(&rig, &conv, &ws, &big_sha);
    escapes(&rig, &conv, &ws);
    for key in [&others.member, &others.stranger] {
        for path in [
            "file",
            "files",
            "git/changes?path=.",
            "git/diff?path=PLAN.md",
            "skills",
            "hooks",
            "download",
        ] {
            let res = client()
                .get(rig.server.url(&format!("{BASE}/{conv}/{path}")))
                .header("X-Access-Token", key)
                .send()
                .unwrap();
            assert_eq!(res.status().as_u16(), 404, "{backend} {path}");
        }
    }
    download(&rig, &conv);

    // Paused: the workspace reads are 409; the download still answers.
    rig.sandbox_action(&agent.sandbox, "pause");
    wait_sandbox_status(&rig.server, &rig.key, &agent.sandbox, "PAUSED");
    let (status, body) = get(
        &rig,
        &rig.key,
        &format!("{BASE}/{conv}/file?file_path=PLAN.md"),
    );
    assert_eq!(status, 409, "{backend}: {body}");
    let (status, _) = get(&rig, &rig.key, &format!("{BASE}/{conv}/files"));
    assert_eq!(status, 409);
    download(&rig, &conv);
}

/// Every route answers what the workspace holds.
fn reads(rig: &Rig, conv: &str, ws: &str, big_sha: &str) {
    let file = |q: &str| get(rig, &rig.key, &format!("{BASE}/{conv}/file?{q}"));
    assert_eq!(file("file_path=PLAN.md"), (200, json!("changed plan")));
    assert_eq!(
        file(&format!("file_path={ws}/sub/a.txt")),
        (200, json!("x"))
    );
    assert_eq!(file("file_path=inner/a.txt"), (200, json!("x")));
    assert_eq!(
        file(""),
        (200, json!("changed plan")),
        "the default is PLAN.md"
    );
    assert_eq!(
        file("file_path="),
        (200, json!("changed plan")),
        "an empty file_path is the default"
    );
    assert_eq!(file("file_path=nothing-here.txt"), (200, json!("")));
    assert_eq!(file("file_path=sub").0, 400);
    let (status, big) = file("file_path=big.txt");
    assert_eq!(status, 200);
    let big = big.as_str().unwrap().as_bytes().to_vec();
    assert!(big.len() > 3_000_000, "{}", big.len());
    let sha = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(&big)?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(
        String::from_utf8_lossy(&sha.stdout).starts_with(big_sha),
        "the big file differs"
    );

    // Agent Canvas's requests: the conversation's `workspace.working_dir` as `path`; every
    // file below it, relative, sorted; the symbolic links neither followed nor listed, `.git`
    // and `node_modules` not entered.
    let list = json!(files_tab::replay(rig, conv, ws));
    let want = json!([
        ".openhands/hooks.json",
        "AGENTS.md",
        "PLAN.md",
        "big.txt",
        "new.txt",
        "sub/a.txt"
    ]);
    assert_eq!(list, want);
    assert_eq!(get(rig, &rig.key, &format!("{BASE}/{conv}/files")).1, want);
    let (status, sub) = get(rig, &rig.key, &format!("{BASE}/{conv}/files?path=inner"));
    assert_eq!((status, sub), (200, json!(["a.txt"])));
    assert_eq!(
        get(rig, &rig.key, &format!("{BASE}/{conv}/files?path=none")).0,
        404
    );
    assert_eq!(
        get(rig, &rig.key, &format!("{BASE}/{conv}/files?path=PLAN.md")).0,
        400
    );

    let (status, changes) = get(
        rig,
        &rig.key,
        &format!("{BASE}/{conv}/git/changes?path={ws}&ref=HEAD"),
    );
    assert_eq!(status, 200, "{changes}");
    let changed: Vec<(String, String)> = changes
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap().to_owned(),
                c["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        changed.contains(&("PLAN.md".into(), "UPDATED".into())),
        "{changed:?}"
    );
    assert!(
        changed.contains(&("new.txt".into(), "ADDED".into())),
        "{changed:?}"
    );
    let (status, diff) = get(
        rig,
        &rig.key,
        &format!("{BASE}/{conv}/git/diff?path=PLAN.md&ref=HEAD"),
    );
    assert_eq!(status, 200, "{diff}");
    assert_eq!(
        (&diff["original"], &diff["modified"]),
        (&json!("hello plan"), &json!("changed plan"))
    );

    let (status, skills) = get(rig, &rig.key, &format!("{BASE}/{conv}/skills"));
    assert_eq!(status, 200, "{skills}");
    assert!(
        skills["skills"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["content"]
                .as_str()
                .unwrap_or("")
                .contains("workspace-agents-marker")),
        "{skills}"
    );
    let (status, hooks) = get(rig, &rig.key, &format!("{BASE}/{conv}/hooks"));
    assert_eq!(status, 200, "{hooks}");
    assert_eq!(hooks["hooks"][0]["event_type"], "pre_tool_use", "{hooks}");
    assert_eq!(hooks["hooks"][0]["matchers"][0]["matcher"], "terminal");
    assert_eq!(
        hooks["hooks"][0]["matchers"][0]["hooks"][0]["command"],
        "echo hook-marker"
    );
}

/// `..`, absolute paths elsewhere and symbolic links out are 400 with a detail; a NUL is 422.
fn escapes(rig: &Rig, conv: &str, ws: &str) {
    let parent = ws.rsplit_once('/').unwrap().0;
    for q in [
        "file?file_path=../x".to_owned(),
        "file?file_path=sub/../../x".to_owned(),
        "file?file_path=/etc/passwd".to_owned(),
        format!("file?file_path={parent}/x"),
        "file?file_path=escape/passwd".to_owned(),
        "files?path=..".to_owned(),
        "files?path=escape".to_owned(),
        "files?path=/".to_owned(),
        "git/changes?path=/etc".to_owned(),
        "git/diff?path=escape/hostname".to_owned(),
        "git/diff?path=PLAN.md&ref=--output=/tmp/x".to_owned(),
    ] {
        let (status, body) = get(rig, &rig.key, &format!("{BASE}/{conv}/{q}"));
        assert_eq!(status, 400, "{q}: {body}");
        assert!(
            body["detail"].as_str().is_some_and(|d| !d.is_empty()),
            "{q}: {body}"
        );
    }
    let (status, _) = get(
        rig,
        &rig.key,
        &format!("{BASE}/{conv}/file?file_path=a%00b"),
    );
    assert_eq!(status, 422);
    let (status, _) = get(rig, &rig.key, &format!("{BASE}/{conv}/git/changes"));
    assert_eq!(status, 422, "path is required");
}

/// The zip holds `meta.json` and exactly the stored events (in the order stored: by position),
/// each as stored. Events may still arrive while the conversation runs: the check is made on a
/// download between two equal reads of the store.
fn download(rig: &Rig, conv: &str) {
    for _ in 0..20 {
        let before = rig.stored(conv);
        let entries = zip_entries(rig, conv);
        if rig.stored(conv) != before {
            std::thread::sleep(Duration::from_millis(500));
            continue;
        }
        assert_eq!(entries[0].0, "meta.json");
        assert_eq!(entries[0].1["id"], conv.replace('-', ""));
        assert_eq!(entries[0].1["session_api_key"], Value::Null);
        assert!(before.len() > 3, "{}", before.len());
        assert_eq!(entries.len(), before.len() + 1, "every stored event, once");
        let by_id: std::collections::HashMap<&str, &Value> = before
            .iter()
            .map(|e| (e["id"].as_str().unwrap(), e))
            .collect();
        for (i, (name, event)) in entries[1..].iter().enumerate() {
            let id = event["id"].as_str().unwrap();
            assert_eq!(name, &format!("event_{i:06}_{id}.json"));
            assert_eq!(Some(&event), by_id.get(id), "{name}");
        }
        return;
    }
    panic!("the conversation's events never stopped changing");
}

/// The entries of the conversation's download, each name with its JSON, as Python's zipfile
/// reads them (after its CRC check of every entry).
fn zip_entries(rig: &Rig, conv: &str) -> Vec<(String, Value)> {
    let res = client()
        .get(rig.server.url(&format!("{BASE}/{conv}/download")))
        .header("X-Access-Token", &rig.key)
        .send()
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.headers()["content-type"], "application/zip");
    let bytes = res.bytes().unwrap();
    let dir = TempDir::new();
    let path = dir.path().join("c.zip");
    std::fs::write(&path, &bytes).unwrap();
    let out = std::process::Command::new(python())
        .args([
            "-c",
            "import json, sys, zipfile\n\
             z = zipfile.ZipFile(sys.argv[1])\n\
             assert z.testzip() is None\n\
             print(json.dumps([[n, json.loads(z.read(n))] for n in z.namelist()]))",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
