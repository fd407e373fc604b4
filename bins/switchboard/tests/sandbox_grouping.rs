//! Sandbox grouping (docs/API.md, "Sandbox grouping") with the real binary, the real agent
//! server (openhands-agent-server 1.58.2) and the fake LLM, on both backends, one server per
//! backend for every case: a member whose `sandbox_grouping_strategy` is `GROUP_BY_NEWEST`
//! starts two conversations, which share one sandbox, each run to `finished` in a working
//! directory of its own with only its own events; a third that fails after joining leaves the
//! sandbox running; under `NO_GROUPING` a start gets a sandbox
//! of its own although the shared one has room; deleting one of the shared conversations
//! keeps the sandbox `RUNNING`; served again with `--sandbox-max-conversations 1`, a grouped
//! start next to the sandbox, which holds one conversation, gets a new sandbox; the other
//! conversation answers and takes a further message, and deleting it, the last, deletes the
//! sandbox. Only one sandbox per backend is waited for: the others' starts are cut short once
//! their sandbox is chosen. Without the real agent server on this machine each test says so
//! and passes.

use crate::common;
use crate::event_catch_up::rig;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::*;
use rig::{Rig, START_WITHIN};
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const BASE: &str = "/api/v1/app-conversations";

#[test]
fn grouped_starts_share_a_sandbox_sqlite() {
    grouping(Backend::Sqlite);
}

#[test]
fn grouped_starts_share_a_sandbox_postgres() {
    grouping(Backend::Postgres);
}

fn post(rig: &Rig, path: &str, body: &Value) -> (u16, Value) {
    send_json(
        client()
            .post(rig.server.url(path))
            .header("X-Access-Token", &rig.key)
            .json(body),
    )
}

