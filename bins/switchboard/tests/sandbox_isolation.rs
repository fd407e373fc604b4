//! What a sandbox can reach, against the real binary (issue 18; docs/API.md, "What a sandbox
//! can reach"): a member's sandbox attacks through its agent server's own command API
//! (the real agent server when this machine has it, else the stand-in) and reaches nothing of
//! Switchboard's or the owner's sandbox, while it clones, builds, tests and reaches the LLM and
//! the webhooks; everything a sandbox started ends with its delete, also after a restart of
//! Switchboard (issue 24, item 4); `serve` refuses the process runtime when it cannot confine
//! and warns for `--process-isolation none` and a password in `--database-url`.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

const LLM_KEY: &str = "sk-operator-llm-key-9876";
const ENV_MARKER: &str = "SWITCHBOARD_TEST_SERVE_ENV_MARKER";

/// `command` through the agent server's command API at `url` with session key `key`:
/// (exit code, stdout).
fn bash(url: &str, key: &str, command: &str) -> (Option<i64>, String) {
    let (code, out) = send_json(
        client()
            .post(format!("{url}/api/bash/execute_bash_command"))
            .header("X-Session-API-Key", key)
            .json(&json!({"command": command, "cwd": null, "timeout": 60})),
    );
    assert_eq!(code, 200, "{command}: {out}");
    (
        out["exit_code"].as_i64(),
        out["stdout"].as_str().unwrap_or("").to_owned(),
    )
}

/// A world-readable git repository with one commit on `main`.
fn git_repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("README"), "main\n").unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "."],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-q",
            "-m",
            "main",
        ],
    ] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(ok.success(), "git {args:?}");
    }
    let _ = std::process::Command::new("chmod")
        .args(["-R", "a+rX", &dir.display().to_string()])
        .status();
}

/// A started sandbox as its creator sees it: id, agent server URL, session key.
fn start(server: &Server, key: &str, spec: &str) -> (String, String, String) {
    let (code, body) = send_json(
        client()
            .post(server.url(&format!("/api/v1/sandboxes?sandbox_spec_id={spec}")))
            .header("X-Access-Token", key),
    );
    assert_eq!(code, 200, "{body}");
    let id = body["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let (_, got) = send_json(
            client()
                .get(server.url(&format!("/api/v1/sandboxes?id={id}")))
                .header("X-Access-Token", key),
        );
        if got[0]["status"] == "RUNNING" {
            let url = got[0]["exposed_urls"][0]["url"]
                .as_str()
                .unwrap()
                .to_owned();
            let session = got[0]["session_api_key"].as_str().unwrap().to_owned();
            return (id, url, session);
        }
        assert!(
            Instant::now() < deadline && got[0]["status"] != "ERROR",
            "sandbox {id}: {got}; stderr:\n{}",
            server.stderr_lines().join("\n")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn delete(server: &Server, key: &str, id: &str) {
    let (code, body) = send_json(
        client()
            .delete(server.url(&format!("/api/v1/sandboxes/{id}")))
            .header("X-Access-Token", key),
    );
    assert_eq!(code, 200, "{body}");
}

/// Live processes whose command line names `needle`.
fn processes_naming(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(needle) {
            out.push(pid);
        }
    }
    out
}

/// Kills every process naming the data directory (and its group) when dropped.
struct KillOnDrop(String);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for pid in processes_naming(&self.0) {
            for target in [format!("-{pid}"), pid.to_string()] {
                let _ = std::process::Command::new("kill")
                    .args(["-9", "--", &target])
                    .status();
            }
        }
    }
}

/// A loopback HTTP server answering `{"ok": true}` to everything: the fake LLM.
fn fake_llm() -> u16 {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            // The request's head read whole before the answer (a GET: no body): closing with
            // unread bytes resets the connection, and the answer can be lost with it.
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::from("-");
            while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                line.clear();
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{{\"ok\": true}}"
            );
        }
    });
    give_sandboxes_host_port(port);
    port
}

/// Switchboard serving an organization with an owner and a member: SQLite in its data
/// directory, a local repository and the LLM key file in a directory sandboxes may read
/// (`--allow-local-repositories`), the attacker's spec `agent` (the real agent server when
/// this machine has it) and the stand-in `standin`.
struct Tenancy {
    data: TempDir,
    data_dir: String,
    _repos: TempDir,
    repos_arg: String,
    key_arg: String,
    server: Server,
    owner: String,
    member: String,
    /// The fake LLM's port on the host's loopback, given to sandboxes (`--sandbox-host-port`).
    llm: u16,
}

