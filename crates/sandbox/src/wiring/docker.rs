//! The Docker runtime wired from the options (issue 12; docs/docker.md): connecting to the
//! daemon at `DOCKER_HOST`, the installation id, the URL containers post webhooks to and the
//! extra listener on the bridge gateway that makes it reachable. The runtime's background work
//! (image pulls, the orphan sweep) is [`crate::docker::upkeep`]'s.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};

use super::options::DockerOptions;
use crate::docker::DockerEgress;
use crate::{DockerConfig, DockerError, DockerNetwork, DockerRuntime};

/// The Docker runtime as `serve` configured it.
pub struct DockerWiring {
    /// The runtime (shared with the sandbox service).
    pub runtime: Arc<DockerRuntime>,
    /// Where Switchboard must also listen so containers reach it (the bridge gateway, on the
    /// main listener's port), when the main listener does not already cover it.
    pub extra_listen: Option<SocketAddr>,
    /// The bridge's gateway, when containers reach Switchboard as `host.docker.internal`
    /// through it: the address that name stands for on this host.
    pub gateway: Option<Ipv4Addr>,
}

/// This installation's id: `--docker-installation`, else the id the database's installation
/// record holds (`recorded`: `sb-` and the key id for an installation made before the record
/// existed), so it survives restarts and key rotations, replicas sharing the database agree on
/// it, and a restored copy (a new id) never touches the original's containers.
pub fn installation_id(options: &DockerOptions, recorded: &str) -> String {
    options
        .installation
        .clone()
        .unwrap_or_else(|| recorded.to_owned())
}

/// Connects the Docker runtime for `serve`: the daemon at `DOCKER_HOST`, and the URL
/// containers post webhooks to (`--docker-public-url`; on a bridge
/// `http://host.docker.internal:<port>` with an extra listener on the bridge gateway when
/// `bound` is a loopback address; with host networking `public_url`); containers log with
/// `json-file` capped at `log_max_mib` MiB (0: the daemon's default); with
/// `--docker-publish-ports false` nothing is published and the agent servers are reached at
/// the containers' addresses. Containers run under
/// `--docker-oci-runtime`, with `--docker-pids-limit`, a read-only root unless
/// `--docker-writable-root`, and `read_only_binds` (the allowed local repository
/// directories) bound read-only at the same path; on a bridge, `egress` loaded on the host
/// ([`crate::confinement::docker_egress`]).
///
/// # Errors
/// No daemon answers, the configuration is refused (an OCI runtime the daemon does not
/// have: the message lists those it has), or the bridge has no IPv4 gateway while one is
/// needed (each message says what to do).
pub fn connect(
    options: &DockerOptions,
    installation: String,
    bound: SocketAddr,
    public_url: &str,
    log_max_mib: u64,
    read_only_binds: &[PathBuf],
    egress: Option<DockerEgress>,
) -> Result<DockerWiring> {
    let mut binds = Vec::with_capacity(read_only_binds.len());
    for dir in read_only_binds {
        let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
        if !abs.is_dir() {
            bail!(
                "--allow-local-repositories {}: not a directory on this host (Docker sandboxes \
                 see it read-only at the same path, so it must exist)",
                dir.display()
            );
        }
        binds.push(abs);
    }
    let webhook_root = match (&options.public_url, options.network) {
        (Some(url), _) => url.trim_end_matches('/').to_owned(),
        (None, DockerNetwork::Host) => public_url.to_owned(),
        (None, DockerNetwork::Bridge) => format!("http://host.docker.internal:{}", bound.port()),
    };
    let config = DockerConfig::new(installation)
        .with_network(options.network)
        .with_publish_ports(options.publish_ports)
        .with_log_max_mib(log_max_mib)
        .with_webhook_base_url(Some(format!("{webhook_root}/api/v1/webhooks")))
        .with_bridge_network(options.bridge_network.clone())
        .with_oci_runtime(options.oci_runtime.clone().filter(|r| !r.is_empty()))
        .with_pids_limit(options.pids_limit)
        .with_read_only_root(!options.writable_root)
        .with_read_only_binds(binds)
        .with_egress(egress);
    let runtime = match DockerRuntime::connect(config) {
        Ok(runtime) => runtime,
        Err(e @ DockerError::Config(_)) => {
            bail!("the Docker runtime cannot run sandboxes as configured: {e}")
        }
        Err(e) => Err(e).context(
            "the Docker runtime is configured (--sandbox-runtime docker, or a spec's runtime) \
             but the Docker daemon cannot be used; start it, or set DOCKER_HOST",
        )?,
    };
    let (mut extra_listen, mut host_gateway) = (None, None);
    if options.public_url.is_none() && options.network == DockerNetwork::Bridge {
        let gateway = runtime
            .bridge_gateway()
            .context("finding the Docker bridge's gateway address")?;
        let Some(gateway) = gateway else {
            bail!(
                "Docker's bridge network has no IPv4 gateway, so containers cannot reach \
                 Switchboard through host.docker.internal: set --docker-public-url or \
                 --docker-network host"
            );
        };
        let ip = bound.ip();
        if !ip.is_unspecified() && ip != IpAddr::V4(gateway) {
            extra_listen = Some(SocketAddr::new(IpAddr::V4(gateway), bound.port()));
        }
        host_gateway = Some(gateway);
    }
    tracing::info!(
        host = runtime.host(),
        api = %runtime.api_version(),
        installation = %runtime.config().installation,
        network = %options.network,
        publish_ports = runtime.config().publishes(),
        bridge_network = %runtime.config().bridge_network,
        oci_runtime = runtime.config().oci_runtime.as_deref().unwrap_or("(the daemon's default)"),
        pids_limit = runtime.config().pids_limit,
        webhooks = %runtime.config().webhook_base_url.as_deref().unwrap_or_default(),
        "Docker runtime connected"
    );
    Ok(DockerWiring {
        runtime: Arc::new(runtime),
        extra_listen,
        gateway: host_gateway,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_installation_id_comes_from_the_option_or_the_record() {
        let mut options = DockerOptions {
            network: DockerNetwork::Bridge,
            publish_ports: true,
            public_url: None,
            installation: None,
            orphan_grace: Duration::from_secs(300),
            bridge_network: "switchboard-sandboxes".into(),
            oci_runtime: None,
            pids_limit: 1024,
            writable_root: false,
        };
        let recorded = "sb-0123456789abcdef";
        let derived = installation_id(&options, recorded);
        assert_eq!(derived, recorded);
        assert!(DockerConfig::new(derived).validate().is_ok());
        options.installation = Some("prod-eu".into());
        assert_eq!(installation_id(&options, recorded), "prod-eu");
    }
}
