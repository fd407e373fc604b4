//! The Docker runtime's configuration, and the names and labels it gives what it creates.

use std::fmt;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use crate::docker::error::DockerError;

/// The runtime's name in [`RuntimeHandle::runtime`](switchboard_domain::sandboxes::runtime::RuntimeHandle::runtime).
pub const RUNTIME_NAME: &str = "docker";

/// Label naming the Switchboard installation that owns a container or volume; a runtime
/// lists, observes and removes only what carries its own installation's value, so two
/// installations can share one Docker daemon.
pub const LABEL_INSTALLATION: &str = "io.switchboard.installation";
/// Label holding the sandbox's id (dashed UUID).
pub const LABEL_SANDBOX_ID: &str = "io.switchboard.sandbox-id";
/// Label holding the sandbox spec's id (for OpenHands' container runtimes, the image).
pub const LABEL_SPEC_ID: &str = "io.switchboard.sandbox-spec-id";
/// Label holding the organization's id, when the sandbox is started for one (a warm-pool
/// sandbox is started before it has an org, and Docker labels cannot change: the sandbox
/// record, not the label, is the source of truth).
pub const LABEL_ORG_ID: &str = "io.switchboard.org-id";

/// Container names are this prefix + the sandbox id (`switchboard-sandbox-<uuid>`).
pub const CONTAINER_PREFIX: &str = "switchboard-sandbox-";
/// Workspace volume names are this prefix + the sandbox id (`switchboard-workspace-<uuid>`).
pub const VOLUME_PREFIX: &str = "switchboard-workspace-";

/// The default cap on a container's log, in MiB (as the process runtime's, 64 MiB).
pub const DEFAULT_LOG_MAX_MIB: u64 = 64;

/// The agent server's port inside a bridged container (OpenHands' Docker preset, reference
/// app-server §3.3: container port 8000 is `AGENT_SERVER`).
pub const DEFAULT_CONTAINER_PORT: u16 = 8000;
/// Where the workspace volume is mounted: the agent-server image's `/workspace` (project,
/// conversations, bash events; `docs/docker.md`).
pub const DEFAULT_WORKSPACE_MOUNT: &str = "/workspace";
/// How long delete lets a container stop (SIGTERM) before the engine kills it (reference
/// app-server §3.3: `stop(timeout=10)`).
pub const DEFAULT_STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// The default cap on a container's processes and threads (`docker run --pids-limit`; issue
/// 18): an idle agent server is 3 tasks under runc and about 80 under gVisor (its own
/// threads; docs/benchmarks.md), a conversation running a build adds a few hundred; a fork
/// bomb stops here.
pub const DEFAULT_PIDS_LIMIT: i64 = 1024;
/// The extra host entry every container gets, so `http://host.docker.internal:<port>` reaches
/// the Docker host from inside (reference app-server §2.5, §3.3).
pub const HOST_GATEWAY_ENTRY: &str = "host.docker.internal:host-gateway";

/// How a container is networked (`--docker-network`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum DockerNetwork {
    /// Docker's default bridge: the agent server listens on `0.0.0.0:<container port>` inside
    /// and that port is published on the host's loopback only, on a free port. Webhooks reach
    /// Switchboard through `host.docker.internal` (the bridge gateway, `172.17.0.1` by
    /// default), so Switchboard must also listen there.
    #[default]
    Bridge,
    /// The host's network namespace: the agent server listens on `127.0.0.1:<free port>` of
    /// the host itself, nothing is published, and webhooks go to Switchboard's loopback
    /// address. Needs the daemon on Switchboard's own machine.
    Host,
}

impl DockerNetwork {
    /// The flag's value: `bridge` or `host`.
    pub fn as_str(self) -> &'static str {
        match self {
            DockerNetwork::Bridge => "bridge",
            DockerNetwork::Host => "host",
        }
    }
}

impl fmt::Display for DockerNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DockerNetwork {
    type Err = String;

    /// `bridge` or `host`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "bridge" => Ok(DockerNetwork::Bridge),
            "host" => Ok(DockerNetwork::Host),
            other => Err(format!(
                "{other:?} is not a Docker network mode (expected bridge or host)"
            )),
        }
    }
}

