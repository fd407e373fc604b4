//! The Docker runtime: each sandbox is a container of the spec's image (the spec's `id`, as in
//! OpenHands, reference app-server §3.3 "DockerSandboxService", §4), run by the Docker Engine
//! at `DOCKER_HOST` (a unix socket by default, or `tcp://`) through `bollard` (issue 12).
//!
//! - **Start**: the image must already be on the Docker host (it is never pulled on the
//!   request path: [`DockerRuntime::pull`] is for `switchboard specs pull` and a background
//!   pull at start); a named volume `switchboard-workspace-<sandbox id>` mounted at
//!   `/workspace`; a container `switchboard-sandbox-<sandbox id>` with the spec's command +
//!   `--host … --port …`, working directory, `initial_env` plus the
//!   session key and webhook URL (nothing else of Switchboard's environment), labels naming
//!   this installation, the sandbox, the spec and the org ([`LABEL_INSTALLATION`] …), `--init`,
//!   `host.docker.internal:host-gateway`, the spec's memory and CPU limits, the confinement
//!   of issue 18 (no new privileges, capabilities dropped, a pids limit, a read-only root,
//!   the operator's OCI runtime: `hardening.rs`); on a bridge (Switchboard's own,
//!   [`SANDBOX_NETWORK`], with inter-container traffic off, unless configured otherwise), the
//!   agent server's port published on `127.0.0.1` only, on a free port chosen by the runtime
//!   (kept when the container is started again), or with `publish_ports` off nothing
//!   published and the agent server reached at the container's address on the network
//!   (`address.rs`); with host networking, the agent server on `127.0.0.1:<free port>`.
//!   Returns once the container runs, not waiting for `/alive`.
//! - **Identity**: the container's id, name and volume and this installation's id, kept in
//!   the handle ([`ContainerIdentity`]); a container without this installation's and this
//!   sandbox's labels is never acted on.
//! - **Status**: running → running, paused → stopped, exited → exited with the
//!   reason from its exit code ([`exit_reason`]; never "paused", unlike OpenHands), removed → gone. When the
//!   daemon does not answer, `observe` reports a container running and `try_observe` an
//!   error, so reconciliation keeps the stored status (a daemon restart must not make live
//!   sandboxes `MISSING`).
//! - **Pause / resume**: `docker pause` (the cgroup freezer) / `docker unpause`, or `docker
//!   start` for a container that had stopped.
//! - **Delete**: unpause if paused, `docker stop` with the stop timeout (then the engine
//!   kills), remove the container, remove its volume.
//!
//! The port is blocking; the runtime owns a small tokio runtime (two worker threads) and
//! blocks on it, so it must not be called from inside an async task (use a blocking pool, as
//! for every runtime).

mod address;
mod config;
mod create;
mod egress;
mod error;
mod hardening;
mod images;
mod inventory;
mod network;
mod remove;
mod start;
mod state;
pub mod upkeep;

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use bollard::Docker;
use bollard::models::{ContainerInspectResponse, ContainerStateStatusEnum};
use bollard::query_parameters::LogsOptionsBuilder;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use switchboard_domain::sandboxes::runtime::{
    LaunchSpec, Observed, RuntimeError, RuntimeHandle, SandboxRuntime,
};

pub use config::{
    CONTAINER_PREFIX, DEFAULT_CONTAINER_PORT, DEFAULT_LOG_MAX_MIB, DEFAULT_PIDS_LIMIT,
    DEFAULT_STOP_TIMEOUT, DEFAULT_WORKSPACE_MOUNT, DockerConfig, DockerNetwork, HOST_GATEWAY_ENTRY,
    LABEL_INSTALLATION, LABEL_ORG_ID, LABEL_SANDBOX_ID, LABEL_SPEC_ID, RUNTIME_NAME, VOLUME_PREFIX,
};
pub use egress::{DockerEgress, bridge_interface, table_name};
pub use error::DockerError;
pub use hardening::{ImageFacts, LABEL_TMPFS, ROOT_IMAGE_CAPABILITIES};
pub use images::normalize_reference;
pub use inventory::SandboxContainer;
pub use network::{DEFAULT_BRIDGE, SANDBOX_NETWORK};
pub use start::HOST_ONLY_VARIABLES;
pub use state::exit_reason;

