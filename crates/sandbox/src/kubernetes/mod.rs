//! The Kubernetes runtime (issue 32; docs/kubernetes.md): each sandbox is a pod of the spec's
//! image with a PersistentVolumeClaim for its `/workspace`, in one namespace, through the API
//! server (`kube`, `k8s-openapi`). Scheduling, placement, restarts, volumes and limits are
//! Kubernetes'; Switchboard only creates, watches and removes its objects.
//!
//! - **Start** (`lifecycle.rs`): the claim ([`objects::workspace_claim`]), a secret holding the
//!   whole environment (session key, webhook URL, passthrough and spec variables) owned by the
//!   claim, and the pod ([`objects::pod`]: confined, labelled, probed, limited); returns once
//!   the pod has an address (the scheduler placed it and its node started it), not waiting
//!   for `/alive`.
//! - **Identity**: the pod's namespace and name, this installation's id and the sandbox's, and
//!   the pod's manifest (no secret in it) to make it again ([`PodIdentity`]); an object without
//!   this installation's and this sandbox's labels is never acted on.
//! - **Status** ([`state`]): from watch-fed caches of this installation's pods and claims
//!   (`cache.rs`), never a request per sandbox. While the watch fails, `observe` reports a
//!   running pod and `try_observe` an error, so an API server that does not answer never
//!   makes sandboxes `MISSING`.
//! - **Pause / resume**: pause marks the claim paused and deletes the pod (the workspace stays
//!   on the claim); resume makes the pod again from its manifest (the scheduler may pick
//!   another node where the volume allows; the new address is returned by
//!   `handle_after_resume`).
//! - **Delete**: the pod, the claim and the secret.
//! - **Reach**: the pod's address on the cluster network (`http://<pod IP>:8000`), which
//!   Switchboard must be able to route to (a replica in the cluster, or a host with routes to
//!   the pod network); clients reach sandboxes only through Switchboard.
//!
//! The port is blocking; the runtime owns a small tokio runtime (two worker threads) that
//! also runs the watches, and blocks on it: never call it from inside an async task.

mod cache;
pub mod config;
mod error;
mod forward;
mod lifecycle;
pub mod objects;
pub mod state;
pub mod upkeep;

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret};
use kube::api::LogParams;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client};
use serde::{Deserialize, Serialize};
use switchboard_domain::sandboxes::runtime::{
    LaunchSpec, Observed, RuntimeError, RuntimeHandle, SandboxRuntime,
};

pub use config::{
    ANNOTATION_PAUSED, ANNOTATION_SPEC_ID, KubernetesConfig, LABEL_INSTALLATION, LABEL_ORG_ID,
    LABEL_SANDBOX_ID, LABEL_USER_ID, RUNTIME_NAME, Reach,
};
pub use error::KubernetesError;

use cache::Watched;
use error::words;

/// How long sending one request to the API server may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connecting waits for the first listing of pods and claims.
const FIRST_LISTING: Duration = Duration::from_secs(30);

/// A sandbox's pod: what [`RuntimeHandle::data`] holds for this runtime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PodIdentity {
    /// The namespace of the pod, claim and secret.
    pub namespace: String,
    /// Their name (`sb-<sandbox id>`).
    pub name: String,
    /// The installation that made them ([`KubernetesConfig::installation`]).
    pub installation: String,
    /// The sandbox's id (the value of its [`LABEL_SANDBOX_ID`] label).
    pub sandbox_id: String,
    /// The node the pod was placed on when this handle was made.
    #[serde(default)]
    pub node: Option<String>,
    /// Whether the handle's URLs are loopback port-forwards through the API server
    /// ([`Reach::PortForward`]) rather than the pod's address.
    #[serde(default)]
    pub forwarded: bool,
    /// The pod's manifest as created (no status, no secret: the environment is in the
    /// secret), so resume makes the same pod again.
    pub manifest: Pod,
}

