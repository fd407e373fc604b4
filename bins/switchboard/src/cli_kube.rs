//! The flags of the Kubernetes runtime (issue 32; docs/kubernetes.md), part of `serve`'s
//! sandbox flags, made into the sandbox crate's options.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use switchboard_sandbox::kubernetes::Reach;
use switchboard_sandbox::wiring::KubeOptions;

use crate::cli_help::heading;

#[derive(Args, Clone)]
#[command(next_help_heading = heading::KUBERNETES)]
pub struct KubeArgs {
    /// The kubeconfig naming the cluster (its current context) [default: KUBECONFIG, ~/.kube/config, or the pod's service account when Switchboard runs in the cluster].
    #[arg(long, env = "SWITCHBOARD_KUBECONFIG", value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The namespace sandboxes' pods, claims and secrets are made in (it must exist).
    #[arg(
        long,
        env = "SWITCHBOARD_KUBE_NAMESPACE",
        default_value = "switchboard-sandboxes"
    )]
    pub kube_namespace: String,
    /// Switchboard's URL as pods reach it; they post webhooks to it + /api/v1/webhooks [default: --webhook-url, else --public-url].
    #[arg(long, env = "SWITCHBOARD_KUBE_PUBLIC_URL")]
    pub kube_public_url: Option<String>,
    /// This installation's id, labelled on its pods, claims and secrets, so installations sharing a namespace never touch each other's [default: `sb-` and the id of the secret key, the same for replicas sharing the key].
    #[arg(long, env = "SWITCHBOARD_KUBE_INSTALLATION")]
    pub kube_installation: Option<String>,
    /// The storage class of each sandbox's workspace claim [default: the cluster's default class].
    #[arg(long, env = "SWITCHBOARD_KUBE_STORAGE_CLASS")]
    pub kube_storage_class: Option<String>,
    /// The size of each sandbox's workspace claim, a Kubernetes quantity.
    #[arg(long, env = "SWITCHBOARD_KUBE_WORKSPACE_SIZE", default_value = switchboard_sandbox::kubernetes::config::DEFAULT_WORKSPACE_SIZE)]
    pub kube_workspace_size: String,
    /// CPU each pod requests (what the scheduler reserves), e.g. 250m [default: none].
    #[arg(long, env = "SWITCHBOARD_KUBE_CPU_REQUEST")]
    pub kube_cpu_request: Option<String>,
    /// Memory each pod requests, e.g. 512Mi [default: none].
    #[arg(long, env = "SWITCHBOARD_KUBE_MEMORY_REQUEST")]
    pub kube_memory_request: Option<String>,
    /// CPU limit of a pod whose spec sets no `cpus`, e.g. 2 [default: none].
    #[arg(long, env = "SWITCHBOARD_KUBE_CPU_LIMIT")]
    pub kube_cpu_limit: Option<String>,
    /// Memory limit of a pod whose spec sets no `memory_mb`, e.g. 4Gi [default: none].
    #[arg(long, env = "SWITCHBOARD_KUBE_MEMORY_LIMIT")]
    pub kube_memory_limit: Option<String>,
    /// Limit on each pod's writable layer and logs (ephemeral-storage), e.g. 10Gi [default: none].
    #[arg(long, env = "SWITCHBOARD_KUBE_EPHEMERAL_STORAGE_LIMIT")]
    pub kube_ephemeral_storage_limit: Option<String>,
    /// The RuntimeClass pods run under (e.g. gvisor, kata) [default: the cluster's].
    #[arg(long, env = "SWITCHBOARD_KUBE_RUNTIME_CLASS")]
    pub kube_runtime_class: Option<String>,
    /// The image pull policy of sandbox pods: IfNotPresent, Always or Never.
    #[arg(
        long,
        env = "SWITCHBOARD_KUBE_IMAGE_PULL_POLICY",
        default_value = "IfNotPresent"
    )]
    pub kube_image_pull_policy: String,
    /// Seconds a pod may wait for the scheduler and its node to give it an address before its start fails.
    #[arg(long, env = "SWITCHBOARD_KUBE_ADDRESS_TIMEOUT", default_value = "180")]
    pub kube_address_timeout: u64,
    /// Seconds a pod stays on a node that stopped answering before Kubernetes evicts it (its sandbox is then ERROR).
    #[arg(
        long,
        env = "SWITCHBOARD_KUBE_NODE_LOSS_TOLERATION",
        default_value = "30"
    )]
    pub kube_node_loss_toleration: u64,
    /// Seconds a pod, claim or secret of this installation that no sandbox record names is left alone (and logged) before it is removed.
    #[arg(long, env = "SWITCHBOARD_KUBE_ORPHAN_GRACE", default_value = "300")]
    pub kube_orphan_grace: u64,
    /// How Switchboard reaches pods: pod-ip (at the pod's address: Switchboard runs in the cluster or on a host routed to the pod network) or port-forward (through the API server, pods/portforward, from a loopback port of Switchboard's per sandbox: Switchboard runs off the pod network).
    #[arg(long, env = "SWITCHBOARD_KUBE_REACH", value_parser = ["pod-ip", "port-forward"], default_value = "pod-ip")]
    pub kube_reach: String,
}

impl KubeArgs {
    /// The sandbox crate's Kubernetes options these flags give.
    pub fn options(&self) -> KubeOptions {
        KubeOptions {
            kubeconfig: self.kubeconfig.clone(),
            namespace: self.kube_namespace.clone(),
            public_url: self.kube_public_url.clone(),
            installation: self.kube_installation.clone(),
            storage_class: self.kube_storage_class.clone(),
            workspace_size: self.kube_workspace_size.clone(),
            cpu_request: self.kube_cpu_request.clone(),
            memory_request: self.kube_memory_request.clone(),
            cpu_limit: self.kube_cpu_limit.clone(),
            memory_limit: self.kube_memory_limit.clone(),
            ephemeral_storage_limit: self.kube_ephemeral_storage_limit.clone(),
            runtime_class: self.kube_runtime_class.clone(),
            image_pull_policy: self.kube_image_pull_policy.clone(),
            address_timeout: Duration::from_secs(self.kube_address_timeout),
            node_loss_toleration: Duration::from_secs(self.kube_node_loss_toleration),
            orphan_grace: Duration::from_secs(self.kube_orphan_grace),
            // The flag takes only the names `Reach::named` knows.
            reach: Reach::named(&self.kube_reach).unwrap_or_default(),
        }
    }
}