use crate::ports::PortPool;
use error::{io, is_not_found, is_port_clash, words};

/// The Docker host used when `DOCKER_HOST` is unset or empty.
pub const DEFAULT_DOCKER_HOST: &str = "unix:///var/run/docker.sock";
/// How long one request to the daemon may take (a stop adds the stop timeout to this).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// A container's identity: what [`RuntimeHandle::data`] holds for this runtime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerIdentity {
    /// The container's full id (64 hex digits).
    pub container_id: String,
    /// Its name ([`CONTAINER_PREFIX`] + the sandbox id).
    pub container_name: String,
    /// Its workspace volume's name ([`VOLUME_PREFIX`] + the sandbox id).
    pub volume: String,
    /// The installation that made it ([`DockerConfig::installation`]).
    pub installation: String,
    /// The sandbox's id (the value of its [`LABEL_SANDBOX_ID`] label).
    pub sandbox_id: String,
}

impl ContainerIdentity {
    /// The identity kept in a handle made by a Docker runtime.
    ///
    /// # Errors
    /// [`RuntimeError::BadHandle`] for another runtime's handle or unreadable data.
    pub fn of(handle: &RuntimeHandle) -> Result<Self, RuntimeError> {
        handle.data_of(RUNTIME_NAME, "container data")
    }
}

/// The Docker runtime; one per Switchboard (share it behind an `Arc`). A fresh one, as after a
/// restart, finds the containers of earlier ones from their handles and touches nothing else.
pub struct DockerRuntime {
    docker: Docker,
    /// Always `Some` until dropped (taken by `Drop` to shut it down without blocking).
    tokio: Option<tokio::runtime::Runtime>,
    host: String,
    config: DockerConfig,
    ports: &'static PortPool,
}

impl std::fmt::Debug for DockerRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerRuntime")
            .field("host", &self.host)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Drop for DockerRuntime {
    fn drop(&mut self) {
        if let Some(tokio) = self.tokio.take() {
            tokio.shutdown_background();
        }
    }
}

