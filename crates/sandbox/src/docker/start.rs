//! Starting a sandbox's container: the image checked (never pulled), the workspace volume,
//! the container created and started on a free host port (none when unpublished), and the handle
//! that finds it again.

use std::collections::HashMap;
use std::path::PathBuf;

use bollard::models::VolumeCreateRequest;
use bollard::query_parameters::{CreateContainerOptionsBuilder, RemoveVolumeOptions};
use switchboard_domain::OrgId;
use switchboard_domain::sandboxes::runtime::{LaunchSpec, RuntimeError, RuntimeHandle};
use switchboard_domain::sandboxes::services::ServiceEndpoint;

use crate::docker::config::{DockerNetwork, RUNTIME_NAME};
use crate::docker::error::{DockerError, is_not_found, is_port_clash, words};
use crate::docker::{ContainerIdentity, DockerRuntime, ImageFacts, create};

/// Passthrough variables a container never gets: the host's `PATH`, `HOME` and `LANG` (which
/// the process runtime always passes) name the host's files, not the image's; the image sets
/// its own. A spec's `initial_env` can still set them.
pub const HOST_ONLY_VARIABLES: [&str; 3] = ["PATH", "HOME", "LANG"];

/// How many host ports a start tries when the chosen one is taken in the meantime.
const PORT_ATTEMPTS: usize = 5;

