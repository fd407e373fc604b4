//! Identity across a Switchboard restart: a fresh runtime finds a running sandbox from its
//! persisted handle, and never mistakes another process for one whose pid it reuses.

use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use std::os::unix::process::CommandExt;
use switchboard_domain::sandboxes::runtime::{
    AgentServerClient, Observed, RuntimeError, RuntimeHandle, SandboxRuntime,
};
use switchboard_sandbox::{ProcessIdentity, ProcessRuntime, procfs};

use crate::common::{Fixture, Sandbox, get_json, kill_group_if_ours, launch_spec};

#[test]
fn a_fresh_runtime_finds_a_running_sandbox_without_restarting_it() {
    let fx = Fixture::new();
    let sb = fx.start("", 0);
    fx.wait_alive(&sb);
    let stored = sb.handle.to_json();

    // As after a restart: a new runtime, the handle read back from storage.
    let fresh =
        ProcessRuntime::new(fx.runtime.sandboxes_root()).with_stop_timeout(Duration::from_secs(5));
    let handle = RuntimeHandle::from_json(&stored).unwrap();
    assert_eq!(fresh.observe(&handle), Observed::Running);
    fx.client
        .alive(&handle.agent_server_url, Duration::from_secs(5))
        .unwrap();
    let identity = ProcessIdentity::of(&handle).unwrap();
    assert_eq!(identity, sb.identity, "the same process, not a new one");
    assert_eq!(
        procfs::read_stat(identity.pid).unwrap().start_time,
        identity.start_time
    );

    fresh.pause(&handle).unwrap();
    assert_eq!(fresh.observe(&handle), Observed::Stopped);
    fresh.resume(&handle).unwrap();
    assert_eq!(fresh.observe(&handle), Observed::Running);
    fresh.delete(&handle).unwrap();
    assert!(procfs::live_group_members(identity.pid).is_empty());
    assert!(!handle.working_dir.exists());
}

#[test]
fn a_reused_pid_is_not_mistaken_for_the_sandbox() {
    let fx = Fixture::new();
    // Another process, in a group of its own, holding the pid a stale handle names.
    let mut other = Command::new("sleep")
        .arg("60")
        .process_group(0)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let stat = procfs::read_stat(other.id()).unwrap();
    let stale = ProcessIdentity {
        pid: other.id(),
        start_time: stat.start_time + 1,
        uid: None,
        namespace: None,
        network: None,
    };
    let dir = fx.runtime.sandboxes_root().join("stale");
    std::fs::create_dir_all(&dir).unwrap();
    let handle = RuntimeHandle {
        runtime: "process".into(),
        agent_server_url: "http://127.0.0.1:9".into(),
        host_port: 9,
        sandbox_port: 9,
        working_dir: dir.clone(),
        project_dir: None,
        data: serde_json::to_value(stale).unwrap(),
        services: Vec::new(),
    };
    assert_eq!(fx.runtime.observe(&handle), Observed::Gone);
    assert_eq!(fx.runtime.pause(&handle), Err(RuntimeError::Gone));
    assert_eq!(fx.runtime.resume(&handle), Err(RuntimeError::Gone));
    fx.runtime.delete(&handle).unwrap();
    assert!(!dir.exists());
    // The other process was not signalled.
    let after = procfs::read_stat(other.id()).unwrap();
    assert_eq!(after.start_time, stat.start_time);
    assert!(!after.is_dead() && !after.is_stopped(), "{after:?}");
    assert_eq!(other.try_wait().unwrap(), None);
    other.kill().unwrap();
    other.wait().unwrap();

    // A handle of another runtime, or damaged, is refused, never acted on.
    let mut foreign = handle.clone();
    foreign.runtime = "docker".into();
    assert!(matches!(
        fx.runtime.delete(&foreign),
        Err(RuntimeError::BadHandle(_))
    ));
    assert_eq!(fx.runtime.observe(&foreign), Observed::Gone);
    let mut outside = handle;
    outside.working_dir = "/tmp".into();
    assert!(matches!(
        fx.runtime.delete(&outside),
        Err(RuntimeError::BadHandle(_))
    ));
}

#[test]
fn twenty_concurrent_starts_get_distinct_ports_and_all_come_up() {
    const N: usize = 20;
    let fx = Arc::new(Fixture::new());
    let barrier = Arc::new(Barrier::new(N));
    let threads: Vec<_> = (0..N)
        .map(|_| {
            let fx = Arc::clone(&fx);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let launch = launch_spec("", 0);
                barrier.wait();
                fx.runtime.start(&launch).map(Sandbox::new)
            })
        })
        .collect();
    let sandboxes: Vec<Sandbox> = threads
        .into_iter()
        .map(|t| t.join().unwrap().unwrap())
        .collect();
    let mut ports: Vec<u16> = sandboxes.iter().map(|s| s.handle.host_port).collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), N, "distinct ports");
    for sb in &sandboxes {
        fx.wait_alive(sb);
    }
    // Each answers as itself: its /server_info names its own pid.
    for sb in &sandboxes {
        let info = get_json(&format!("{}/server_info", sb.handle.agent_server_url));
        assert_eq!(info["pid"], sb.pid());
    }
    for sb in &sandboxes {
        fx.runtime.delete(&sb.handle).unwrap();
        kill_group_if_ours(sb.identity);
    }
}
