//! No environment leak: a sandbox's environment is exactly what it was given.

use std::collections::BTreeMap;
use std::process::Command;

use switchboard_domain::sandboxes::runtime::SandboxRuntime;

use crate::common::{Fixture, WEBHOOK_URL, launch_spec, passthrough};

/// Set only in the copy of this test binary that runs the check.
const MARKER: &str = "SWITCHBOARD_TEST_LEAK_MARKER";
/// Like a database URL with a password in Switchboard's environment.
const SECRET_URL: &str = "DATABASE_URL";

/// This process's environment cannot be changed safely (and `unsafe` is forbidden), so the
/// check runs in a copy of this test binary started with a marker variable and a
/// secret-bearing URL in its environment.
#[test]
fn a_sandbox_gets_only_its_own_environment() {
    if std::env::var_os(MARKER).is_none() {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "environment::a_sandbox_gets_only_its_own_environment",
                "--test-threads=1",
            ])
            .env(MARKER, "leaked-if-seen")
            .env(SECRET_URL, "postgres://switchboard:hunter2@db/switchboard")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    assert!(std::env::var_os(SECRET_URL).is_some());

    let fx = Fixture::new();
    let launch = launch_spec("", 0);
    let sb = crate::common::Sandbox::new(fx.runtime.start(&launch).unwrap());
    fx.wait_alive(&sb);
    let environ = std::fs::read(format!("/proc/{}/environ", sb.pid())).unwrap();
    let seen: BTreeMap<String, String> = environ
        .split(|b| *b == 0)
        .filter(|e| !e.is_empty())
        .map(|e| {
            let e = String::from_utf8_lossy(e);
            let (k, v) = e.split_once('=').unwrap();
            (k.to_owned(), v.to_owned())
        })
        .collect();

    let mut expected: BTreeMap<String, String> = passthrough().into_iter().collect();
    expected.extend(launch.spec.initial_env.clone());
    expected.insert(
        "OH_SESSION_API_KEYS_0".into(),
        launch.session_key.expose().into(),
    );
    expected.insert("OH_WEBHOOKS_0_BASE_URL".into(), WEBHOOK_URL.into());
    // The webhook's fast path (issue 19).
    expected.insert("OH_WEBHOOKS_0_EVENT_BUFFER_SIZE".into(), "1".into());
    expected.insert("OH_WEBHOOKS_0_FLUSH_DELAY".into(), "0.1".into());
    // The agent server's address inside the sandbox (issue 31).
    let port = sb.handle.sandbox_port.to_string();
    expected.insert("AGENT_SERVER_PORT".into(), port.clone());
    expected.insert("AGENT_SERVER".into(), port);
    expected.insert("SANDBOX_ID".into(), launch.sandbox_id.to_string());
    assert!(!seen.contains_key(MARKER));
    assert!(!seen.contains_key(SECRET_URL));
    assert_eq!(seen, expected, "exactly what it was given");
}
