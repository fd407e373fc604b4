//! Removing a sandbox's container and workspace volume (delete, orphans), only when they
//! carry this installation's and the sandbox's labels.

use bollard::models::{ContainerInspectResponse, ContainerStateStatusEnum};
use bollard::query_parameters::{
    RemoveContainerOptionsBuilder, RemoveVolumeOptions, StopContainerOptionsBuilder,
};
use switchboard_domain::sandboxes::runtime::RuntimeError;

use crate::docker::DockerRuntime;
use crate::docker::error::{self, io, is_not_found};

impl DockerRuntime {
    /// Force-removes a container and its anonymous volumes; gone already is fine.
    pub(super) async fn remove_container(&self, id: &str) -> Result<(), RuntimeError> {
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
    pub(super) async fn remove_sandbox(
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
            .remove_volume(volume, None::<RemoveVolumeOptions>)
            .await
        {
            Ok(()) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(io(&format!("removing volume {volume}"), &e)),
        }
    }
}
