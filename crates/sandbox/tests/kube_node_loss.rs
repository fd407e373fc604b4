//! A node of the cluster lost (its kubelet frozen with SIGSTOP by `scripts/kube-cluster.sh
//! freeze node-b`, so it stops reporting while its containers run on): Kubernetes evicts the
//! pods there after the runtime's node-loss toleration, and their sandboxes end (`ERROR`), while
//! the other node's stay running (issue 32, "Tests"). A test binary of its own: cargo runs test
//! binaries one after the other, so no other cluster test schedules on the frozen node.

#[path = "kube_runtime/common.rs"]
#[allow(dead_code)]
mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;
use switchboard_domain::sandboxes::runtime::{
    AgentServerClient, Observed, RuntimeHandle, SandboxRuntime,
};
use switchboard_sandbox::kubernetes::PodIdentity;

/// Runs `scripts/kube-cluster.sh args…`, which must succeed.
fn cluster_script(args: &[&str]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kube-cluster.sh");
    let out = Command::new("bash")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kube-cluster.sh {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Thaws node-b when dropped, even by a panic.
struct Thaw;

impl Drop for Thaw {
    fn drop(&mut self) {
        cluster_script(&["thaw", "node-b"]);
    }
}

/// What the cluster says when node-b's pods were not evicted: the nodes' readiness and taints,
/// each of node-b's pods as the API server has it (not the runtime's cache), and the
/// controller-manager's lines about nodes, taints and evictions.
fn diagnosis(fx: &Fixture, on_b: &[&RuntimeHandle]) -> String {
    let nodes = fx
        .kubectl
        .run(&[
            "get",
            "nodes",
            "-o",
            "custom-columns=NAME:.metadata.name,READY:.status.conditions[?(@.type==\"Ready\")].status,TAINTS:.spec.taints[*].key",
        ])
        .unwrap_or_else(|e| e);
    let pods: Vec<String> = on_b
        .iter()
        .map(|h| {
            let name = PodIdentity::of(h).unwrap().name;
            match fx.kubectl.get("pod", &name) {
                Some(p) => format!(
                    "{name}: phase {}, deletionTimestamp {}",
                    p["status"]["phase"], p["metadata"]["deletionTimestamp"]
                ),
                None => format!("{name}: gone"),
            }
        })
        .collect();
    // scripts/kube-cluster.sh keeps its logs beside the kubeconfig it writes.
    let log = fx
        .kubeconfig
        .parent()
        .map(|state| state.join("log/kube-controller-manager.log"))
        .and_then(|path| std::fs::read_to_string(path).ok())
        .unwrap_or_default();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| {
            ["node-b", "disruption", "Evict", "taint", "Taint"]
                .iter()
                .any(|w| l.contains(w))
        })
        .collect();
    let tail = &lines[lines.len().saturating_sub(30)..];
    format!(
        "nodes:\n{nodes}\npods on node-b (API server):\n{}\ncontroller-manager:\n{}",
        pods.join("\n"),
        tail.join("\n")
    )
}

fn node(handle: &RuntimeHandle) -> String {
    PodIdentity::of(handle).unwrap().node.unwrap_or_default()
}

#[test]
fn a_lost_node_ends_its_sandboxes_and_the_other_nodes_run_on() {
    let Some(fx) = Fixture::with(
        "a_lost_node_ends_its_sandboxes_and_the_other_nodes_run_on",
        |c| {
            c.node_loss_toleration = Duration::from_secs(10);
        },
    ) else {
        return;
    };
    // Sandboxes until each node has one (the scheduler spreads them; six at most).
    let mut handles: Vec<RuntimeHandle> = Vec::new();
    while !(handles.iter().any(|h| node(h) == "node-a")
        && handles.iter().any(|h| node(h) == "node-b"))
    {
        assert!(handles.len() < 6, "the scheduler put every pod on one node");
        handles.push(
            fx.runtime
                .start(&launch_spec(preset()))
                .expect("the pod starts"),
        );
    }
    let on_b: Vec<&RuntimeHandle> = handles.iter().filter(|h| node(h) == "node-b").collect();
    let on_a: Vec<&RuntimeHandle> = handles.iter().filter(|h| node(h) == "node-a").collect();
    for h in &on_a {
        fx.wait_alive(h);
    }

    cluster_script(&["freeze", "node-b"]);
    let thaw = Thaw;
    // Node-monitor grace (40 s) + the toleration (10 s) + the controllers' periods.
    let ended = wait_until(Duration::from_secs(240), || {
        on_b.iter()
            .all(|h| matches!(fx.runtime.observe(h), Observed::Exited { .. }))
    });
    let states: Vec<Observed> = on_b.iter().map(|h| fx.runtime.observe(h)).collect();
    assert!(
        ended,
        "node-b's sandboxes did not end: {states:?}\n{}",
        diagnosis(&fx, &on_b)
    );
    for state in &states {
        let Observed::Exited { reason } = state else {
            unreachable!()
        };
        assert!(reason.contains("being deleted"), "{reason}");
    }
    for h in &on_a {
        assert_eq!(
            fx.runtime.observe(h),
            Observed::Running,
            "node-a's sandbox runs on"
        );
        assert!(
            fx.client
                .alive(&h.agent_server_url, Duration::from_secs(5))
                .is_ok()
        );
    }
    drop(thaw);
    for h in &handles {
        fx.runtime.delete(h).unwrap();
    }
}
