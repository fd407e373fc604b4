//! OpenHands' automation service (`openhands-automation` 1.26.0, unchanged) with Switchboard as
//! its OpenHands backend (issue 31), run as its README says (`uvicorn
//! openhands.automation.app:app`, its own SQLite database), against the real binary with real
//! sandboxes (the process runtime, the real agent server) on both backends: a member creates a
//! prompt automation with their own API key (the service checks `view_automations` through
//! `GET /api/v1/users/me`), dispatches it, and the service's dispatcher mints the run's key
//! (`POST /api/service/users/{user}/orgs/{org}/api-keys` with the service key) and starts the
//! run's sandbox with it, as the member; the run's script works in the sandbox's
//! `/workspace/project` and reaches its agent server at `localhost:$AGENT_SERVER_PORT`; the
//! run's agent runs its command on the member's own LLM (the fake LLM, with the member's key)
//! and answers through the finish tool (with the preset's `TaskOutcome` fields); the preset's
//! hooks run in the sandbox (the post-tool-use hook marks the finish, the stop hook lets the
//! agent stop), every event is on Switchboard, the run ends `COMPLETED` and its conversation
//! `finished`. Without the service's venv or the real agent server each test says so and
//! passes (`scripts/e2e.sh prepare` makes both).

use crate::common;
use crate::event_catch_up::rig;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use rig::{Child9, fake_llm, free_port};
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const SERVICE_KEY: &str = "svc-automation-e2e-9Kd2Lq7Wx4";
const LLM_KEY: &str = "sk-member-automation-Hy6Tb3Nc8";

#[test]
fn automation_run_completes_sqlite() {
    automation(Backend::Sqlite);
}

#[test]
fn automation_run_completes_postgres() {
    automation(Backend::Postgres);
}

/// Switchboard with the real agent server as its only spec and the service key.
fn serve(db: &str, data: &Path, agent: &Path) -> Server {
    let env: serde_json::Map<String, Value> = switchboard_testkit::REAL_AGENT_SERVER_ENV
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    let mut env = env;
    // The run's setup.sh makes its venv with `uv` and a CPython 3.12 or 3.13, both of which
    // OpenHands' agent-server image has on its PATH; here the agent server's own venv holds
    // `uv` (scripts/e2e.sh installs it there) and the Python that venv was made from is the
    // interpreter (uv passes over interpreters inside virtual environments, and must never
    // download one: this machine reaches only the package registries).
    let tools = agent.parent().expect("the agent server's bin directory");
    let interpreter = std::fs::canonicalize(tools.join("python3")).expect("the venv's python3");
    let python_bin = interpreter
        .parent()
        .expect("the interpreter's bin directory");
    env.insert(
        "PATH".to_owned(),
        json!(format!(
            "{}:{}:/usr/local/bin:/usr/bin:/bin",
            tools.display(),
            python_bin.display()
        )),
    );
    env.insert("UV_PYTHON_DOWNLOADS".to_owned(), json!("never"));
    // PyPI through this machine's certificate authorities (the system's store, and the
    // bundle the host names, as the host's own uv and pip use them).
    env.insert("UV_NATIVE_TLS".to_owned(), json!("true"));
    if let Ok(bundle) = std::env::var("SSL_CERT_FILE") {
        env.insert("SSL_CERT_FILE".to_owned(), json!(bundle));
    }
    let specs = data.join("specs.json");
    std::fs::write(
        &specs,
        json!([{"id": "agent", "command": [agent.display().to_string()], "initial_env": env}])
            .to_string(),
    )
    .unwrap();
    let key_file = data.join("service.key");
    std::fs::write(&key_file, SERVICE_KEY).unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(
        &mut std::fs::metadata(&key_file).unwrap().permissions(),
        0o600,
    );
    let data_dir = data.join("data").display().to_string();
    let (specs, key_file) = (specs.display().to_string(), key_file.display().to_string());
    Server::spawn_with(
        db,
        ServeOptions {
            args: vec![
                "--data-dir",
                &data_dir,
                "--sandbox-specs",
                &specs,
                "--service-api-key-file",
                &key_file,
            ],
            env: vec![],
        },
    )
}

