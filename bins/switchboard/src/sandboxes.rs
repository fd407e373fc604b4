//! Wiring of the sandboxes Switchboard runs (issue 9): the specs (`--sandbox-specs` or the
//! built-in preset), the runtimes by name, the secret key, the sandboxes' environment and
//! webhook URL, and the background jobs registered with the supervisor.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use switchboard_domain::Switchboard;
use switchboard_domain::sandboxes::runtime::StatusPolicy;
use switchboard_domain::sandboxes::settings::{
    ManagedSandboxes, Runtimes, SandboxObserver, SandboxSettings,
};
use switchboard_domain::sandboxes::specs::{
    SandboxSpec, docker_preset, parse_sandbox_specs, process_preset,
};
use switchboard_domain::time_input::now_micros;
use switchboard_sandbox::docker::RUNTIME_NAME as DOCKER_RUNTIME;
use switchboard_sandbox::{HttpAgentServerClient, ProcessRuntime};
use tokio::sync::Notify;

use crate::cli::{SandboxArgs, SpecArgs};
use crate::docker::{self, DockerWiring, OrphanSweeper};
use crate::isolation;
use crate::secret_key;
use crate::supervisor::Supervisor;

/// Variables every sandbox gets from Switchboard's environment (issue 9), besides the
/// operator's `--sandbox-env` names.
const ALWAYS_PASSED: [&str; 3] = ["PATH", "HOME", "LANG"];
/// How often the launcher looks at starting sandboxes when not woken.
const LAUNCH_EVERY: Duration = Duration::from_millis(250);
/// How often every sandbox is reconciled with its runtime.
const RECONCILE_EVERY: Duration = Duration::from_secs(3);
/// How often the warm pool is checked when not woken.
const POOL_EVERY: Duration = Duration::from_secs(3);
/// How often the Docker runtime's containers are checked for ones no record names.
const ORPHANS_EVERY: Duration = Duration::from_secs(30);
/// How often deleted sandboxes' runtimes are cleaned up when not woken.
const CLEANUP_EVERY: Duration = Duration::from_secs(5);
/// How often process sandboxes' logs are checked against their cap (a sandbox may write
/// this long past it).
const LOG_TRIM_EVERY: Duration = Duration::from_secs(1);
/// How often the pull path looks at running sandboxes when not woken (issue 19: a dropped
/// webhook batch is repaired within about this long after its conversation went quiet).
const CATCH_UP_EVERY: Duration = Duration::from_secs(2);
/// The timeout of one `/alive` probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The wake-ups of the background jobs: each job has its own, so a notification is never
/// taken by another.
#[derive(Clone, Default)]
pub struct Wakes {
    launcher: Arc<Notify>,
    pool: Arc<Notify>,
    cleanup: Arc<Notify>,
    catch_up: Arc<Notify>,
}

impl Wakes {
    fn wake_all(&self) {
        self.launcher.notify_one();
        self.pool.notify_one();
        self.cleanup.notify_one();
        self.catch_up.notify_one();
    }
}

/// The specs the flags name and where they came from: the `--sandbox-specs` file, else the
/// built-in preset (a process running `--agent-server-command`, or with `--sandbox-runtime
/// docker` a container of `--agent-server-image`).
///
/// # Errors
/// A specs file that cannot be read or is invalid (the message names the file and the
/// field), or a preset that cannot be made.
pub fn load_specs(args: &SpecArgs) -> Result<(Vec<SandboxSpec>, String)> {
    let now = now_micros();
    match &args.sandbox_specs {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the sandbox specs file {}", path.display()))?;
            let name = path.display().to_string();
            let specs = parse_sandbox_specs(&text, &name, now).map_err(anyhow::Error::msg)?;
            Ok((specs, name))
        }
        None if args.sandbox_runtime == DOCKER_RUNTIME => {
            let spec = docker_preset(&args.agent_server_image, now).map_err(anyhow::Error::msg)?;
            Ok((vec![spec], "--agent-server-image".to_owned()))
        }
        None => {
            let path = std::env::var_os("PATH");
            let spec = process_preset(args.agent_server_command.as_deref(), path.as_deref(), now)
                .map_err(anyhow::Error::msg)?;
            Ok((vec![spec], "--agent-server-command".to_owned()))
        }
    }
}