impl PodIdentity {
    /// The identity kept in a handle made by a Kubernetes runtime.
    ///
    /// # Errors
    /// [`RuntimeError::BadHandle`] for another runtime's handle or unreadable data.
    pub fn of(handle: &RuntimeHandle) -> Result<Self, RuntimeError> {
        handle.data_of(RUNTIME_NAME, "pod data")
    }
}

/// The Kubernetes runtime; one per Switchboard (share it behind an `Arc`). A fresh one, as
/// after a restart, finds the pods of earlier ones from their handles (and, for the orphan
/// sweep, by label) and touches nothing else.
pub struct KubernetesRuntime {
    client: Client,
    /// Always `Some` until dropped (taken by `Drop` to shut it down without blocking).
    tokio: Option<tokio::runtime::Runtime>,
    config: KubernetesConfig,
    server: String,
    pods: Watched<Pod>,
    claims: Watched<PersistentVolumeClaim>,
    /// Handles made by a resume that moved the pod, until `handle_after_resume` takes them.
    moved: Mutex<HashMap<String, RuntimeHandle>>,
    /// The loopback port-forwards ([`Reach::PortForward`]).
    forwards: forward::Forwards,
}

impl std::fmt::Debug for KubernetesRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubernetesRuntime")
            .field("server", &self.server)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Drop for KubernetesRuntime {
    fn drop(&mut self) {
        if let Some(tokio) = self.tokio.take() {
            tokio.shutdown_background();
        }
    }
}

