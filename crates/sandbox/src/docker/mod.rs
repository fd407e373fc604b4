//! The Docker runtime: each sandbox is a container of the spec's image (the spec's `id`, as in
//! OpenHands, reference app-server §3.3 "DockerSandboxService", §4), run by the Docker Engine
//! at `DOCKER_HOST` (a unix socket by default, or `tcp://`) through `bollard` (issue 12).
//!
//! - **Start**: the image must already be on the Docker host (it is never pulled on the
//!   request path: [`DockerRuntime::pull`] is for `switchboard specs pull` and a background
//!   pull at start); a named volume `switchboard-workspace-<sandbox id>` mounted at
//!   `/workspace`; a container `switchboard-sandbox-<sandbox id>` with the spec's command +
//!   `--host … --port …` ([`create::command`]), working directory, `initial_env` plus the
//!   session key and webhook URL (nothing else of Switchboard's environment), labels naming
//!   this installation, the sandbox, the spec and the org ([`config`]), `--init`,
//!   `host.docker.internal:host-gateway`, the spec's memory and CPU limits; on a bridge, the
//!   agent server's port published on `127.0.0.1` only, on a free port chosen by the runtime
//!   (kept when the container is started again); with host networking, the agent server on
//!   `127.0.0.1:<free port>`. Returns once the container runs, not waiting for `/alive`.
//! - **Identity**: the container's id, name and volume and this installation's id, kept in
//!   the handle ([`ContainerIdentity`]); a container without this installation's and this
//!   sandbox's labels is never acted on.
//! - **Status** ([`state`]): running → running, paused → stopped, exited → exited with the
//!   reason from its exit code (never "paused", unlike OpenHands), removed → gone. When the
//!   daemon does not answer, a container is reported running, so the `/alive` probe decides
//!   (a daemon restart must not make live sandboxes `MISSING`).
//! - **Pause / resume**: `docker pause` (the cgroup freezer) / `docker unpause`, or `docker
//!   start` for a container that had stopped.
//! - **Delete**: unpause if paused, `docker stop` with the stop timeout (then the engine
//!   kills), remove the container, remove its volume.
//!
//! The port is blocking; the runtime owns a small tokio runtime (two worker threads) and
//! blocks on it, so it must not be called from inside an async task (use a blocking pool, as
//! for every runtime).

mod config;
mod create;
mod error;
mod images;
mod inventory;
mod ports;
mod state;

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use bollard::Docker;
use bollard::models::{ContainerInspectResponse, ContainerStateStatusEnum, VolumeCreateRequest};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, LogsOptionsBuilder, RemoveContainerOptionsBuilder,
    StopContainerOptionsBuilder,
};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use switchboard_domain::OrgId;
use switchboard_domain::sandboxes::runtime::{
    LaunchSpec, Observed, RuntimeError, RuntimeHandle, SandboxRuntime,
};

pub use config::{
    CONTAINER_PREFIX, DEFAULT_CONTAINER_PORT, DEFAULT_STOP_TIMEOUT, DEFAULT_WORKSPACE_MOUNT,
    DockerConfig, DockerNetwork, HOST_GATEWAY_ENTRY, LABEL_INSTALLATION, LABEL_ORG_ID,
    LABEL_SANDBOX_ID, LABEL_SPEC_ID, RUNTIME_NAME, VOLUME_PREFIX,
};
pub use error::DockerError;
pub use images::normalize_reference;
pub use inventory::SandboxContainer;
pub use state::exit_reason;

use error::{io, is_not_found, is_port_clash, words};
use ports::PortPool;

