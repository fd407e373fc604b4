//! The bridge network sandboxes' containers join (issue 18): by default Switchboard's own,
//! [`SANDBOX_NETWORK`], a Docker bridge with inter-container traffic off, so that a sandbox
//! cannot reach another sandbox's processes over the network (on Docker's default bridge
//! every container reaches every other by address). Containers still reach the Docker host
//! (its bridge gateways: Switchboard's webhook listener) and, through the host's NAT, the
//! outside; published ports work as on the default bridge.

use std::collections::HashMap;

use bollard::models::NetworkCreateRequest;
use bollard::query_parameters::ListNetworksOptionsBuilder;

use crate::confine::egress::EgressLists;
use crate::docker::DockerRuntime;
use crate::docker::error::{DockerError, is_not_found, status_of, words};

/// The name of Switchboard's sandbox network, shared by every installation on a daemon (with
/// inter-container traffic off, sharing it isolates nothing less).
pub const SANDBOX_NETWORK: &str = "switchboard-sandboxes";
/// Docker's default bridge network: used as it is, never created.
pub const DEFAULT_BRIDGE: &str = "bridge";
/// The bridge driver's option that turns traffic between the network's containers off.
const ENABLE_ICC: &str = "com.docker.network.bridge.enable_icc";
/// Held while a runtime of this process makes sure of its network.
static NETWORK_CREATION: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
/// Label marking a network Switchboard created.
const LABEL_NETWORK: &str = "io.switchboard.network";

impl DockerRuntime {
    /// Makes sure the bridge network `name` exists: Docker's default bridge and an existing
    /// network are used as they are; a missing one is created as a bridge with
    /// inter-container traffic off and Switchboard's label. Two runtimes creating it at once
    /// can make two networks of one name (the daemon does not refuse duplicates): each then
    /// keeps the one with the smallest id and removes the others it labelled, so they agree.
    ///
    /// # Errors
    /// [`DockerError::Api`] with the daemon's words.
    pub(crate) async fn ensure_network(&self, name: &str) -> Result<(), DockerError> {
        if name == DEFAULT_BRIDGE {
            return Ok(());
        }
        // Runtimes of one process (tests start many at once) create it one at a time.
        let _one_at_a_time = NETWORK_CREATION.lock().await;
        match self.docker.inspect_network(name, None).await {
            Ok(_) => return Ok(()),
            Err(e) if is_not_found(&e) => {}
            // Two of one name (made by two processes at once, one of them in use when the
            // other tidied up): keep the smallest id again, then it must be unique.
            Err(e) if status_of(&e) == Some(400) && words(&e).contains("ambiguous") => {
                self.remove_duplicate_networks(name).await;
                return self
                    .docker
                    .inspect_network(name, None)
                    .await
                    .map(|_| ())
                    .map_err(|e| {
                        DockerError::Api(format!("inspecting network {name}: {}", words(&e)))
                    });
            }
            Err(e) => {
                return Err(DockerError::Api(format!(
                    "inspecting network {name}: {}",
                    words(&e)
                )));
            }
        }
        let request = NetworkCreateRequest {
            name: name.to_owned(),
            driver: Some("bridge".to_owned()),
            options: Some(HashMap::from([(ENABLE_ICC.to_owned(), "false".to_owned())])),
            labels: Some(HashMap::from([(
                LABEL_NETWORK.to_owned(),
                "sandboxes".to_owned(),
            )])),
            ..Default::default()
        };
        self.docker
            .create_network(request)
            .await
            .map_err(|e| DockerError::Api(format!("creating network {name}: {}", words(&e))))?;
        self.remove_duplicate_networks(name).await;
        Ok(())
    }

    /// The host interface of bridge network `name` ([`bridge_interface`](crate::docker::bridge_interface)).
    ///
    /// # Errors
    /// [`DockerError::Api`] with the daemon's words.
    pub(crate) async fn bridge_of(&self, name: &str) -> Result<String, DockerError> {
        let network =
            self.docker.inspect_network(name, None).await.map_err(|e| {
                DockerError::Api(format!("inspecting network {name}: {}", words(&e)))
            })?;
        Ok(crate::docker::bridge_interface(
            network.options.as_ref(),
            network.id.as_deref().unwrap_or(name),
        ))
    }

    /// Loads the egress rules ([`DockerConfig::egress`](crate::docker::DockerConfig::egress))
    /// for the interface of bridge network `network` as it is now (a network removed and
    /// made again has another), containers' webhook URL being `webhook_url` (none: only the
    /// host ports open), with a spec's own lists `spec` added to the operator's; a no-op
    /// without rules. For a bridge only (the caller's to check).
    ///
    /// # Errors
    /// [`DockerError::Api`] when the network cannot be inspected; [`DockerError::Config`]
    /// with what `nft` said: no container starts without its rules.
    ///
    /// Blocking (host names resolved, `nft` run): called from the runtime's blocking port,
    /// never from inside its async tasks.
    pub(crate) fn load_egress(
        &self,
        network: &str,
        webhook_url: Option<&str>,
        spec: &EgressLists,
    ) -> Result<(), DockerError> {
        let Some(egress) = &self.config.egress else {
            return Ok(());
        };
        let bridge = self.block_on(self.bridge_of(network))?;
        egress
            .apply(&bridge, webhook_url.unwrap_or_default(), spec)
            .map_err(DockerError::Config)
    }

    /// Removes the networks named `name` that Switchboard labelled, but the one with the
    /// smallest id; best effort (a network in use is not removed).
    async fn remove_duplicate_networks(&self, name: &str) {
        let filters = HashMap::from([("name".to_owned(), vec![name.to_owned()])]);
        let options = ListNetworksOptionsBuilder::default()
            .filters(&filters)
            .build();
        let Ok(mut networks) = self.docker.list_networks(Some(options)).await else {
            return;
        };
        // The name filter matches substrings.
        networks.retain(|n| n.name.as_deref() == Some(name));
        networks.sort_by(|a, b| a.id.cmp(&b.id));
        for extra in networks.iter().skip(1) {
            let ours = extra
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(LABEL_NETWORK));
            if let (true, Some(id)) = (ours, extra.id.as_deref()) {
                let _ = self.docker.remove_network(id).await;
            }
        }
    }
}
