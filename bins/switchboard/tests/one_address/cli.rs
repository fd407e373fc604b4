//! The OpenHands CLI (`openhands` 1.16.0 from PyPI, unchanged) in the namespace:
//! `openhands cloud -t TASK` with `OPENHANDS_CLOUD_URL` = Switchboard's address and the
//! member's API key in `$OPENHANDS_PERSISTENCE_DIR/cloud/api_key.txt`, as after
//! `openhands login`. It calls `GET /api/v1/users/me` (its key check; a 401 would start the
//! device login), `POST /api/v1/app-conversations` with the task as `initial_message`, then
//! polls `GET /api/v1/app-conversations/start-tasks?ids=` every 2 s, 15 times at most, for
//! the conversation's id, and prints it. It never calls the sandbox.
//!
//! A warm sandbox is kept ready, so the start is usually quick enough for the CLI's 30 s of
//! polling (on a loaded machine it may not be: the CLI then prints the start task's id, which
//! names the conversation once it is ready); the conversation then runs in Switchboard with
//! the fake LLM (the task asks it to run a command) while the CLI has already exited.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard_testkit::{Backend, TestDatabase};

use crate::common::*;
use crate::one_address::netns::{Netns, reachable_from, real_agent_specs};

/// The task: the fake LLM runs the command after `run: `, then finishes.
const TASK: &str = "Check the workspace, run: echo one-address-cli";

/// How long the CLI may take (its own polling stops after about 30 s; its imports take 10 to
/// 60 s, by load).
const CLI_LIMIT: Duration = Duration::from_secs(300);

/// A home directory for the OpenHands CLI, as after `openhands login`: the member's key in the
/// CLI's own file (`$OPENHANDS_PERSISTENCE_DIR/cloud/api_key.txt`).
pub(crate) struct CliHome {
    pub(crate) home: TempDir,
    pub(crate) persistence: std::path::PathBuf,
}

impl CliHome {
    pub(crate) fn logged_in(key: &str) -> CliHome {
        let home = TempDir::new();
        let persistence = home.path().join(".openhands");
        std::fs::create_dir_all(persistence.join("cloud")).unwrap();
        std::fs::write(persistence.join("cloud/api_key.txt"), key).unwrap();
        CliHome { home, persistence }
    }

    /// `program` in the namespace, in this home, with Switchboard at `address` as its cloud.
    pub(crate) fn command(
        &self,
        ns: &Netns,
        program: &Path,
        address: &str,
    ) -> std::process::Command {
        let mut cmd = ns.command(program);
        cmd.current_dir(self.home.path())
            .env("HOME", self.home.path())
            .env("OPENHANDS_PERSISTENCE_DIR", &self.persistence)
            .env("OPENHANDS_CLOUD_URL", address)
            .env("OPENHANDS_SUPPRESS_BANNER", "1")
            .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            .env("NO_COLOR", "1")
            .env("COLUMNS", "200")
            .env_remove("http_proxy")
            .env_remove("HTTP_PROXY")
            .env("NO_PROXY", "*");
        cmd
    }
}

/// Runs `cmd` to its end, killing it after `limit`; (exit success, stdout, stderr).
pub(crate) fn run_bounded(
    mut cmd: std::process::Command,
    limit: Duration,
) -> (bool, String, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running the CLI in the namespace");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).ok();
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        err.read_to_string(&mut s).ok();
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (stdout, stderr) = (reader.join().unwrap(), err_reader.join().unwrap());
    (status.is_some_and(|s| s.success()), stdout, stderr)
}

