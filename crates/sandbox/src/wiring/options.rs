//! What the operator chose for the sandboxes, as plain values: `serve`'s sandbox flags, which
//! the binary fills from its command line and [`super::configure()`] wires the runtimes from.
//! Each field names its flag.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use switchboard_domain::sandboxes::limits::ResourceLimits;

use crate::confinement::Confinement;
use crate::docker::DockerNetwork;
use crate::kubernetes::Reach;

/// Which sandbox specs there are (`serve` and `specs pull`).
#[derive(Debug, Clone, Default)]
pub struct SpecOptions {
    /// `--sandbox-specs`: a JSON file of specs; `None`: the built-in preset.
    pub sandbox_specs: Option<PathBuf>,
    /// `--agent-server-command`: the built-in process spec's command, split as a shell would
    /// (`None`: `agent-server` on `PATH`, else `python3 -m openhands.agent_server`).
    pub agent_server_command: Option<String>,
    /// `--sandbox-runtime`: the runtime of specs that name none (`process`, `docker` or
    /// `kubernetes`).
    pub sandbox_runtime: String,
    /// `--agent-server-image`: the image of the built-in container spec.
    pub agent_server_image: String,
}

/// How Switchboard runs sandboxes (`serve`'s sandbox flags).
#[derive(Debug, Clone)]
pub struct SandboxOptions {
    /// The specs.
    pub specs: SpecOptions,
    /// `--public-url`: Switchboard's URL as clients and sandboxes reach it (`None`: the bound
    /// address).
    pub public_url: Option<String>,
    /// `--webhook-url`: Switchboard's URL as sandboxes reach it (`None`: the public URL).
    pub webhook_url: Option<String>,
    /// `--llm-proxy-url`: Switchboard's URL as process sandboxes reach its LLM pass-through.
    pub llm_proxy_url: Option<String>,
    /// `--sandbox-env`: names of Switchboard's environment variables every sandbox gets.
    pub sandbox_env: Vec<String>,
    /// Whether events are streamed from the agent servers' own sockets (`false` with
    /// `--no-event-streams`).
    pub event_streams: bool,
    /// `--sandbox-start-timeout`: how long a sandbox may take to answer `/alive`.
    pub start_timeout: Duration,
    /// `--max-running-sandboxes`: running sandboxes per user.
    pub max_running_sandboxes: u32,
    /// `--max-sandboxes-per-user`: sandboxes holding resources per user.
    pub max_sandboxes_per_user: u32,
    /// `--max-sandboxes-per-org`: sandboxes holding resources per organization (`None`:
    /// unbounded).
    pub max_sandboxes_per_org: Option<u32>,
    /// `--sandbox-max-conversations`: conversations one grouped sandbox holds.
    pub max_conversations_per_sandbox: u32,
    /// `--warm-sandboxes`: started, unowned sandboxes of the default spec kept ready.
    pub warm_sandboxes: u32,
    /// `--sandbox-log-max-mib`: the cap on each sandbox's log, in MiB (0: unbounded).
    pub log_max_mib: u64,
    /// The process sandboxes' confinement (`--process-isolation`, `--sandbox-network`, ...).
    pub confinement: Confinement,
    /// `--sandbox-memory-mb` and `--sandbox-cpus`: the limits of specs that give none.
    pub default_limits: ResourceLimits,
    /// `--allow-local-repositories`: directories a start may clone from, seen read-only by
    /// every sandbox.
    pub allow_local_repositories: Vec<PathBuf>,
    /// `--git-provider-url`: the base URL of each git provider, `(key, url)`.
    pub git_provider_urls: Vec<(String, String)>,
    /// The Docker runtime's options.
    pub docker: DockerOptions,
    /// The Kubernetes runtime's options.
    pub kube: KubeOptions,
}

impl SandboxOptions {
    /// Switchboard's URL as clients and sandboxes reach it: `--public-url` without a final
    /// `/`, else the bound address (loopback for an unspecified one) as `http://host:port`.
    pub fn public_url(&self, bound: SocketAddr) -> String {
        match &self.public_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => {
                let mut addr = bound;
                if addr.ip().is_unspecified() {
                    addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
                }
                format!("http://{addr}")
            }
        }
    }

    /// Where sandboxes post their webhooks, without `/api/v1/webhooks`: `--webhook-url`, else
    /// [`SandboxOptions::public_url`].
    pub fn webhook_root(&self, bound: SocketAddr) -> String {
        match &self.webhook_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => self.public_url(bound),
        }
    }
}

/// The Docker runtime's options (`--docker-*`; the daemon is `DOCKER_HOST`).
#[derive(Debug, Clone)]
pub struct DockerOptions {
    /// `--docker-network`: bridge or host.
    pub network: DockerNetwork,
    /// `--docker-publish-ports`: publish each agent server's port on 127.0.0.1.
    pub publish_ports: bool,
    /// `--docker-public-url`: Switchboard's URL as containers reach it.
    pub public_url: Option<String>,
    /// `--docker-installation`: this installation's id on the daemon (`None`: the
    /// installation record's).
    pub installation: Option<String>,
    /// `--docker-orphan-grace`: how long a container no record names is left alone.
    pub orphan_grace: Duration,
    /// `--docker-bridge-network`: the bridge network containers join.
    pub bridge_network: String,
    /// `--docker-oci-runtime`: the OCI runtime containers run under (`None` or empty: the
    /// daemon's default).
    pub oci_runtime: Option<String>,
    /// `--docker-pids-limit`: processes and threads per container (0: none).
    pub pids_limit: i64,
    /// `--docker-writable-root`: keep containers' root file system writable.
    pub writable_root: bool,
}

/// The Kubernetes runtime's options (`--kube*`).
#[derive(Debug, Clone)]
pub struct KubeOptions {
    /// `--kubeconfig` (`None`: `KUBECONFIG`, `~/.kube/config` or the pod's service account).
    pub kubeconfig: Option<PathBuf>,
    /// `--kube-namespace`.
    pub namespace: String,
    /// `--kube-public-url`: Switchboard's URL as pods reach it.
    pub public_url: Option<String>,
    /// `--kube-installation` (`None`: the installation record's id).
    pub installation: Option<String>,
    /// `--kube-storage-class` (`None` or empty: the cluster's default).
    pub storage_class: Option<String>,
    /// `--kube-workspace-size`: a Kubernetes quantity.
    pub workspace_size: String,
    /// `--kube-cpu-request`.
    pub cpu_request: Option<String>,
    /// `--kube-memory-request`.
    pub memory_request: Option<String>,
    /// `--kube-cpu-limit`.
    pub cpu_limit: Option<String>,
    /// `--kube-memory-limit`.
    pub memory_limit: Option<String>,
    /// `--kube-ephemeral-storage-limit`.
    pub ephemeral_storage_limit: Option<String>,
    /// `--kube-runtime-class` (`None` or empty: the cluster's).
    pub runtime_class: Option<String>,
    /// `--kube-image-pull-policy`.
    pub image_pull_policy: String,
    /// `--kube-address-timeout` (at least a second is used).
    pub address_timeout: Duration,
    /// `--kube-node-loss-toleration`.
    pub node_loss_toleration: Duration,
    /// `--kube-orphan-grace`: how long an object no record names is left alone.
    pub orphan_grace: Duration,
    /// `--kube-reach`: how Switchboard reaches pods.
    pub reach: Reach,
}