fn tenancy() -> Tenancy {
    let llm = fake_llm();
    let data = TempDir::new();
    let data_dir = data.path().display().to_string();
    let repos = TempDir::new();
    std::fs::set_permissions(repos.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    git_repo(&repos.path().join("project"));
    let llm_key_file = repos.path().join("llm.key");
    std::fs::write(&llm_key_file, LLM_KEY).unwrap();
    std::fs::set_permissions(&llm_key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let standin = vec![
        python(),
        switchboard_testkit::standin_agent_server()
            .display()
            .to_string(),
    ];
    let (agent, env) = match switchboard_testkit::real_agent_server() {
        Some(p) => (
            vec![p.display().to_string()],
            switchboard_testkit::REAL_AGENT_SERVER_ENV.to_vec(),
        ),
        None => {
            eprintln!("no real agent server on this machine: the attacker runs the stand-in");
            (standin.clone(), Vec::new())
        }
    };
    let env: serde_json::Map<String, Value> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    let specs = data.path().join("specs.json");
    std::fs::write(
        &specs,
        json!([{"id": "agent", "command": agent, "initial_env": env},
               {"id": "standin", "command": standin}])
        .to_string(),
    )
    .unwrap();
    let db = format!("sqlite://{data_dir}/switchboard.sqlite");
    let specs_arg = specs.display().to_string();
    let repos_arg = repos.path().display().to_string();
    let key_arg = llm_key_file.display().to_string();
    let server = Server::spawn_with(
        &db,
        ServeOptions {
            args: vec![
                "--data-dir",
                &data_dir,
                "--sandbox-specs",
                &specs_arg,
                "--allow-local-repositories",
                &repos_arg,
                "--llm-api-key-file",
                &key_arg,
                "--llm-model",
                "openai/fake-model",
            ],
            env: vec![(ENV_MARKER, "serve-environment")],
        },
    );
    let owner = server.bootstrap_key();
    let org = server.bootstrapped.as_ref().unwrap()["org_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, member) = add_member(&db, &org, "member@example.com", "member");

    Tenancy {
        data,
        data_dir,
        _repos: repos,
        repos_arg,
        key_arg,
        server,
        owner,
        member,
        llm,
    }
}

/// Every attempt of the probe through the attacker's command API (`url`, `key`): each fails.
fn attempts_fail(t: &Tenancy, url: &str, key: &str, victim: &str, victim_key: &str) {
    let (data_dir, server, member, key_arg) = (&t.data_dir, &t.server, &t.member, &t.key_arg);
    let run = |c: &str| bash(url, key, c);
    let serve_pid = server.pid();
    let secret = std::fs::read_to_string(t.data.path().join("secret.key")).unwrap();

    // The database: not there to read, nor to rewrite (the probe made itself owner).
    let (_, seen) = run(&format!("cat '{data_dir}/switchboard.sqlite' | head -c 64"));
    assert!(!seen.contains("SQLite format"), "{seen}");
    run(&format!(
        "python3 -c \"import sqlite3; c = sqlite3.connect('{data_dir}/switchboard.sqlite'); c.execute(\\\"UPDATE org_members SET role = 'owner'\\\"); c.commit()\""
    ));
    let (_, me) = send_json(
        client()
            .get(server.url("/api/v1/users/me"))
            .header("X-Access-Token", member),
    );
    assert_eq!(me["role"], "member", "{me}");
    // The keys.
    assert!(
        !run(&format!("cat '{data_dir}/secret.key'"))
            .1
            .contains(secret.trim())
    );
    assert!(!run(&format!("cat '{key_arg}'")).1.contains(LLM_KEY));
    // Switchboard's process and environment.
    let (_, signalled) = run(&format!(
        "kill -CONT {serve_pid} && kill -0 {serve_pid} && echo sent"
    ));
    assert!(!signalled.contains("sent"), "{signalled}");
    let (_, environ) = run(&format!(
        "cat /proc/{serve_pid}/environ; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'"
    ));
    assert!(
        !environ.contains(ENV_MARKER) && !environ.contains(victim_key),
        "{environ}"
    );
    // The owner's sandbox: its directory and its key.
    let (_, listing) = run(&format!(
        "ls -a '{data_dir}/sandboxes/{victim}'; ls '{data_dir}/sandboxes'"
    ));
    assert!(
        !listing.contains("agent-server.log") && !listing.contains(victim),
        "{listing}"
    );
    // Issue 33: the host's loopback services (PostgreSQL, Redis, the owner's agent server)
    // are out of reach of a sandbox with a network of its own.
    let victim_port = sandbox_agent(victim).expect("the owner's agent server").1;
    for port in [5432, 6379, victim_port] {
        let (_, out) = run(&format!(
            "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')\""
        ));
        assert!(!out.contains("connected"), "127.0.0.1:{port}: {out}");
    }
    let (code, health) = send_json(client().get(server.url("/health")));
    assert_eq!(code, 200, "{health}");
}

/// The job still works: a start clones a local repository into the attacker's sandbox; the
/// agent builds and tests there, reaches the LLM and Switchboard's webhooks.
fn does_its_job(t: &Tenancy, attacker: &str, url: &str, key: &str) {
    let (data_dir, server, member, repos_arg) = (&t.data_dir, &t.server, &t.member, &t.repos_arg);
    let run = |c: &str| bash(url, key, c);
    let (code, task) = send_json(
        client()
            .post(server.url("/api/v1/app-conversations"))
            .header("X-Access-Token", member)
            .json(&json!({"sandbox_id": attacker, "selected_branch": "main",
                          "selected_repository": format!("{repos_arg}/project")})),
    );
    assert_eq!(code, 200, "{task}");
    let task_id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(120);
    let done = loop {
        let (_, t) = send_json(
            client()
                .get(server.url(&format!(
                    "/api/v1/app-conversations/start-tasks?ids={task_id}"
                )))
                .header("X-Access-Token", member),
        );
        if t[0]["status"] == "READY" || t[0]["status"] == "ERROR" {
            break t[0].clone();
        }
        assert!(Instant::now() < deadline, "{t}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(done["status"], "READY", "{done}");
    // A start into a sandbox that already ran: a folder of its own in the sandbox's project
    // directory (issue 31), which is its directory's workspace/project on the host.
    let hex = done["app_conversation_id"]
        .as_str()
        .unwrap()
        .replace('-', "");
    let work = format!("/workspace/project/{hex}");
    let on_host = format!("{data_dir}/sandboxes/{attacker}/workspace/project/{hex}/README");
    assert!(
        std::fs::read_to_string(&on_host).is_ok_and(|r| r.contains("main")),
        "{on_host}"
    );
    let (code, out) = run(&format!(
        "cd '{work}' && cat README && printf 'import unittest\\nclass T(unittest.TestCase):\\n    def test_it(self):\\n        self.assertEqual(2 * 2, 4)\\n' > test_it.py && python3 -m unittest -q test_it && echo tested"
    ));
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("main") && out.contains("tested"), "{out}");
    let llm = t.llm;
    let webhook = server.url("/api/v1/webhooks/conversations");
    let conv = uuid::Uuid::new_v4();
    let (code, out) = run(&format!(
        "python3 -c \"import urllib.request as u
print(u.urlopen('http://127.0.0.1:{llm}/v1/models', timeout=10).read().decode())
r = u.Request('{webhook}', data=b'{{\\\"id\\\": \\\"{conv}\\\"}}', headers={{'X-Session-API-Key': '{key}', 'Content-Type': 'application/json'}})
print(u.urlopen(r, timeout=10).status)\""
    ));
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("\"ok\"") && out.contains("200"), "{out}");
}

#[test]
fn a_members_sandbox_reaches_nothing_that_is_not_its_own() {
    let t = tenancy();
    let _guard = KillOnDrop(format!("{}/sandboxes/", t.data_dir));
    let (victim, _, victim_key) = start(&t.server, &t.owner, "standin");
    let (attacker, url, key) = start(&t.server, &t.member, "agent");
    attempts_fail(&t, &url, &key, &victim, &victim_key);
    holds_only_its_share(
        &attacker,
        &Path::new(&t.data_dir).join("sandboxes").join(&attacker),
    );
    does_its_job(&t, &attacker, &url, &key);
    let (server, data_dir, member, owner) = (&t.server, &t.data_dir, &t.member, &t.owner);
    delete(server, member, &attacker);
    delete(server, owner, &victim);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !processes_naming(&format!("{data_dir}/sandboxes/")).is_empty() {
        assert!(Instant::now() < deadline, "processes outlived their delete");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Issue 24, item 4: a sandbox's agent starts a tmux server, `setsid sleep` and a daemon's
/// double fork; after its delete none is left, also when the delete is carried out by a
/// Switchboard restarted after the sandbox started (it knows them only from the handle).
#[test]
fn everything_a_sandbox_started_ends_with_its_delete_also_after_a_restart() {
    let db = switchboard_testkit::TestDatabase::new(switchboard_testkit::Backend::Sqlite);
    let data = TempDir::new();
    let data_dir = data.path().display().to_string();
    let _guard = KillOnDrop(format!("{data_dir}/sandboxes/"));
    let specs = data.path().join("specs.json");
    let standin = vec![
        python(),
        switchboard_testkit::standin_agent_server()
            .display()
            .to_string(),
    ];
    std::fs::write(
        &specs,
        json!([{"id": "standin", "command": standin}]).to_string(),
    )
    .unwrap();
    let specs_arg = specs.display().to_string();
    let serve = || {
        Server::spawn_with(
            db.url(),
            ServeOptions {
                args: vec!["--data-dir", &data_dir, "--sandbox-specs", &specs_arg],
                env: vec![],
            },
        )
    };
    let mut server = serve();
    let key = server.bootstrap_key();
    for restart in [false, true] {
        let (id, url, session) = start(&server, &key, "standin");
        let marker = if restart { "2002" } else { "2001" };
        let quiet = "</dev/null >/dev/null 2>&1";
        let (code, _) = bash(
            &url,
            &session,
            &format!(
                "setsid sleep {marker}1 {quiet} & sh -c 'setsid sh -c \"sleep {marker}2 {quiet} &\" {quiet} &'; \
             if command -v tmux >/dev/null; then tmux new-session -d -s s 'sleep {marker}3' {quiet}; fi; sleep 0.5"
            ),
        );
        assert_eq!(code, Some(0));
        let started: Vec<u32> = ["1", "2", "3"]
            .iter()
            .flat_map(|n| processes_naming(&format!("sleep {marker}{n}")))
            .collect();
        assert!(started.len() >= 2, "{started:?}");
        if restart {
            drop(server); // SIGKILL
            server = serve();
        }
        delete(&server, &key, &id);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left: Vec<u32> = ["1", "2", "3"]
                .iter()
                .flat_map(|n| processes_naming(&format!("sleep {marker}{n}")))
                .collect();
            if left.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "restart={restart}: {left:?} outlived the delete"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[test]
fn serve_refuses_unconfined_process_sandboxes_unless_told_and_warns() {
    let data = TempDir::new();
    let data_dir = data.path().display().to_string();
    let specs = data.path().join("specs.json");
    std::fs::write(
        &specs,
        json!([{"id": "s", "command": ["/bin/true"]}]).to_string(),
    )
    .unwrap();
    let specs_arg = specs.display().to_string();
    let url = format!("sqlite://{data_dir}/db.sqlite");
    // No bwrap on PATH: the process runtime cannot confine; serve stops and says what to do.
    let mut cmd = command(data.path());
    cmd.args([
        "serve",
        "--bind",
        "127.0.0.1:0",
        "--data-dir",
        &data_dir,
        "--sandbox-specs",
        &specs_arg,
    ])
    .env("SWITCHBOARD_DATABASE_URL", &url)
    .env("PATH", "/nonexistent");
    let out = output(cmd);
    assert!(!out.status.success(), "{out:?}");
    for needle in [
        "bwrap",
        "bubblewrap",
        "--process-isolation none",
        "--sandbox-runtime docker",
    ] {
        assert!(out.stderr.contains(needle), "{needle}: {}", out.stderr);
    }
    // Told: it serves, and warns at every start.
    let server = Server::spawn_with(
        &url,
        ServeOptions {
            args: vec![
                "--data-dir",
                &data_dir,
                "--sandbox-specs",
                &specs_arg,
                "--process-isolation",
                "none",
            ],
            env: vec![("PATH", "/nonexistent")],
        },
    );
    assert!(
        server
            .wait_for_stderr("--process-isolation none", Duration::from_secs(10))
            .is_some_and(|l| l.contains("WARN")),
        "{:?}",
        server.stderr_lines()
    );
    drop(server);
    // A password on the command line is warned about; the same URL in the environment is not.
    for (flag, warned) in [(true, true), (false, false)] {
        let mut cmd = command(data.path());
        let pg = "postgres://switchboard:hunter2@127.0.0.1:1/switchboard";
        cmd.args(["serve", "--bind", "127.0.0.1:0", "--data-dir", &data_dir]);
        if flag {
            cmd.args(["--database-url", pg]);
        } else {
            cmd.env("SWITCHBOARD_DATABASE_URL", pg);
        }
        let out = output(cmd);
        assert!(!out.status.success(), "no database there");
        assert_eq!(
            out.stderr.contains("holds a password"),
            warned,
            "{}",
            out.stderr
        );
    }
}
