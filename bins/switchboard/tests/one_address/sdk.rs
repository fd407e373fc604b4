//! The SDK's `OpenHandsCloudWorkspace` (openhands-workspace 1.58.2, unchanged) in the
//! namespace: it starts a sandbox, runs a conversation with the terminal tool and the fake
//! LLM in its default `working_dir` (`/workspace/project`), and reads the agent server's
//! events back, all through Switchboard's URL.
//!
//! `OpenHandsCloudWorkspace` needs its agent server at the root of a host (it asserts that
//! httpx's base URL equals the URL it was given, which httpx breaks for a URL with a path), so
//! Switchboard runs with `--sandbox-host-pattern {id}-{service}.sandboxes.test`; the
//! namespace's `/etc/hosts` (`ip netns exec` mounts `/etc/netns/NAME/hosts` there) plays the
//! wildcard DNS record, written as soon as the sandbox's id is known.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard_testkit::{Backend, TestDatabase};

use crate::common::*;
use crate::one_address::netns::{Netns, reachable_from, real_agent_specs};

fn sdk_through_switchboard_alone(backend: Backend, tag: u8) {
    let (Some(agent_server), Some(sdk_python)) = (
        switchboard_testkit::real_agent_server(),
        switchboard_testkit::sdk_workspace_python(),
    ) else {
        eprintln!(
            "no real agent server or SDK venv on this machine (scripts/e2e.sh installs them): skipped"
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
    // No --public-url: the bound address is the public URL, the only one the client has.
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
                "240",
                "--llm-model",
                "openai/fake-model",
                "--llm-base-url",
                &llm_base,
                "--sandbox-host-pattern",
                "{id}-{service}.sandboxes.test",
            ],
            env: vec![("LLM_API_KEY", "fake-key")],
        },
    );
    let key = server.bootstrap_key();
    assert!(
        reachable_from(&ns, &sdk_python, &ns.host_ip, port),
        "{backend}: Switchboard"
    );

    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/e2e/sdk_cloud_workspace.py");
    let mut sdk = ns.command(&sdk_python);
    sdk.arg(&script)
        .args([&server.address, &key, &llm_base])
        .env_remove("http_proxy")
        .env_remove("HTTP_PROXY")
        .env("NO_PROXY", "*")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let sdk = sdk.spawn().expect("running the SDK in the namespace");
    // While it runs: its sandbox's host resolves to Switchboard (the wildcard record), and
    // its agent server is out of the namespace's reach.
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut checked = false;
    let mut named = false;
    while !checked && Instant::now() < deadline {
        let (_, sandboxes) = send_json(
            client()
                .get(server.url("/api/v1/sandboxes/search"))
                .header("X-Access-Token", &key),
        );
        let first = sandboxes["items"]
            .as_array()
            .and_then(|i| i.first())
            .cloned();
        if let (Some(s), false) = (&first, named) {
            let id = s["id"].as_str().unwrap();
            ns.add_host(&ns.host_ip, &format!("{id}-agent-server.sandboxes.test"));
            named = true;
        }
        if let Some(s) = first.filter(|s| s["status"] == "RUNNING") {
            let id = s["id"].as_str().unwrap();
            let url = s["exposed_urls"][0]["url"].as_str().unwrap();
            assert_eq!(
                url,
                format!("http://{id}-agent-server.sandboxes.test:{port}"),
                "{backend}"
            );
            let (_, direct_port) = sandbox_agent(id).expect("the agent server's process");
            assert!(
                !reachable_from(&ns, &sdk_python, "127.0.0.1", direct_port),
                "{backend}: the sandbox's loopback port is reachable from the namespace"
            );
            assert!(
                !reachable_from(&ns, &sdk_python, &ns.host_ip, direct_port),
                "{backend}: the sandbox's port is reachable on Switchboard's address"
            );
            checked = true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = sdk.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{backend}: the SDK failed in the namespace: {stdout}\n{}\nserver:\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.stderr_lines().join("\n")
    );
    assert!(checked, "{backend}: never saw the sandbox RUNNING");
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let ids = v["agent_event_ids"].as_array().unwrap();
    assert!(ids.len() >= 8, "{backend}: a short run: {v}");
    // With the SDK's own default working_dir, in the confined sandbox's /workspace
    // (issue 31): the conversation finished, and a file was written there.
    assert_eq!(v["working_dir"], "/workspace/project", "{backend}: {v}");
    assert_eq!(v["execution_status"], "finished", "{backend}: {v}");
    assert_eq!(
        v["written"],
        serde_json::json!(["/workspace/project", "from-sdk"]),
        "{backend}: {v}"
    );
    // The conversation ran: its events are Switchboard's too (delivered by the webhooks to
    // the bound address).
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
    drop(ns);
}

#[test]
fn sdk_through_switchboard_alone_sqlite() {
    sdk_through_switchboard_alone(Backend::Sqlite, 1);
}

#[test]
fn sdk_through_switchboard_alone_postgres() {
    sdk_through_switchboard_alone(Backend::Postgres, 2);
}
