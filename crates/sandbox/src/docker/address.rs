//! Where Switchboard reaches a container's agent server when its port is not published
//! ([`DockerConfig::publish_ports`](crate::docker::DockerConfig::publish_ports) false, issue
//! 22): the container's IPv4 address on the bridge network it joined, and the container's
//! port. Docker gives a container a new address each time it starts (a container started
//! again after it exited may get another one), so the address is read when the container
//! starts and again when it is resumed.

use std::net::Ipv4Addr;

use switchboard_domain::sandboxes::runtime::{RuntimeError, RuntimeHandle};
use switchboard_domain::sandboxes::services::ServiceEndpoint;

use crate::docker::error::{io, is_not_found};
use crate::docker::{ContainerIdentity, DockerNetwork, DockerRuntime};

impl DockerRuntime {
    /// The IPv4 address of container `id` on the configured bridge network.
    ///
    /// # Errors
    /// [`RuntimeError::Gone`] when the container is not there; [`RuntimeError::Launch`]
    /// when it has no address on that network (it is not running, or not on it);
    /// [`RuntimeError::Io`] when the daemon fails.
    pub(super) async fn network_address(&self, id: &str) -> Result<Ipv4Addr, RuntimeError> {
        let container = match self.docker.inspect_container(id, None).await {
            Ok(c) => c,
            Err(e) if is_not_found(&e) => return Err(RuntimeError::Gone),
            Err(e) => return Err(io("inspecting the container", &e)),
        };
        let network = &self.config.bridge_network;
        container
            .network_settings
            .and_then(|s| s.networks)
            // The configured network, or the one network of its spec's egress lists.
            .and_then(|mut n| match n.remove(network) {
                Some(endpoint) => Some(endpoint),
                None if n.len() == 1 => n.into_values().next(),
                None => None,
            })
            .and_then(|endpoint| endpoint.ip_address)
            .and_then(|ip| ip.parse::<Ipv4Addr>().ok())
            .ok_or_else(|| {
                RuntimeError::Launch(format!(
                    "Docker: container {id} has no IPv4 address on network {network}, where \
                     Switchboard reaches its agent server (its port is not published)"
                ))
            })
    }

    /// The agent server's URL at `ip`, the container's address on its network.
    pub(super) fn network_url(&self, ip: Ipv4Addr) -> String {
        format!("http://{ip}:{}", self.config.container_port)
    }

    /// Gives a host port back to the pool; a no-op for an unpublished container's port.
    pub(super) fn release_port(&self, port: u16) {
        if self.config.publishes() {
            self.ports.release(port);
        }
    }

    /// `handle` with the agent server's URL at the container's current address, when its
    /// port is not published and the address changed (after [`resume`] started an exited
    /// container again); `None` otherwise, or when the address cannot be read (the health
    /// probe then tells).
    ///
    /// [`resume`]: switchboard_domain::sandboxes::runtime::SandboxRuntime::resume
    pub(super) fn moved_handle(&self, handle: &RuntimeHandle) -> Option<RuntimeHandle> {
        if self.config.network != DockerNetwork::Bridge || self.config.publish_ports {
            return None;
        }
        let identity: ContainerIdentity = self.identity(handle).ok()?;
        let ip = self
            .block_on(self.network_address(&identity.container_id))
            .ok()?;
        let url = self.network_url(ip);
        // The other exposed services are on the same address (issue 22).
        let services = handle
            .services
            .iter()
            .map(|s| ServiceEndpoint {
                url: format!("http://{ip}:{}", s.sandbox_port),
                ..s.clone()
            })
            .collect();
        (url != handle.agent_server_url).then(|| RuntimeHandle {
            agent_server_url: url,
            services,
            ..handle.clone()
        })
    }
}
