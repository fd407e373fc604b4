//! What a sandbox's pod and claim say about it (issue 32, "observe"): the pod's phase,
//! container states, deletion and the claim's paused mark, read as the domain's [`Observed`].

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use switchboard_domain::sandboxes::runtime::Observed;

use crate::kubernetes::config::ANNOTATION_PAUSED;

/// Container waiting reasons that mean the pod cannot run as it is: the sandbox is `ERROR`
/// (the kubelet keeps retrying, but nothing in the sandbox will change that).
const FATAL_WAITING: [&str; 7] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "ErrImageNeverPull",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "CrashLoopBackOff",
];

/// Whether a container waiting for `reason` (with the kubelet's `message`) cannot get past it
/// ([`FATAL_WAITING`]), except a configuration error that only says the kubelet's cache of the
/// pod's Secret or ConfigMap was not synced yet (`failed to sync secret cache: timed out
/// waiting for the condition`, seen right after the sandbox's Secret is made): the kubelet
/// retries and the container starts; a start that never gets past it ends at the start
/// timeout.
fn fatal_waiting(reason: Option<&str>, message: Option<&str>) -> bool {
    let Some(reason) = reason.filter(|r| FATAL_WAITING.contains(r)) else {
        return false;
    };
    !(reason == "CreateContainerConfigError"
        && message.is_some_and(|m| m.contains("failed to sync") && m.contains("cache")))
}

/// Whether `claim` carries the paused mark ([`ANNOTATION_PAUSED`]).
pub fn is_paused(claim: &PersistentVolumeClaim) -> bool {
    claim
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_PAUSED))
        .is_some_and(|v| v == "true")
}

/// The sandbox as its objects show it: `pod` (when there is one) and `claim` (when there is
/// one).
///
/// - a claim marked paused: `Stopped`, whatever the pod (the pause deletes it);
/// - no pod: `Gone` (the pod disappeared);
/// - a pod being deleted: `Exited` with why (an eviction from a lost node, someone's delete);
/// - `Succeeded`/`Failed`/`Unknown` phase: `Exited` with the container's or the pod's reason;
/// - a container waiting for a reason it cannot get past (image pulls refused, bad configuration, a crash loop): `Exited`;
/// - otherwise (`Pending`, `Running`): `Running` (the health probe tells starting from
///   running).
pub fn observed_of(pod: Option<&Pod>, claim: Option<&PersistentVolumeClaim>) -> Observed {
    if claim.is_some_and(is_paused) {
        // The pause's intent, whatever the pod's state says yet (its deletion may not have
        // reached the cache): resume clears the mark once the new pod is made.
        return Observed::Stopped;
    }
    let Some(pod) = pod else {
        return Observed::Gone;
    };
    if pod.metadata.deletion_timestamp.is_some() {
        return Observed::Exited {
            reason: format!("the pod is being deleted{}", pod_reason(pod)),
        };
    }
    let status = pod.status.as_ref();
    if let Some("Succeeded" | "Failed" | "Unknown") = status.and_then(|s| s.phase.as_deref()) {
        return Observed::Exited {
            reason: ended_reason(pod),
        };
    }
    let waiting = status
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|c| c.state.as_ref()?.waiting.as_ref())
        .find(|w| fatal_waiting(w.reason.as_deref(), w.message.as_deref()));
    if let Some(w) = waiting {
        return Observed::Exited {
            reason: format!(
                "{}: {}",
                w.reason.as_deref().unwrap_or_default(),
                w.message.as_deref().unwrap_or("no detail")
            ),
        };
    }
    Observed::Running
}

/// `: <reason> <message>` of the pod's status, or nothing.
fn pod_reason(pod: &Pod) -> String {
    let status = pod.status.as_ref();
    let reason = status.and_then(|s| s.reason.as_deref()).unwrap_or_default();
    let message = status
        .and_then(|s| s.message.as_deref())
        .unwrap_or_default();
    let both = format!("{reason} {message}");
    let both = both.trim();
    if both.is_empty() {
        String::new()
    } else {
        format!(": {both}")
    }
}

/// How an ended pod ended: its container's termination (exit code, reason) or the pod's.
fn ended_reason(pod: &Pod) -> String {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("Unknown");
    let terminated = status
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .find_map(|c| {
            c.state
                .as_ref()
                .and_then(|s| s.terminated.as_ref())
                .or_else(|| c.last_state.as_ref()?.terminated.as_ref())
        });
    match terminated {
        Some(t) => format!(
            "pod {phase}: exit status {}{}",
            t.exit_code,
            t.reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ),
        None => format!("pod {phase}{}", pod_reason(pod)),
    }
}

/// The pod's address, once the node has given it one.
pub fn pod_ip(pod: &Pod) -> Option<String> {
    pod.status
        .as_ref()?
        .pod_ip
        .clone()
        .filter(|ip| !ip.is_empty())
}

/// The node the scheduler put the pod on, once it has.
pub fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.node_name.as_deref()
}

