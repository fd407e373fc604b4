//! The flags of the Docker runtime (docs/docker.md), part of `serve`'s sandbox flags, made
//! into the sandbox crate's options. The daemon is `DOCKER_HOST` (default
//! `unix:///var/run/docker.sock`).

use std::time::Duration;

use clap::Args;
use switchboard_sandbox::wiring::DockerOptions;

use crate::cli_help::heading;

#[derive(Args, Clone)]
#[command(next_help_heading = heading::DOCKER)]
pub struct DockerArgs {
    /// How containers are networked: bridge (the agent server's port published on 127.0.0.1 only) or host (containers share the host's network).
    #[arg(long, env = "SWITCHBOARD_DOCKER_NETWORK", default_value = "bridge")]
    pub docker_network: switchboard_sandbox::DockerNetwork,
    /// Publish each container's agent server port on 127.0.0.1 (with --docker-network bridge); false: nothing is published and Switchboard reaches the agent server at the container's address on its network, so its sandbox proxy is the only way in (Switchboard must then reach that network: on the Docker host, or in a container with --network host).
    #[arg(long, env = "SWITCHBOARD_DOCKER_PUBLISH_PORTS", value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub docker_publish_ports: bool,
    /// Switchboard's URL as containers reach it; they post webhooks to it + /api/v1/webhooks (default on a bridge: `http://host.docker.internal:PORT`, Switchboard then also listening on the bridge gateway when bound to loopback; with host networking: the --public-url).
    #[arg(long, env = "SWITCHBOARD_DOCKER_PUBLIC_URL")]
    pub docker_public_url: Option<String>,
    /// This installation's id, labelled on its containers and volumes, so installations sharing a daemon never touch each other's (default: `sb-` and the id of the secret key, the same for replicas sharing the key).
    #[arg(long, env = "SWITCHBOARD_DOCKER_INSTALLATION")]
    pub docker_installation: Option<String>,
    /// Seconds a container of this installation that no sandbox record names is left alone (and logged) before it is removed.
    #[arg(long, env = "SWITCHBOARD_DOCKER_ORPHAN_GRACE", default_value = "300")]
    pub docker_orphan_grace: u64,
    /// The bridge network containers join (with --docker-network bridge): by default Switchboard's own, created when missing with traffic between its containers off, so sandboxes cannot reach each other; `bridge` for Docker's default one (containers reach each other), or another existing network.
    #[arg(long, env = "SWITCHBOARD_DOCKER_BRIDGE_NETWORK", value_name = "NAME", default_value = switchboard_sandbox::docker::SANDBOX_NETWORK)]
    pub docker_bridge_network: String,
    /// The OCI runtime containers run under, as the daemon names it (e.g. runsc, gVisor; docs/docker.md, "gVisor"); `serve` refuses to start when the daemon has none of this name (default: the daemon's, runc).
    #[arg(long, env = "SWITCHBOARD_DOCKER_OCI_RUNTIME", value_name = "NAME")]
    pub docker_oci_runtime: Option<String>,
    /// Cap on the processes and threads of each container (a fork bomb stops there); 0: none.
    #[arg(long, env = "SWITCHBOARD_DOCKER_PIDS_LIMIT", default_value_t = switchboard_sandbox::docker::DEFAULT_PIDS_LIMIT, value_parser = clap::value_parser!(i64).range(0..))]
    pub docker_pids_limit: i64,
    /// Keep containers' root filesystem writable (by default it is read-only when the image declares what it writes, label io.switchboard.tmpfs).
    #[arg(long, env = "SWITCHBOARD_DOCKER_WRITABLE_ROOT")]
    pub docker_writable_root: bool,
}

impl DockerArgs {
    /// The sandbox crate's Docker options these flags give.
    pub fn options(&self) -> DockerOptions {
        DockerOptions {
            network: self.docker_network,
            publish_ports: self.docker_publish_ports,
            public_url: self.docker_public_url.clone(),
            installation: self.docker_installation.clone(),
            orphan_grace: Duration::from_secs(self.docker_orphan_grace),
            bridge_network: self.docker_bridge_network.clone(),
            oci_runtime: self.docker_oci_runtime.clone(),
            pids_limit: self.docker_pids_limit,
            writable_root: self.docker_writable_root,
        }
    }
}
