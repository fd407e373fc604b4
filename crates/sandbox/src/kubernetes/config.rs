//! The Kubernetes runtime's configuration, and the names, labels and annotations it gives
//! what it creates (issue 32; docs/kubernetes.md).

use std::time::Duration;

use crate::kubernetes::error::KubernetesError;

/// The runtime's name in [`RuntimeHandle::runtime`](switchboard_domain::sandboxes::runtime::RuntimeHandle::runtime)
/// and in a spec's `runtime` (`--sandbox-runtime kubernetes`).
pub const RUNTIME_NAME: &str = "kubernetes";

/// Label naming the Switchboard installation that owns a pod, claim or secret; the runtime
/// watches, lists and removes only what carries its own installation's value, so two
/// installations can share a namespace.
pub const LABEL_INSTALLATION: &str = "switchboard.io/installation";
/// Label holding the sandbox's id (the dashed UUID).
pub const LABEL_SANDBOX_ID: &str = "switchboard.io/sandbox-id";
/// Label holding the organization's id, when the sandbox is started for one (a warm-pool pod is
/// started before it has one; the record, not the label, is the source of truth).
pub const LABEL_ORG_ID: &str = "switchboard.io/org-id";
/// Label holding the member's id, when the sandbox is started for one (as [`LABEL_ORG_ID`]).
pub const LABEL_USER_ID: &str = "switchboard.io/user-id";
/// The standard label naming the tool that manages an object: [`MANAGED_BY`].
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// The value of [`LABEL_MANAGED_BY`].
pub const MANAGED_BY: &str = "switchboard";
/// The standard label naming what an object is part of: `sandbox`.
pub const LABEL_COMPONENT: &str = "app.kubernetes.io/component";
/// Annotation holding the sandbox spec's id (an image reference is not a valid label value).
pub const ANNOTATION_SPEC_ID: &str = "switchboard.io/sandbox-spec-id";
/// Annotation on a sandbox's claim while it is paused (its pod removed on purpose): a pod
/// missing from a claim without it disappeared, and its sandbox is `MISSING`.
pub const ANNOTATION_PAUSED: &str = "switchboard.io/paused";

/// Pod, claim and secret names are this prefix + the sandbox id (`sb-<dashed UUID>`, a
/// DNS-1123 label).
pub const NAME_PREFIX: &str = "sb-";
/// The agent server's container in each pod.
pub const CONTAINER_NAME: &str = "agent-server";
/// The workspace volume's name in each pod.
pub const WORKSPACE_VOLUME: &str = "workspace";

/// The agent server's port inside the pod (OpenHands' preset, reference app-server §3.3).
pub const DEFAULT_AGENT_PORT: u16 = 8000;
/// Where the workspace claim is mounted: the agent-server image's `/workspace`.
pub const DEFAULT_WORKSPACE_MOUNT: &str = "/workspace";
/// The workspace claim's size when neither flag nor spec gives one.
pub const DEFAULT_WORKSPACE_SIZE: &str = "5Gi";
/// The uid and gid the agent server runs as (the agent-server image's user, and OpenHands'
/// runtime API's `run_as_user`/`fs_group`).
pub const DEFAULT_RUN_AS: i64 = 10001;
/// How long a pod is given to stop (SIGTERM) before the kubelet kills it (as the Docker
/// runtime's 10 s).
pub const DEFAULT_STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a start or resume waits for the scheduler and the node to give the pod an
/// address.
pub const DEFAULT_ADDRESS_TIMEOUT: Duration = Duration::from_secs(180);
/// How long a pod stays bound to a node that stopped answering (`NoExecute` tolerations of
/// `not-ready` and `unreachable`) before Kubernetes evicts it, making its sandbox `ERROR`
/// (Kubernetes' own default is 300 s).
pub const DEFAULT_NODE_LOSS_TOLERATION: Duration = Duration::from_secs(30);

/// How Switchboard reaches a pod's agent server (`--kube-reach`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reach {
    /// At the pod's IP (`http://<pod IP>:8000`): Switchboard runs in the cluster, or on a host
    /// routed to the pod network.
    #[default]
    PodAddress,
    /// Through the API server (`pods/portforward`), from a loopback listener of Switchboard's
    /// per sandbox: Switchboard runs off the pod network (a laptop, another network).
    PortForward,
}

impl Reach {
    /// The reach of `--kube-reach`'s value: `pod-ip` or `port-forward`; `None` for another.
    pub fn named(name: &str) -> Option<Reach> {
        match name {
            "pod-ip" => Some(Reach::PodAddress),
            "port-forward" => Some(Reach::PortForward),
            _ => None,
        }
    }
}