/// The automation service on a free loopback port, its database a SQLite file under `dir`,
/// Switchboard its backend; waits (3 minutes at most: it migrates its database first) until
/// `/health` answers.
fn automation_service(python: &Path, dir: &Path, switchboard: &str, port: u16) -> (Child9, String) {
    let base = format!("http://127.0.0.1:{port}");
    let log = std::fs::File::create(dir.join("automation.log")).unwrap();
    let child = Command::new(python)
        .args([
            "-m",
            "uvicorn",
            "openhands.automation.app:app",
            "--host",
            "127.0.0.1",
        ])
        .args(["--port", &port.to_string()])
        .env("AUTOMATION_OPENHANDS_API_BASE_URL", switchboard)
        .env("AUTOMATION_SERVICE_KEY", SERVICE_KEY)
        .env(
            "AUTOMATION_DB_URL",
            format!(
                "sqlite+aiosqlite:///{}",
                dir.join("automations.db").display()
            ),
        )
        .env("AUTOMATION_BASE_URL", &base)
        // Its uploaded files go under $HOME/.openhands.
        .env("HOME", dir)
        .env("AUTOMATION_DISPATCHER_INTERVAL_SECONDS", "1")
        .env("AUTOMATION_WATCHDOG_INTERVAL_SECONDS", "5")
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("OPENHANDS_SUPPRESS_BANNER", "1")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("starting the automation service");
    let service = Child9(child);
    let deadline = Instant::now() + Duration::from_secs(180);
    while client()
        .get(format!("{base}/health"))
        .send()
        .map(|r| r.status().as_u16())
        .unwrap_or(0)
        != 200
    {
        assert!(
            Instant::now() < deadline,
            "the automation service did not start"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    (service, base)
}

/// The last commands the agent server of sandbox `id` ran and their output so far (its
/// `/api/bash/bash_events/search`, newest first), through the URL and session key Switchboard
/// gives the member `key`: where a run's script (its `setup.sh`, then the SDK's conversation)
/// stands when it does not end.
fn sandbox_commands(server: &Server, key: &str, id: &str) -> String {
    let (_, found) = send_json(
        client()
            .get(server.url(&format!("/api/v1/sandboxes?id={id}")))
            .header("X-Access-Token", key),
    );
    let sandbox = &found[0];
    let Some(agent) = sandbox["exposed_urls"].as_array().and_then(|urls| {
        urls.iter()
            .find(|u| u["name"] == "AGENT_SERVER")
            .and_then(|u| u["url"].as_str())
    }) else {
        return format!("(no agent server URL: {sandbox})");
    };
    let (status, page) = send_json(
        client()
            .get(format!(
                "{}/api/bash/bash_events/search?sort_order=TIMESTAMP_DESC&limit=12",
                agent.trim_end_matches('/')
            ))
            .header(
                "X-Session-API-Key",
                sandbox["session_api_key"].as_str().unwrap_or_default(),
            ),
    );
    if status != 200 {
        return format!("({status}: {page})");
    }
    page["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let text = |k: &str| {
                let t = e[k].as_str().unwrap_or_default();
                // The last 1,500 characters.
                t.char_indices()
                    .rev()
                    .nth(1500)
                    .map_or(t, |(at, _)| &t[at..])
                    .to_owned()
            };
            format!(
                "{} {} exit {} stdout {:?} stderr {:?}",
                e["kind"],
                text("command"),
                e["exit_code"],
                text("stdout"),
                text("stderr")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// How many lines of each log a failure shows.
const LOG_LINES: usize = 120;

/// The last `n` of `lines`.
fn tail<T>(lines: &[T], n: usize) -> &[T] {
    &lines[lines.len().saturating_sub(n)..]
}

/// A member of `org` and an API key of theirs bound to it: (user id, key).
fn member(db: &str, org: &str) -> (String, String) {
    add_member(db, org, "automation-member@example.com", "member")
}

/// Waits (`within`) until `check` answers `Some`, showing `what` and the logs on failure.
fn wait_for<T>(
    within: Duration,
    what: &str,
    logs: &dyn Fn() -> String,
    check: impl Fn() -> Option<T>,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(Instant::now() < deadline, "{what}\n{}", logs());
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn automation(backend: Backend) {
    let (Some(python), Some(agent)) = (
        switchboard_testkit::automation_service_python(),
        switchboard_testkit::real_agent_server(),
    ) else {
        eprintln!(
            "skipped: no automation service venv or real agent server on this machine (scripts/e2e.sh prepare makes both)"
        );
        return;
    };
    let db = TestDatabase::new(backend);
    let dir = TempDir::new();
    let _end = EndProcessesUnder(dir.path().to_path_buf());
    let (_llm, llm_base) = fake_llm(&dir.path().join("llm-requests.jsonl"));
    // The run's script, in its sandbox's own network, calls the automation service back on
    // the host's loopback: a port the sandboxes are given (`--sandbox-host-port`).
    let automation_port = free_port();
    give_sandboxes_host_port(automation_port);
    let server = serve(db.url(), dir.path(), &agent);
    let org = str_of(server.bootstrapped.as_ref().unwrap(), "org_id").to_owned();
    let (user, key) = member(db.url(), &org);
    let (status, body) = send_json(
        client()
            .post(server.url("/api/v1/settings"))
            .header("X-Access-Token", &key)
            .json(&json!({"agent_settings_diff": {"llm": {
                "model": "openai/member-model", "base_url": llm_base, "api_key": LLM_KEY}}})),
    );
    assert_eq!(status, 200, "{backend}: {body}");
    let (_service, base) =
        automation_service(&python, dir.path(), &server.url(""), automation_port);
    let log_path = dir.path().join("automation.log");
    // The last lines of each log: the service's own (its ORM's start-up lines, `(Class|table)
    // …`, left out: they fill a CI log's window before anything about the run), then
    // Switchboard's.
    let logs = || {
        let service = std::fs::read_to_string(&log_path).unwrap_or_default();
        let service: Vec<&str> = service
            .lines()
            .filter(|l| !l.contains("sqlalchemy") && !l.contains("\"message\": \"("))
            .collect();
        let switchboard = server.stderr_lines();
        format!(
            "--- automation service (last {LOG_LINES} lines):\n{}\n--- switchboard (last {LOG_LINES} lines):\n{}",
            tail(&service, LOG_LINES).join("\n"),
            tail(&switchboard, LOG_LINES).join("\n")
        )
    };
    let api = |path: &str| format!("{base}/api/automation{path}");

    // The member creates an automation with their own key, and dispatches it.
    let (status, created) = send_json(
        client()
            .post(api("/v1/preset/prompt"))
            .bearer_auth(&key)
            .json(&json!({"name": "say hello", "prompt": "Say hello.",
                "trigger": {"type": "cron", "schedule": "0 0 1 1 *"}})),
    );
    assert_eq!(status, 201, "{backend}: {created}\n{}", logs());
    assert_eq!(created["user_id"], json!(user), "{backend}");
    assert_eq!(created["org_id"], json!(org), "{backend}");
    let id = created["id"].as_str().unwrap().to_owned();
    let (status, run) = send_json(
        client()
            .post(api(&format!("/v1/{id}/dispatch")))
            .bearer_auth(&key),
    );
    assert_eq!(status, 201, "{backend}: {run}\n{}", logs());

    // The dispatcher minted the run's key: the member's, bound to the organization.
    let minted = wait_for(
        Duration::from_secs(60),
        "no key minted for the run",
        &logs,
        || {
            let (_, keys) = send_json(
                client()
                    .get(server.url("/api/keys"))
                    .header("X-Access-Token", &key),
            );
            keys["items"]
                .as_array()?
                .iter()
                .find(|k| k["name"] == "automation")
                .cloned()
        },
    );
    assert_eq!(
        (&minted["org_id"], &minted["revoked"]),
        (&json!(org), &json!(false)),
        "{backend}"
    );
    assert!(!minted["expires_at"].is_null(), "{backend}: {minted}");
    // And started the run's sandbox with it, as the member.
    let sandbox = wait_for(
        Duration::from_secs(120),
        "no sandbox for the run",
        &logs,
        || {
            let (_, page) = send_json(
                client()
                    .get(server.url("/api/v1/sandboxes/search"))
                    .header("X-Access-Token", &key),
            );
            page["items"].as_array()?.first().cloned()
        },
    );
    assert_eq!(
        sandbox["created_by_user_id"],
        json!(user),
        "{backend}: {sandbox}"
    );
    let run_of = || {
        let (_, runs) = send_json(
            client()
                .get(api(&format!("/v1/{id}/runs")))
                .bearer_auth(&key),
        );
        runs["runs"]
            .as_array()
            .and_then(|r| r.first().cloned())
            .unwrap_or(Value::Null)
    };
    let started = wait_for(
        Duration::from_secs(300),
        "the run never got its sandbox",
        &logs,
        || {
            let r = run_of();
            (!r["sandbox_id"].is_null()).then_some(r)
        },
    );
    assert_eq!(started["sandbox_id"], sandbox["id"], "{backend}: {started}");

    // The run's conversation, on Switchboard, on the member's own LLM.
    let sandbox_id = sandbox["id"].as_str().unwrap_or_default().to_owned();
    let run_and_logs = || {
        format!(
            "--- the run:\n{}\n--- its sandbox's last commands:\n{}\n{}",
            run_of(),
            sandbox_commands(&server, &key, &sandbox_id),
            logs()
        )
    };
    let done = wait_for(
        Duration::from_secs(600),
        "the run did not complete",
        &run_and_logs,
        || {
            let r = run_of();
            matches!(r["status"].as_str(), Some("COMPLETED" | "FAILED")).then_some(r)
        },
    );
    let conversation = done["conversation_id"].as_str().unwrap().replace('-', "");
    let events_of = |query: &str| {
        let (_, page) = send_json(
            client()
                .get(server.url(&format!(
                    "/api/v1/conversation/{conversation}/events/search?{query}"
                )))
                .header("X-Access-Token", &key),
        );
        page["items"].as_array().cloned().unwrap_or_default()
    };
    // The preset's hooks as the agent server ran them in the sandbox, and the agent's errors:
    // what a run that does not end shows first.
    let hooks = events_of("limit=100&kind__eq=HookExecutionEvent");
    let hook_lines = hooks
        .iter()
        .map(|h| {
            format!(
                "{} {} exit {} stdout {:?} stderr {:?} error {}",
                h["hook_event_type"],
                h["tool_name"],
                h["exit_code"],
                h["stdout"].as_str().unwrap_or_default(),
                h["stderr"].as_str().unwrap_or_default(),
                h["error"]
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    let errors = events_of("limit=3&kind__eq=AgentErrorEvent");
    let evidence = format!("--- hooks:\n{hook_lines}\n--- agent errors:\n{errors:?}");
    eprintln!("{backend}: the run {}\n{evidence}", done["status"]);
    assert_eq!(
        done["status"],
        "COMPLETED",
        "{backend}: {done}\n{evidence}\n{}",
        logs()
    );
    // The agent ran the command in its sandbox and answered through the finish tool, with
    // the preset's `TaskOutcome` (the run's metadata holds the finish call's arguments).
    let finished_with = &done["run_metadata"]["finish_tool_response"];
    assert!(
        finished_with["message"]
            .as_str()
            .is_some_and(|m| m.contains("printed hello"))
            && finished_with["status"] == "success",
        "{backend}: {done}"
    );
    // The post-tool-use hook marked the finish, and the stop hook let the agent stop.
    let ran = |event: &str, tool: Value| {
        hooks
            .iter()
            .any(|h| h["hook_event_type"] == event && h["tool_name"] == tool && h["exit_code"] == 0)
    };
    assert!(
        ran("PostToolUse", json!("finish")) && ran("Stop", Value::Null),
        "{backend}: {evidence}"
    );
    assert!(
        events_of("limit=100")
            .iter()
            .any(|e| e["kind"] == "ObservationEvent" && e.to_string().contains("hello")),
        "{backend}: the run's events are not Switchboard's"
    );
    let (_, convs) = send_json(
        client()
            .get(server.url(&format!("/api/v1/app-conversations?ids={conversation}")))
            .header("X-Access-Token", &key),
    );
    assert_eq!(
        convs[0]["execution_status"], "finished",
        "{backend}: {convs}"
    );
    let llm_log = std::fs::read_to_string(dir.path().join("llm-requests.jsonl")).unwrap();
    assert!(
        llm_log.contains(&format!("Bearer {LLM_KEY}")),
        "{backend}: the member's key never reached the LLM"
    );
}