/// The sandbox service's configuration from the flags, and the Docker runtime when a spec
/// runs on it.
pub struct Configured {
    /// What the sandbox service runs with.
    pub managed: ManagedSandboxes,
    /// The Docker runtime's wiring, when configured.
    pub docker: Option<DockerWiring>,
    /// The images of the Docker specs (for the background pull).
    pub docker_images: Vec<String>,
    /// The process runtime and the cap on its sandboxes' logs in bytes, when capped.
    pub log_cap: Option<LogCap>,
}

/// A cap on process sandboxes' log files (`--sandbox-log-max-mib`), kept by a job.
pub struct LogCap {
    /// The runtime whose sandboxes' logs are capped.
    pub runtime: Arc<ProcessRuntime>,
    /// The cap, in bytes.
    pub max_bytes: u64,
}

/// The sandbox configuration from the flags. `bound` is the listening address (the default
/// public URL); sandboxes live under `<data_dir>/sandboxes`. The Docker runtime is connected
/// when the default runtime or a spec's is `docker` (binding the operator's
/// `--allow-local-repositories` read-only into every container). `hidden`: files no sandbox
/// may see besides the data directory and the secret key (the LLM key file, a database
/// elsewhere).
///
/// # Errors
/// A specs file that cannot be read or is invalid (the message names the file and the
/// field), an unknown runtime, a secret key file that is refused, a Docker daemon that
/// cannot be used while a spec needs it, process sandboxes that cannot be confined, or a
/// `--allow-local-repositories` directory that is refused.
pub fn configure(
    args: &SandboxArgs,
    data_dir: &Path,
    bound: SocketAddr,
    observer: Arc<dyn SandboxObserver>,
    wakes: &Wakes,
    hidden: Vec<PathBuf>,
) -> Result<Configured> {
    let (specs, source) = load_specs(&args.specs)?;
    let data_dir = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    let public_url = match &args.public_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => {
            let mut addr = bound;
            if addr.ip().is_unspecified() {
                addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
            }
            format!("http://{addr}")
        }
    };
    let mut passthrough_env = Vec::new();
    for name in ALWAYS_PASSED
        .iter()
        .copied()
        .chain(args.sandbox_env.iter().map(String::as_str))
    {
        match std::env::var(name) {
            Ok(value) => passthrough_env.push((name.to_owned(), value)),
            Err(_) if ALWAYS_PASSED.contains(&name) => {}
            Err(_) => tracing::warn!(
                variable = name,
                "--sandbox-env names a variable that is not set; sandboxes will not get it"
            ),
        }
    }
    let key_file = args
        .secret_key_file
        .clone()
        .unwrap_or_else(|| data_dir.join("secret.key"));
    let sealer = secret_key::load_or_create(&key_file)?;
    let (process, local_repositories) =
        isolation::process_runtime(args, &specs, &data_dir, &key_file, hidden)?;
    let log_cap = (args.sandbox_log_max_mib > 0).then(|| LogCap {
        runtime: process.clone(),
        max_bytes: args.sandbox_log_max_mib.saturating_mul(1024 * 1024),
    });
    let mut runtimes = Runtimes::new().with(process);
    let docker_images = docker::docker_images(&specs, &args.specs.sandbox_runtime);
    let docker = if args.specs.sandbox_runtime == DOCKER_RUNTIME || !docker_images.is_empty() {
        let installation = docker::installation_id(&args.docker, &sealer);
        let wiring = docker::connect(
            &args.docker,
            installation,
            bound,
            &public_url,
            args.sandbox_log_max_mib,
            &local_repositories,
        )?;
        runtimes = runtimes.with(wiring.runtime.clone());
        Some(wiring)
    } else {
        None
    };
    let wakes = wakes.clone();
    let managed = ManagedSandboxes {
        settings: SandboxSettings {
            specs,
            default_runtime: args.specs.sandbox_runtime.clone(),
            webhook_base_url: format!("{public_url}/api/v1/webhooks"),
            passthrough_env,
            policy: StatusPolicy {
                start_timeout: Duration::from_secs(args.sandbox_start_timeout),
                ..StatusPolicy::default()
            },
            max_running_per_user: args.max_running_sandboxes,
            max_sandboxes_per_user: args.max_sandboxes_per_user,
            max_sandboxes_per_org: args.max_sandboxes_per_org,
            warm_sandboxes: args.warm_sandboxes,
            probe_timeout: PROBE_TIMEOUT,
            local_repositories,
        },
        runtimes,
        client: Arc::new(HttpAgentServerClient::new()),
        sealer,
        observer: Some(observer),
        wake: Some(Arc::new(move || wakes.wake_all())),
    };
    managed.validate(&source).map_err(anyhow::Error::msg)?;
    Ok(Configured {
        managed,
        docker,
        docker_images,
        log_cap,
    })
}