/// The runtime's configuration (`--kube-*` flags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubernetesConfig {
    /// This installation's id (label [`LABEL_INSTALLATION`]): a label value (at most 63
    /// characters of `[A-Za-z0-9._-]`, alphanumeric at both ends).
    pub installation: String,
    /// The namespace sandboxes run in (must exist).
    pub namespace: String,
    /// The agent server's port inside the pod ([`DEFAULT_AGENT_PORT`]).
    pub agent_port: u16,
    /// Where the workspace claim is mounted ([`DEFAULT_WORKSPACE_MOUNT`]).
    pub workspace_mount: String,
    /// The workspace claim's storage class; `None`: the cluster's default class.
    pub storage_class: Option<String>,
    /// The workspace claim's size, a Kubernetes quantity ([`DEFAULT_WORKSPACE_SIZE`]).
    pub workspace_size: String,
    /// Requests of each pod (what the scheduler reserves): CPU (a quantity, e.g. `250m`) and
    /// memory (e.g. `512Mi`); `None`: no request.
    pub cpu_request: Option<String>,
    /// See [`KubernetesConfig::cpu_request`].
    pub memory_request: Option<String>,
    /// Limits of each pod when its spec gives none (`memory_mb`, `cpus` win): CPU and
    /// memory quantities; `None`: no limit.
    pub cpu_limit: Option<String>,
    /// See [`KubernetesConfig::cpu_limit`].
    pub memory_limit: Option<String>,
    /// The pod's limit on its writable layer and logs (`ephemeral-storage`); `None`: none.
    pub ephemeral_storage_limit: Option<String>,
    /// The RuntimeClass pods run under (gVisor, Kata); `None`: the cluster's default.
    pub runtime_class: Option<String>,
    /// The uid and gid the agent server runs as ([`DEFAULT_RUN_AS`]; never 0).
    pub run_as: i64,
    /// Whether the container's root filesystem is read-only (default false: the image's
    /// agent server writes under its home directory).
    pub read_only_root: bool,
    /// The image pull policy (`IfNotPresent`, `Always`, `Never`).
    pub image_pull_policy: String,
    /// How long a pod gets to stop ([`DEFAULT_STOP_TIMEOUT`]).
    pub stop_timeout: Duration,
    /// How long a start or resume waits for the pod's address ([`DEFAULT_ADDRESS_TIMEOUT`]).
    pub address_timeout: Duration,
    /// How long a pod stays on a node that stopped answering ([`DEFAULT_NODE_LOSS_TOLERATION`]).
    pub node_loss_toleration: Duration,
    /// The webhook base URL pods are given (`OH_WEBHOOKS_0_BASE_URL`) in place of the
    /// launch's: Switchboard's URL as pods reach it. `None`: the launch's.
    pub webhook_base_url: Option<String>,
    /// How pods are reached ([`Reach::PodAddress`]).
    pub reach: Reach,
}

impl KubernetesConfig {
    /// The defaults for `installation` in `namespace`.
    pub fn new(installation: impl Into<String>, namespace: impl Into<String>) -> Self {
        KubernetesConfig {
            installation: installation.into(),
            namespace: namespace.into(),
            agent_port: DEFAULT_AGENT_PORT,
            workspace_mount: DEFAULT_WORKSPACE_MOUNT.to_owned(),
            storage_class: None,
            workspace_size: DEFAULT_WORKSPACE_SIZE.to_owned(),
            cpu_request: None,
            memory_request: None,
            cpu_limit: None,
            memory_limit: None,
            ephemeral_storage_limit: None,
            runtime_class: None,
            run_as: DEFAULT_RUN_AS,
            read_only_root: false,
            image_pull_policy: "IfNotPresent".to_owned(),
            stop_timeout: DEFAULT_STOP_TIMEOUT,
            address_timeout: DEFAULT_ADDRESS_TIMEOUT,
            node_loss_toleration: DEFAULT_NODE_LOSS_TOLERATION,
            webhook_base_url: None,
            reach: Reach::PodAddress,
        }
    }

