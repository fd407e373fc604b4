//! A sandbox's life on the cluster: start, pause, resume with its workspace kept, delete with
//! nothing left; a pod removed behind the runtime's back; a fresh runtime (a restarted
//! Switchboard) finding its pods; the orphan sweep's inventory.

use std::time::Duration;

use switchboard_domain::sandboxes::runtime::{Observed, SandboxRuntime};
use switchboard_sandbox::KubernetesRuntime;
use switchboard_sandbox::kubernetes::PodIdentity;

use crate::common::*;

#[test]
fn a_sandbox_runs_pauses_resumes_with_its_workspace_and_is_deleted() {
    let Some(fx) = Fixture::new("a_sandbox_runs_pauses_resumes_with_its_workspace_and_is_deleted")
    else {
        return;
    };
    let launch = launch_spec(preset());
    let handle = fx.runtime.start(&launch).expect("the pod starts");
    assert!(
        handle.agent_server_url.starts_with("http://10.88."),
        "{}",
        handle.agent_server_url
    );
    assert_eq!(handle.project_dir.as_deref(), Some("/workspace/project"));
    let identity = PodIdentity::of(&handle).unwrap();
    assert!(identity.node.is_some(), "the handle names the pod's node");
    fx.wait_alive(&handle);
    assert_eq!(fx.runtime.observe(&handle), Observed::Running);
    let key = &launch.session_key;
    fx.write(
        &handle,
        key,
        "/workspace/project/kept.txt",
        "kept through pause",
    );

    fx.runtime.pause(&handle).unwrap();
    assert_eq!(fx.runtime.observe(&handle), Observed::Stopped);
    assert!(
        wait_until(Duration::from_secs(120), || fx
            .kubectl
            .get("pod", &identity.name)
            .is_none()),
        "the paused pod is deleted"
    );
    assert_eq!(fx.runtime.observe(&handle), Observed::Stopped);
    assert_eq!(fx.runtime.try_observe(&handle), Ok(Observed::Stopped));
    assert!(
        fx.kubectl.get("pvc", &identity.name).is_some(),
        "the claim stays"
    );
    // Pausing a paused sandbox succeeds.
    fx.runtime.pause(&handle).unwrap();

    fx.runtime.resume(&handle).unwrap();
    let resumed = fx
        .runtime
        .handle_after_resume(&handle)
        .unwrap_or(handle.clone());
    assert_eq!(fx.runtime.handle_after_resume(&handle), None, "taken once");
    fx.wait_alive(&resumed);
    assert_eq!(fx.runtime.observe(&resumed), Observed::Running);
    assert_eq!(
        fx.read(&resumed, key, "/workspace/project/kept.txt")
            .as_deref(),
        Some("kept through pause")
    );
    // Resuming a running sandbox succeeds and moves nothing.
    fx.runtime.resume(&resumed).unwrap();
    assert_eq!(fx.runtime.handle_after_resume(&resumed), None);
    assert!(
        fx.runtime
            .log_tail(&resumed, 20)
            .is_some_and(|l| !l.is_empty())
    );

    fx.runtime.delete(&resumed).unwrap();
    assert!(
        wait_until(Duration::from_secs(180), || fx.nothing_left()),
        "pod, claim and secret are deleted"
    );
    assert_eq!(fx.runtime.observe(&resumed), Observed::Gone);
    // Deleting a deleted sandbox succeeds.
    fx.runtime.delete(&resumed).unwrap();
}

#[test]
fn a_restarted_runtime_finds_its_pod_and_a_pod_removed_behind_its_back_is_gone() {
    let Some(fx) =
        Fixture::new("a_restarted_runtime_finds_its_pod_and_a_pod_removed_behind_its_back_is_gone")
    else {
        return;
    };
    let launch = launch_spec(preset());
    let handle = fx.runtime.start(&launch).expect("the pod starts");
    let identity = PodIdentity::of(&handle).unwrap();
    // A fresh runtime of the same installation, as after a restart, sees the pod running.
    let restarted =
        KubernetesRuntime::connect(Some(&fx.kubeconfig), fx.runtime.config().clone()).unwrap();
    assert_eq!(restarted.try_observe(&handle), Ok(Observed::Running));
    let ids = restarted.sandbox_ids().unwrap();
    assert!(ids.contains(&identity.sandbox_id), "{ids:?}");
    // Another installation's runtime never acts on it.
    let mut other_config = fx.runtime.config().clone();
    other_config.installation = format!("{}-other", fx.installation);
    let other = KubernetesRuntime::connect(Some(&fx.kubeconfig), other_config).unwrap();
    assert_eq!(other.observe(&handle), Observed::Gone);
    assert!(other.delete(&handle).is_err());
    assert!(!other.sandbox_ids().unwrap().contains(&identity.sandbox_id));

    fx.kubectl
        .run(&[
            "delete",
            "pod",
            &identity.name,
            "--wait=true",
            "--grace-period=1",
        ])
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(30), || restarted.observe(&handle)
            == Observed::Gone),
        "a pod removed behind the runtime's back is gone (MISSING), not paused"
    );
    assert_eq!(fx.runtime.observe(&handle), Observed::Gone);
    // The orphan sweep's removal takes what is left (the claim, the secret).
    restarted.remove_orphan(&identity.sandbox_id).unwrap();
    assert!(
        wait_until(Duration::from_secs(120), || fx.nothing_left()),
        "the orphan's claim and secret are removed"
    );
}

#[test]
fn off_the_pod_network_a_sandbox_is_reached_through_the_api_server() {
    let Some(fx) = Fixture::with(
        "off_the_pod_network_a_sandbox_is_reached_through_the_api_server",
        |c| c.reach = switchboard_sandbox::kubernetes::Reach::PortForward,
    ) else {
        return;
    };
    let launch = launch_spec(preset());
    let handle = fx.runtime.start(&launch).expect("the pod starts");
    assert!(
        handle.agent_server_url.starts_with("http://127.0.0.1:"),
        "{}",
        handle.agent_server_url
    );
    assert_eq!(handle.sandbox_port, 8000);
    fx.wait_alive(&handle);
    let key = &launch.session_key;
    fx.write(
        &handle,
        key,
        "/workspace/project/forwarded.txt",
        "through the API server",
    );

    fx.runtime.pause(&handle).unwrap();
    assert_eq!(fx.runtime.observe(&handle), Observed::Stopped);
    fx.runtime.resume(&handle).unwrap();
    let resumed = fx
        .runtime
        .handle_after_resume(&handle)
        .unwrap_or(handle.clone());
    assert_eq!(
        resumed.agent_server_url, handle.agent_server_url,
        "the loopback URL stays"
    );
    fx.wait_alive(&resumed);
    assert_eq!(
        fx.read(&resumed, key, "/workspace/project/forwarded.txt")
            .as_deref(),
        Some("through the API server")
    );

    fx.runtime.delete(&resumed).unwrap();
    let port = resumed.host_port;
    assert!(
        wait_until(Duration::from_secs(10), || std::net::TcpStream::connect((
            "127.0.0.1",
            port
        ))
        .is_err()),
        "the forward's port is closed with the sandbox"
    );
}