/// What a [`DockerRuntime`](crate::docker::DockerRuntime) needs beyond the daemon's address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerConfig {
    /// This installation's id, the value of [`LABEL_INSTALLATION`]: 1 to 64 characters of
    /// `A-Z a-z 0-9 _ . -`, starting with a letter or digit. It must stay the same across
    /// restarts, or the runtime no longer recognizes its containers.
    pub installation: String,
    /// Bridge (default) or host networking.
    pub network: DockerNetwork,
    /// The bridge network containers join when [`DockerConfig::network`] is a bridge:
    /// [`SANDBOX_NETWORK`](crate::docker::SANDBOX_NETWORK) by default (created when missing,
    /// with inter-container traffic off: issue 18), `bridge` for Docker's default one, or any
    /// existing network's name.
    pub bridge_network: String,
    /// The agent server's port inside a bridged container ([`DEFAULT_CONTAINER_PORT`]).
    pub container_port: u16,
    /// Whether a bridged container's agent server port is published on
    /// [`DockerConfig::publish_address`] (default true). `false`: nothing is published and
    /// Switchboard reaches the agent server at the container's own address on
    /// [`DockerConfig::bridge_network`] (`http://<container IP>:<container port>`), so only a
    /// process that reaches that network (Switchboard on the Docker host, or in a container
    /// of the host's network) can talk to it: the sandbox proxy is then the only way in
    /// (issue 22). Ignored with host networking, which publishes nothing.
    pub publish_ports: bool,
    /// The Docker host's address that published ports are bound to, and that Switchboard
    /// uses to reach them: `127.0.0.1` (never all interfaces: the session key is all that
    /// stands between an agent server and whoever reaches it).
    pub publish_address: Ipv4Addr,
    /// Where the workspace volume is mounted in the container ([`DEFAULT_WORKSPACE_MOUNT`]).
    pub workspace_mount: String,
    /// How long delete lets a container stop before it is killed ([`DEFAULT_STOP_TIMEOUT`]).
    pub stop_timeout: Duration,
    /// The webhook base URL given to containers (`OH_WEBHOOKS_0_BASE_URL`) in place of the
    /// launch's, which is Switchboard's URL as the host reaches it: a bridged container
    /// reaches the host through `host.docker.internal` (the bridge gateway), not through the
    /// host's loopback. `None`: the launch's URL (host networking).
    pub webhook_base_url: Option<String>,
    /// Cap on a container's log in MiB ([`DEFAULT_LOG_MAX_MIB`]): the container logs with
    /// Docker's `json-file` driver, `max-size` this, `max-file` 2 (so at most twice this on
    /// disk). 0: the daemon's default driver and options, unbounded by Switchboard.
    pub log_max_mib: u64,
    /// Cap on the processes and threads of a container ([`DEFAULT_PIDS_LIMIT`]); 0: none.
    pub pids_limit: i64,
    /// The OCI runtime the daemon runs containers with (`docker run --runtime`, e.g.
    /// `runsc` for gVisor); `None`: the daemon's default (`runc`). Connecting fails when the
    /// daemon has no runtime of this name.
    pub oci_runtime: Option<String>,
    /// Run containers with a read-only root filesystem when their image declares what it
    /// writes ([`LABEL_TMPFS`](crate::docker::LABEL_TMPFS)); default true.
    pub read_only_root: bool,
    /// Host directories bound read-only at the same path in every container (the
    /// operator's `--allow-local-repositories`, issue 18 "Repository sources"): absolute
    /// paths.
    pub read_only_binds: Vec<PathBuf>,
    /// The egress rules loaded on the Docker host for the bridge before each container
    /// starts (issue 33; [`DockerEgress`](crate::docker::DockerEgress)); `None` (the default,
    /// and always with host networking): containers reach whatever the host's network does.
    pub egress: Option<crate::docker::DockerEgress>,
}

impl DockerConfig {
    /// The defaults (bridge, port 8000 inside, published on `127.0.0.1`, workspace at
    /// `/workspace`, 10 s to stop) for `installation`.
    pub fn new(installation: impl Into<String>) -> Self {
        DockerConfig {
            installation: installation.into(),
            network: DockerNetwork::Bridge,
            bridge_network: crate::docker::SANDBOX_NETWORK.to_owned(),
            container_port: DEFAULT_CONTAINER_PORT,
            publish_ports: true,
            publish_address: Ipv4Addr::LOCALHOST,
            workspace_mount: DEFAULT_WORKSPACE_MOUNT.to_owned(),
            stop_timeout: DEFAULT_STOP_TIMEOUT,
            webhook_base_url: None,
            log_max_mib: DEFAULT_LOG_MAX_MIB,
            pids_limit: DEFAULT_PIDS_LIMIT,
            oci_runtime: None,
            read_only_root: true,
            read_only_binds: Vec::new(),
            egress: None,
        }
    }

