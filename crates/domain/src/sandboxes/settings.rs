//! What the sandbox service needs to run sandboxes: the specs, the runtimes by name, the
//! agent-server client, the sealer of session keys, the operator's limits, and the hooks the
//! binary gives it (waking its background jobs, metrics). Built by the binary from its flags.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::identity::sealing::Sealer;
use crate::sandboxes::failures::StartFailure;
use crate::sandboxes::runtime::{AgentServerClient, SandboxRuntime, SandboxStatus, StatusPolicy};
use crate::sandboxes::specs::{SandboxSpec, SpecError};

/// The runtimes Switchboard can run sandboxes with, by [`SandboxRuntime::name`]. Adding one
/// is one call: `Runtimes::new().with(process).with(docker)`.
#[derive(Clone, Default)]
pub struct Runtimes {
    by_name: BTreeMap<&'static str, Arc<dyn SandboxRuntime>>,
}

impl Runtimes {
    /// No runtime yet.
    pub fn new() -> Self {
        Runtimes::default()
    }

    /// Adds `runtime` under its name (replacing one of the same name).
    #[must_use]
    pub fn with(mut self, runtime: Arc<dyn SandboxRuntime>) -> Self {
        self.by_name.insert(runtime.name(), runtime);
        self
    }

    /// The runtime named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn SandboxRuntime>> {
        self.by_name.get(name)
    }

    /// The names, sorted.
    pub fn names(&self) -> Vec<&'static str> {
        self.by_name.keys().copied().collect()
    }
}

/// Default of [`SandboxSettings::max_sandboxes_per_user`] (issue 18, Quotas).
pub const DEFAULT_MAX_SANDBOXES_PER_USER: u32 = 20;

/// The operator's choices (issue 9 flags).
#[derive(Debug, Clone)]
pub struct SandboxSettings {
    /// The specs, in the operator's order; the first is the default (`--sandbox-specs`, or
    /// the built-in process preset). Never empty.
    pub specs: Vec<SandboxSpec>,
    /// The runtime of specs that name none (`--sandbox-runtime`, default `process`).
    pub default_runtime: String,
    /// Given to every sandbox as `OH_WEBHOOKS_0_BASE_URL`: `--public-url` (default the bound
    /// address) + `/api/v1/webhooks`.
    pub webhook_base_url: String,
    /// Switchboard's URL as process sandboxes reach its LLM pass-through
    /// (`--llm-proxy-url`, issue 38), when it is not [`Self::webhook_base_url`]'s address;
    /// without a trailing `/`. Runtimes with their own webhook URL (Docker, Kubernetes) use
    /// that one's address.
    pub llm_proxy_url: Option<String>,
    /// Variables passed from Switchboard's environment (`PATH`, `HOME`, `LANG` and each
    /// `--sandbox-env NAME` that is set), values resolved at start.
    pub passthrough_env: Vec<(String, String)>,
    /// Start timeout (`--sandbox-start-timeout`, default 120 s) and health grace.
    pub policy: StatusPolicy,
    /// Running (or starting) sandboxes per user (`--max-running-sandboxes`, default 5).
    pub max_running_per_user: u32,
    /// Sandboxes holding resources (`STARTING`, `RUNNING` or `PAUSED`) per user
    /// (`--max-sandboxes-per-user`, default [`DEFAULT_MAX_SANDBOXES_PER_USER`]; issue 18,
    /// Quotas): a start beyond it is refused (409).
    pub max_sandboxes_per_user: u32,
    /// The same per organization (`--max-sandboxes-per-org`; `None`, the default, is
    /// unbounded; issue 24 item 6).
    pub max_sandboxes_per_org: Option<u32>,
    /// Unowned sandboxes of the default spec kept started (`--warm-sandboxes`, default 0).
    pub warm_sandboxes: u32,
    /// The conversations a sandbox holds before a grouped start leaves it for another
    /// (`--sandbox-max-conversations`, default
    /// [`DEFAULT_MAX_CONVERSATIONS_PER_SANDBOX`](crate::sandboxes::grouping::DEFAULT_MAX_CONVERSATIONS_PER_SANDBOX);
    /// [`crate::sandboxes::grouping`]). A start naming `sandbox_id` is not held to it.
    pub max_conversations_per_sandbox: u32,
    /// The timeout of one `/alive` probe.
    pub probe_timeout: Duration,
    /// The directories under which a start may clone a local path or `file://` URL
    /// (`--allow-local-repositories`, default none; issue 18, "Repository sources"), absolute
    /// and canonical; every runtime shows them to its sandboxes read-only
    /// ([`crate::sandboxes::runtime::LaunchSpec::local_repositories`]).
    pub local_repositories: Vec<std::path::PathBuf>,
    /// Base URLs an `owner/repo` slug is cloned from, by provider name or by the
    /// `host[:port]` a user stores with their token (`--git-provider-url KEY=URL`, default
    /// none: the providers' public hosts over HTTPS; issue 21,
    /// [`crate::conversations::provider_remote`]).
    pub git_provider_urls: crate::conversations::provider_remote::ProviderUrls,
}

