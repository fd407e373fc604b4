//! Starting, pausing, resuming and removing a sandbox's objects (issue 32), as the runtime
//! port's operations run them on the runtime's own tokio runtime.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, PropagationPolicy};
use serde_json::json;
use switchboard_domain::sandboxes::runtime::{LaunchSpec, RuntimeError, RuntimeHandle};
use switchboard_domain::sandboxes::services::ServiceEndpoint;

use crate::docker::HOST_ONLY_VARIABLES;
use crate::kubernetes::config::Reach;
use crate::kubernetes::config::{ANNOTATION_PAUSED, RUNTIME_NAME};
use crate::kubernetes::error::{io, is_conflict, is_not_found, words};
use crate::kubernetes::{KubernetesRuntime, PodIdentity, forward, objects, state};

/// How often a wait for a pod's address or disappearance looks at the cache.
const POLL: Duration = Duration::from_millis(100);
/// How long a write waits for the watch to bring it into the cache.
const CACHE_LAG: Duration = Duration::from_secs(5);

impl KubernetesRuntime {
    /// `launch` as a pod gets it: the configured webhook URL in place of the launch's, and
    /// without the passthrough variables that describe Switchboard's host, not the image
    /// ([`HOST_ONLY_VARIABLES`]).
    fn for_pod(&self, launch: &LaunchSpec) -> LaunchSpec {
        let mut l = launch.clone();
        if let Some(url) = &self.config.webhook_base_url {
            l.webhook_base_url.clone_from(url);
        }
        l.passthrough_env
            .retain(|(name, _)| !HOST_ONLY_VARIABLES.contains(&name.as_str()));
        l
    }

    /// Creates the claim, the secret and the pod, and waits for the pod's address.
    ///
    /// # Errors
    /// [`RuntimeError::InvalidSpec`] for a relative working directory or a bad variable;
    /// [`RuntimeError::Launch`] when the API server refuses an object (its words) or the pod
    /// gets no address within [`KubernetesConfig::address_timeout`](crate::kubernetes::KubernetesConfig::address_timeout)
    /// (the scheduler's or the kubelet's words). Nothing is left behind on error.
    pub(super) async fn start_async(
        &self,
        launch: &LaunchSpec,
    ) -> Result<RuntimeHandle, RuntimeError> {
        let launch = &self.for_pod(launch);
        let sandbox_id = launch.sandbox_id.to_string();
        let name = objects::object_name(&sandbox_id);
        // Everything checked before anything is created.
        let manifest = objects::pod(&self.config, launch)?;
        crate::launch::environment(launch, self.config.agent_port)?;
        let made = self.create_objects(launch, &manifest).await;
        let placed = match made {
            Ok(()) => self.wait_for_address(&name, &sandbox_id).await,
            Err(e) => Err(e),
        };
        match placed {
            Ok(pod) => self.handle_for(launch, &pod, manifest),
            Err(e) => {
                if let Err(cleanup) = self.remove(&name, &sandbox_id).await {
                    tracing::warn!(sandbox = %sandbox_id, error = %cleanup,
                        "removing a sandbox's objects after its start failed");
                }
                Err(e)
            }
        }
    }

    async fn create_objects(
        &self,
        launch: &LaunchSpec,
        manifest: &Pod,
    ) -> Result<(), RuntimeError> {
        let refused = |what: &str, e: &kube::Error| {
            RuntimeError::Launch(format!(
                "Kubernetes refused the sandbox's {what}: {}",
                words(e)
            ))
        };
        let post = PostParams::default();
        let claim = self
            .claims_api()
            .create(&post, &objects::workspace_claim(&self.config, launch))
            .await
            .map_err(|e| refused("workspace claim", &e))?;
        let name = claim.metadata.name.clone().unwrap_or_default();
        let uid = claim.metadata.uid.clone().unwrap_or_default();
        let secret = objects::environment_secret(&self.config, launch, (&name, &uid))?;
        self.secrets_api()
            .create(&post, &secret)
            .await
            .map_err(|e| refused("environment secret", &e))?;
        self.pods_api()
            .create(&post, manifest)
            .await
            .map_err(|e| refused("pod", &e))?;
        Ok(())
    }

