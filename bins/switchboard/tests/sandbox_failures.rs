//! What happened, visible (the real binary, the process runtime): a sandbox's failure reason in
//! the API (`status_message`) and the start metrics; the agent-server command checked when
//! `serve` starts; no sandbox and no conversation left behind by a start that fails before its
//! agent runs; and the unclaimed warm-pool sandboxes stopped with the server.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

/// A `bin/` with a `python3` that runs what is not there (as a pyenv shim does outside its
/// installation), and the `PATH` that puts it first.
fn broken_python(dir: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let shim = bin.join("python3");
    std::fs::write(
        &shim,
        "#!/bin/sh\nexec /nonexistent/pyenv/libexec/pyenv exec python3 \"$@\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    for d in [dir, bin.as_path()] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", bin.display())
}

/// A specs file in `dir`: the stand-in agent server (`standin`, with `env`) first, then one
/// whose command is not found inside the sandbox (`broken`).
fn specs(dir: &Path, env: Value) -> String {
    let standin = switchboard_testkit::standin_agent_server()
        .display()
        .to_string();
    let path = dir.join("specs.json");
    std::fs::write(
        &path,
        json!([
            {"id": "standin", "command": [python(), &standin], "initial_env": env},
            {"id": "broken", "command": ["sh", "-c", "exec /nonexistent/agent-server \"$@\""]}
        ])
        .to_string(),
    )
    .unwrap();
    path.display().to_string()
}

fn get(server: &Server, key: &str, path: &str) -> Value {
    let (code, body) = send_json(client().get(server.url(path)).header("X-Access-Token", key));
    assert_eq!(code, 200, "{path}: {body}");
    body
}

fn metrics(server: &Server) -> String {
    client()
        .get(server.url("/metrics"))
        .send()
        .and_then(|r| r.text())
        .unwrap()
}