    /// Sets the egress rules of bridged containers (see [`DockerConfig::egress`]).
    #[must_use]
    pub fn with_egress(mut self, egress: Option<crate::docker::DockerEgress>) -> Self {
        self.egress = egress;
        self
    }

    /// Sets the bridge network containers join (see [`DockerConfig::bridge_network`]).
    #[must_use]
    pub fn with_bridge_network(mut self, name: impl Into<String>) -> Self {
        self.bridge_network = name.into();
        self
    }

    /// Sets whether bridged containers publish their agent server's port (see
    /// [`DockerConfig::publish_ports`]).
    #[must_use]
    pub fn with_publish_ports(mut self, publish: bool) -> Self {
        self.publish_ports = publish;
        self
    }

    /// Sets the cap on a container's processes (see [`DockerConfig::pids_limit`]).
    #[must_use]
    pub fn with_pids_limit(mut self, limit: i64) -> Self {
        self.pids_limit = limit;
        self
    }

    /// Sets the OCI runtime (see [`DockerConfig::oci_runtime`]).
    #[must_use]
    pub fn with_oci_runtime(mut self, runtime: Option<String>) -> Self {
        self.oci_runtime = runtime;
        self
    }

    /// Sets whether containers get a read-only root (see [`DockerConfig::read_only_root`]).
    #[must_use]
    pub fn with_read_only_root(mut self, read_only: bool) -> Self {
        self.read_only_root = read_only;
        self
    }

    /// Sets the host directories bound read-only at the same path in every container, e.g.
    /// the operator's allowed local repository directories (see
    /// [`DockerConfig::read_only_binds`]).
    #[must_use]
    pub fn with_read_only_binds(mut self, dirs: Vec<PathBuf>) -> Self {
        self.read_only_binds = dirs;
        self
    }

    /// Sets the cap on a container's log (see [`DockerConfig::log_max_mib`]).
    #[must_use]
    pub fn with_log_max_mib(mut self, mib: u64) -> Self {
        self.log_max_mib = mib;
        self
    }

    /// Sets the webhook base URL containers are given (see [`DockerConfig::webhook_base_url`]).
    #[must_use]
    pub fn with_webhook_base_url(mut self, url: Option<String>) -> Self {
        self.webhook_base_url = url;
        self
    }

    /// Sets the network mode.
    #[must_use]
    pub fn with_network(mut self, network: DockerNetwork) -> Self {
        self.network = network;
        self
    }

    /// Sets how long delete lets a container stop before it is killed.
    #[must_use]
    pub fn with_stop_timeout(mut self, stop_timeout: Duration) -> Self {
        self.stop_timeout = stop_timeout;
        self
    }

    /// Whether containers get a published port on the host: bridge networking with
    /// [`DockerConfig::publish_ports`].
    pub fn publishes(&self) -> bool {
        self.network == DockerNetwork::Bridge && self.publish_ports
    }

