//! The Kubernetes objects of one sandbox, as the runtime creates them: its workspace claim,
//! the secret holding its environment, and its pod (issue 32, "start"). Pure functions of the
//! launch and the configuration, so they are tested without a cluster.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret};
use serde_json::{Value, json};
use switchboard_domain::sandboxes::runtime::{LaunchSpec, RuntimeError};

use crate::kubernetes::config::{
    ANNOTATION_SPEC_ID, CONTAINER_NAME, KubernetesConfig, LABEL_COMPONENT, LABEL_INSTALLATION,
    LABEL_MANAGED_BY, LABEL_ORG_ID, LABEL_SANDBOX_ID, LABEL_USER_ID, MANAGED_BY, NAME_PREFIX,
    WORKSPACE_VOLUME,
};
use crate::launch;

/// The name of a sandbox's pod, claim and secret: [`NAME_PREFIX`] + its id.
pub fn object_name(sandbox_id: &str) -> String {
    format!("{NAME_PREFIX}{sandbox_id}")
}

/// The labels of every object of a sandbox: managed-by, component, installation, sandbox.
pub fn labels(config: &KubernetesConfig, sandbox_id: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_MANAGED_BY.to_owned(), MANAGED_BY.to_owned()),
        (LABEL_COMPONENT.to_owned(), "sandbox".to_owned()),
        (LABEL_INSTALLATION.to_owned(), config.installation.clone()),
        (LABEL_SANDBOX_ID.to_owned(), sandbox_id.to_owned()),
    ])
}

/// The label selector of this installation's objects (`switchboard.io/installation=<id>`).
pub fn installation_selector(config: &KubernetesConfig) -> String {
    format!("{LABEL_INSTALLATION}={}", config.installation)
}

fn metadata(config: &KubernetesConfig, launch: &LaunchSpec) -> Value {
    let id = launch.sandbox_id.to_string();
    let mut labels = labels(config, &id);
    if let Some(org) = &launch.org_id {
        labels.insert(LABEL_ORG_ID.to_owned(), org.to_string());
    }
    if let Some(user) = &launch.owner_id {
        labels.insert(LABEL_USER_ID.to_owned(), user.to_string());
    }
    json!({
        "name": object_name(&id),
        "namespace": config.namespace,
        "labels": labels,
        "annotations": {ANNOTATION_SPEC_ID: launch.spec.id},
    })
}

/// The workspace claim: `ReadWriteOnce`, [`KubernetesConfig::workspace_size`], of
/// [`KubernetesConfig::storage_class`] (none named: the cluster's default class).
pub fn workspace_claim(config: &KubernetesConfig, launch: &LaunchSpec) -> PersistentVolumeClaim {
    let mut spec = json!({
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": config.workspace_size}},
    });
    if let Some(class) = &config.storage_class {
        spec["storageClassName"] = json!(class);
    }
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata(config, launch),
        "spec": spec,
    }))
    .expect("a claim built from valid parts always parses")
}

/// The secret holding the sandbox's whole environment ([`launch::environment_with`]: the
/// passthrough variables, the spec's `initial_env`, the session key, the webhook URL, the
/// agent server's port), given to the container with `envFrom`, so no value is in the pod's
/// spec. Owned by the claim (`owner`: its name and uid), so Kubernetes deletes it with the
/// claim.
///
/// # Errors
/// [`RuntimeError::InvalidSpec`] for a variable that cannot be used.
pub fn environment_secret(
    config: &KubernetesConfig,
    launch: &LaunchSpec,
    owner: (&str, &str),
) -> Result<Secret, RuntimeError> {
    let ports: Vec<_> = launch
        .spec
        .exposed_services
        .iter()
        .map(|s| (*s, s.container_port()))
        .collect();
    let env = launch::environment_with(launch, config.agent_port, &ports)?;
    let mut metadata = metadata(config, launch);
    metadata["ownerReferences"] = json!([{
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "name": owner.0,
        "uid": owner.1,
    }]);
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": "Opaque",
        "stringData": env,
    }))
    .expect("a secret built from valid parts always parses"))
}

