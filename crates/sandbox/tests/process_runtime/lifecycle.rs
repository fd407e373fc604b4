//! Start, `/alive`, the status in every state, the log, and launch errors.

use std::fs;
use std::time::Duration;

use switchboard_domain::sandboxes::runtime::{
    AgentServerClient, AgentServerError, Observation, Observed, RuntimeError, SandboxRuntime,
    SandboxStatus, StatusPolicy, status_of,
};
use switchboard_sandbox::process::LOG_FILE;
use time::OffsetDateTime;

use crate::common::{Fixture, PROBE, launch_spec, wait_until};

/// The status now, from a real observation and a real probe; `since` is when the test
/// started the sandbox, `last_alive` when it last answered.
fn status(
    fx: &Fixture,
    handle: &switchboard_domain::sandboxes::runtime::RuntimeHandle,
    since: OffsetDateTime,
    last_alive: Option<OffsetDateTime>,
    policy: &StatusPolicy,
) -> SandboxStatus {
    let observed = fx.runtime.observe(handle);
    let alive = fx.client.alive(&handle.agent_server_url, PROBE).is_ok();
    let obs = Observation {
        observed,
        alive,
        since,
        last_alive,
    };
    status_of(&obs, policy, OffsetDateTime::now_utc())
}

#[test]
fn a_started_sandbox_runs_and_answers_alive() {
    let fx = Fixture::new();
    let sb = fx.start("", 0);
    let h = &sb.handle;
    assert_eq!(h.runtime, "process");
    assert_eq!(
        h.agent_server_url,
        format!("http://127.0.0.1:{}", h.host_port)
    );
    assert_eq!(h.sandbox_port, h.host_port);
    assert_eq!(h.working_dir.parent(), Some(fx.runtime.sandboxes_root()));
    assert_eq!(fx.runtime.observe(h), Observed::Running);
    fx.wait_alive(&sb);

    // Its own process group, its own directory, the port appended to the command.
    let stat = switchboard_sandbox::procfs::read_stat(sb.pid()).unwrap();
    assert_eq!(stat.pgrp, sb.pid());
    let cwd = fs::read_link(format!("/proc/{}/cwd", sb.pid())).unwrap();
    assert_eq!(cwd, h.working_dir.canonicalize().unwrap());
    let cmdline = fs::read(format!("/proc/{}/cmdline", sb.pid())).unwrap();
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let port = h.host_port.to_string();
    assert_eq!(
        args[args.len() - 4..],
        ["--host", "127.0.0.1", "--port", port.as_str()]
    );
    // stdin closed: /dev/null.
    let stdin = fs::read_link(format!("/proc/{}/fd/0", sb.pid())).unwrap();
    assert_eq!(stdin, std::path::Path::new("/dev/null"));
    // stdout and stderr go to the log.
    assert!(
        wait_until(Duration::from_secs(5), || {
            fx.runtime
                .log_tail(h, 50)
                .is_some_and(|log| log.contains("GET /alive"))
        }),
        "requests are logged"
    );
    assert!(h.working_dir.join(LOG_FILE).is_file());
}

#[test]
fn status_is_starting_then_running() {
    let fx = Fixture::new();
    let since = OffsetDateTime::now_utc();
    let sb = fx.start("slow-start:1.5", 0);
    let policy = StatusPolicy::default();
    assert_eq!(
        status(&fx, &sb.handle, since, None, &policy),
        SandboxStatus::Starting
    );
    fx.wait_alive(&sb);
    let last_alive = Some(OffsetDateTime::now_utc());
    assert_eq!(
        status(&fx, &sb.handle, since, last_alive, &policy),
        SandboxStatus::Running
    );
}

#[test]
fn status_is_error_when_it_exits_during_start() {
    let fx = Fixture::new();
    let since = OffsetDateTime::now_utc();
    let sb = fx.start("crash-on-start", 0);
    let observed = fx.wait_observed(&sb.handle, |o| matches!(o, Observed::Exited { .. }));
    assert_eq!(
        observed,
        Observed::Exited {
            reason: "exit status: 3".into()
        }
    );
    let policy = StatusPolicy::default();
    assert_eq!(
        status(&fx, &sb.handle, since, None, &policy),
        SandboxStatus::Error
    );
    // The detail for the server log: the log's last lines.
    let tail = fx.runtime.log_tail(&sb.handle, 1).unwrap();
    assert_eq!(tail, "standin: crash-on-start: exiting with status 3");
}

#[test]
fn status_is_error_when_alive_never_answers_within_the_start_timeout() {
    let fx = Fixture::new();
    let since = OffsetDateTime::now_utc();
    let sb = fx.start("hang-alive", 0);
    let policy = StatusPolicy {
        start_timeout: Duration::from_millis(1500),
        health_grace: Duration::from_secs(30),
    };
    // The server is up (it answers other routes) but /alive hangs: a timeout, not a refusal.
    assert!(wait_until(Duration::from_secs(10), || {
        matches!(
            fx.client.alive(&sb.handle.agent_server_url, PROBE),
            Err(AgentServerError::Timeout { .. })
        )
    }));
    assert_eq!(
        status(&fx, &sb.handle, since, None, &policy),
        SandboxStatus::Starting
    );
    std::thread::sleep(Duration::from_millis(1600));
    assert_eq!(
        status(&fx, &sb.handle, since, None, &policy),
        SandboxStatus::Error
    );
}

