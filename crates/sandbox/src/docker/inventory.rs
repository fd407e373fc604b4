//! What this installation has on the daemon, found by label: for the reconciler (issue 12: "a
//! Switchboard container with no record is reported in the log and removed after a grace
//! period"; one listing per pass, no call per sandbox on the request path), and the bridge
//! gateway a bridged container reaches the Docker host through.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use bollard::models::{ContainerSummary, ContainerSummaryStateEnum};
use bollard::query_parameters::{
    InspectNetworkOptions, ListContainersOptionsBuilder, ListVolumesOptionsBuilder,
};
use switchboard_domain::sandboxes::runtime::{Observed, RuntimeError};
use time::OffsetDateTime;

use crate::docker::config::{
    LABEL_INSTALLATION, LABEL_ORG_ID, LABEL_SANDBOX_ID, LABEL_SPEC_ID, VOLUME_PREFIX,
};
use crate::docker::error::{DockerError, words};
use crate::docker::{ContainerIdentity, DockerRuntime, state};

/// A container of this installation, as the daemon lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxContainer {
    /// The container's full id.
    pub container_id: String,
    /// Its name, without Docker's leading `/`.
    pub container_name: String,
    /// The sandbox id of its [`LABEL_SANDBOX_ID`] label (as written; empty when missing).
    pub sandbox_id: String,
    /// Its [`LABEL_SPEC_ID`] label.
    pub spec_id: Option<String>,
    /// Its [`LABEL_ORG_ID`] label (none for warm-pool sandboxes).
    pub org_id: Option<String>,
    /// Its state, as [`SandboxRuntime::observe`](switchboard_domain::sandboxes::runtime::SandboxRuntime::observe) gives it.
    pub observed: Observed,
    /// When the container was created (the daemon's clock).
    pub created_at: Option<OffsetDateTime>,
}

impl SandboxContainer {
    /// The name of its workspace volume.
    pub fn volume(&self) -> String {
        format!("{VOLUME_PREFIX}{}", self.sandbox_id)
    }
}

/// A workspace volume of this installation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxVolume {
    /// The volume's name.
    pub name: String,
    /// The sandbox id of its [`LABEL_SANDBOX_ID`] label.
    pub sandbox_id: String,
}