    /// Checks what the API server would refuse only at the first start.
    ///
    /// # Errors
    /// [`KubernetesError::Config`] naming the field: an installation that is not a label
    /// value, a namespace that is not a DNS-1123 label, uid 0, an unknown pull policy, a
    /// quantity that is not one.
    pub fn validate(&self) -> Result<(), KubernetesError> {
        let bad = |what: &str, why: String| Err(KubernetesError::Config(format!("{what}: {why}")));
        if !is_label_value(&self.installation) || self.installation.is_empty() {
            return bad(
                "installation",
                format!(
                    "{:?} is not a Kubernetes label value (1 to 63 of A-Z a-z 0-9 . _ -, \
                     alphanumeric at both ends)",
                    self.installation
                ),
            );
        }
        if !is_dns_label(&self.namespace) {
            return bad(
                "namespace",
                format!("{:?} is not a DNS-1123 label", self.namespace),
            );
        }
        if self.run_as <= 0 {
            return bad("run_as", "sandboxes never run as root (uid 0)".into());
        }
        if !["IfNotPresent", "Always", "Never"].contains(&self.image_pull_policy.as_str()) {
            return bad(
                "image_pull_policy",
                format!(
                    "{:?}: one of IfNotPresent, Always, Never",
                    self.image_pull_policy
                ),
            );
        }
        if !self.workspace_mount.starts_with('/') {
            return bad("workspace_mount", "must be an absolute path".into());
        }
        let quantities = [
            ("workspace_size", Some(&self.workspace_size)),
            ("cpu_request", self.cpu_request.as_ref()),
            ("memory_request", self.memory_request.as_ref()),
            ("cpu_limit", self.cpu_limit.as_ref()),
            ("memory_limit", self.memory_limit.as_ref()),
            (
                "ephemeral_storage_limit",
                self.ephemeral_storage_limit.as_ref(),
            ),
        ];
        for (what, value) in quantities {
            if let Some(v) = value
                && !is_quantity(v)
            {
                return bad(
                    what,
                    format!("{v:?} is not a Kubernetes quantity (e.g. 500m, 2, 512Mi, 5Gi)"),
                );
            }
        }
        Ok(())
    }
}

/// Whether `s` is a Kubernetes label value: empty, or at most 63 of `[A-Za-z0-9._-]`
/// beginning and ending alphanumeric.
pub fn is_label_value(s: &str) -> bool {
    if s.is_empty() {
        return true;
    }
    s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && s.as_bytes()[0].is_ascii_alphanumeric()
        && s.as_bytes()[s.len() - 1].is_ascii_alphanumeric()
}

/// Whether `s` is a DNS-1123 label (namespaces, names): 1 to 63 of `[a-z0-9-]`, alphanumeric
/// at both ends.
pub fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Whether `s` is a Kubernetes quantity as written by people: a decimal number with an
/// optional binary (`Ki` … `Ei`), decimal (`m`, `k`, `M` … `E`) or exponent suffix.
pub fn is_quantity(s: &str) -> bool {
    let number_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(number_end);
    let number_ok = !number.is_empty()
        && number.matches('.').count() <= 1
        && number.bytes().any(|b| b.is_ascii_digit());
    let suffix_ok = matches!(
        suffix,
        "" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" | "m" | "k" | "M" | "G" | "T" | "P" | "E"
    ) || (suffix.len() > 1
        && matches!(suffix.as_bytes()[0], b'e' | b'E')
        && suffix[1..]
            .trim_start_matches(['+', '-'])
            .parse::<u32>()
            .is_ok());
    number_ok && suffix_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_validate_and_bad_fields_are_named() {
        let ok = KubernetesConfig::new("sb-abc123", "switchboard-sandboxes");
        assert_eq!(ok.validate(), Ok(()));
        type Change = fn(&mut KubernetesConfig);
        let cases: [(&str, Change); 6] = [
            ("installation", |c| c.installation = "-bad".into()),
            ("namespace", |c| c.namespace = "Sandboxes".into()),
            ("run_as", |c| c.run_as = 0),
            ("image_pull_policy", |c| {
                c.image_pull_policy = "Sometimes".into()
            }),
            ("workspace_size", |c| c.workspace_size = "5 GB".into()),
            ("memory_limit", |c| c.memory_limit = Some("lots".into())),
        ];
        for (field, change) in cases {
            let mut c = ok.clone();
            change(&mut c);
            let err = c.validate().unwrap_err().to_string();
            assert!(err.contains(field), "{field}: {err}");
        }
    }

    #[test]
    fn quantities_are_told_apart() {
        for q in ["1", "0.5", "250m", "512Mi", "5Gi", "1e3", "2E+2", "10G"] {
            assert!(is_quantity(q), "{q}");
        }
        for q in ["", "m", "5 Gi", "5gb", "1..2", "-1", "Mi5", "1e"] {
            assert!(!is_quantity(q), "{q}");
        }
    }

    #[test]
    fn names_and_label_values() {
        assert!(is_dns_label("switchboard-sandboxes"));
        assert!(!is_dns_label("a_b"));
        assert!(!is_dns_label(&"a".repeat(64)));
        assert!(is_label_value("sb-0f3A.x_y"));
        assert!(!is_label_value("img/a:1"));
        assert!(!is_label_value("x-"));
    }
}