    /// Checks the configuration.
    ///
    /// # Errors
    /// [`DockerError::Config`] naming the field: an installation id that is not one, port 0,
    /// a publish address that is not a loopback address, a workspace mount that is not an
    /// absolute path, a negative pids limit, an OCI runtime name that is not one, a
    /// read-only bind that is not an absolute path or that covers the workspace mount.
    pub fn validate(&self) -> Result<(), DockerError> {
        let id = &self.installation;
        let valid_id = (1..=64).contains(&id.len())
            && id.starts_with(|c: char| c.is_ascii_alphanumeric())
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !valid_id {
            return Err(DockerError::Config(format!(
                "installation id {id:?}: expected 1 to 64 characters of A-Z a-z 0-9 _ . -, \
                 starting with a letter or digit"
            )));
        }
        if self.container_port == 0 {
            return Err(DockerError::Config("container port 0".into()));
        }
        if !self.publish_address.is_loopback() {
            return Err(DockerError::Config(format!(
                "publish address {}: agent servers are published on a loopback address only",
                self.publish_address
            )));
        }
        if let Some(url) = &self.webhook_base_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(DockerError::Config(format!(
                "webhook base URL {url:?}: expected an http:// or https:// URL"
            )));
        }
        if !self.workspace_mount.starts_with('/') || self.workspace_mount.contains('\0') {
            return Err(DockerError::Config(format!(
                "workspace mount {:?}: expected an absolute path",
                self.workspace_mount
            )));
        }
        if self.pids_limit < 0 {
            return Err(DockerError::Config(format!(
                "pids limit {}: expected 0 (none) or more",
                self.pids_limit
            )));
        }
        let is_name = |name: &str| {
            !name.is_empty()
                && name.starts_with(|c: char| c.is_ascii_alphanumeric())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        };
        if let Some(name) = &self.oci_runtime
            && !is_name(name)
        {
            return Err(DockerError::Config(format!(
                "OCI runtime {name:?}: expected a runtime name such as runsc"
            )));
        }
        if !is_name(&self.bridge_network) {
            return Err(DockerError::Config(format!(
                "bridge network {:?}: expected a network name",
                self.bridge_network
            )));
        }
        for dir in &self.read_only_binds {
            let text = dir.to_string_lossy();
            if !dir.is_absolute() || text.contains('\0') {
                return Err(DockerError::Config(format!(
                    "read-only bind {text:?}: expected an absolute path"
                )));
            }
            if std::path::Path::new(&self.workspace_mount).starts_with(dir)
                || dir.starts_with(&self.workspace_mount)
            {
                return Err(DockerError::Config(format!(
                    "read-only bind {text:?}: it overlaps the workspace mount {}",
                    self.workspace_mount
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_modes_parse_and_print() {
        assert_eq!("bridge".parse(), Ok(DockerNetwork::Bridge));
        assert_eq!("host".parse(), Ok(DockerNetwork::Host));
        assert_eq!(DockerNetwork::default(), DockerNetwork::Bridge);
        assert_eq!(DockerNetwork::Host.to_string(), "host");
        assert_eq!(
            "none".parse::<DockerNetwork>(),
            Err("\"none\" is not a Docker network mode (expected bridge or host)".into())
        );
    }

    #[test]
    fn configs_are_checked() {
        assert_eq!(DockerConfig::new("prod-1.eu_west").validate(), Ok(()));
        for bad in ["", "-x", "a b", "a/b", &"x".repeat(65)] {
            let e = DockerConfig::new(bad).validate().unwrap_err();
            assert!(e.to_string().contains("installation id"), "{bad}: {e}");
        }
        let mut open = DockerConfig::new("x");
        open.publish_address = Ipv4Addr::UNSPECIFIED;
        assert_eq!(
            open.validate().unwrap_err().to_string(),
            "invalid Docker runtime configuration: publish address 0.0.0.0: agent servers are \
             published on a loopback address only"
        );
        let mut relative = DockerConfig::new("x");
        relative.workspace_mount = "workspace".into();
        assert!(relative.validate().is_err());
        let bad_url = DockerConfig::new("x").with_webhook_base_url(Some("host:1/x".into()));
        assert!(bad_url.validate().is_err());
        let mut zero = DockerConfig::new("x");
        zero.container_port = 0;
        assert!(zero.validate().is_err());
        assert!(
            DockerConfig::new("x")
                .with_pids_limit(-1)
                .validate()
                .is_err()
        );
        assert!(DockerConfig::new("x").with_pids_limit(0).validate().is_ok());
        for bad in ["", "run sc", "a/b"] {
            let c = DockerConfig::new("x").with_oci_runtime(Some(bad.into()));
            assert!(c.validate().is_err(), "{bad:?}");
        }
        assert!(
            DockerConfig::new("x")
                .with_bridge_network("")
                .validate()
                .is_err()
        );
        assert!(
            DockerConfig::new("x")
                .with_bridge_network("a b")
                .validate()
                .is_err()
        );
        assert_eq!(
            DockerConfig::new("x").bridge_network,
            "switchboard-sandboxes"
        );
        let runsc = DockerConfig::new("x").with_oci_runtime(Some("runsc".into()));
        assert_eq!(runsc.validate(), Ok(()));
        for bad in ["repos", "/", "/workspace", "/workspace/project"] {
            let c = DockerConfig::new("x").with_read_only_binds(vec![bad.into()]);
            assert!(c.validate().is_err(), "{bad:?}");
        }
        let binds = DockerConfig::new("x").with_read_only_binds(vec!["/srv/repos".into()]);
        assert_eq!(binds.validate(), Ok(()));
    }
}
