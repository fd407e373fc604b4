//! Helpers: a Docker runtime with an installation id of its own per test, launch specs for the
//! agent-server image, a client that acts on the daemon behind the runtime's back, and a guard
//! that removes every container and volume of the test's installation when it ends, even by
//! panic.
//!
//! Without a Docker daemon or without the image, each test prints why and returns; with
//! `SWITCHBOARD_REQUIRE_DOCKER=1` (CI, where both are provided) it fails instead.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::models::ContainerInspectResponse;
use bollard::query_parameters::{
    KillContainerOptions, ListContainersOptionsBuilder, ListVolumesOptionsBuilder,
    RemoveContainerOptionsBuilder, RemoveVolumeOptions,
};
use switchboard_domain::SandboxId;
use switchboard_domain::sandboxes::runtime::{
    AgentServerClient, LaunchSpec, RuntimeHandle, SandboxRuntime, SessionKey,
};
use switchboard_domain::sandboxes::specs::{SandboxSpec, docker_preset};
use switchboard_sandbox::docker::{ContainerIdentity, LABEL_INSTALLATION};
use switchboard_sandbox::{DockerConfig, DockerRuntime, HttpAgentServerClient};

/// The image the tests run (built by `scripts/agent-server-image.sh`).
pub const IMAGE: &str = "switchboard/agent-server:local";
/// The webhook URL given to every test sandbox (nothing listens there; not needed here).
pub const WEBHOOK_URL: &str = "http://host.docker.internal:9/api/v1/webhooks";
/// A variable passed through to every test sandbox, as an operator's `--sandbox-env` would.
pub const PASSTHROUGH: (&str, &str) = ("SWITCHBOARD_TEST_PASSTHROUGH", "passed");
/// Every installation id of these tests starts so; stale ones are swept.
const INSTALLATION_PREFIX: &str = "sbtest-";
/// How old a test container must be to be swept as left over by an interrupted run.
const STALE_AFTER: Duration = Duration::from_secs(30 * 60);
/// How long a container may take to answer `/alive` (6–16 s measured on an idle machine; 10 at
/// once on a machine at load 20 took over 180 s).
pub const ALIVE_LIMIT: Duration = Duration::from_secs(480);

/// A Docker client of the test's own, acting behind the runtime's back.
pub struct Daemon {
    pub docker: Docker,
    tokio: tokio::runtime::Runtime,
}

impl Daemon {
    fn connect() -> Result<Daemon, String> {
        let tokio = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let docker = {
            let _entered = tokio.enter();
            Docker::connect_with_defaults().map_err(|e| e.to_string())?
        };
        let docker = tokio
            .block_on(async {
                let docker = docker.negotiate_version().await?;
                docker.ping().await?;
                Ok::<_, bollard::errors::Error>(docker)
            })
            .map_err(|e| e.to_string())?;
        Ok(Daemon { docker, tokio })
    }

    pub fn run<F: Future>(&self, future: F) -> F::Output {
        self.tokio.block_on(future)
    }

    /// `docker inspect`; `None` when there is no such container.
    pub fn inspect(&self, container: &str) -> Option<ContainerInspectResponse> {
        match self.run(self.docker.inspect_container(container, None)) {
            Ok(c) => Some(c),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => None,
            Err(e) => panic!("inspecting {container}: {e}"),
        }
    }

    pub fn volume_exists(&self, volume: &str) -> bool {
        match self.run(self.docker.inspect_volume(volume)) {
            Ok(_) => true,
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => false,
            Err(e) => panic!("inspecting volume {volume}: {e}"),
        }
    }

    /// `docker kill` (SIGKILL).
    pub fn kill(&self, container: &str) {
        self.run(
            self.docker
                .kill_container(container, None::<KillContainerOptions>),
        )
        .unwrap();
    }

    /// `docker rm -f`.
    pub fn remove(&self, container: &str) {
        let options = RemoveContainerOptionsBuilder::default().force(true).build();
        self.run(self.docker.remove_container(container, Some(options)))
            .unwrap();
    }

    /// The environment an image gives its containers.
    pub fn image_env(&self, image: &str) -> Vec<String> {
        self.run(self.docker.inspect_image(image))
            .unwrap()
            .config
            .and_then(|c| c.env)
            .unwrap_or_default()
    }

    /// Removes every container and volume whose installation label satisfies `select`.
    fn sweep(&self, select: impl Fn(&str, Option<i64>) -> bool) {
        let filters = HashMap::from([("label".to_owned(), vec![LABEL_INSTALLATION.to_owned()])]);
        let options = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&filters)
            .build();
        let containers = self
            .run(self.docker.list_containers(Some(options)))
            .unwrap_or_default();
        for c in containers {
            let installation = c.labels.as_ref().and_then(|l| l.get(LABEL_INSTALLATION));
            if installation.is_some_and(|i| select(i, c.created)) {
                let options = RemoveContainerOptionsBuilder::default()
                    .force(true)
                    .v(true)
                    .build();
                let _ = self.run(
                    self.docker
                        .remove_container(c.id.as_deref().unwrap_or_default(), Some(options)),
                );
            }
        }
        let options = ListVolumesOptionsBuilder::default()
            .filters(&filters)
            .build();
        let volumes = self
            .run(self.docker.list_volumes(Some(options)))
            .map(|v| v.volumes.unwrap_or_default())
            .unwrap_or_default();
        for v in volumes {
            if v.labels
                .get(LABEL_INSTALLATION)
                .is_some_and(|i| select(i, None))
            {
                let _ = self.run(
                    self.docker
                        .remove_volume(&v.name, None::<RemoveVolumeOptions>),
                );
            }
        }
    }
}