impl DockerRuntime {
    /// Connects to the daemon at `DOCKER_HOST` (unset or empty: [`DEFAULT_DOCKER_HOST`]).
    ///
    /// # Errors
    /// As [`DockerRuntime::connect_to`].
    pub fn connect(config: DockerConfig) -> Result<Self, DockerError> {
        let host = std::env::var("DOCKER_HOST")
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| DEFAULT_DOCKER_HOST.to_owned());
        Self::connect_to(&host, config)
    }

    /// Connects to the daemon at `host` (`unix:///path` or `tcp://host:port`), agrees on the
    /// API version (the daemon's, when older than the client's: Debian's docker.io 20.10
    /// speaks 1.41) and checks that it answers.
    ///
    /// # Errors
    /// [`DockerError::Config`] for a bad configuration, or an OCI runtime the daemon does
    /// not have (the message lists those it has); [`DockerError::Unavailable`] when no
    /// daemon answers at `host` or the address cannot be used; [`DockerError::Api`] when the
    /// bridge network is missing and cannot be created.
    pub fn connect_to(host: &str, config: DockerConfig) -> Result<Self, DockerError> {
        config.validate()?;
        let unavailable = |detail: String| DockerError::Unavailable {
            host: host.to_owned(),
            detail,
        };
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("docker-client")
            .enable_all()
            .build()
            .map_err(|e| unavailable(format!("cannot start the client's threads: {e}")))?;
        let timeout = REQUEST_TIMEOUT + config.stop_timeout;
        let docker = {
            let _entered = tokio.enter();
            Docker::connect_with_host(host).map_err(|e| unavailable(e.to_string()))?
        };
        let (docker, runtimes) = tokio
            .block_on(async {
                let docker = docker.with_timeout(timeout).negotiate_version().await?;
                docker.ping().await?;
                let runtimes = docker.info().await?.runtimes.unwrap_or_default();
                Ok::<_, bollard::errors::Error>((docker, runtimes))
            })
            .map_err(|e| unavailable(words(&e)))?;
        if let Some(name) = &config.oci_runtime
            && !runtimes.contains_key(name)
        {
            let mut known: Vec<&str> = runtimes.keys().map(String::as_str).collect();
            known.sort_unstable();
            return Err(DockerError::Config(format!(
                "the Docker daemon at {host} has no OCI runtime {name:?} (it has: {}); register \
                 it under \"runtimes\" in /etc/docker/daemon.json and send dockerd SIGHUP \
                 (docs/docker.md, \"gVisor\")",
                known.join(", ")
            )));
        }
        let runtime = DockerRuntime {
            docker,
            tokio: Some(tokio),
            host: host.to_owned(),
            config,
            ports: PortPool::shared(),
        };
        if runtime.config.network == DockerNetwork::Bridge {
            runtime.block_on(runtime.ensure_network(&runtime.config.bridge_network))?;
            runtime.load_egress(
                &runtime.config.bridge_network,
                runtime.config.webhook_base_url.as_deref(),
                &Default::default(),
            )?;
        }
        Ok(runtime)
    }

    /// The daemon's address.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The configuration.
    pub fn config(&self) -> &DockerConfig {
        &self.config
    }

    /// The Docker Engine API version agreed with the daemon (`1.41`).
    pub fn api_version(&self) -> String {
        let v = self.docker.client_version();
        format!("{}.{}", v.major_version, v.minor_version)
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.tokio
            .as_ref()
            .expect("the client runtime lives as long as the Docker runtime")
            .block_on(future)
    }

    /// The identity in `handle`, if this installation made it.
    fn identity(&self, handle: &RuntimeHandle) -> Result<ContainerIdentity, RuntimeError> {
        let identity = ContainerIdentity::of(handle)?;
        if identity.installation != self.config.installation {
            return Err(RuntimeError::BadHandle(format!(
                "made by installation {:?}, not {:?}",
                identity.installation, self.config.installation
            )));
        }
        Ok(identity)
    }

    /// Whether `labels` mark a container or volume as this installation's, for `sandbox_id`.
    fn ours(&self, labels: Option<&HashMap<String, String>>, sandbox_id: &str) -> bool {
        labels.is_some_and(|l| {
            l.get(LABEL_INSTALLATION) == Some(&self.config.installation)
                && l.get(LABEL_SANDBOX_ID).map(String::as_str) == Some(sandbox_id)
        })
    }

    /// The container of `identity`: `None` when it is not there; an error when the daemon
    /// fails or a container with that id is not this installation's sandbox.
    async fn inspect(
        &self,
        identity: &ContainerIdentity,
    ) -> Result<Option<ContainerInspectResponse>, RuntimeError> {
        match self
            .docker
            .inspect_container(&identity.container_id, None)
            .await
        {
            Ok(c) => {
                let labels = c.config.as_ref().and_then(|c| c.labels.as_ref());
                if self.ours(labels, &identity.sandbox_id) {
                    Ok(Some(c))
                } else {
                    Err(RuntimeError::BadHandle(format!(
                        "container {} is not sandbox {} of installation {:?}",
                        identity.container_id, identity.sandbox_id, self.config.installation
                    )))
                }
            }
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(io("inspecting the container", &e)),
        }
    }
}

