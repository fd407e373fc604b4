//! Start, pause, resume and delete a real container; and what happens when the daemon ends it
//! behind the runtime's back.

use std::time::Duration;

use bollard::models::ContainerStateStatusEnum;
use switchboard_domain::sandboxes::runtime::{
    Observation, Observed, RuntimeError, SandboxRuntime, SandboxStatus, StatusPolicy, status_of,
};
use time::OffsetDateTime;

use crate::common::{Fixture, identity, launch_spec, preset};

#[test]
fn start_pause_resume_delete() {
    let Some(fx) = Fixture::new("start_pause_resume_delete") else {
        return;
    };
    let handle = fx.start();
    assert_eq!(fx.runtime.observe(&handle), Observed::Running);
    fx.wait_alive(&handle);
    let id = identity(&handle);
    assert_eq!(handle.runtime, "docker");
    assert_eq!(handle.sandbox_port, 8000);
    assert_eq!(
        handle.agent_server_url,
        format!("http://127.0.0.1:{}", handle.host_port)
    );
    assert_eq!(handle.working_dir.to_str(), Some("/workspace/project"));

    // Pause: the container is frozen and its agent server does not answer.
    fx.runtime.pause(&handle).unwrap();
    assert_eq!(fx.runtime.observe(&handle), Observed::Stopped);
    let state = fx.inspect(&handle).unwrap().state.unwrap();
    assert_eq!(state.status, Some(ContainerStateStatusEnum::PAUSED));
    assert!(!fx.alive(&handle, Duration::from_secs(2)));
    fx.runtime.pause(&handle).unwrap();

    // Resume: the same container answers again at once.
    fx.runtime.resume(&handle).unwrap();
    assert_eq!(fx.runtime.observe(&handle), Observed::Running);
    assert!(fx.alive(&handle, Duration::from_secs(5)));
    fx.runtime.resume(&handle).unwrap();
    let after = fx.inspect(&handle).unwrap();
    assert_eq!(after.id.as_deref(), Some(id.container_id.as_str()));

    // Delete: container and volume gone; deleting again succeeds; the rest is gone.
    fx.runtime.delete(&handle).unwrap();
    assert!(fx.inspect(&handle).is_none(), "the container is removed");
    assert!(
        !fx.daemon.volume_exists(&id.volume),
        "the volume is removed"
    );
    assert_eq!(fx.runtime.observe(&handle), Observed::Gone);
    fx.runtime.delete(&handle).unwrap();
    assert_eq!(fx.runtime.pause(&handle), Err(RuntimeError::Gone));
    assert_eq!(fx.runtime.resume(&handle), Err(RuntimeError::Gone));
    assert_eq!(fx.runtime.log_tail(&handle, 10), None);
}

#[test]
fn a_container_killed_behind_the_runtimes_back_is_exited_then_gone() {
    let Some(fx) = Fixture::new("a_container_killed_behind_the_runtimes_back") else {
        return;
    };
    let since = OffsetDateTime::now_utc();
    let handle = fx.start();
    fx.wait_alive(&handle);
    let last_alive = OffsetDateTime::now_utc();
    let id = identity(&handle);

    fx.daemon.kill(&id.container_id);
    let observed = fx.runtime.observe(&handle);
    assert_eq!(
        observed,
        Observed::Exited {
            reason: "killed by signal 9 (SIGKILL), exit code 137".into()
        }
    );
    // It had answered: MISSING, not PAUSED (OpenHands' bug) and not ERROR.
    let obs = Observation {
        observed,
        alive: false,
        since,
        last_alive: Some(last_alive),
    };
    let status = status_of(&obs, &StatusPolicy::default(), OffsetDateTime::now_utc());
    assert_eq!(status, SandboxStatus::Missing);

    // Resuming a stopped container starts it again, on the same host port.
    fx.runtime.resume(&handle).unwrap();
    assert_eq!(fx.runtime.observe(&handle), Observed::Running);
    let ports = fx
        .inspect(&handle)
        .unwrap()
        .network_settings
        .unwrap()
        .ports
        .unwrap();
    let bound = ports["8000/tcp"].as_ref().unwrap();
    assert_eq!(bound[0].host_port, Some(handle.host_port.to_string()));
    fx.wait_alive(&handle);

    // Removed behind its back: gone; delete still removes the volume.
    fx.daemon.remove(&id.container_id);
    assert_eq!(fx.runtime.observe(&handle), Observed::Gone);
    assert_eq!(fx.runtime.pause(&handle), Err(RuntimeError::Gone));
    assert!(fx.daemon.volume_exists(&id.volume));
    fx.runtime.delete(&handle).unwrap();
    assert!(!fx.daemon.volume_exists(&id.volume));
}

#[test]
fn a_server_that_exits_during_start_is_an_error_with_its_log() {
    let Some(fx) = Fixture::new("a_server_that_exits_during_start") else {
        return;
    };
    let mut spec = preset();
    spec.command = vec!["--no-such-flag".into()];
    let since = OffsetDateTime::now_utc();
    let handle = fx.runtime.start(&launch_spec(spec)).unwrap();
    let mut observed = Observed::Running;
    let ended = crate::common::wait_until(Duration::from_secs(60), || {
        observed = fx.runtime.observe(&handle);
        observed != Observed::Running
    });
    assert!(ended, "still running");
    assert_eq!(
        observed,
        Observed::Exited {
            reason: "exited with code 2".into()
        }
    );
    let obs = Observation {
        observed,
        alive: false,
        since,
        last_alive: None,
    };
    let status = status_of(&obs, &StatusPolicy::default(), OffsetDateTime::now_utc());
    assert_eq!(status, SandboxStatus::Error);
    let log = fx.runtime.log_tail(&handle, 5).unwrap();
    assert!(log.contains("--no-such-flag"), "{log}");
    fx.runtime.delete(&handle).unwrap();
    assert!(fx.inspect(&handle).is_none());
}