impl SandboxSettings {
    /// The default spec (the first).
    pub fn default_spec(&self) -> &SandboxSpec {
        &self.specs[0]
    }

    /// The spec with this id.
    pub fn spec(&self, id: &str) -> Option<&SandboxSpec> {
        self.specs.iter().find(|s| s.id == id)
    }

    /// The runtime a spec runs on.
    pub fn runtime_of<'a>(&'a self, spec: &'a SandboxSpec) -> &'a str {
        spec.runtime.as_deref().unwrap_or(&self.default_runtime)
    }
}

/// Metrics of sandboxes: starts (by runtime and source), their duration and failures (by
/// kind), sandboxes by runtime and status, and the warm pool's size; implemented by the API's
/// metrics registry.
pub trait SandboxObserver: Send + Sync {
    /// A user's start was taken on `runtime`: claimed from the warm pool (`warm`), or a new
    /// sandbox to launch.
    fn started(&self, runtime: &str, warm: bool);
    /// A sandbox of `runtime` reached `RUNNING` (from the pool: `warm`), `seconds` after its
    /// start request (or its resume).
    fn start_finished(&self, runtime: &str, seconds: f64, warm: bool);
    /// A sandbox of `runtime` failed before its agent server first answered (`ERROR` during
    /// its start), for a reason of `kind`.
    fn start_failed(&self, runtime: &str, kind: StartFailure);
    /// After a reconciliation pass: sandboxes by runtime and status (every status of every
    /// runtime named, zeros included; warm pool ones excluded) and the warm pool's ready
    /// (`RUNNING`) sandboxes.
    fn statuses(&self, counts: &[(&str, SandboxStatus, usize)], warm_ready: usize);
    /// The warm pool's ready sandboxes, after a pass of the launcher or the pool.
    fn warm_pool(&self, ready: usize);
}

/// Everything the service needs to run sandboxes.
#[derive(Clone)]
pub struct ManagedSandboxes {
    /// The operator's choices.
    pub settings: SandboxSettings,
    /// The runtimes by name.
    pub runtimes: Runtimes,
    /// The agent-server client (health probes).
    pub client: Arc<dyn AgentServerClient>,
    /// Seals session keys at rest.
    pub sealer: Sealer,
    /// Metrics, if any.
    pub observer: Option<Arc<dyn SandboxObserver>>,
    /// Wakes the binary's background sandbox jobs (launch, probe, pool, cleanup) at once
    /// instead of at their next period.
    pub wake: Option<Arc<dyn Fn() + Send + Sync>>,
    /// The agent servers' event sockets, for the stream path (issue 19; `None`: events
    /// arrive by the webhooks and the pull path only).
    pub event_streams: Option<Arc<dyn crate::sandboxes::event_streams::AgentEventStreams>>,
}

impl ManagedSandboxes {
    /// Checks that every spec's runtime (and the default) is one of `runtimes`.
    ///
    /// # Errors
    /// A [`SpecError`] naming `source_name` and the spec's `runtime` field, or
    /// `--sandbox-runtime`.
    pub fn validate(&self, source_name: &str) -> Result<(), SpecError> {
        let known = || self.runtimes.names().join(", ");
        if self.runtimes.get(&self.settings.default_runtime).is_none() {
            return Err(SpecError {
                source_name: "--sandbox-runtime".into(),
                location: String::new(),
                message: format!(
                    "unknown runtime {:?} (known: {})",
                    self.settings.default_runtime,
                    known()
                ),
            });
        }
        if self.settings.specs.is_empty() {
            return Err(SpecError {
                source_name: source_name.into(),
                location: String::new(),
                message: "no sandbox spec".into(),
            });
        }
        for (i, spec) in self.settings.specs.iter().enumerate() {
            if let Some(name) = &spec.runtime
                && self.runtimes.get(name).is_none()
            {
                return Err(SpecError {
                    source_name: source_name.into(),
                    location: format!("[{i}].runtime"),
                    message: format!("unknown runtime {name:?} (known: {})", known()),
                });
            }
        }
        Ok(())
    }
}