/// The container's working directory: the spec's absolute path, or `None` (the image's own)
/// for `.`.
///
/// # Errors
/// [`RuntimeError::InvalidSpec`] for any other relative path.
pub fn working_dir(spec_working_dir: &str) -> Result<Option<String>, RuntimeError> {
    if spec_working_dir == "." {
        Ok(None)
    } else if spec_working_dir.starts_with('/') {
        Ok(Some(spec_working_dir.to_owned()))
    } else {
        Err(RuntimeError::InvalidSpec(format!(
            "working_dir {spec_working_dir:?}: the Kubernetes runtime needs an absolute path \
             inside the container (or `.` for the image's own)"
        )))
    }
}

/// The container's `workingDir` for the spec's working directory: a directory inside the
/// workspace claim is made by the agent server itself when a conversation starts there, so the
/// container starts in the claim's root (the container runtime would make a missing working
/// directory as root, and the agent server, not root, could not write in it); any other
/// absolute path as it is; `None` for `.`.
///
/// # Errors
/// As [`working_dir`].
fn container_working_dir(
    config: &KubernetesConfig,
    spec_working_dir: &str,
) -> Result<Option<String>, RuntimeError> {
    let mount = config.workspace_mount.trim_end_matches('/');
    Ok(working_dir(spec_working_dir)?.map(|dir| {
        if dir == mount || dir.starts_with(&format!("{mount}/")) {
            mount.to_owned()
        } else {
            dir
        }
    }))
}

/// The requests and limits of the pod: requests from the configuration; limits from the
/// spec (`memory_mb`, `cpus`), else the configuration; the ephemeral-storage limit.
fn resources(config: &KubernetesConfig, launch: &LaunchSpec) -> Value {
    let mut requests = serde_json::Map::new();
    let mut limits = serde_json::Map::new();
    if let Some(cpu) = &config.cpu_request {
        requests.insert("cpu".into(), json!(cpu));
    }
    if let Some(memory) = &config.memory_request {
        requests.insert("memory".into(), json!(memory));
    }
    let spec = &launch.spec.limits;
    let cpu_limit = spec
        .cpus
        .map(|c| format!("{}m", c.nano_cpus().div_ceil(1_000_000)))
        .or_else(|| config.cpu_limit.clone());
    let memory_limit = spec
        .memory_mb
        .map(|mb| format!("{mb}Mi"))
        .or_else(|| config.memory_limit.clone());
    if let Some(cpu) = cpu_limit {
        limits.insert("cpu".into(), json!(cpu));
    }
    if let Some(memory) = memory_limit {
        limits.insert("memory".into(), json!(memory));
    }
    if let Some(storage) = &config.ephemeral_storage_limit {
        limits.insert("ephemeral-storage".into(), json!(storage));
    }
    json!({"requests": requests, "limits": limits})
}