impl DockerRuntime {
    /// Starts a sandbox as [`SandboxRuntime::start`](switchboard_domain::sandboxes::runtime::SandboxRuntime::start) does, with the org in the container's
    /// [`LABEL_ORG_ID`](crate::docker::LABEL_ORG_ID) label when it is known at start (not for a warm-pool sandbox).
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
        let launch = &self.for_container(launch);
        let labels = create::labels(&self.config, launch, org_id);
        // Checked before anything is created.
        let working_dir = create::working_dir(&launch.spec.working_dir)?;
        crate::launch::environment(launch, self.config.container_port)?;
        // The rules again before each start: host names resolved now, this webhook's port.
        if self.config.network == DockerNetwork::Bridge {
            self.prepare_network(launch)
                .map_err(|e| RuntimeError::Launch(e.to_string()))?;
        }
        self.block_on(self.start_async(launch, labels, working_dir))
    }

    /// Makes sure of the bridge network `launch`'s container joins ([`create::network_of`]: a
    /// spec with egress lists of its own has one of them) and loads its egress rules, host
    /// names resolved now and this webhook's port open.
    fn prepare_network(&self, launch: &LaunchSpec) -> Result<(), DockerError> {
        let network = create::network_of(&self.config, &launch.spec);
        if network != self.config.bridge_network {
            self.block_on(self.ensure_network(&network))?;
        }
        self.load_egress(
            &network,
            Some(&launch.webhook_base_url),
            &launch.spec.egress,
        )
    }

    /// `launch` as a container gets it: the configured webhook URL in place of the
    /// launch's ([`DockerConfig::webhook_base_url`](crate::docker::DockerConfig::webhook_base_url)),
    /// and without the passthrough variables that describe the host rather than the image
    /// ([`HOST_ONLY_VARIABLES`]).
    fn for_container(&self, launch: &LaunchSpec) -> LaunchSpec {
        let mut l = launch.clone();
        if let Some(url) = &self.config.webhook_base_url {
            l.webhook_base_url.clone_from(url);
        }
        l.passthrough_env
            .retain(|(name, _)| !HOST_ONLY_VARIABLES.contains(&name.as_str()));
        l
    }

    async fn start_async(
        &self,
        launch: &LaunchSpec,
        labels: HashMap<String, String>,
        working_dir: Option<String>,
    ) -> Result<RuntimeHandle, RuntimeError> {
        let image = self.image_facts(&launch.spec.id).await?;
        let volume = create::volume_name(launch);
        self.create_volume(&volume, &labels, launch).await?;
        let started = self.create_and_start(launch, &labels, &image).await;
        let (container_id, port, mut services) = match started {
            Ok(ok) => ok,
            Err(e) => {
                let _ = self
                    .docker
                    .remove_volume(&volume, None::<RemoveVolumeOptions>)
                    .await;
                return Err(e);
            }
        };
        let (agent_server_url, sandbox_port) = match self.config.network {
            DockerNetwork::Bridge if !self.config.publish_ports => {
                match self.network_address(&container_id).await {
                    Ok(ip) => {
                        for s in &mut services {
                            s.url = format!("http://{ip}:{}", s.sandbox_port);
                        }
                        (self.network_url(ip), self.config.container_port)
                    }
                    Err(e) => {
                        self.remove_container(&container_id).await.ok();
                        let _ = self
                            .docker
                            .remove_volume(&volume, None::<RemoveVolumeOptions>)
                            .await;
                        return Err(e);
                    }
                }
            }
            DockerNetwork::Bridge => (
                format!("http://{}:{port}", self.config.publish_address),
                self.config.container_port,
            ),
            DockerNetwork::Host => (
                format!("http://{}:{port}", self.config.publish_address),
                port,
            ),
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
            agent_server_url,
            host_port: port,
            sandbox_port,
            // For containers: the working directory inside the container.
            working_dir: PathBuf::from(
                working_dir
                    .or(image.working_dir)
                    .unwrap_or_else(|| "/".into()),
            ),
            // The workspace volume's `project/` (`/workspace/project` by default), as in
            // OpenHands' image: kept on the volume through pause and resume.
            project_dir: Some(format!(
                "{}/project",
                self.config.workspace_mount.trim_end_matches('/')
            )),
            data: serde_json::to_value(identity).expect("an identity always serializes"),
            services,
        })
    }

    /// The services `launch`'s spec exposes besides the agent server (issue 22), each on its
    /// OpenHands container port ([`ExposedService::container_port`]): published on a free
    /// host port of its own on a bridge that publishes, reached at the container's address
    /// on one that does not (the URL is written once the address is known), on the host's
    /// port of that number with host networking.
    ///
    /// # Errors
    /// [`RuntimeError::Launch`] when no host port can be had (those taken are given back).
    ///
    /// [`ExposedService::container_port`]: switchboard_domain::sandboxes::services::ExposedService::container_port
    fn service_endpoints(&self, launch: &LaunchSpec) -> Result<Vec<ServiceEndpoint>, RuntimeError> {
        let mut services = Vec::with_capacity(launch.spec.exposed_services.len());
        for service in &launch.spec.exposed_services {
            let inside = service.container_port();
            let host_port = if self.config.publishes() {
                match self.ports.reserve(self.config.publish_address) {
                    Ok(p) => p,
                    Err(e) => {
                        self.release_services(&services);
                        return Err(e);
                    }
                }
            } else {
                inside
            };
            services.push(ServiceEndpoint {
                service: *service,
                url: format!("http://{}:{host_port}", self.config.publish_address),
                host_port,
                sandbox_port: inside,
            });
        }
        Ok(services)
    }

    /// Gives the host ports of `services` back to the pool.
    pub(super) fn release_services(&self, services: &[ServiceEndpoint]) {
        for s in services {
            self.release_port(s.host_port);
        }
    }

    /// What the container needs to know of its image (working directory, user, declared
    /// tmpfs); a clear error when the image is not on the host.
    async fn image_facts(&self, image: &str) -> Result<ImageFacts, RuntimeError> {
        match self.docker.inspect_image(image).await {
            Ok(inspect) => {
                let c = inspect.config.unwrap_or_default();
                Ok(ImageFacts::new(
                    c.user.as_deref(),
                    c.working_dir.as_deref(),
                    c.labels.as_ref(),
                ))
            }
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
    /// chosen one was taken in the meantime. Returns the container's id, the port and the
    /// other exposed services' endpoints.
    async fn create_and_start(
        &self,
        launch: &LaunchSpec,
        labels: &HashMap<String, String>,
        image: &ImageFacts,
    ) -> Result<(String, u16, Vec<ServiceEndpoint>), RuntimeError> {
        let name = create::container_name(launch);
        let mut last_clash = String::new();
        for _ in 0..PORT_ATTEMPTS {
            // Unpublished: no host port (the handle's `host_port` is the container's port).
            let port = if self.config.publishes() {
                self.ports.reserve(self.config.publish_address)?
            } else {
                self.config.container_port
            };
            let services = self
                .service_endpoints(launch)
                .inspect_err(|_| self.release_port(port))?;
            let release = || {
                self.release_port(port);
                self.release_services(&services);
            };
            let body = create::container_body(
                launch,
                &self.config,
                labels.clone(),
                port,
                &services,
                image,
            )
            .inspect_err(|_| release())?;
            let options = CreateContainerOptionsBuilder::default().name(&name).build();
            let id = match self.docker.create_container(Some(options), body).await {
                Ok(created) => created.id,
                Err(e) => {
                    release();
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
                Ok(()) => return Ok((id, port, services)),
                Err(e) => {
                    self.remove_container(&id).await.ok();
                    release();
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
}

/// The error of a start whose image is not on the Docker host.
fn missing_image(image: &str) -> RuntimeError {
    RuntimeError::Launch(format!(
        "the image {image} is not on the Docker host; images are never pulled when a sandbox \
         starts: pull it first (`switchboard specs pull`, or `docker pull {image}`)"
    ))
}