/// A runtime of a fresh installation, and the guard that sweeps it.
pub struct Fixture {
    pub runtime: DockerRuntime,
    pub client: HttpAgentServerClient,
    pub daemon: Daemon,
    pub installation: String,
}

impl Fixture {
    /// A bridged runtime, or `None` (with the reason printed) when Docker or the image is
    /// missing.
    pub fn new(test: &str) -> Option<Fixture> {
        Self::with(test, |c| c)
    }

    /// A runtime configured by `configure`, or `None` as [`Fixture::new`].
    pub fn with(test: &str, configure: impl FnOnce(DockerConfig) -> DockerConfig) -> Option<Self> {
        let daemon = match Daemon::connect() {
            Ok(d) => d,
            Err(e) => return skip(test, &format!("no Docker daemon answers: {e}")),
        };
        if daemon.run(daemon.docker.inspect_image(IMAGE)).is_err() {
            return skip(
                test,
                &format!("the image {IMAGE} is missing (build it: scripts/agent-server-image.sh)"),
            );
        }
        sweep_stale(&daemon);
        let installation = new_installation();
        let runtime = DockerRuntime::connect(configure(
            DockerConfig::new(&installation).with_stop_timeout(Duration::from_secs(3)),
        ))
        .expect("the runtime connects where the test client did");
        Some(Fixture {
            runtime,
            client: HttpAgentServerClient::new(),
            daemon,
            installation,
        })
    }

    /// Starts the Docker preset of [`IMAGE`].
    pub fn start(&self) -> RuntimeHandle {
        self.runtime
            .start(&launch_spec(preset()))
            .expect("the image starts")
    }

    /// Waits until `/alive` answers (or panics with the container's log).
    pub fn wait_alive(&self, handle: &RuntimeHandle) -> Duration {
        let began = Instant::now();
        let ok = wait_until(ALIVE_LIMIT, || {
            self.client
                .alive(&handle.agent_server_url, Duration::from_secs(1))
                .is_ok()
        });
        assert!(
            ok,
            "{} never answered /alive; log:\n{}",
            handle.agent_server_url,
            self.runtime.log_tail(handle, 30).unwrap_or_default()
        );
        began.elapsed()
    }

    /// Whether `/alive` answers within `timeout`.
    pub fn alive(&self, handle: &RuntimeHandle, timeout: Duration) -> bool {
        self.client.alive(&handle.agent_server_url, timeout).is_ok()
    }

    /// The container of `handle`, as the daemon shows it.
    pub fn inspect(&self, handle: &RuntimeHandle) -> Option<ContainerInspectResponse> {
        self.daemon.inspect(&identity(handle).container_id)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let installation = self.installation.clone();
        self.daemon.sweep(|i, _| i == installation);
    }
}

/// The identity in a Docker handle.
pub fn identity(handle: &RuntimeHandle) -> ContainerIdentity {
    ContainerIdentity::of(handle).unwrap()
}

/// The built-in Docker preset for [`IMAGE`].
pub fn preset() -> SandboxSpec {
    docker_preset(IMAGE, time::OffsetDateTime::now_utc()).unwrap()
}

/// A launch spec for `spec`, with a fresh id and session key and one passthrough variable.
pub fn launch_spec(spec: SandboxSpec) -> LaunchSpec {
    LaunchSpec {
        sandbox_id: SandboxId::new_random(),
        spec,
        session_key: SessionKey::generate(),
        webhook_base_url: WEBHOOK_URL.into(),
        passthrough_env: vec![(PASSTHROUGH.0.into(), PASSTHROUGH.1.into())],
        local_repositories: Vec::new(),
        org_id: None,
        owner_id: None,
    }
}

/// Polls `check` every 250 ms until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(250));
    }
}

fn skip<T>(test: &str, reason: &str) -> Option<T> {
    if std::env::var("SWITCHBOARD_REQUIRE_DOCKER").is_ok_and(|v| v == "1") {
        panic!("{test}: {reason} (SWITCHBOARD_REQUIRE_DOCKER=1)");
    }
    println!("skipped {test}: {reason}");
    None
}

fn new_installation() -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let random = SandboxId::new_random().to_string();
    format!(
        "{INSTALLATION_PREFIX}{}-{n}-{}",
        std::process::id(),
        &random[..8]
    )
}

/// Removes what interrupted runs of these tests left behind (older than [`STALE_AFTER`]).
fn sweep_stale(daemon: &Daemon) {
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let stale_secs = i64::try_from(STALE_AFTER.as_secs()).unwrap();
    daemon.sweep(|installation, created| {
        installation.starts_with(INSTALLATION_PREFIX)
            && created.is_some_and(|c| now - c > stale_secs)
    });
}