impl DockerRuntime {
    /// Every container carrying this installation's label, running or not, with its state:
    /// one listing, plus one inspection per container that is not running or paused (for its
    /// exit code).
    ///
    /// # Errors
    /// [`DockerError::Api`] when the daemon fails to answer.
    pub fn list_sandboxes(&self) -> Result<Vec<SandboxContainer>, DockerError> {
        let filters = self.label_filter();
        let options = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&filters)
            .build();
        self.block_on(async {
            let listed = self
                .docker
                .list_containers(Some(options))
                .await
                .map_err(|e| DockerError::Api(format!("listing containers: {}", words(&e))))?;
            let mut out = Vec::with_capacity(listed.len());
            for summary in listed {
                let observed = self.observed_of_summary(&summary).await;
                let labels = summary.labels.unwrap_or_default();
                out.push(SandboxContainer {
                    container_id: summary.id.unwrap_or_default(),
                    container_name: summary
                        .names
                        .and_then(|n| n.into_iter().next())
                        .map(|n| n.trim_start_matches('/').to_owned())
                        .unwrap_or_default(),
                    sandbox_id: labels.get(LABEL_SANDBOX_ID).cloned().unwrap_or_default(),
                    spec_id: labels.get(LABEL_SPEC_ID).cloned(),
                    org_id: labels.get(LABEL_ORG_ID).cloned(),
                    observed,
                    created_at: summary
                        .created
                        .and_then(|t| OffsetDateTime::from_unix_timestamp(t).ok()),
                });
            }
            Ok(out)
        })
    }

    async fn observed_of_summary(&self, summary: &ContainerSummary) -> Observed {
        use ContainerSummaryStateEnum as S;
        match summary.state {
            Some(S::RUNNING | S::RESTARTING) => Observed::Running,
            Some(S::PAUSED) => Observed::Stopped,
            Some(S::REMOVING) => Observed::Gone,
            _ => {
                let id = summary.id.as_deref().unwrap_or_default();
                match self.docker.inspect_container(id, None).await {
                    Ok(c) => state::observed_of(&c.state.unwrap_or_default()),
                    Err(_) => Observed::Gone,
                }
            }
        }
    }

    /// Every workspace volume carrying this installation's label (a volume can outlive its
    /// container when a start was interrupted).
    ///
    /// # Errors
    /// [`DockerError::Api`] when the daemon fails to answer.
    pub fn list_volumes(&self) -> Result<Vec<SandboxVolume>, DockerError> {
        let filters = self.label_filter();
        let options = ListVolumesOptionsBuilder::default()
            .filters(&filters)
            .build();
        self.block_on(async {
            let listed = self
                .docker
                .list_volumes(Some(options))
                .await
                .map_err(|e| DockerError::Api(format!("listing volumes: {}", words(&e))))?;
            Ok(listed
                .volumes
                .unwrap_or_default()
                .into_iter()
                .map(|v| SandboxVolume {
                    sandbox_id: v.labels.get(LABEL_SANDBOX_ID).cloned().unwrap_or_default(),
                    name: v.name,
                })
                .collect())
        })
    }

    /// Stops and removes a container of this installation that no record names, and its
    /// workspace volume, as delete does.
    ///
    /// # Errors
    /// [`DockerError::Api`] when something could not be stopped or removed, or the container
    /// is not this installation's.
    pub fn remove_orphan(&self, container: &SandboxContainer) -> Result<(), DockerError> {
        let identity = ContainerIdentity {
            container_id: container.container_id.clone(),
            container_name: container.container_name.clone(),
            volume: container.volume(),
            installation: self.config.installation.clone(),
            sandbox_id: container.sandbox_id.clone(),
        };
        self.block_on(async {
            let found = self.inspect(&identity).await?;
            self.remove_sandbox(found.as_ref(), &identity.volume, &identity.sandbox_id)
                .await
        })
        .map_err(runtime_to_docker)
    }

    /// Removes a workspace volume of this installation that no sandbox uses any more.
    ///
    /// # Errors
    /// [`DockerError::Api`] when it is in use, not this installation's, or cannot be removed.
    pub fn remove_orphan_volume(&self, volume: &SandboxVolume) -> Result<(), DockerError> {
        self.block_on(self.remove_sandbox(None, &volume.name, &volume.sandbox_id))
            .map_err(runtime_to_docker)
    }

    /// The IPv4 gateway of Docker's default `bridge` network (`172.17.0.1` by default): the
    /// address of the Docker host that `host.docker.internal` names inside a bridged
    /// container, where Switchboard must listen for webhooks (`docs/docker.md`). The default
    /// bridge often names only its subnet (`172.17.0.0/16`), the gateway then being the
    /// subnet's first address, as the engine assigns it. `None` when the network has no IPv4
    /// gateway or subnet.
    ///
    /// # Errors
    /// [`DockerError::Api`] when the daemon fails to answer or has no `bridge` network.
    pub fn bridge_gateway(&self) -> Result<Option<Ipv4Addr>, DockerError> {
        self.block_on(async {
            let network = self
                .docker
                .inspect_network("bridge", None::<InspectNetworkOptions>)
                .await
                .map_err(|e| {
                    DockerError::Api(format!("inspecting network bridge: {}", words(&e)))
                })?;
            Ok(network
                .ipam
                .and_then(|ipam| ipam.config)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|c| {
                    c.gateway
                        .as_deref()
                        .and_then(|g| g.parse::<Ipv4Addr>().ok())
                        .or_else(|| first_host(c.subnet.as_deref()?))
                })
                .next())
        })
    }

    /// `label=<installation label>=<this installation>`.
    fn label_filter(&self) -> HashMap<String, Vec<String>> {
        HashMap::from([(
            "label".to_owned(),
            vec![format!("{LABEL_INSTALLATION}={}", self.config.installation)],
        )])
    }
}

/// The first host address of an IPv4 subnet `a.b.c.d/len` (`172.17.0.0/16` → `172.17.0.1`).
fn first_host(subnet: &str) -> Option<Ipv4Addr> {
    let (address, len) = subnet.split_once('/')?;
    let address: Ipv4Addr = address.parse().ok()?;
    let len: u32 = len.parse().ok().filter(|l| *l <= 30)?;
    let mask = u32::MAX.checked_shl(32 - len).unwrap_or(0);
    Some(Ipv4Addr::from((u32::from(address) & mask) + 1))
}

fn runtime_to_docker(e: RuntimeError) -> DockerError {
    DockerError::Api(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::first_host;

    #[test]
    fn a_subnets_first_host_is_its_gateway() {
        assert_eq!(first_host("172.17.0.0/16"), Some([172, 17, 0, 1].into()));
        assert_eq!(first_host("10.1.2.128/25"), Some([10, 1, 2, 129].into()));
        assert_eq!(first_host("10.1.2.3/24"), Some([10, 1, 2, 1].into()));
        assert_eq!(first_host("fd00::/64"), None);
        assert_eq!(first_host("10.0.0.0/31"), None);
        assert_eq!(first_host("10.0.0.0"), None);
    }
}