#[test]
fn status_is_missing_when_a_running_sandbox_exits() {
    let fx = Fixture::new();
    let since = OffsetDateTime::now_utc();
    let sb = fx.start("exit-after:1", 0);
    fx.wait_alive(&sb);
    let last_alive = Some(OffsetDateTime::now_utc());
    let observed = fx.wait_observed(&sb.handle, |o| matches!(o, Observed::Exited { .. }));
    assert_eq!(
        observed,
        Observed::Exited {
            reason: "exit status: 4".into()
        }
    );
    let policy = StatusPolicy::default();
    assert_eq!(
        status(&fx, &sb.handle, since, last_alive, &policy),
        SandboxStatus::Missing
    );
}

#[test]
fn a_command_that_does_not_exist_is_a_clear_error() {
    let fx = Fixture::new();
    let mut launch = launch_spec("", 0);
    launch.spec.command = vec!["no-such-agent-server-xyz".into(), "--flag".into()];
    let err = fx.runtime.start(&launch).unwrap_err();
    let RuntimeError::Launch(detail) = &err else {
        panic!("{err:?}")
    };
    assert!(
        detail.starts_with("command `no-such-agent-server-xyz` not found on the sandbox's PATH ("),
        "{detail}"
    );
    // Nothing is left behind.
    let dir = fx
        .runtime
        .sandboxes_root()
        .join(launch.sandbox_id.to_string());
    assert!(!dir.exists());

    // A path that exists but is not executable.
    let plain = fx.root.path().join("not-a-program");
    fs::write(&plain, "hello").unwrap();
    launch.spec.command = vec![plain.display().to_string()];
    let err = fx.runtime.start(&launch).unwrap_err();
    let expected = format!("`{}` not found or not executable", plain.display());
    assert!(err.to_string().contains(&expected), "{err}");

    // Executable but not a program the system can run: the exec error, named.
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&plain, fs::Permissions::from_mode(0o755)).unwrap();
    let err = fx.runtime.start(&launch).unwrap_err();
    assert!(
        matches!(&err, RuntimeError::Launch(d) if d.contains("Exec format error")),
        "{err:?}"
    );
    assert!(!dir.exists());

    // A working directory outside the sandbox.
    launch.spec.command = vec!["true".into()];
    launch.spec.working_dir = "/tmp".into();
    let err = fx.runtime.start(&launch).unwrap_err();
    assert!(matches!(err, RuntimeError::InvalidSpec(_)), "{err:?}");
    assert!(!dir.exists());
}

#[test]
fn the_probe_tells_refusal_from_a_bad_answer() {
    let fx = Fixture::new();
    let sb = fx.start("", 0);
    fx.wait_alive(&sb);
    // A path that answers 404: not alive.
    let wrong = format!("{}/nowhere", sb.handle.agent_server_url);
    let err = fx.client.alive(&wrong, PROBE).unwrap_err();
    assert!(
        matches!(&err, AgentServerError::BadAnswer { detail, .. } if detail.starts_with("HTTP 404")),
        "{err:?}"
    );
    drop(sb);
    let refused = fx
        .client
        .alive(&format!("http://127.0.0.1:{}", fx_unused_port()), PROBE)
        .unwrap_err();
    assert!(
        matches!(refused, AgentServerError::Unreachable { .. }),
        "{refused:?}"
    );
}

fn fx_unused_port() -> u16 {
    // Bound and released: nothing listens on it now.
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn status_is_error_when_a_running_sandbox_fails_health_past_the_grace() {
    let fx = Fixture::new();
    let since = OffsetDateTime::now_utc();
    let sb = fx.start("hang-alive:2", 0);
    fx.wait_alive(&sb);
    let last_alive = OffsetDateTime::now_utc();
    let policy = StatusPolicy {
        start_timeout: Duration::from_secs(120),
        health_grace: Duration::from_millis(1500),
    };
    // It stops answering /alive while its process keeps running.
    assert!(wait_until(Duration::from_secs(10), || {
        fx.client.alive(&sb.handle.agent_server_url, PROBE).is_err()
    }));
    // A real observation and a real failed probe, judged at two moments.
    let obs = Observation {
        observed: fx.runtime.observe(&sb.handle),
        alive: fx.client.alive(&sb.handle.agent_server_url, PROBE).is_ok(),
        since,
        last_alive: Some(last_alive),
    };
    assert_eq!(obs.observed, Observed::Running);
    assert!(!obs.alive);
    let in_grace = last_alive + Duration::from_millis(1500);
    assert_eq!(status_of(&obs, &policy, in_grace), SandboxStatus::Running);
    let past_grace = last_alive + Duration::from_millis(1501);
    assert_eq!(status_of(&obs, &policy, past_grace), SandboxStatus::Error);
}
