//! The OpenHands CLI (`openhands` 1.16.0 from PyPI, unchanged) as an editor's agent, in the
//! namespace: `openhands login` with a stored key reads `GET /api/keys/llm/byor` and
//! `/api/v1/settings` and writes its agent settings (the member's own LLM), then
//! `openhands acp --cloud` (Agent Client Protocol on its standard streams, driven by
//! `scripts/acp-drive.py` as an editor would) opens a session: the SDK's
//! `OpenHandsCloudWorkspace` with its defaults, a sandbox through Switchboard's host-only URL
//! and the conversation created in `/workspace/project`, its events Switchboard's.
//!
//! A prompt is not sent: the CLI 1.16.0 pins `openhands-sdk` 1.21.0, whose event model refuses
//! what the agent server 1.58.2 sends (`parent_id`), whatever serves the sandbox; a prompt
//! needs an agent server of the CLI's own SDK version (docs/API.md).

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

use crate::common::*;
use crate::one_address::cli::{CliHome, poll, run_bounded};
use crate::one_address::netns::{Netns, reachable_from, real_agent_specs};

/// How long each CLI command may take (imports alone take 10 to 60 s, by load).
const CLI_LIMIT: Duration = Duration::from_secs(420);

fn acp_through_switchboard_alone(backend: Backend, tag: u8) {
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
    // Started as the README starts it: no host pattern, no URL form, no public URL but the
    // bound address (sandbox URLs in the port form, on that address).
    let server = Server::spawn_as_readme(
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
            ],
            env: vec![],
        },
    );
    let key = server.bootstrap_key();
    let python = Path::new(&openhands).with_file_name("python");
    assert!(
        reachable_from(&ns, &python, &ns.host_ip, port),
        "{backend}: Switchboard"
    );
    // The member's own LLM, as Agent Canvas's LLM page saves it.
    let (code, body) = send_json(
        client()
            .post(server.url("/api/v1/settings"))
            .header("X-Access-Token", &key)
            .json(&json!({"agent_settings_diff": {"llm": {
                "model": "openai/fake-model", "base_url": llm_base, "api_key": "fake-key"}}})),
    );
    assert_eq!(code, 200, "{backend}: {body}");

    // As after a first `openhands login`: the key in the CLI's own file.
    let home = CliHome::logged_in(&key);
    let in_ns = |program: &Path| home.command(&ns, program, &server.address);

    // `openhands login`: the stored key is valid, so it pulls the member's settings.
    let mut login = in_ns(Path::new(&openhands));
    login.args(["login", "--server-url", &server.address]);
    let (ok, stdout, stderr) = run_bounded(login, CLI_LIMIT);
    assert!(
        ok && stdout.contains("Settings synchronized successfully"),
        "{backend}: openhands login:\n{stdout}\n{stderr}\nserver:\n{}",
        server.stderr_lines().join("\n")
    );
    let written = std::fs::read_to_string(home.persistence.join("agent_settings.json"))
        .unwrap_or_else(|e| panic!("{backend}: no agent settings written ({e}):\n{stdout}"));
    let settings: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(
        settings["llm"]["model"], "openai/fake-model",
        "{backend}: {settings}"
    );
    assert_eq!(
        settings["llm"]["api_key"], "fake-key",
        "{backend}: {settings}"
    );

    // `openhands acp --cloud`, driven as an editor drives it.
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/acp-drive.py");
    let mut acp = in_ns(&python);
    acp.arg(&driver)
        .args(["--no-prompt", "--timeout", "360", "--"])
        .arg(&openhands)
        // Actions approved as an editor's "always allow" does (`--always-approve`); in the
        // default mode the conversation waits for a confirmation.
        .args([
            "acp",
            "--cloud",
            "--always-approve",
            "--cloud-url",
            &server.address,
        ]);
    let (ok, stdout, stderr) = run_bounded(acp, CLI_LIMIT);
    assert!(
        ok,
        "{backend}: openhands acp --cloud:\n{stdout}\n{stderr}\nserver:\n{}",
        server.stderr_lines().join("\n")
    );
    let result: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{backend}: {e}: {stdout}"));
    let session = result["session_id"].as_str().unwrap().replace('-', "");

    // The session is a conversation on the sandbox's agent server whose events Switchboard
    // has, created in the SDK's default working directory.
    let path = format!("/api/v1/conversation/{session}/events/search?limit=100");
    let events = poll(&server, &key, &path, |b| {
        b["items"].as_array().is_some_and(|items| !items.is_empty())
    });
    let (_, sandboxes) = send_json(
        client()
            .get(server.url("/api/v1/sandboxes/search"))
            .header("X-Access-Token", &key),
    );
    let sandbox = sandboxes["items"][0]["id"].as_str().unwrap_or_default();
    let dir = data
        .path()
        .join("sandboxes")
        .join(sandbox)
        .join("workspace/project");
    assert!(
        dir.is_dir(),
        "{backend}: no /workspace/project in the sandbox: {events}"
    );
    let (_, sandboxes) = send_json(
        client()
            .get(server.url("/api/v1/sandboxes/search"))
            .header("X-Access-Token", &key),
    );
    let url = sandboxes["items"][0]["exposed_urls"][0]["url"]
        .as_str()
        .unwrap_or_else(|| panic!("{backend}: {sandboxes}"));
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    assert!(
        !rest.contains('/'),
        "{backend}: the sandbox's URL is not host-only: {url}"
    );
    drop(ns);
}

#[test]
fn acp_through_switchboard_alone_sqlite() {
    acp_through_switchboard_alone(Backend::Sqlite, 5);
}

#[test]
fn acp_through_switchboard_alone_postgres() {
    acp_through_switchboard_alone(Backend::Postgres, 6);
}
