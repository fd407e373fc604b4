//! The SDK's `OpenHandsCloudWorkspace` (openhands-workspace 1.58.2, unchanged) against `serve`
//! started as the README's quick start (no host pattern, no DNS, no URL flag): it opens the
//! workspace on the port form's URL, runs a command and a conversation (in the SDK's default
//! `working_dir`, `/workspace/project`), and every event the agent server kept reaches
//! Switchboard. Needs the real agent server and the SDK's venv (`scripts/e2e.sh prepare`);
//! without them the test says so and passes.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard_testkit::{Backend, TestDatabase};

use crate::common::*;
use crate::sandbox_urls::DEFAULT_RANGE;

/// A spec running the real agent server (its venv's program) with the environment the tests
/// give it.
fn real_agent_specs(data: &Path, agent_server: &Path) -> String {
    let env: serde_json::Map<String, Value> = switchboard_testkit::REAL_AGENT_SERVER_ENV
        .iter()
        .map(|(k, v)| ((*k).to_owned(), serde_json::json!(v)))
        .collect();
    let specs = data.join("specs.json");
    let spec = serde_json::json!([{
        "id": "agent",
        "command": [agent_server.display().to_string()],
        "initial_env": env,
    }]);
    std::fs::write(&specs, spec.to_string()).unwrap();
    specs.display().to_string()
}

fn sdk_on_the_port_form(backend: Backend) {
    let (Some(agent_server), Some(sdk_python)) = (
        switchboard_testkit::real_agent_server(),
        switchboard_testkit::sdk_workspace_python(),
    ) else {
        eprintln!(
            "no real agent server or SDK venv on this machine (scripts/e2e.sh installs them): skipped"
        );
        return;
    };
    let _range = DEFAULT_RANGE.lock().unwrap_or_else(|e| e.into_inner());
    let db = TestDatabase::new(backend);
    let data = TempDir::new();
    let data_dir = data.path().display().to_string();
    let _end = EndProcessesUnder(data.path().to_path_buf());
    let (_llm, llm_base) = fake_llm();
    let specs = real_agent_specs(data.path(), &agent_server);
    let server = Server::spawn_as_readme(
        &[],
        "127.0.0.1:0",
        db.url(),
        ServeOptions {
            args: vec![
                "--data-dir",
                &data_dir,
                "--sandbox-specs",
                &specs,
                "--sandbox-start-timeout",
                "240",
                "--llm-model",
                "openai/fake-model",
                "--llm-base-url",
                &llm_base,
            ],
            env: vec![("LLM_API_KEY", "fake-key")],
        },
    );
    let key = server.bootstrap_key();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/e2e/sdk_cloud_workspace.py");
    let started = Instant::now();
    let out = Command::new(&sdk_python)
        .arg(&script)
        .args([&server.address, &key, &llm_base])
        .env_remove("http_proxy")
        .env_remove("HTTP_PROXY")
        .env("NO_PROXY", "*")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("running the SDK");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{backend}: the SDK failed: {stdout}\n{}\nserver:\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.stderr_lines().join("\n")
    );
    eprintln!("{backend}: the SDK's run took {:?}", started.elapsed());
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let ids = v["agent_event_ids"].as_array().unwrap();
    assert!(ids.len() >= 8, "{backend}: a short run: {v}");
    let conv = v["conversation_id"].as_str().unwrap().replace('-', "");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (code, count) = send_json(
            client()
                .get(server.url(&format!("/api/v1/conversation/{conv}/events/count")))
                .header("X-Access-Token", &key),
        );
        if code == 200 && count.as_u64() >= Some(ids.len() as u64) {
            break;
        }
        assert!(Instant::now() < deadline, "{backend}: {code} {count}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // The SDK deleted its sandbox as it left: the port form's ports are all closed again.
    let deadline = Instant::now() + Duration::from_secs(10);
    while (20000..=20009).any(|p| std::net::TcpStream::connect(("127.0.0.1", p)).is_ok()) {
        assert!(
            Instant::now() < deadline,
            "{backend}: a sandbox port still open"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn sdk_on_the_port_form_sqlite() {
    sdk_on_the_port_form(Backend::Sqlite);
}

#[test]
fn sdk_on_the_port_form_postgres() {
    sdk_on_the_port_form(Backend::Postgres);
}