impl SandboxRuntime for DockerRuntime {
    fn name(&self) -> &'static str {
        RUNTIME_NAME
    }

    fn webhook_base_url(&self) -> Option<&str> {
        self.config.webhook_base_url.as_deref()
    }

    fn start(&self, launch: &LaunchSpec) -> Result<RuntimeHandle, RuntimeError> {
        self.start_for_org(launch, launch.org_id.as_ref())
    }

    fn observe(&self, handle: &RuntimeHandle) -> Observed {
        let Ok(identity) = self.identity(handle) else {
            return Observed::Gone;
        };
        match self.block_on(self.inspect(&identity)) {
            Ok(Some(c)) => state::observed_of(&c.state.unwrap_or_default()),
            Ok(None) | Err(RuntimeError::BadHandle(_)) => Observed::Gone,
            // The daemon did not answer: the health probe decides (see the module's docs).
            Err(_) => Observed::Running,
        }
    }

    /// As `observe`, but a daemon that does not answer is an error: reconciliation keeps
    /// the stored status (issue 24 item 3).
    fn try_observe(&self, handle: &RuntimeHandle) -> Result<Observed, RuntimeError> {
        let Ok(identity) = self.identity(handle) else {
            return Ok(Observed::Gone);
        };
        match self.block_on(self.inspect(&identity)) {
            Ok(Some(c)) => Ok(state::observed_of(&c.state.unwrap_or_default())),
            Ok(None) | Err(RuntimeError::BadHandle(_)) => Ok(Observed::Gone),
            Err(e) => Err(e),
        }
    }

    fn pause(&self, handle: &RuntimeHandle) -> Result<(), RuntimeError> {
        let identity = self.identity(handle)?;
        self.block_on(async {
            let container = self.inspect(&identity).await?.ok_or(RuntimeError::Gone)?;
            match container.state.and_then(|s| s.status) {
                Some(ContainerStateStatusEnum::PAUSED) => Ok(()),
                Some(ContainerStateStatusEnum::RUNNING | ContainerStateStatusEnum::RESTARTING) => {
                    match self.docker.pause_container(&identity.container_id).await {
                        Ok(()) => Ok(()),
                        Err(e) if is_not_found(&e) => Err(RuntimeError::Gone),
                        Err(e) => Err(io("pausing the container", &e)),
                    }
                }
                _ => Err(RuntimeError::Gone),
            }
        })
    }

    fn resume(&self, handle: &RuntimeHandle) -> Result<(), RuntimeError> {
        let identity = self.identity(handle)?;
        self.block_on(async {
            let container = self.inspect(&identity).await?.ok_or(RuntimeError::Gone)?;
            let id = &identity.container_id;
            let outcome = match container.state.and_then(|s| s.status) {
                Some(ContainerStateStatusEnum::RUNNING | ContainerStateStatusEnum::RESTARTING) => {
                    return Ok(());
                }
                Some(ContainerStateStatusEnum::PAUSED) => self.docker.unpause_container(id).await,
                Some(ContainerStateStatusEnum::EXITED | ContainerStateStatusEnum::CREATED) => {
                    self.docker.start_container(id, None).await
                }
                _ => return Err(RuntimeError::Gone),
            };
            match outcome {
                Ok(()) => Ok(()),
                Err(e) if is_not_found(&e) => Err(RuntimeError::Gone),
                Err(e) if is_port_clash(&e) => Err(RuntimeError::Io(format!(
                    "Docker: starting the container again: its host port {} is taken by \
                     another process: {}",
                    handle.host_port,
                    words(&e)
                ))),
                Err(e) => Err(io("resuming the container", &e)),
            }
        })
    }

    fn delete(&self, handle: &RuntimeHandle) -> Result<(), RuntimeError> {
        let identity = self.identity(handle)?;
        self.block_on(async {
            let container = self.inspect(&identity).await?;
            self.remove_sandbox(container.as_ref(), &identity.volume, &identity.sandbox_id)
                .await
        })?;
        self.release_port(handle.host_port);
        self.release_services(&handle.services);
        Ok(())
    }

    fn handle_after_resume(&self, handle: &RuntimeHandle) -> Option<RuntimeHandle> {
        self.moved_handle(handle)
    }

    fn log_tail(&self, handle: &RuntimeHandle, lines: usize) -> Option<String> {
        let identity = self.identity(handle).ok()?;
        self.block_on(async {
            self.inspect(&identity).await.ok()??;
            let options = LogsOptionsBuilder::default()
                .stdout(true)
                .stderr(true)
                .tail(&lines.to_string())
                .build();
            let mut stream = self.docker.logs(&identity.container_id, Some(options));
            let mut bytes = Vec::new();
            while let Some(chunk) = stream.next().await {
                bytes.extend_from_slice(chunk.ok()?.as_ref());
            }
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            Some(all[all.len().saturating_sub(lines)..].join("\n"))
        })
    }
}