/// Stores the member's `sandbox_grouping_strategy`.
fn set_strategy(rig: &Rig, strategy: &str) {
    let (status, body) = post(
        rig,
        "/api/v1/settings",
        &json!({"sandbox_grouping_strategy": strategy}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        rig.get("/api/v1/settings")["sandbox_grouping_strategy"],
        strategy
    );
}

/// Starts a conversation with `message`; its start task's id.
fn begin(rig: &Rig, message: &str) -> String {
    let (status, task) = post(
        rig,
        BASE,
        &json!({"initial_message": {"role": "user",
            "content": [{"type": "text", "text": message}]}}),
    );
    assert!(status == 200 || status == 201, "{task}");
    task["id"].as_str().unwrap().to_owned()
}

/// Waits until start task `task` satisfies `done` (a panic on `ERROR`); the task then.
fn wait_task(rig: &Rig, task: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + START_WITHIN;
    loop {
        let t = rig.get(&format!("{BASE}/start-tasks?ids={task}"))[0].clone();
        assert_ne!(t["status"], "ERROR", "the start failed: {t}");
        if done(&t) {
            return t;
        }
        assert!(
            Instant::now() < deadline,
            "the start is still {} (waiting for {what}); stderr:\n{}",
            t["status"],
            rig.server.stderr_lines().join("\n")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The sandbox start task `task` was given, once it has one (only the choice is looked at:
/// the caller deletes a new one at once, which ends that start `ERROR`).
fn sandbox_of(rig: &Rig, task: &str) -> String {
    let t = wait_task(rig, task, "a sandbox", |t| t["sandbox_id"].is_string());
    t["sandbox_id"].as_str().unwrap().to_owned()
}

/// Waits until start task `task` is `READY`; its conversation and sandbox.
fn ready(rig: &Rig, task: &str) -> (String, String) {
    let t = wait_task(rig, task, "READY", |t| t["status"] == "READY");
    (
        t["app_conversation_id"].as_str().unwrap().to_owned(),
        t["sandbox_id"].as_str().unwrap().to_owned(),
    )
}

/// The conversation through the batch get (`null` when gone).
fn conversation(rig: &Rig, id: &str) -> Value {
    rig.get(&format!("{BASE}?ids={id}"))[0].clone()
}

/// Waits (60 s at most) until Switchboard shows the conversation `finished`; the answer.
fn wait_finished(rig: &Rig, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = conversation(rig, id);
        if v["execution_status"] == "finished" {
            return v;
        }
        assert!(Instant::now() < deadline, "{id} is not finished: {v}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The sandbox through the batch get (`null` once deleted).
fn sandbox(rig: &Rig, id: &str) -> Value {
    rig.get(&format!("/api/v1/sandboxes?id={id}"))[0].clone()
}

fn delete_conversation(rig: &Rig, id: &str) {
    let res = client()
        .delete(rig.server.url(&format!("{BASE}/{id}")))
        .header("X-Access-Token", &rig.key)
        .send()
        .unwrap();
    assert_eq!(res.status().as_u16(), 200, "delete {id}: {:?}", res.text());
}

/// `switchboard serve` again on the rig's port, database and data directory (the flags of
/// the rig's own serve), with `extra` flags.
fn serve_again(rig: &Rig, extra: &[&str]) -> Server {
    let mut args = vec![
        "--data-dir",
        &rig.data_dir,
        "--sandbox-specs",
        &rig.specs,
        "--sandbox-start-timeout",
        "240",
        "--llm-model",
        "openai/fake-model",
        "--llm-base-url",
        &rig.llm_base,
        "--sandbox-host-pattern",
        "{id}-{service}.sandboxes.test",
        "--min-free-disk",
        "0",
    ];
    args.extend(extra);
    Server::spawn_bound(
        &[],
        &rig.bind,
        &rig.db,
        ServeOptions {
            args,
            env: vec![("LLM_API_KEY", "fake-key")],
        },
    )
}

/// The ids of the events Switchboard holds for the conversation, `full_state` snapshots (which
/// only the webhooks carry) left aside.
fn stored_ids(rig: &Rig, conversation: &str) -> HashSet<String> {
    rig.stored(conversation)
        .iter()
        .filter(|e| e["key"] != "full_state")
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

fn hex(id: &str) -> String {
    id.replace('-', "")
}

fn grouping(backend: Backend) {
    let Some(agent_server) = switchboard_testkit::real_agent_server() else {
        eprintln!(
            "sandbox_grouping: no real agent server on this machine (scripts/e2e.sh); skipped"
        );
        return;
    };
    let db = TestDatabase::new(backend);
    let mut rig = Rig::start(db.url(), &agent_server, false, true);

    // GROUP_BY_NEWEST: the second start joins the first's sandbox.
    set_strategy(&rig, "GROUP_BY_NEWEST");
    let (c1, shared) = ready(&rig, &begin(&rig, "run: pwd"));
    let (c2, s2) = ready(&rig, &begin(&rig, "run: pwd"));
    assert_eq!(s2, shared, "{backend}: the second start did not join");

    // A start that fails after joining (an agent profile the member does not have) leaves
    // the sandbox to the conversations in it.
    let (status, task) = post(
        &rig,
        BASE,
        &json!({"agent_profile_id": "no-such-profile",
                "initial_message": {"role": "user", "content": [{"type": "text", "text": "x"}]}}),
    );
    assert!(status == 200 || status == 201, "{backend}: {task}");
    let deadline = Instant::now() + START_WITHIN;
    let failed = loop {
        let t = rig.get(&format!(
            "{BASE}/start-tasks?ids={}",
            task["id"].as_str().unwrap()
        ));
        if t[0]["status"] == "ERROR" {
            break t[0].clone();
        }
        assert!(Instant::now() < deadline, "{backend}: {t}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(failed["sandbox_id"], shared.as_str(), "{backend}: {failed}");
    assert_eq!(sandbox(&rig, &shared)["status"], "RUNNING", "{backend}");

    // NO_GROUPING: a sandbox of its own, although the shared one has room.
    set_strategy(&rig, "NO_GROUPING");
    let alone = sandbox_of(&rig, &begin(&rig, "reply: alone"));
    assert_ne!(alone, shared, "{backend}: NO_GROUPING joined a sandbox");
    rig.delete_sandbox(&alone);

    let agent = rig.agent(&shared);
    for c in [&c1, &c2] {
        agent.wait_finished(c, 1);
        let v = wait_finished(&rig, c);
        assert_eq!(v["sandbox_id"], shared.as_str(), "{backend}: {v}");
        // A folder of its own below the project directory, the first conversation's too.
        let dir = v["workspace"]["working_dir"].as_str().unwrap().to_owned();
        assert!(dir.ends_with(&format!("/{}", hex(c))), "{backend}: {dir}");
    }
    // Each conversation holds exactly its agent server's events of it (the order of two
    // events stored by different paths is not this test's subject), none of the other's: the
    // `pwd` each ran printed its own folder.
    for (mine, other) in [(&c1, &c2), (&c2, &c1)] {
        let want: HashSet<String> = agent.event_ids(mine).into_iter().collect();
        let deadline = Instant::now() + Duration::from_secs(30);
        while stored_ids(&rig, mine) != want {
            assert!(
                Instant::now() < deadline,
                "{backend}: {mine} holds {:?}, its agent server {want:?}",
                stored_ids(&rig, mine)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let text = Value::Array(rig.stored(mine)).to_string();
        assert!(text.contains(&hex(mine)), "{backend}: {mine}'s own folder");
        assert!(
            !text.contains(&hex(other)),
            "{backend}: {other}'s in {mine}'s events"
        );
    }
    assert!(
        stored_ids(&rig, &c1).is_disjoint(&stored_ids(&rig, &c2)),
        "{backend}"
    );

    // Deleting one of the two keeps the sandbox and the other conversation.
    delete_conversation(&rig, &c1);
    assert_eq!(conversation(&rig, &c1), Value::Null, "{backend}");
    assert_eq!(sandbox(&rig, &shared)["status"], "RUNNING", "{backend}");

    // Served again with a cap of 1: a grouped start next to the running sandbox, which holds
    // one conversation now (a cap of 20 would join it), gets a new sandbox.
    set_strategy(&rig, "GROUP_BY_NEWEST");
    rig.server.sigterm();
    assert!(
        rig.server.wait_exit(Duration::from_secs(30)).is_some(),
        "{backend}: the server did not stop"
    );
    rig.server = serve_again(&rig, &["--sandbox-max-conversations", "1"]);
    wait_sandbox_status(&rig.server, &rig.key, &shared, "RUNNING");
    let capped = sandbox_of(&rig, &begin(&rig, "reply: capped"));
    assert_ne!(capped, shared, "{backend}: joined a full sandbox");
    rig.delete_sandbox(&capped);

    // The conversation left answers and takes a further message.
    let v = conversation(&rig, &c2);
    assert_eq!(v["sandbox_status"], "RUNNING", "{backend}: {v}");
    let (status, sent) = post(
        &rig,
        &format!("{BASE}/{c2}/send-message"),
        &json!({"role": "user", "content": [{"type": "text", "text": "run: echo again"}]}),
    );
    assert_eq!(status, 200, "{backend}: {sent}");
    agent.wait_finished(&c2, 2);
    assert_eq!(wait_finished(&rig, &c2)["sandbox_id"], shared.as_str());
    // Deleting the last deletes the sandbox.
    delete_conversation(&rig, &c2);
    assert_eq!(sandbox(&rig, &shared), Value::Null, "{backend}");
}