/// The Docker host used when `DOCKER_HOST` is unset or empty.
pub const DEFAULT_DOCKER_HOST: &str = "unix:///var/run/docker.sock";
/// How long one request to the daemon may take (a stop adds the stop timeout to this).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How many host ports a start tries when the chosen one is taken in the meantime.
const PORT_ATTEMPTS: usize = 5;

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
        if handle.runtime != RUNTIME_NAME {
            return Err(RuntimeError::BadHandle(format!(
                "made by the {:?} runtime, not {RUNTIME_NAME:?}",
                handle.runtime
            )));
        }
        serde_json::from_value(handle.data.clone())
            .map_err(|e| RuntimeError::BadHandle(format!("container data: {e}")))
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
    ports: PortPool,
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
    /// [`DockerError::Config`] for a bad configuration; [`DockerError::Unavailable`] when no
    /// daemon answers at `host` or the address cannot be used.
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
        let docker = tokio
            .block_on(async {
                let docker = docker.with_timeout(timeout).negotiate_version().await?;
                docker.ping().await?;
                Ok::<_, bollard::errors::Error>(docker)
            })
            .map_err(|e| unavailable(words(&e)))?;
        Ok(DockerRuntime {
            docker,
            tokio: Some(tokio),
            host: host.to_owned(),
            config,
            ports: PortPool::default(),
        })
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

    /// Starts a sandbox as [`SandboxRuntime::start`] does, with the org in the container's
    /// [`LABEL_ORG_ID`] label when it is known at start (not for a warm-pool sandbox).
    ///
    /// # Errors
    /// [`RuntimeError::InvalidSpec`] for a relative working directory or a bad variable;
    /// [`RuntimeError::Launch`] when the image is not on the Docker host ("never pulled on
    /// the request path"), or the daemon refuses to create or start the container (its
    /// words). Nothing is left behind on error.
    pub fn start_for_org(
        &self,
        launch: &LaunchSpec,
        org_id: Option<&OrgId>,
    ) -> Result<RuntimeHandle, RuntimeError> {
        let labels = create::labels(&self.config, launch, org_id);
        // Checked before anything is created.
        let working_dir = create::working_dir(&launch.spec.working_dir)?;
        crate::launch::environment(launch)?;
        self.block_on(self.start_async(launch, labels, working_dir))
    }

    async fn start_async(
        &self,
        launch: &LaunchSpec,
        labels: HashMap<String, String>,
        working_dir: Option<String>,
    ) -> Result<RuntimeHandle, RuntimeError> {
        let image_dir = self.image_working_dir(&launch.spec.id).await?;
        let volume = create::volume_name(launch);
        self.create_volume(&volume, &labels, launch).await?;
        let started = self.create_and_start(launch, &labels).await;
        let (container_id, port) = match started {
            Ok(ok) => ok,
            Err(e) => {
                let _ = self
                    .docker
                    .remove_volume(
                        &volume,
                        None::<bollard::query_parameters::RemoveVolumeOptions>,
                    )
                    .await;
                return Err(e);
            }
        };
        let address = self.config.publish_address;
        let sandbox_port = match self.config.network {
            DockerNetwork::Bridge => self.config.container_port,
            DockerNetwork::Host => port,
        };
        let identity = ContainerIdentity {
            container_id,
            container_name: create::container_name(launch),
            volume,
            installation: self.config.installation.clone(),
            sandbox_id: launch.sandbox_id.to_string(),
        };
        Ok(RuntimeHandle {
            runtime: RUNTIME_NAME.to_owned(),
            agent_server_url: format!("http://{address}:{port}"),
            host_port: port,
            sandbox_port,
            // For containers: the working directory inside the container.
            working_dir: PathBuf::from(working_dir.or(image_dir).unwrap_or_else(|| "/".into())),
            data: serde_json::to_value(identity).expect("an identity always serializes"),
        })
    }

    /// The image's working directory; a clear error when the image is not on the host.
    async fn image_working_dir(&self, image: &str) -> Result<Option<String>, RuntimeError> {
        match self.docker.inspect_image(image).await {
            Ok(inspect) => Ok(inspect
                .config
                .and_then(|c| c.working_dir)
                .filter(|d| !d.is_empty())),
            Err(e) if is_not_found(&e) => Err(missing_image(image)),
            Err(e) => Err(RuntimeError::Launch(format!(
                "Docker: inspecting image {image}: {}",
                words(&e)
            ))),
        }
    }

    /// Creates the workspace volume (the daemon answers with the existing one when the name
    /// is taken: it must then be this sandbox's).
    async fn create_volume(
        &self,
        volume: &str,
        labels: &HashMap<String, String>,
        launch: &LaunchSpec,
    ) -> Result<(), RuntimeError> {
        let request = VolumeCreateRequest {
            name: Some(volume.to_owned()),
            labels: Some(labels.clone()),
            ..Default::default()
        };
        let created = self.docker.create_volume(request).await.map_err(|e| {
            RuntimeError::Launch(format!("Docker: creating volume {volume}: {}", words(&e)))
        })?;
        if self.ours(Some(&created.labels), &launch.sandbox_id.to_string()) {
            Ok(())
        } else {
            Err(RuntimeError::Launch(format!(
                "volume {volume} already exists and is not this sandbox's"
            )))
        }
    }

    /// Creates and starts the container on a free host port, trying another port when the
    /// chosen one was taken in the meantime. Returns the container's id and the port.
    async fn create_and_start(
        &self,
        launch: &LaunchSpec,
        labels: &HashMap<String, String>,
    ) -> Result<(String, u16), RuntimeError> {
        let name = create::container_name(launch);
        let mut last_clash = String::new();
        for _ in 0..PORT_ATTEMPTS {
            let port = self.ports.reserve(self.config.publish_address)?;
            let body = create::container_body(launch, &self.config, labels.clone(), port)
                .inspect_err(|_| self.ports.release(port))?;
            let options = CreateContainerOptionsBuilder::default().name(&name).build();
            let id = match self.docker.create_container(Some(options), body).await {
                Ok(created) => created.id,
                Err(e) => {
                    self.ports.release(port);
                    return Err(match e {
                        e if is_not_found(&e) => missing_image(&launch.spec.id),
                        e => RuntimeError::Launch(format!(
                            "Docker: creating container {name}: {}",
                            words(&e)
                        )),
                    });
                }
            };
            match self.docker.start_container(&id, None).await {
                Ok(()) => return Ok((id, port)),
                Err(e) => {
                    self.remove_container(&id).await.ok();
                    self.ports.release(port);
                    if !is_port_clash(&e) {
                        return Err(RuntimeError::Launch(format!(
                            "Docker: starting container {name}: {}",
                            words(&e)
                        )));
                    }
                    last_clash = words(&e);
                }
            }
        }
        Err(RuntimeError::Launch(format!(
            "Docker: starting container {name}: no free host port after {PORT_ATTEMPTS} \
             tries: {last_clash}"
        )))
    }

    /// Force-removes a container and its anonymous volumes; gone already is fine.
    async fn remove_container(&self, id: &str) -> Result<(), RuntimeError> {
        let options = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        match self.docker.remove_container(id, Some(options)).await {
            Ok(()) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(io(&format!("removing container {id}"), &e)),
        }
    }

    /// Stops (unpausing first), then removes the container `id` and the volume `volume`,
    /// both only if they carry this installation's and `sandbox_id`'s labels.
    async fn remove_sandbox(
        &self,
        container: Option<&ContainerInspectResponse>,
        volume: &str,
        sandbox_id: &str,
    ) -> Result<(), RuntimeError> {
        if let Some(c) = container {
            let id = c.id.clone().unwrap_or_default();
            let status = c.state.as_ref().and_then(|s| s.status);
            if status == Some(ContainerStateStatusEnum::PAUSED) {
                let _ = self.docker.unpause_container(&id).await;
            }
            let secs = i32::try_from(self.config.stop_timeout.as_secs()).unwrap_or(i32::MAX);
            let stop = StopContainerOptionsBuilder::default().t(secs).build();
            match self.docker.stop_container(&id, Some(stop)).await {
                // 304: already stopped.
                Ok(()) => {}
                Err(e) if is_not_found(&e) || error::status_of(&e) == Some(304) => {}
                Err(e) => return Err(io(&format!("stopping container {id}"), &e)),
            }
            self.remove_container(&id).await?;
        }
        match self.docker.inspect_volume(volume).await {
            Ok(v) if self.ours(Some(&v.labels), sandbox_id) => {}
            Ok(_) => {
                return Err(RuntimeError::BadHandle(format!(
                    "volume {volume} is not sandbox {sandbox_id}'s"
                )));
            }
            Err(e) if is_not_found(&e) => return Ok(()),
            Err(e) => return Err(io(&format!("inspecting volume {volume}"), &e)),
        }
        match self
            .docker
            .remove_volume(
                volume,
                None::<bollard::query_parameters::RemoveVolumeOptions>,
            )
            .await
        {
            Ok(()) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(io(&format!("removing volume {volume}"), &e)),
        }
    }
}

/// The error of a start whose image is not on the Docker host.
fn missing_image(image: &str) -> RuntimeError {
    RuntimeError::Launch(format!(
        "the image {image} is not on the Docker host; images are never pulled when a sandbox \
         starts: pull it first (`switchboard specs pull`, or `docker pull {image}`)"
    ))
}

impl SandboxRuntime for DockerRuntime {
    fn name(&self) -> &'static str {
        RUNTIME_NAME
    }

    fn start(&self, launch: &LaunchSpec) -> Result<RuntimeHandle, RuntimeError> {
        self.start_for_org(launch, None)
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
        self.ports.release(handle.host_port);
        Ok(())
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
