//! Confined sandboxes (issue 18, "Process runtime") and the processes they start (issue 24,
//! item 4): every process of a sandbox, also those that leave its process group (a
//! daemonized `tmux` server, `setsid`, a double fork), is paused, resumed and ended with it,
//! by this runtime and by a fresh one (a restarted Switchboard).

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::Duration;

use switchboard_domain::sandboxes::runtime::{Observed, SandboxRuntime};
use switchboard_sandbox::process::sandbox_processes;
use switchboard_sandbox::{ProcessIdentity, ProcessRuntime, procfs};

use crate::common::{Fixture, Sandbox, launch_spec, wait_until};

/// Starts processes that leave the agent server's process group, through the agent
/// server's command API: a `tmux` server (when tmux is installed), `setsid sleep`, and a
/// daemon's double fork (fork, `setsid`, fork; re-parented to the namespace's init). Each
/// sleeps a length of its own so it can be told apart. Returns the lengths started.
fn start_escapees(
    fx: &Fixture,
    sb: &Sandbox,
    key: &switchboard_domain::sandboxes::runtime::SessionKey,
) -> Vec<&'static str> {
    let quiet = "</dev/null >/dev/null 2>&1";
    let mut started = vec!["1002", "1003"];
    // A daemon's double fork: fork, setsid, fork again, the middle process exits.
    let mut command = format!(
        "setsid sleep 1002 {quiet} & sh -c 'setsid sh -c \"sleep 1003 {quiet} &\" {quiet} &'; "
    );
    if crate::confinement::has("tmux") {
        started.push("1001");
        command.push_str(&format!(
            "tmux new-session -d -s work 'sleep 1001' {quiet}; "
        ));
    } else {
        eprintln!("tmux is not installed: the daemonized tmux server part is not exercised");
    }
    command.push_str("sleep 0.5; echo started");
    let out = fx.bash(sb, key, &command);
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    started
}

/// Whether `program` is on this process's PATH.
pub fn has(program: &str) -> bool {
    switchboard_sandbox::confine::which(program).is_some()
}