/// Waits (60 s at most) until `pred` holds.
fn wait_until(what: &str, server: &Server, mut pred: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !pred() {
        assert!(
            Instant::now() < deadline,
            "{what}; stderr:\n{}",
            server.stderr_lines().join("\n")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_default_command_failing_says_why_in_the_api_the_log_and_the_metrics() {
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        let data = TempDir::new();
        let tools = TempDir::new();
        let path = broken_python(tools.path());
        let data_dir = data.path().display().to_string();
        let _cleanup = EndProcessesUnder(data.path().to_path_buf());
        // No --agent-server-command: the default, `python3 -m openhands.agent_server`.
        let server = Server::spawn_with(
            db.url(),
            ServeOptions {
                args: vec!["--data-dir", &data_dir],
                env: vec![("PATH", &path)],
            },
        );
        let warning = server
            .wait_for_stderr("cannot run in a sandbox", Duration::from_secs(5))
            .expect("a warning at start");
        assert!(
            warning.contains("--agent-server-command") && warning.contains("status 127"),
            "{backend}: {warning}"
        );
        let key = server.bootstrap_key();
        let (code, started) = send_json(
            client()
                .post(server.url("/api/v1/sandboxes"))
                .header("X-Access-Token", &key),
        );
        assert_eq!(code, 200, "{started}");
        assert_eq!(started["status_message"], Value::Null, "{started}");
        let id = started["id"].as_str().unwrap();
        let failed = wait_sandbox_status(&server, &key, id, "ERROR");
        let why = failed["status_message"].as_str().unwrap_or_default();
        assert!(
            why.contains("127")
                && why.contains("--agent-server-command")
                && why.contains("/nonexistent/pyenv/libexec/pyenv"),
            "{backend}: {failed}"
        );
        assert!(why.len() <= 1024, "{backend}: {} bytes", why.len());
        // The search shows the same; the log has it at warn with the sandbox's id.
        let page = get(&server, &key, "/api/v1/sandboxes/search");
        assert_eq!(page["items"][0]["status_message"], why, "{backend}");
        let logged = server
            .wait_for_stderr("sandbox failed", Duration::from_secs(5))
            .unwrap();
        assert!(logged.contains("WARN") && logged.contains(id), "{logged}");
        let text = metrics(&server);
        for line in [
            "sandbox_starts_total{runtime=\"process\",source=\"cold\"} 1",
            "sandbox_start_failures_total{reason=\"command_not_found\",runtime=\"process\"} 1",
            "sandbox_start_failures_total{reason=\"timeout\",runtime=\"process\"} 0",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{backend}: no {line}:\n{text}"
            );
        }
        server.stop(Duration::from_secs(30));
    }
}

#[test]
fn serve_refuses_a_named_command_or_a_warm_pool_that_cannot_run() {
    let tools = TempDir::new();
    let path = broken_python(tools.path());
    for (args, named) in [
        (
            vec!["--agent-server-command", "no-such-agent-server-xyz --flag"],
            "`no-such-agent-server-xyz` not found on the sandbox's PATH",
        ),
        (vec!["--warm-sandboxes", "1"], "status 127"),
    ] {
        // A database of its own each: an installation's data directory holds its key.
        let db = TestDatabase::new(Backend::Sqlite);
        let data = TempDir::new();
        let mut cmd = command(data.path());
        cmd.args(["--data-dir"])
            .arg(data.path())
            .args(["serve", "--bind", "127.0.0.1:0", "--database-url", db.url()])
            .args(&args)
            .env("PATH", &path);
        let out = output(cmd);
        assert!(!out.status.success(), "{args:?}: it started");
        assert!(
            out.stderr.contains("--agent-server-command") && out.stderr.contains(named),
            "{args:?}: {}",
            out.stderr
        );
        assert!(!out.stdout.contains("listening"), "{}", out.stdout);
    }
}

#[test]
fn failed_conversation_starts_leave_no_sandbox_and_no_conversation() {
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        let data = TempDir::new();
        let data_dir = data.path().display().to_string();
        let _cleanup = EndProcessesUnder(data.path().to_path_buf());
        let specs = specs(data.path(), json!({"STANDIN_MODE": "fail-create"}));
        let without_llm = Server::spawn_with(
            db.url(),
            ServeOptions {
                args: vec!["--data-dir", &data_dir, "--sandbox-specs", &specs],
                env: vec![],
            },
        );
        let key = without_llm.bootstrap_key();
        // No LLM anywhere: refused before a task, a sandbox or a conversation exists.
        let (code, body) = send_json(
            client()
                .post(without_llm.url("/api/v1/app-conversations"))
                .header("X-Access-Token", &key)
                .json(&json!({})),
        );
        assert_eq!(code, 400, "{backend}: {body}");
        assert!(
            body["detail"].as_str().unwrap().contains("--llm-model"),
            "{body}"
        );
        let nothing = |server: &Server| {
            for path in [
                "/api/v1/sandboxes/search",
                "/api/v1/app-conversations/search",
            ] {
                let page = get(server, &key, path);
                assert_eq!(page["items"], json!([]), "{backend}: {path}: {page}");
            }
        };
        nothing(&without_llm);
        assert_eq!(
            get(
                &without_llm,
                &key,
                "/api/v1/app-conversations/start-tasks/search"
            )["items"],
            json!([])
        );
        without_llm.stop(Duration::from_secs(30));

        let server = Server::spawn_with(
            db.url(),
            ServeOptions {
                args: vec![
                    "--data-dir",
                    &data_dir,
                    "--sandbox-specs",
                    &specs,
                    "--llm-model",
                    "openai/test-model",
                ],
                env: vec![],
            },
        );
        // A sandbox whose command is not found, then an agent server refusing the
        // conversation (after its row was written): each start is ERROR with the reason.
        for (spec, reason) in [
            ("broken", "127"),
            ("standin", "the agent server refused the conversation"),
        ] {
            let (code, task) = send_json(
                client()
                    .post(server.url("/api/v1/app-conversations"))
                    .header("X-Access-Token", &key)
                    .json(&json!({"sandbox_spec_id": spec})),
            );
            assert_eq!(code, 200, "{backend}: {task}");
            let id = task["id"].as_str().unwrap().to_owned();
            let mut last = Value::Null;
            wait_until("the start to fail", &server, || {
                last = get(
                    &server,
                    &key,
                    &format!("/api/v1/app-conversations/start-tasks?ids={id}"),
                )[0]
                .clone();
                last["status"] == "ERROR"
            });
            let detail = last["detail"].as_str().unwrap_or_default();
            assert!(detail.contains(reason), "{backend} {spec}: {last}");
        }
        nothing(&server);
        // Their sandboxes' processes are stopped by the cleanup.
        let sandboxes = data.path().join("sandboxes");
        wait_until("no sandbox process left", &server, || {
            processes_under(&sandboxes).is_empty()
        });
        server.stop(Duration::from_secs(30));
    }
}