impl KubernetesRuntime {
    /// Connects to the API server named by `kubeconfig` (its current context), or, with
    /// `None`, by `KUBECONFIG`, `~/.kube/config`, or the pod's own service account when
    /// Switchboard runs in the cluster; checks that the server answers and that the runtime
    /// may list claims in its namespace, and starts the watches of this installation's pods
    /// and claims.
    ///
    /// # Errors
    /// [`KubernetesError::Config`] for a bad configuration or kubeconfig;
    /// [`KubernetesError::Unavailable`] when the API server does not answer or refuses the
    /// credentials; [`KubernetesError::Api`] when the runtime may not use its namespace.
    pub fn connect(
        kubeconfig: Option<&Path>,
        config: KubernetesConfig,
    ) -> Result<Self, KubernetesError> {
        config.validate()?;
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("kube-client")
            .enable_all()
            .build()
            .map_err(|e| KubernetesError::Unavailable(format!("cannot start its threads: {e}")))?;
        let client = tokio.block_on(client_for(kubeconfig))?;
        let server = tokio.block_on(async {
            let version = client
                .apiserver_version()
                .await
                .map_err(|e| KubernetesError::Unavailable(words(&e)))?;
            let claims: Api<PersistentVolumeClaim> =
                Api::namespaced(client.clone(), &config.namespace);
            claims
                .list(&kube::api::ListParams::default().limit(1))
                .await
                .map_err(|e| {
                    KubernetesError::Api(format!(
                        "listing claims in namespace {:?}: {} (the runtime needs get, list, \
                         watch, create, patch and delete on pods, pods/log, \
                         persistentvolumeclaims and secrets there; docs/kubernetes.md)",
                        config.namespace,
                        words(&e)
                    ))
                })?;
            Ok::<_, KubernetesError>(version.git_version)
        })?;
        let selector = objects::installation_selector(&config);
        let (pods, claims) = {
            let _entered = tokio.enter();
            (
                Watched::start(
                    &tokio,
                    Api::namespaced(client.clone(), &config.namespace),
                    &selector,
                    &config.namespace,
                    "pods",
                ),
                Watched::start(
                    &tokio,
                    Api::namespaced(client.clone(), &config.namespace),
                    &selector,
                    &config.namespace,
                    "persistentvolumeclaims",
                ),
            )
        };
        tokio
            .block_on(async {
                pods.ready(FIRST_LISTING).await?;
                claims.ready(FIRST_LISTING).await
            })
            .map_err(|e| KubernetesError::Unavailable(format!("watching pods and claims: {e}")))?;
        Ok(KubernetesRuntime {
            client,
            tokio: Some(tokio),
            config,
            server,
            pods,
            claims,
            moved: Mutex::new(HashMap::new()),
            forwards: forward::Forwards::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &KubernetesConfig {
        &self.config
    }

    /// The API server's version (`v1.20.2`).
    pub fn server_version(&self) -> &str {
        &self.server
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.tokio
            .as_ref()
            .expect("the client runtime lives as long as the Kubernetes runtime")
            .block_on(future)
    }

    fn pods_api(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.config.namespace)
    }

    fn claims_api(&self) -> Api<PersistentVolumeClaim> {
        Api::namespaced(self.client.clone(), &self.config.namespace)
    }

    fn secrets_api(&self) -> Api<Secret> {
        Api::namespaced(self.client.clone(), &self.config.namespace)
    }

    /// The identity in `handle`, if this installation made it.
    fn identity(&self, handle: &RuntimeHandle) -> Result<PodIdentity, RuntimeError> {
        let identity = PodIdentity::of(handle)?;
        if identity.installation != self.config.installation
            || identity.namespace != self.config.namespace
        {
            return Err(RuntimeError::BadHandle(format!(
                "made by installation {:?} in namespace {:?}, not {:?} in {:?}",
                identity.installation,
                identity.namespace,
                self.config.installation,
                self.config.namespace
            )));
        }
        Ok(identity)
    }

    /// Whether `meta`'s labels mark an object as this installation's, for `sandbox_id`.
    fn ours(&self, meta: &kube::api::ObjectMeta, sandbox_id: &str) -> bool {
        meta.labels.as_ref().is_some_and(|l| {
            l.get(LABEL_INSTALLATION) == Some(&self.config.installation)
                && l.get(LABEL_SANDBOX_ID).map(String::as_str) == Some(sandbox_id)
        })
    }

    /// For a port-forwarded handle, makes sure its loopback listeners forward (made again
    /// after a restart, or on another replica); a port another program took is logged.
    fn keep_forwards(&self, handle: &RuntimeHandle, identity: &PodIdentity) {
        if !identity.forwarded {
            return;
        }
        let tokio = self.tokio.as_ref().expect("the client runtime lives");
        let pods = self.pods_api();
        let ports = std::iter::once((handle.host_port, self.config.agent_port)).chain(
            handle
                .services
                .iter()
                .map(|s| (s.host_port, s.sandbox_port)),
        );
        for (local, remote) in ports {
            if let Err(e) = self
                .forwards
                .ensure(tokio, &pods, &identity.name, local, remote)
            {
                tracing::warn!(sandbox = %identity.sandbox_id, error = %e,
                    "a sandbox's port-forward cannot listen");
            }
        }
    }

    /// What the caches say of `identity`'s sandbox. A pod the cache does not have is asked
    /// for once (a watch lags its writes by some milliseconds) before the answer is `Gone`.
    fn look(&self, identity: &PodIdentity) -> Result<Observed, RuntimeError> {
        if !(self.pods.healthy() && self.claims.healthy()) {
            return Err(RuntimeError::Io(
                "Kubernetes: the watch of pods and claims is failing (the API server does not \
                 answer); the sandbox's state is not known"
                    .into(),
            ));
        }
        let pod = self
            .pods
            .get(&identity.name)
            .filter(|p| self.ours(&p.metadata, &identity.sandbox_id));
        let claim = self
            .claims
            .get(&identity.name)
            .filter(|c| self.ours(&c.metadata, &identity.sandbox_id));
        let seen = state::observed_of(pod.as_deref(), claim.as_deref());
        if seen != Observed::Gone {
            return Ok(seen);
        }
        let fresh = self.block_on(self.pods_api().get_opt(&identity.name));
        match fresh {
            Ok(Some(p)) if self.ours(&p.metadata, &identity.sandbox_id) => {
                Ok(state::observed_of(Some(&p), claim.as_deref()))
            }
            Ok(_) => Ok(Observed::Gone),
            Err(e) => Err(error::io("reading the pod", &e)),
        }
    }
}

/// The client for `kubeconfig`, or the inferred configuration.
async fn client_for(kubeconfig: Option<&Path>) -> Result<Client, KubernetesError> {
    let mut config = match kubeconfig {
        Some(path) => {
            let file = Kubeconfig::read_from(path).map_err(|e| {
                KubernetesError::Config(format!("kubeconfig {}: {e}", path.display()))
            })?;
            kube::Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
                .await
                .map_err(|e| {
                    KubernetesError::Config(format!("kubeconfig {}: {e}", path.display()))
                })?
        }
        None => kube::Config::infer().await.map_err(|e| {
            KubernetesError::Config(format!(
                "no kubeconfig (--kubeconfig, KUBECONFIG, ~/.kube/config) and not in a pod: {e}"
            ))
        })?,
    };
    // No read timeout: it would cut the watches (kube's watcher has its own idle timeout,
    // WATCH_TIMEOUT and a margin), and a silent one would make every sandbox's state unknown.
    config.connect_timeout = Some(Duration::from_secs(10));
    config.write_timeout = Some(REQUEST_TIMEOUT);
    Client::try_from(config).map_err(|e| KubernetesError::Config(e.to_string()))
}

impl SandboxRuntime for KubernetesRuntime {
    fn name(&self) -> &'static str {
        RUNTIME_NAME
    }

    fn webhook_base_url(&self) -> Option<&str> {
        self.config.webhook_base_url.as_deref()
    }

    fn start(&self, launch: &LaunchSpec) -> Result<RuntimeHandle, RuntimeError> {
        let handle = self.block_on(self.start_async(launch))?;
        if let Ok(identity) = PodIdentity::of(&handle) {
            self.keep_forwards(&handle, &identity);
        }
        Ok(handle)
    }

    fn observe(&self, handle: &RuntimeHandle) -> Observed {
        let Ok(identity) = self.identity(handle) else {
            return Observed::Gone;
        };
        self.keep_forwards(handle, &identity);
        // Could not look: the health probe decides (see the module's docs).
        self.look(&identity).unwrap_or(Observed::Running)
    }

    /// As `observe`, but a failing watch is an error: reconciliation keeps the stored status
    /// (issue 24 item 3).
    fn try_observe(&self, handle: &RuntimeHandle) -> Result<Observed, RuntimeError> {
        let Ok(identity) = self.identity(handle) else {
            return Ok(Observed::Gone);
        };
        self.keep_forwards(handle, &identity);
        self.look(&identity)
    }

    fn pause(&self, handle: &RuntimeHandle) -> Result<(), RuntimeError> {
        let identity = self.identity(handle)?;
        self.block_on(self.pause_async(&identity))
    }

    fn resume(&self, handle: &RuntimeHandle) -> Result<(), RuntimeError> {
        let identity = self.identity(handle)?;
        self.keep_forwards(handle, &identity);
        let moved = self.block_on(self.resume_async(handle, &identity))?;
        if let Some(moved) = moved {
            self.moved
                .lock()
                .expect("moved handles poisoned")
                .insert(identity.sandbox_id, moved);
        }
        Ok(())
    }

    fn handle_after_resume(&self, handle: &RuntimeHandle) -> Option<RuntimeHandle> {
        let identity = PodIdentity::of(handle).ok()?;
        self.moved
            .lock()
            .expect("moved handles poisoned")
            .remove(&identity.sandbox_id)
    }

    fn delete(&self, handle: &RuntimeHandle) -> Result<(), RuntimeError> {
        let identity = self.identity(handle)?;
        self.block_on(self.remove(&identity.name, &identity.sandbox_id))?;
        if identity.forwarded {
            self.forwards.close(handle.host_port);
            for s in &handle.services {
                self.forwards.close(s.host_port);
            }
        }
        Ok(())
    }

    fn log_tail(&self, handle: &RuntimeHandle, lines: usize) -> Option<String> {
        let identity = self.identity(handle).ok()?;
        let params = LogParams {
            container: Some(config::CONTAINER_NAME.to_owned()),
            tail_lines: Some(i64::try_from(lines).unwrap_or(i64::MAX)),
            ..LogParams::default()
        };
        self.block_on(self.pods_api().logs(&identity.name, &params))
            .ok()
    }
}