/// Registers the sandbox jobs: the launcher (launch and probe starting sandboxes), the
/// reconciler (on start and every few seconds), the warm pool (when configured), the pull
/// path's catch-up of sandboxes' events (on start, every few seconds and when woken), the
/// cleanup of deleted sandboxes, the cap on process sandboxes' logs (when set) and, with the
/// Docker runtime, the sweep of containers no record names.
pub fn register_jobs(
    supervisor: &mut Supervisor,
    services: &Switchboard,
    wakes: &Wakes,
    warm: bool,
    orphans: Option<OrphanSweeper>,
    log_cap: Option<LogCap>,
) {
    if let Some(cap) = log_cap {
        supervisor.every_or_woken(
            "sandbox-log-cap",
            LOG_TRIM_EVERY,
            Arc::new(Notify::new()),
            move || {
                for t in cap.runtime.trim_logs(cap.max_bytes)? {
                    match t.error {
                        None => tracing::info!(log = %t.path.display(), bytes = t.bytes, "sandbox log over its cap: its end moved to agent-server.log.1, the log starts again"),
                        Some(e) => tracing::warn!(log = %t.path.display(), bytes = t.bytes, error = %e, "sandbox log over its cap could not be trimmed"),
                    }
                }
                Ok::<(), std::io::Error>(())
            },
        );
    }
    if let Some(sweeper) = orphans {
        let s = services.clone();
        let sweeper = Arc::new(sweeper);
        supervisor.every_or_woken(
            "docker-orphans",
            sweeper.period().min(ORPHANS_EVERY),
            Arc::new(Notify::new()),
            move || sweeper.sweep(&s),
        );
    }
    let s = services.clone();
    supervisor.every_or_woken(
        "sandbox-launcher",
        LAUNCH_EVERY,
        wakes.launcher.clone(),
        move || s.sandboxes().advance_starting(),
    );
    let s = services.clone();
    supervisor.every_or_woken(
        "sandbox-reconciler",
        RECONCILE_EVERY,
        Arc::new(Notify::new()),
        move || s.sandboxes().reconcile(),
    );
    if warm {
        let s = services.clone();
        supervisor.every_or_woken(
            "sandbox-warm-pool",
            POOL_EVERY,
            wakes.pool.clone(),
            move || s.sandboxes().refill_warm_pool(),
        );
    }
    let s = services.clone();
    supervisor.every_or_woken(
        "event-catch-up",
        CATCH_UP_EVERY,
        wakes.catch_up.clone(),
        move || s.sandboxes().catch_up_events(),
    );
    let s = services.clone();
    supervisor.every_or_woken(
        "sandbox-cleanup",
        CLEANUP_EVERY,
        wakes.cleanup.clone(),
        move || s.sandboxes().clean_up_deleted(),
    );
}
