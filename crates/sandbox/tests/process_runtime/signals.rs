//! Pause, resume and delete of the whole process group; a process killed behind the runtime's
//! back.

use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};
use switchboard_domain::sandboxes::runtime::{
    AgentServerClient, AgentServerError, Observation, Observed, RuntimeError, SandboxRuntime,
    SandboxStatus, StatusPolicy, status_of,
};
use switchboard_sandbox::{ProcessRuntime, procfs};
use time::OffsetDateTime;

use crate::common::{Fixture, PROBE, wait_until};

#[test]
fn pause_stops_the_group_and_resume_continues_it() {
    let fx = Fixture::new();
    let sb = fx.start("", 2);
    fx.wait_alive(&sb);
    assert!(wait_until(Duration::from_secs(5), || sb
        .group_states()
        .len()
        == 3));

    fx.runtime.pause(&sb.handle).unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || sb
            .group_states()
            .iter()
            .all(|s| *s == 'T')),
        "{:?}",
        sb.group_states()
    );
    assert_eq!(sb.group_states().len(), 3, "leader and both children");
    assert_eq!(fx.runtime.observe(&sb.handle), Observed::Stopped);
    let probe = fx.client.alive(&sb.handle.agent_server_url, PROBE);
    assert!(
        matches!(probe, Err(AgentServerError::Timeout { .. })),
        "{probe:?}"
    );
    let obs = Observation {
        observed: fx.runtime.observe(&sb.handle),
        alive: false,
        since: OffsetDateTime::now_utc(),
        last_alive: None,
    };
    let now = OffsetDateTime::now_utc();
    assert_eq!(
        status_of(&obs, &StatusPolicy::default(), now),
        SandboxStatus::Paused
    );
    // Pausing twice is fine.
    fx.runtime.pause(&sb.handle).unwrap();

    fx.runtime.resume(&sb.handle).unwrap();
    assert!(wait_until(Duration::from_secs(5), || sb
        .group_states()
        .iter()
        .all(|s| *s != 'T')));
    assert_eq!(fx.runtime.observe(&sb.handle), Observed::Running);
    fx.client
        .alive(&sb.handle.agent_server_url, Duration::from_secs(5))
        .unwrap();
    fx.runtime.resume(&sb.handle).unwrap();
}

#[test]
fn delete_kills_a_group_that_ignores_sigterm_and_removes_the_directory() {
    let stop_timeout = Duration::from_millis(500);
    let fx = Fixture::with_stop_timeout(stop_timeout);
    let sb = fx.start("ignore-sigterm", 2);
    fx.wait_alive(&sb);
    assert!(wait_until(Duration::from_secs(5), || sb
        .group_states()
        .len()
        == 3));
    assert!(sb.handle.working_dir.is_dir());

    let began = Instant::now();
    fx.runtime.delete(&sb.handle).unwrap();
    let took = began.elapsed();
    assert!(
        took >= stop_timeout,
        "SIGKILL only after the wait ({took:?})"
    );
    assert!(
        procfs::live_group_members(sb.pid()).is_empty(),
        "no member of the group lives"
    );
    // The leader, Switchboard's child, is reaped: not even a zombie is left.
    assert!(
        wait_until(Duration::from_secs(5), || procfs::read_stat(sb.pid())
            .is_none()),
        "{:?}",
        procfs::read_stat(sb.pid())
    );
    assert!(!sb.handle.working_dir.exists());
    assert_eq!(fx.runtime.observe(&sb.handle), Observed::Gone);
    // Deleting again is fine.
    fx.runtime.delete(&sb.handle).unwrap();
}

#[test]
fn delete_of_a_polite_or_paused_sandbox_does_not_wait_for_the_timeout() {
    let fx = Fixture::with_stop_timeout(Duration::from_secs(30));
    let polite = fx.start("", 1);
    let paused = fx.start("", 1);
    fx.wait_alive(&polite);
    fx.wait_alive(&paused);
    fx.runtime.pause(&paused.handle).unwrap();
    for sb in [&polite, &paused] {
        let began = Instant::now();
        fx.runtime.delete(&sb.handle).unwrap();
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "{:?}",
            began.elapsed()
        );
        assert!(procfs::live_group_members(sb.pid()).is_empty());
        assert!(!sb.handle.working_dir.exists());
    }
}

#[test]
fn a_process_killed_behind_the_runtimes_back_is_gone() {
    let fx = Fixture::new();
    let sb = fx.start("", 0);
    fx.wait_alive(&sb);
    let last_alive = Some(OffsetDateTime::now_utc());
    kill_process_group(Pid::from_raw(sb.pid() as i32).unwrap(), Signal::KILL).unwrap();

    // This runtime reaped its child and knows how it ended.
    let observed = fx.wait_observed(&sb.handle, |o| matches!(o, Observed::Exited { .. }));
    assert_eq!(
        observed,
        Observed::Exited {
            reason: "signal: 9 (SIGKILL)".into()
        }
    );
    // One that did not start it (Switchboard restarted) sees no process at all.
    let fresh = ProcessRuntime::new(fx.runtime.sandboxes_root());
    assert_eq!(fresh.observe(&sb.handle), Observed::Gone);
    let obs = Observation {
        observed: Observed::Gone,
        alive: fx.client.alive(&sb.handle.agent_server_url, PROBE).is_ok(),
        since: OffsetDateTime::now_utc(),
        last_alive,
    };
    assert!(!obs.alive);
    let now = OffsetDateTime::now_utc();
    assert_eq!(
        status_of(&obs, &StatusPolicy::default(), now),
        SandboxStatus::Missing
    );
    assert_eq!(fx.runtime.pause(&sb.handle), Err(RuntimeError::Gone));
    assert_eq!(fresh.resume(&sb.handle), Err(RuntimeError::Gone));
    // Its directory is still removed by delete.
    fresh.delete(&sb.handle).unwrap();
    assert!(!sb.handle.working_dir.exists());
}

#[test]
fn delete_clears_the_group_after_its_leader_died() {
    let fx = Fixture::with_stop_timeout(Duration::from_millis(300));
    // The leader forks two children (ignoring SIGTERM), then exits with status 3.
    let sb = fx.start("crash-on-start,ignore-sigterm", 2);
    fx.wait_observed(&sb.handle, |o| matches!(o, Observed::Exited { .. }));
    assert!(
        wait_until(Duration::from_secs(5), || sb.group_states().len() == 2),
        "{:?}",
        sb.group_states()
    );
    assert!(
        procfs::read_stat(sb.pid()).is_none(),
        "the leader is reaped"
    );
    fx.runtime.delete(&sb.handle).unwrap();
    assert!(procfs::live_group_members(sb.pid()).is_empty());
    assert!(!sb.handle.working_dir.exists());
}