/// `GET path` with the key, until `done` holds for the JSON answer (240 s).
pub(crate) fn poll(server: &Server, key: &str, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let (code, body) = send_json(client().get(server.url(path)).header("X-Access-Token", key));
        if code == 200 && done(&body) {
            return body;
        }
        assert!(Instant::now() < deadline, "{path}: {code} {body}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn cli_through_switchboard_alone(backend: Backend, tag: u8) {
    let (Some(agent_server), Some(openhands)) = (
        switchboard_testkit::real_agent_server(),
        switchboard_testkit::openhands_cli(),
    ) else {
        eprintln!(
            "no real agent server or OpenHands CLI venv on this machine (scripts/e2e.sh installs \
             them): skipped"
        );
        return;
    };
    let Some(ns) = Netns::create(tag) else {
        return;
    };
    let db = TestDatabase::new(backend);
    let data = TempDir::new();
    let data_dir = data.path().display().to_string();
    let _end = EndProcessesUnder(data.path().to_path_buf());
    let (_llm, llm_base) = fake_llm();
    let specs = real_agent_specs(data.path(), &agent_server);
    let (bind, port) = ns.free_host_address();
    let server = Server::spawn_bound(
        &[],
        &bind,
        db.url(),
        ServeOptions {
            args: vec![
                "--data-dir",
                &data_dir,
                "--sandbox-specs",
                &specs,
                "--sandbox-start-timeout",
                "360",
                "--warm-sandboxes",
                "1",
                "--llm-model",
                "openai/fake-model",
                "--llm-base-url",
                &llm_base,
            ],
            env: vec![("LLM_API_KEY", "fake-key")],
        },
    );
    let key = server.bootstrap_key();
    let python = Path::new(&openhands).with_file_name("python");
    assert!(
        reachable_from(&ns, &python, &ns.host_ip, port),
        "{backend}: Switchboard"
    );
    wait_warm(&server, backend);
    let home = CliHome::logged_in(&key);
    let mut cli = home.command(&ns, Path::new(&openhands), &server.address);
    cli.args(["cloud", "-t", TASK]);
    let (ok, stdout, stderr) = run_bounded(cli, CLI_LIMIT);
    assert!(
        ok,
        "{backend}: the CLI failed in the namespace:\n{stdout}\n{stderr}\nserver:\n{}",
        server.stderr_lines().join("\n")
    );
    assert!(
        stdout.contains("Cloud conversation created successfully"),
        "{backend}: {stdout}"
    );
    let printed = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("Conversation ID: "))
        .unwrap_or_else(|| panic!("{backend}: no conversation id printed: {stdout}"))
        .trim()
        .to_owned();
    assert!(
        stdout.contains(&format!("{}/conversations/{printed}", server.address)),
        "{backend}: {stdout}"
    );

    // The conversation's id, or (a start that outlasted the CLI's polling, on a loaded
    // machine) its start task's, which names the conversation once it is ready.
    let printed = if stdout.contains("still initializing") {
        eprintln!("{backend}: the start outlasted the CLI's 30 s of polling");
        let path = format!("/api/v1/app-conversations/start-tasks?ids={printed}");
        let tasks = poll(&server, &key, &path, |b| {
            b[0]["app_conversation_id"].is_string()
        });
        tasks[0]["app_conversation_id"].as_str().unwrap().to_owned()
    } else {
        printed
    };

    // The conversation is Switchboard's, with the task as its first message, and it runs.
    let found = poll(&server, &key, "/api/v1/app-conversations/search", |b| {
        b["items"].as_array().is_some_and(|i| i.len() == 1)
    });
    let conversation = &found["items"][0];
    assert_eq!(conversation["id"], printed.as_str(), "{backend}: {found}");
    let sandbox_id = conversation["sandbox_id"].as_str().unwrap();
    assert!(
        conversation["conversation_url"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{}/sandboxes/{sandbox_id}/", server.address)),
        "{backend}: {conversation}"
    );
    // The CLI had Switchboard alone: the sandbox's own port is out of its reach.
    let (_, direct_port) = sandbox_agent(sandbox_id).expect("the agent server's process");
    assert!(
        !reachable_from(&ns, &python, "127.0.0.1", direct_port),
        "{backend}: the sandbox's loopback port is reachable from the namespace"
    );
    assert!(
        !reachable_from(&ns, &python, &ns.host_ip, direct_port),
        "{backend}: the sandbox's port is reachable on Switchboard's address"
    );
    let events_path = format!("/api/v1/conversation/{printed}/events/search?limit=100");
    let events = poll(&server, &key, &events_path, |b| {
        b["items"].as_array().is_some_and(|items| {
            items.iter().any(|e| {
                e["kind"] == "ObservationEvent" && e.to_string().contains("one-address-cli")
            })
        })
    });
    let items = events["items"].as_array().unwrap();
    let first_user = items
        .iter()
        .find(|e| e["kind"] == "MessageEvent" && e["source"] == "user")
        .unwrap_or_else(|| panic!("{backend}: no user message: {events}"));
    assert_eq!(
        first_user["llm_message"]["content"][0]["text"], TASK,
        "{backend}: {first_user}"
    );
    poll(
        &server,
        &key,
        &format!("/api/v1/app-conversations?ids={printed}"),
        |b| b[0]["execution_status"] == "finished",
    );
    drop(ns);
}

#[test]
fn cli_through_switchboard_alone_sqlite() {
    cli_through_switchboard_alone(Backend::Sqlite, 3);
}

#[test]
fn cli_through_switchboard_alone_postgres() {
    cli_through_switchboard_alone(Backend::Postgres, 4);
}