/// Why a pod has no address yet, in the scheduler's or kubelet's words (`0/2 nodes are
/// available: …`), for a start that gave up waiting.
pub fn pending_reason(pod: &Pod) -> String {
    let status = pod.status.as_ref();
    let conditions = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .filter(|c| c.status != "True")
        .filter_map(|c| {
            Some(format!(
                "{} {}: {}",
                c.type_,
                c.reason.as_deref().unwrap_or("False"),
                c.message.as_deref()?
            ))
        });
    let waiting = status
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let w = c.state.as_ref()?.waiting.as_ref()?;
            Some(format!(
                "{}: {}",
                w.reason.as_deref().unwrap_or("waiting"),
                w.message.as_deref().unwrap_or_default()
            ))
        });
    let all: Vec<String> = conditions.chain(waiting).collect();
    if all.is_empty() {
        format!(
            "phase {}",
            status
                .and_then(|s| s.phase.as_deref())
                .unwrap_or("not yet reported")
        )
    } else {
        all.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Pods as a v1.33 API server answers them (recorded shapes, trimmed).
    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "sb-x", "namespace": "ns", "uid": "u1",
                         "labels": {"switchboard.io/sandbox-id": "x"}},
            "spec": {"nodeName": "node-b", "containers": [{"name": "agent-server", "image": "i"}]},
            "status": status,
        }))
        .unwrap()
    }

    fn claim(paused: bool) -> PersistentVolumeClaim {
        let annotations = if paused {
            json!({ANNOTATION_PAUSED: "true"})
        } else {
            json!({})
        };
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "sb-x", "annotations": annotations},
            "spec": {},
        }))
        .unwrap()
    }

    #[test]
    fn running_and_pending_pods_run() {
        let running = pod(json!({
            "phase": "Running", "podIP": "10.88.1.7", "podIPs": [{"ip": "10.88.1.7"}],
            "qosClass": "Burstable", "startTime": "2026-11-29T10:00:00Z",
            "conditions": [{"type": "PodReadyToStartContainers", "status": "True"},
                           {"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "agent-server", "ready": true, "restartCount": 0,
                "image": "i", "imageID": "sha256:1", "started": true,
                "state": {"running": {"startedAt": "2026-11-29T10:00:01Z"}}}],
        }));
        assert_eq!(
            observed_of(Some(&running), Some(&claim(false))),
            Observed::Running
        );
        // Paused: the pod's deletion may not be seen yet.
        assert_eq!(
            observed_of(Some(&running), Some(&claim(true))),
            Observed::Stopped
        );
        assert_eq!(pod_ip(&running).as_deref(), Some("10.88.1.7"));
        assert_eq!(node_of(&running), Some("node-b"));
        let pending = pod(
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled",
            "status": "False", "reason": "Unschedulable",
            "message": "0/2 nodes are available: 2 Insufficient memory."}]}),
        );
        assert_eq!(observed_of(Some(&pending), None), Observed::Running);
        assert_eq!(pod_ip(&pending), None);
        assert_eq!(
            pending_reason(&pending),
            "PodScheduled Unschedulable: 0/2 nodes are available: 2 Insufficient memory."
        );
    }

    #[test]
    fn a_missing_pod_is_gone_unless_paused() {
        assert_eq!(observed_of(None, Some(&claim(false))), Observed::Gone);
        assert_eq!(observed_of(None, None), Observed::Gone);
        assert_eq!(observed_of(None, Some(&claim(true))), Observed::Stopped);
    }

    #[test]
    fn a_deleted_pod_is_stopped_when_paused_else_ended() {
        let mut p = pod(json!({"phase": "Running", "reason": "NodeLost",
            "message": "Node node-b which was running pod sb-x is unresponsive"}));
        p.metadata.deletion_timestamp =
            Some(serde_json::from_value(json!("2026-11-29T10:05:00Z")).unwrap());
        assert_eq!(observed_of(Some(&p), Some(&claim(true))), Observed::Stopped);
        let Observed::Exited { reason } = observed_of(Some(&p), Some(&claim(false))) else {
            panic!("not ended");
        };
        assert!(reason.contains("NodeLost"), "{reason}");
    }

    #[test]
    fn ended_and_stuck_pods_are_exited_with_their_reason() {
        let failed = pod(
            json!({"phase": "Failed", "containerStatuses": [{"name": "agent-server",
            "ready": false, "restartCount": 0, "image": "i", "imageID": "",
            "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}),
        );
        assert_eq!(
            observed_of(Some(&failed), None),
            Observed::Exited {
                reason: "pod Failed: exit status 137 (OOMKilled)".into()
            }
        );
        let evicted = pod(json!({"phase": "Failed", "reason": "Evicted",
            "message": "The node was low on resource: ephemeral-storage."}));
        let Observed::Exited { reason } = observed_of(Some(&evicted), None) else {
            panic!("not ended");
        };
        assert!(reason.contains("Evicted") && reason.contains("ephemeral-storage"));
        let never = pod(
            json!({"phase": "Pending", "containerStatuses": [{"name": "agent-server",
            "ready": false, "restartCount": 0, "image": "i", "imageID": "",
            "state": {"waiting": {"reason": "ErrImageNeverPull",
                "message": "Container image \"i\" is not present with pull policy of Never"}}}]}),
        );
        let Observed::Exited { reason } = observed_of(Some(&never), None) else {
            panic!("not ended");
        };
        assert!(reason.starts_with("ErrImageNeverPull: Container image"));
        let creating = pod(
            json!({"phase": "Pending", "containerStatuses": [{"name": "agent-server",
            "ready": false, "restartCount": 0, "image": "i", "imageID": "",
            "state": {"waiting": {"reason": "ContainerCreating"}}}]}),
        );
        assert_eq!(observed_of(Some(&creating), None), Observed::Running);
        // A Secret the kubelet has not synced yet is retried, not the end of the sandbox; a
        // configuration error that says something else is.
        let config_error = |message: &str| {
            pod(
                json!({"phase": "Pending", "containerStatuses": [{"name": "agent-server",
                "ready": false, "restartCount": 0, "image": "i", "imageID": "",
                "state": {"waiting": {"reason": "CreateContainerConfigError",
                    "message": message}}}]}),
            )
        };
        let unsynced =
            config_error("failed to sync secret cache: timed out waiting for the condition");
        assert_eq!(observed_of(Some(&unsynced), None), Observed::Running);
        let missing = config_error("secret \"s\" not found");
        assert!(matches!(
            observed_of(Some(&missing), None),
            Observed::Exited { .. }
        ));
    }
}