    /// The pod once it has an address, from the cache.
    ///
    /// # Errors
    /// [`RuntimeError::Launch`] when it has none within the address timeout, or ended or
    /// disappeared first.
    async fn wait_for_address(&self, name: &str, sandbox_id: &str) -> Result<Pod, RuntimeError> {
        let deadline = Instant::now() + self.config.address_timeout;
        let mut last: Option<Pod> = None;
        while Instant::now() < deadline {
            if let Some(pod) = self
                .pods
                .get(name)
                .filter(|p| self.ours(&p.metadata, sandbox_id))
            {
                if state::pod_ip(&pod).is_some() {
                    return Ok((*pod).clone());
                }
                if let switchboard_domain::sandboxes::runtime::Observed::Exited { reason } =
                    state::observed_of(Some(&pod), None)
                {
                    return Err(RuntimeError::Launch(format!(
                        "the pod cannot run: {reason}"
                    )));
                }
                last = Some((*pod).clone());
            }
            tokio::time::sleep(POLL).await;
        }
        Err(RuntimeError::Launch(format!(
            "the pod got no address within {} s: {}",
            self.config.address_timeout.as_secs(),
            last.as_ref()
                .map_or_else(|| "it never appeared".to_owned(), state::pending_reason)
        )))
    }

    /// The handle of `pod`, placed and addressed: its URLs at the pod's address, or at loopback
    /// ports of their own for [`Reach::PortForward`].
    ///
    /// # Errors
    /// [`RuntimeError::Launch`] when no loopback port can be had.
    fn handle_for(
        &self,
        launch: &LaunchSpec,
        pod: &Pod,
        manifest: Pod,
    ) -> Result<RuntimeHandle, RuntimeError> {
        let forwarded = self.config.reach == Reach::PortForward;
        let (ip, port) = if forwarded {
            ("127.0.0.1".to_owned(), forward::free_port()?)
        } else {
            (
                state::pod_ip(pod).unwrap_or_default(),
                self.config.agent_port,
            )
        };
        let identity = PodIdentity {
            namespace: self.config.namespace.clone(),
            name: objects::object_name(&launch.sandbox_id.to_string()),
            installation: self.config.installation.clone(),
            sandbox_id: launch.sandbox_id.to_string(),
            node: state::node_of(pod).map(str::to_owned),
            forwarded,
            manifest,
        };
        let mut services = Vec::with_capacity(launch.spec.exposed_services.len());
        for s in &launch.spec.exposed_services {
            let local = if forwarded {
                forward::free_port()?
            } else {
                s.container_port()
            };
            services.push(ServiceEndpoint {
                service: *s,
                url: format!("http://{ip}:{local}"),
                host_port: local,
                sandbox_port: s.container_port(),
            });
        }
        let working_dir = objects::working_dir(&launch.spec.working_dir)
            .ok()
            .flatten()
            .unwrap_or_else(|| "/".to_owned());
        Ok(RuntimeHandle {
            runtime: RUNTIME_NAME.to_owned(),
            agent_server_url: format!("http://{ip}:{port}"),
            host_port: port,
            sandbox_port: self.config.agent_port,
            working_dir: PathBuf::from(working_dir),
            project_dir: Some(format!(
                "{}/project",
                self.config.workspace_mount.trim_end_matches('/')
            )),
            data: serde_json::to_value(identity).expect("an identity always serializes"),
            services,
        })
    }

