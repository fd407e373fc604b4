//! What the runtime makes on the cluster: the pod confined, limited and labelled as
//! configured, its environment only in its secret, its user not root; and a sandbox whose
//! image no node has ends with the kubelet's words and leaves nothing.

use std::time::Duration;

use switchboard_domain::sandboxes::limits::Cpus;
use switchboard_domain::sandboxes::runtime::{Observed, RuntimeError, SandboxRuntime};
use switchboard_sandbox::kubernetes::{LABEL_SANDBOX_ID, PodIdentity};

use crate::common::*;

#[test]
fn the_pod_is_confined_limited_and_labelled_and_its_secret_holds_the_environment() {
    let Some(fx) = Fixture::with(
        "the_pod_is_confined_limited_and_labelled_and_its_secret_holds_the_environment",
        |c| {
            c.cpu_request = Some("100m".into());
            c.memory_request = Some("256Mi".into());
            c.ephemeral_storage_limit = Some("2Gi".into());
        },
    ) else {
        return;
    };
    let mut spec = preset();
    spec.limits.memory_mb = Some(1536);
    spec.limits.cpus = Some(Cpus::from_cpus(1.0).unwrap());
    let launch = launch_spec(spec);
    let handle = fx.runtime.start(&launch).expect("the pod starts");
    let identity = PodIdentity::of(&handle).unwrap();
    let pod = fx.kubectl.get("pod", &identity.name).unwrap();
    assert_eq!(
        pod["metadata"]["labels"][LABEL_SANDBOX_ID],
        launch.sandbox_id.to_string()
    );
    let spec = &pod["spec"];
    assert_eq!(spec["automountServiceAccountToken"], false);
    assert_eq!(spec["securityContext"]["runAsUser"], 10001);
    let c = &spec["containers"][0];
    assert_eq!(c["resources"]["limits"]["memory"], "1536Mi");
    assert_eq!(c["resources"]["limits"]["cpu"], "1");
    assert_eq!(c["resources"]["limits"]["ephemeral-storage"], "2Gi");
    assert_eq!(c["resources"]["requests"]["cpu"], "100m");
    assert_eq!(c["resources"]["requests"]["memory"], "256Mi");
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(c["securityContext"]["capabilities"]["drop"][0], "ALL");
    let text = pod.to_string();
    assert!(
        !text.contains(launch.session_key.expose()),
        "the session key is not in the pod"
    );
    let secret = fx.kubectl.get("secret", &identity.name).unwrap();
    assert_eq!(
        secret["metadata"]["ownerReferences"][0]["kind"],
        "PersistentVolumeClaim"
    );
    fx.wait_alive(&handle);
    // Inside: not root, the environment from the secret, the passthrough variable.
    let inside = fx
        .kubectl
        .run(&[
            "exec",
            &identity.name,
            "--",
            "sh",
            "-c",
            "id -u; echo $SWITCHBOARD_TEST_PASSTHROUGH; echo $AGENT_SERVER_PORT; \
             grep CapEff /proc/self/status",
        ])
        .unwrap();
    let lines: Vec<&str> = inside.lines().collect();
    assert_eq!(lines[0], "10001", "{inside}");
    assert_eq!(lines[1], "passed", "{inside}");
    assert_eq!(lines[2], "8000", "{inside}");
    assert!(
        lines[3].ends_with("0000000000000000"),
        "no capability: {inside}"
    );
    fx.runtime.delete(&handle).unwrap();
}

#[test]
fn an_image_the_nodes_do_not_have_fails_the_start_and_leaves_nothing() {
    let Some(fx) =
        Fixture::new("an_image_the_nodes_do_not_have_fails_the_start_and_leaves_nothing")
    else {
        return;
    };
    let mut spec = preset();
    spec.id = "switchboard/no-such-image:1".into();
    // The pod has its address before the kubelet tries the image: the start fails, or the
    // sandbox ends at once with the kubelet's words (ERROR).
    match fx.runtime.start(&launch_spec(spec)) {
        Err(RuntimeError::Launch(detail)) => {
            assert!(detail.contains("ErrImageNeverPull"), "{detail}");
        }
        Err(e) => panic!("not a launch error: {e:?}"),
        Ok(handle) => {
            let mut seen = Observed::Running;
            assert!(
                wait_until(Duration::from_secs(120), || {
                    seen = fx.runtime.observe(&handle);
                    seen != Observed::Running
                }),
                "the pod of a missing image never ended"
            );
            let Observed::Exited { reason } = seen else {
                panic!("{seen:?}");
            };
            assert!(reason.starts_with("ErrImageNeverPull"), "{reason}");
            fx.runtime.delete(&handle).unwrap();
        }
    }
    assert!(
        wait_until(Duration::from_secs(120), || fx.nothing_left()),
        "nothing is left of a failed start"
    );
}