/// The sandbox's pod: one container of the spec's image (`args`: the spec's command +
/// `--host 0.0.0.0 --port <agent port>`), its environment from `secret`, the workspace claim
/// at [`KubernetesConfig::workspace_mount`], a readiness probe on `/alive`, requests and
/// limits, a restricted security context (non-root uid and gid, no privilege escalation,
/// every capability dropped, the runtime's default seccomp profile, optionally a read-only
/// root), no service-account token, no service links, the optional RuntimeClass, and
/// `NoExecute` tolerations of a lost node for [`KubernetesConfig::node_loss_toleration`]
/// (Kubernetes then evicts the pod). The agent server is restarted by the kubelet when it
/// exits (`restartPolicy: Always`).
///
/// # Errors
/// [`RuntimeError::InvalidSpec`] for a relative working directory.
pub fn pod(config: &KubernetesConfig, launch: &LaunchSpec) -> Result<Pod, RuntimeError> {
    let id = launch.sandbox_id.to_string();
    let name = object_name(&id);
    let mut args = launch.spec.command.clone();
    args.extend([
        "--host".to_owned(),
        "0.0.0.0".to_owned(),
        "--port".to_owned(),
        config.agent_port.to_string(),
    ]);
    let mut ports = vec![json!({"name": "agent-server", "containerPort": config.agent_port})];
    for service in &launch.spec.exposed_services {
        ports.push(json!({"containerPort": service.container_port()}));
    }
    let mut container = json!({
        "name": CONTAINER_NAME,
        "image": launch.spec.id,
        "imagePullPolicy": config.image_pull_policy,
        "args": args,
        "envFrom": [{"secretRef": {"name": name}}],
        "ports": ports,
        "readinessProbe": {
            "httpGet": {"path": "/alive", "port": config.agent_port},
            "periodSeconds": 2,
            "timeoutSeconds": 2,
            "failureThreshold": 3,
        },
        "resources": resources(config, launch),
        "securityContext": {
            "runAsNonRoot": true,
            "allowPrivilegeEscalation": false,
            "privileged": false,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": config.read_only_root,
        },
        "volumeMounts": [{"name": WORKSPACE_VOLUME, "mountPath": config.workspace_mount}],
    });
    if let Some(dir) = container_working_dir(config, &launch.spec.working_dir)? {
        container["workingDir"] = json!(dir);
    }
    let toleration = config.node_loss_toleration.as_secs();
    let mut spec = json!({
        "restartPolicy": "Always",
        "automountServiceAccountToken": false,
        "enableServiceLinks": false,
        "terminationGracePeriodSeconds": config.stop_timeout.as_secs(),
        "securityContext": {
            "runAsNonRoot": true,
            "runAsUser": config.run_as,
            "runAsGroup": config.run_as,
            "fsGroup": config.run_as,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
        "volumes": [{
            "name": WORKSPACE_VOLUME,
            "persistentVolumeClaim": {"claimName": name},
        }],
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
             "effect": "NoExecute", "tolerationSeconds": toleration},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
             "effect": "NoExecute", "tolerationSeconds": toleration},
        ],
    });
    if let Some(class) = &config.runtime_class {
        spec["runtimeClassName"] = json!(class);
    }
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata(config, launch),
        "spec": spec,
    }))
    .expect("a pod built from valid parts always parses"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap as Map;
    use switchboard_domain::sandboxes::limits::Cpus;
    use switchboard_domain::sandboxes::runtime::SessionKey;
    use switchboard_domain::sandboxes::specs::docker_preset;

    fn launch() -> LaunchSpec {
        let mut spec = docker_preset(
            "switchboard/agent-server:local",
            time::OffsetDateTime::UNIX_EPOCH,
        )
        .unwrap();
        spec.initial_env = Map::from([("FOO".to_owned(), "bar".to_owned())]);
        LaunchSpec {
            sandbox_id: "0b9f3c4e7d2a4c1e9a8b5f6e7d8c9a0b".parse().unwrap(),
            spec,
            session_key: SessionKey::new("session-secret-1"),
            webhook_base_url: "http://10.89.0.1:8080/api/v1/webhooks".into(),
            passthrough_env: vec![("LLM_API_KEY".into(), "sk-x".into())],
            local_repositories: Vec::new(),
            org_id: None,
            owner_id: None,
        }
    }

    fn config() -> KubernetesConfig {
        let mut c = KubernetesConfig::new("sb-test", "switchboard-sandboxes");
        c.cpu_request = Some("250m".into());
        c.memory_request = Some("512Mi".into());
        c.memory_limit = Some("2Gi".into());
        c.ephemeral_storage_limit = Some("4Gi".into());
        c.runtime_class = Some("gvisor".into());
        c.storage_class = Some("local".into());
        c
    }

    #[test]
    fn the_pod_is_confined_labelled_and_holds_no_secret() {
        let pod = serde_json::to_value(pod(&config(), &launch()).unwrap()).unwrap();
        let name = "sb-0b9f3c4e-7d2a-4c1e-9a8b-5f6e7d8c9a0b";
        assert_eq!(pod["metadata"]["name"], name);
        assert_eq!(pod["metadata"]["labels"][LABEL_INSTALLATION], "sb-test");
        assert_eq!(
            pod["metadata"]["labels"][LABEL_SANDBOX_ID],
            "0b9f3c4e-7d2a-4c1e-9a8b-5f6e7d8c9a0b"
        );
        assert_eq!(
            pod["metadata"]["annotations"][ANNOTATION_SPEC_ID],
            "switchboard/agent-server:local"
        );
        let spec = &pod["spec"];
        assert_eq!(spec["automountServiceAccountToken"], false);
        assert_eq!(spec["runtimeClassName"], "gvisor");
        assert_eq!(spec["securityContext"]["runAsUser"], 10001);
        assert_eq!(spec["securityContext"]["runAsNonRoot"], true);
        assert_eq!(spec["tolerations"][1]["tolerationSeconds"], 30);
        let c = &spec["containers"][0];
        assert_eq!(
            c["args"],
            json!(["--port", "8000", "--host", "0.0.0.0", "--port", "8000"])
        );
        assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
        assert_eq!(c["securityContext"]["capabilities"]["drop"], json!(["ALL"]));
        assert_eq!(c["envFrom"][0]["secretRef"]["name"], name);
        assert!(c.get("env").is_none());
        assert_eq!(c["resources"]["requests"]["cpu"], "250m");
        assert_eq!(c["resources"]["limits"]["memory"], "2Gi");
        assert_eq!(c["resources"]["limits"]["ephemeral-storage"], "4Gi");
        assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/alive");
        // The spec's /workspace/project is made by the agent server, not the runtime.
        assert_eq!(c["workingDir"], "/workspace");
        assert_eq!(
            spec["volumes"][0]["persistentVolumeClaim"]["claimName"],
            name
        );
        let text = pod.to_string();
        assert!(!text.contains("session-secret-1") && !text.contains("sk-x"));
        assert!(
            pod["metadata"]["labels"].get(LABEL_ORG_ID).is_none(),
            "no owner yet"
        );
    }

    #[test]
    fn a_sandbox_started_for_a_member_names_them() {
        let mut l = launch();
        l.org_id = Some("6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b".parse().unwrap());
        l.owner_id = Some("0b9f3c4e-7d2a-4c1e-9a8b-5f6e7d8c9a0b".parse().unwrap());
        let claim = serde_json::to_value(workspace_claim(&config(), &l)).unwrap();
        let pod = serde_json::to_value(pod(&config(), &l).unwrap()).unwrap();
        for object in [claim, pod] {
            let labels = &object["metadata"]["labels"];
            assert_eq!(labels[LABEL_ORG_ID], "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b");
            assert_eq!(
                labels[LABEL_USER_ID],
                "0b9f3c4e-7d2a-4c1e-9a8b-5f6e7d8c9a0b"
            );
        }
    }

    #[test]
    fn the_spec_limits_win_over_the_flags() {
        let mut l = launch();
        l.spec.limits.memory_mb = Some(768);
        l.spec.limits.cpus = Some(Cpus::from_cpus(1.5).unwrap());
        let pod = serde_json::to_value(pod(&config(), &l).unwrap()).unwrap();
        let limits = &pod["spec"]["containers"][0]["resources"]["limits"];
        assert_eq!(limits["memory"], "768Mi");
        assert_eq!(limits["cpu"], "1500m");
    }

    #[test]
    fn the_secret_holds_the_environment_and_follows_the_claim() {
        let secret = environment_secret(&config(), &launch(), ("sb-x", "uid-1")).unwrap();
        let s = serde_json::to_value(secret).unwrap();
        assert_eq!(s["stringData"]["OH_SESSION_API_KEYS_0"], "session-secret-1");
        assert_eq!(
            s["stringData"]["OH_WEBHOOKS_0_BASE_URL"],
            "http://10.89.0.1:8080/api/v1/webhooks"
        );
        assert_eq!(s["stringData"]["LLM_API_KEY"], "sk-x");
        assert_eq!(s["stringData"]["FOO"], "bar");
        assert_eq!(s["stringData"]["AGENT_SERVER_PORT"], "8000");
        assert_eq!(s["metadata"]["ownerReferences"][0]["uid"], "uid-1");
    }

    #[test]
    fn the_claim_asks_for_the_class_and_size() {
        let claim = serde_json::to_value(workspace_claim(&config(), &launch())).unwrap();
        assert_eq!(claim["spec"]["storageClassName"], "local");
        assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "5Gi");
        assert_eq!(claim["spec"]["accessModes"], json!(["ReadWriteOnce"]));
        let mut c = config();
        c.storage_class = None;
        let claim = serde_json::to_value(workspace_claim(&c, &launch())).unwrap();
        assert!(claim["spec"].get("storageClassName").is_none());
    }

    #[test]
    fn relative_working_dirs_are_refused() {
        assert_eq!(working_dir(".").unwrap(), None);
        assert_eq!(working_dir("/w").unwrap().as_deref(), Some("/w"));
        assert!(matches!(
            working_dir("w"),
            Err(RuntimeError::InvalidSpec(_))
        ));
    }
}