    /// Marks the claim paused, then deletes the pod (its agent server gets SIGTERM and the
    /// stop timeout).
    ///
    /// # Errors
    /// [`RuntimeError::Gone`] when neither pod nor claim is there; the API server's failures.
    pub(super) async fn pause_async(&self, identity: &PodIdentity) -> Result<(), RuntimeError> {
        self.mark_paused(identity, true).await?;
        match self
            .pods_api()
            .delete(&identity.name, &DeleteParams::default())
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(io("deleting the pod", &e)),
        }
    }

    /// Sets or clears the claim's paused mark.
    ///
    /// # Errors
    /// [`RuntimeError::Gone`] when the claim is not there (or not this sandbox's).
    async fn mark_paused(&self, identity: &PodIdentity, paused: bool) -> Result<(), RuntimeError> {
        let claims = self.claims_api();
        let claim = claims
            .get_opt(&identity.name)
            .await
            .map_err(|e| io("reading the workspace claim", &e))?
            .filter(|c| self.ours(&c.metadata, &identity.sandbox_id))
            .ok_or(RuntimeError::Gone)?;
        if claim.metadata.deletion_timestamp.is_some() {
            return Err(RuntimeError::Gone);
        }
        let value = if paused { json!("true") } else { json!(null) };
        let patch = json!({"metadata": {"annotations": {ANNOTATION_PAUSED: value}}});
        claims
            .patch(
                &identity.name,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(|e| io("marking the workspace claim", &e))?;
        // Observing reads the cache: the mark is there before this returns (the watch lags
        // a write by milliseconds; a watch that fails is reported by observe as such).
        let deadline = Instant::now() + CACHE_LAG;
        while Instant::now() < deadline
            && self
                .claims
                .get(&identity.name)
                .is_none_or(|c| state::is_paused(&c) != paused)
        {
            tokio::time::sleep(POLL / 10).await;
        }
        Ok(())
    }

    /// Makes the pod again from its manifest (after the paused one is gone), clears the
    /// paused mark, and waits for the new pod's address: the handle with it, when it moved.
    ///
    /// # Errors
    /// [`RuntimeError::Gone`] when the claim is not there; [`RuntimeError::Io`] when the pod
    /// cannot be made or gets no address in time.
    pub(super) async fn resume_async(
        &self,
        handle: &RuntimeHandle,
        identity: &PodIdentity,
    ) -> Result<Option<RuntimeHandle>, RuntimeError> {
        let pods = self.pods_api();
        let wait_gone = Instant::now() + self.config.stop_timeout + Duration::from_secs(120);
        loop {
            match pods.get_opt(&identity.name).await {
                Ok(Some(p)) if p.metadata.deletion_timestamp.is_none() => {
                    // Running (or starting) already.
                    self.mark_paused(identity, false).await?;
                    return Ok(None);
                }
                Ok(Some(_)) if Instant::now() < wait_gone => tokio::time::sleep(POLL * 5).await,
                Ok(Some(_)) => {
                    return Err(RuntimeError::Io(
                        "Kubernetes: the paused pod is still being deleted; resume again later"
                            .into(),
                    ));
                }
                Ok(None) => break,
                Err(e) => return Err(io("reading the pod", &e)),
            }
        }
        // Check the claim is there (and mark it) before the pod is made.
        self.mark_paused(identity, true).await?;
        let mut manifest = identity.manifest.clone();
        manifest.metadata.resource_version = None;
        manifest.metadata.uid = None;
        manifest.status = None;
        match pods.create(&PostParams::default(), &manifest).await {
            Ok(_) => {}
            Err(e) if is_conflict(&e) => {}
            Err(e) => return Err(io("making the pod again", &e)),
        }
        self.mark_paused(identity, false).await?;
        let pod = self
            .wait_for_address(&identity.name, &identity.sandbox_id)
            .await
            .map_err(|e| RuntimeError::Io(e.to_string()))?;
        let mut moved = handle.clone();
        if !identity.forwarded {
            // A forward's loopback URL stays; a pod's address changes with the pod.
            let ip = state::pod_ip(&pod).unwrap_or_default();
            moved.agent_server_url = format!("http://{ip}:{}", self.config.agent_port);
            for s in &mut moved.services {
                s.url = format!("http://{ip}:{}", s.sandbox_port);
            }
        }
        let mut data = identity.clone();
        data.node = state::node_of(&pod).map(str::to_owned);
        moved.data = serde_json::to_value(data).expect("an identity always serializes");
        Ok((moved != *handle).then_some(moved))
    }

    /// Deletes the pod, the claim and the secret named `name` when they are `sandbox_id`'s of
    /// this installation; what is not there is fine.
    ///
    /// # Errors
    /// [`RuntimeError::Io`] when the API server fails a deletion.
    pub(super) async fn remove(&self, name: &str, sandbox_id: &str) -> Result<(), RuntimeError> {
        let background = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        if let Some(pod) = self
            .pods_api()
            .get_opt(name)
            .await
            .map_err(|e| io("reading the pod", &e))?
            && self.ours(&pod.metadata, sandbox_id)
        {
            ok_if_gone(
                self.pods_api().delete(name, &background).await,
                "deleting the pod",
            )?;
        }
        if let Some(claim) = self
            .claims_api()
            .get_opt(name)
            .await
            .map_err(|e| io("reading the workspace claim", &e))?
            && self.ours(&claim.metadata, sandbox_id)
        {
            ok_if_gone(
                self.claims_api().delete(name, &background).await,
                "deleting the workspace claim",
            )?;
        }
        if let Some(secret) = self
            .secrets_api()
            .get_opt(name)
            .await
            .map_err(|e| io("reading the environment secret", &e))?
            && self.ours(&secret.metadata, sandbox_id)
        {
            ok_if_gone(
                self.secrets_api().delete(name, &background).await,
                "deleting the environment secret",
            )?;
        }
        Ok(())
    }
}

/// `Ok` for a deletion that succeeded or found nothing to delete.
fn ok_if_gone<T>(result: Result<T, kube::Error>, doing: &str) -> Result<(), RuntimeError> {
    match result {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(io(doing, &e)),
    }
}