/// The command line of `pid`, its arguments joined by spaces.
fn cmdline(pid: u32) -> String {
    fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

/// The live processes of the sandbox running `sleep <length>`, by pid and start time.
fn sleepers(sb: &Sandbox, length: &str) -> Vec<(u32, u64)> {
    sandbox_processes(&sb.handle)
        .unwrap()
        .into_iter()
        .filter(|p| cmdline(p.pid).trim_end() == format!("sleep {length}"))
        .map(|p| (p.pid, p.start_time))
        .collect()
}

fn alive(pid: u32, start_time: u64) -> bool {
    procfs::read_stat(pid).is_some_and(|s| s.start_time == start_time && !s.is_dead())
}

#[test]
fn a_confined_sandbox_runs_as_its_own_user_in_its_own_namespaces() {
    let fx = Fixture::confined(Vec::new());
    let launch = launch_spec("", 0);
    let sb = Sandbox::new(fx.runtime.start(&launch).unwrap());
    fx.wait_alive(&sb);
    let identity = ProcessIdentity::of(&sb.handle).unwrap();
    let ns = identity
        .namespace
        .expect("a confined sandbox has a pid namespace");
    assert_ne!(Some(ns.inode), procfs::pid_namespace(std::process::id()));
    let dir = fs::metadata(&sb.handle.working_dir).unwrap();
    assert_eq!(
        dir.permissions().mode() & 0o777,
        0o700,
        "its directory is 0700"
    );
    let root = fs::metadata(fx.runtime.sandboxes_root()).unwrap();
    assert_eq!(
        root.permissions().mode() & 0o777,
        0o700,
        "the sandboxes root is 0700"
    );
    let out = fx.bash(
        &sb,
        &launch.session_key,
        "id -u; id -g; echo $HOME; pwd; hostname",
    );
    let lines: Vec<&str> = out.stdout.lines().collect();
    let own = sb.handle.working_dir.display().to_string();
    match identity.uid {
        Some(uid) => {
            // Switchboard is root: a user of its own, from the range, owning its directory.
            assert!(rustix::process::geteuid().is_root());
            assert!(switchboard_sandbox::DEFAULT_UID_RANGE.contains(uid));
            assert_eq!(lines[..2], [uid.to_string(), uid.to_string()], "{out:?}");
            assert_eq!((dir.uid(), dir.gid()), (uid, uid));
        }
        None => assert!(!rustix::process::geteuid().is_root()),
    }
    assert_eq!(
        lines[2..],
        [own.as_str(), own.as_str(), "sandbox"],
        "{out:?}"
    );

    // Two sandboxes never share a user.
    let other = Sandbox::new(fx.runtime.start(&launch_spec("", 0)).unwrap());
    let other_id = ProcessIdentity::of(&other.handle).unwrap();
    if identity.uid.is_some() {
        assert_ne!(identity.uid, other_id.uid);
    }
    fx.runtime.delete(&other.handle).unwrap();
    fx.runtime.delete(&sb.handle).unwrap();
    assert!(!sb.handle.working_dir.exists());
}

/// Issue 24, item 4: after delete, none of the processes the sandbox started is left;
/// before (an unconfined process group), the tmux server and the `setsid` sleep outlived it.
#[test]
fn pause_resume_and_delete_reach_every_process_the_sandbox_started() {
    let fx = Fixture::confined(Vec::new());
    let launch = launch_spec("", 0);
    let sb = Sandbox::new(fx.runtime.start(&launch).unwrap());
    fx.wait_alive(&sb);
    let lengths = start_escapees(&fx, &sb, &launch.session_key);
    let mut escapees = Vec::new();
    for length in &lengths {
        let found = sleepers(&sb, length);
        assert_eq!(found.len(), 1, "sleep {length}: {found:?}");
        // Each has left the agent server's process group.
        let stat = procfs::read_stat(found[0].0).unwrap();
        assert_ne!(stat.pgrp, sb.pid(), "sleep {length} is in the group");
        escapees.extend(found);
    }

    fx.runtime.pause(&sb.handle).unwrap();
    assert_eq!(fx.runtime.observe(&sb.handle), Observed::Stopped);
    for p in sandbox_processes(&sb.handle).unwrap() {
        assert!(p.is_stopped(), "{} ({}) not stopped", p.pid, cmdline(p.pid));
    }
    fx.runtime.resume(&sb.handle).unwrap();
    assert_eq!(fx.runtime.observe(&sb.handle), Observed::Running);
    for p in sandbox_processes(&sb.handle).unwrap() {
        assert!(
            !p.is_stopped(),
            "{} ({}) still stopped",
            p.pid,
            cmdline(p.pid)
        );
    }

    fx.runtime.pause(&sb.handle).unwrap();
    fx.runtime.delete(&sb.handle).unwrap();
    for (pid, start) in &escapees {
        assert!(
            !alive(*pid, *start),
            "{pid} ({}) outlived the delete",
            cmdline(*pid)
        );
    }
    assert!(sandbox_processes(&sb.handle).unwrap().is_empty());
}

/// A restarted Switchboard (a fresh runtime, no child of its own) observes, pauses, resumes
/// and deletes a confined sandbox through its handle alone, escapees included.
#[test]
fn a_fresh_runtime_finds_every_process_again() {
    let fx = Fixture::confined(Vec::new());
    let launch = launch_spec("", 0);
    let sb = Sandbox::new(fx.runtime.start(&launch).unwrap());
    fx.wait_alive(&sb);
    let lengths = start_escapees(&fx, &sb, &launch.session_key);
    let escapees: Vec<(u32, u64)> = lengths.iter().flat_map(|l| sleepers(&sb, l)).collect();
    assert_eq!(escapees.len(), lengths.len());

    let fresh =
        ProcessRuntime::new(fx.runtime.sandboxes_root()).with_stop_timeout(Duration::from_secs(5));
    assert_eq!(fresh.observe(&sb.handle), Observed::Running);
    fresh.pause(&sb.handle).unwrap();
    assert_eq!(fresh.observe(&sb.handle), Observed::Stopped);
    assert!(
        escapees
            .iter()
            .all(|(pid, _)| procfs::read_stat(*pid).unwrap().is_stopped())
    );
    fresh.resume(&sb.handle).unwrap();
    assert_eq!(fresh.observe(&sb.handle), Observed::Running);
    fresh.delete(&sb.handle).unwrap();
    assert!(wait_until(Duration::from_secs(5), || escapees
        .iter()
        .all(|(pid, start)| !alive(*pid, *start))));
    assert_eq!(fresh.observe(&sb.handle), Observed::Gone);
    assert!(!sb.handle.working_dir.exists());
}

/// When the agent server ends by itself, its namespace ends with it: nothing it started is
/// left running.
#[test]
fn nothing_outlives_the_agent_server() {
    let fx = Fixture::confined(Vec::new());
    let launch = launch_spec("", 0);
    let sb = Sandbox::new(fx.runtime.start(&launch).unwrap());
    fx.wait_alive(&sb);
    let lengths = start_escapees(&fx, &sb, &launch.session_key);
    let escapees: Vec<(u32, u64)> = lengths.iter().flat_map(|l| sleepers(&sb, l)).collect();
    let agent = sandbox_processes(&sb.handle)
        .unwrap()
        .into_iter()
        .find(|p| cmdline(p.pid).contains("standin_agent_server"))
        .expect("the agent server is one of the sandbox's processes");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(agent.pid as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    fx.wait_observed(&sb.handle, |o| {
        matches!(o, Observed::Exited { .. } | Observed::Gone)
    });
    assert!(wait_until(Duration::from_secs(5), || escapees
        .iter()
        .all(|(pid, start)| !alive(*pid, *start))));
    fx.runtime.delete(&sb.handle).unwrap();
}