#[test]
fn a_stopping_server_stops_its_unclaimed_warm_sandboxes_and_keeps_claimed_ones() {
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        let data = TempDir::new();
        let data_dir = data.path().display().to_string();
        let _cleanup = EndProcessesUnder(data.path().to_path_buf());
        let specs = specs(data.path(), json!({}));
        let args = vec![
            "--data-dir",
            &data_dir,
            "--sandbox-specs",
            &specs,
            "--warm-sandboxes",
            "2",
        ];
        let server = Server::spawn_with(
            db.url(),
            ServeOptions {
                args: args.clone(),
                env: vec![],
            },
        );
        let key = server.bootstrap_key();
        wait_until("two warm sandboxes", &server, || {
            metrics(&server)
                .lines()
                .any(|l| l == "sandbox_warm_pool_ready 2")
        });
        // One is claimed: it is the user's now.
        let (code, claimed) = send_json(
            client()
                .post(server.url("/api/v1/sandboxes"))
                .header("X-Access-Token", &key),
        );
        assert_eq!(
            (code, &claimed["status"]),
            (200, &json!("RUNNING")),
            "{claimed}"
        );
        let claimed_id = claimed["id"].as_str().unwrap().to_owned();
        assert!(
            metrics(&server)
                .lines()
                .any(|l| l == "sandbox_starts_total{runtime=\"process\",source=\"warm\"} 1"),
            "{backend}"
        );
        let (claimed_pid, _) = sandbox_agent(&claimed_id).expect("the claimed sandbox runs");
        wait_until("the pool refilled", &server, || {
            metrics(&server)
                .lines()
                .any(|l| l == "sandbox_warm_pool_ready 2")
        });
        let sandboxes = data.path().join("sandboxes");
        let before = processes_under(&sandboxes).len();
        assert!(before >= 3, "{backend}: {before} processes");
        server.sigterm();
        let mut server = server;
        let status = server.wait_exit(Duration::from_secs(60));
        assert!(status.is_some_and(|s| s.success()), "{backend}: {status:?}");
        assert!(
            server.stderr_lines().iter().any(|l| l
                .contains("unclaimed warm-pool sandboxes of this server stopped")
                && l.contains("stopped=2")),
            "{backend}: {}",
            server.stderr_lines().join("\n")
        );
        // Only the claimed sandbox's processes are left.
        let left = processes_under(&sandboxes);
        assert!(
            left.contains(&(claimed_pid as u32)),
            "{backend}: the claimed sandbox was stopped"
        );
        let simple = claimed_id.replace('-', "");
        let others: Vec<u32> = left
            .into_iter()
            .filter(|pid| {
                std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| {
                    let cwd = cwd.to_string_lossy();
                    !cwd.contains(&claimed_id) && !cwd.contains(&simple)
                })
            })
            .collect();
        assert_eq!(
            others,
            Vec::<u32>::new(),
            "{backend}: warm sandboxes left running"
        );
        // The next start keeps the claimed one, and the pool is refilled.
        let again = Server::spawn_with(db.url(), ServeOptions { args, env: vec![] });
        wait_sandbox_status(&again, &key, &claimed_id, "RUNNING");
        wait_until("the pool refilled after the restart", &again, || {
            metrics(&again)
                .lines()
                .any(|l| l == "sandbox_warm_pool_ready 2")
        });
        again.stop(Duration::from_secs(60));
    }
}
