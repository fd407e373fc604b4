//! The loopback ports this runtime hands its sandboxes: each reserved until the sandbox is
//! deleted, so two starts never get the same one while the first process has not bound it
//! (from the process's one pool, [`PortPool::shared`]: also not a port another runtime of this
//! process just gave out).

use switchboard_domain::sandboxes::runtime::{LaunchSpec, RuntimeError};
use switchboard_domain::sandboxes::services::ServiceEndpoint;

use super::{LISTEN_HOST, ProcessRuntime};
use crate::confine::Isolation;
use crate::ports::PortPool;

impl ProcessRuntime {
    /// The host ports `pasta` binds inside a confined sandbox's own network to reach the host
    /// ([`Pasta::outbound`](crate::confine::Pasta::outbound): `--sandbox-host-port`s and the
    /// webhook URL's loopback port): no port the sandbox listens on may be one of them, even
    /// when nothing listens on it on the host at the moment (a host service that is down).
    pub(super) fn bound_inside(&self, launch: &LaunchSpec) -> Vec<u16> {
        match &self.isolation {
            Isolation::Bwrap(bwrap) => bwrap
                .network
                .as_ref()
                .map(|pasta| pasta.outbound(&launch.webhook_base_url))
                .unwrap_or_default(),
            Isolation::None => Vec::new(),
        }
    }

    /// A loopback port nothing listens on, no sandbox of this process was given, and not one
    /// of `avoid` ([`ProcessRuntime::bound_inside`]).
    pub(super) fn reserve_port(&self, avoid: &[u16]) -> Result<u16, RuntimeError> {
        PortPool::shared().reserve_avoiding(LISTEN_HOST, avoid)
    }

    pub(super) fn release_port(&self, port: u16) {
        PortPool::shared().release(port);
    }

    /// A loopback port for each service the spec exposes besides the agent server (issue 22),
    /// reserved as the agent server's; the sandbox learns them from its environment
    /// ([`launch::environment_with`]) and listens on `127.0.0.1:<port>`.
    pub(super) fn reserve_services(
        &self,
        launch: &LaunchSpec,
        avoid: &[u16],
    ) -> Result<Vec<ServiceEndpoint>, RuntimeError> {
        let mut services = Vec::with_capacity(launch.spec.exposed_services.len());
        for service in &launch.spec.exposed_services {
            match self.reserve_port(avoid) {
                Ok(port) => services.push(ServiceEndpoint {
                    service: *service,
                    url: format!("http://{LISTEN_HOST}:{port}"),
                    host_port: port,
                    sandbox_port: port,
                }),
                Err(e) => {
                    services.iter().for_each(|s| self.release_port(s.host_port));
                    return Err(e);
                }
            }
        }
        Ok(services)
    }
}
