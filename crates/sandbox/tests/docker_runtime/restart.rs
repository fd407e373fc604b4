//! Ten concurrent starts, then a Switchboard restart: a fresh runtime finds every running
//! container from its stored handle, restarts none of them, and deletes them.

use std::collections::HashSet;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use switchboard_domain::sandboxes::runtime::{Observed, RuntimeHandle, SandboxRuntime};
use switchboard_sandbox::{DockerConfig, DockerRuntime};

use crate::common::{Fixture, identity, launch_spec, preset};

#[test]
fn ten_concurrent_starts_then_a_restart_finds_them_all_running() {
    const N: usize = 10;
    let Some(fx) = Fixture::new("ten_concurrent_starts_then_a_restart") else {
        return;
    };
    let fx = Arc::new(fx);
    let barrier = Arc::new(Barrier::new(N));
    let threads: Vec<_> = (0..N)
        .map(|_| {
            let fx = Arc::clone(&fx);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let launch = launch_spec(preset());
                barrier.wait();
                fx.runtime.start(&launch)
            })
        })
        .collect();
    let handles: Vec<RuntimeHandle> = threads
        .into_iter()
        .map(|t| t.join().unwrap().unwrap())
        .collect();
    let ports: HashSet<u16> = handles.iter().map(|h| h.host_port).collect();
    assert_eq!(ports.len(), N, "distinct host ports");
    for handle in &handles {
        fx.wait_alive(handle);
    }
    let started_at: Vec<String> = handles
        .iter()
        .map(|h| fx.inspect(h).unwrap().state.unwrap().started_at.unwrap())
        .collect();
    let stored: Vec<String> = handles.iter().map(RuntimeHandle::to_json).collect();

    // As after a restart: a new runtime of the same installation, handles read back.
    let fresh = DockerRuntime::connect(
        DockerConfig::new(&fx.installation).with_stop_timeout(Duration::from_secs(3)),
    )
    .unwrap();
    let handles: Vec<RuntimeHandle> = stored
        .iter()
        .map(|s| RuntimeHandle::from_json(s).unwrap())
        .collect();
    for (handle, started) in handles.iter().zip(&started_at) {
        assert_eq!(fresh.observe(handle), Observed::Running);
        assert!(fx.alive(handle, Duration::from_secs(5)));
        let state = fx.inspect(handle).unwrap().state.unwrap();
        assert_eq!(state.started_at.as_ref(), Some(started), "not restarted");
    }
    let listed = fresh.list_sandboxes().unwrap();
    assert_eq!(listed.len(), N);
    assert!(listed.iter().all(|c| c.observed == Observed::Running));
    let ids: HashSet<String> = handles.iter().map(|h| identity(h).container_id).collect();
    let listed_ids: HashSet<String> = listed.into_iter().map(|c| c.container_id).collect();
    assert_eq!(ids, listed_ids);

    for handle in &handles {
        fresh.delete(handle).unwrap();
    }
    assert!(fresh.list_sandboxes().unwrap().is_empty());
    assert!(fresh.list_volumes().unwrap().is_empty());
}
