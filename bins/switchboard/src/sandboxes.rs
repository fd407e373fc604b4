//! Wiring of the sandboxes Switchboard runs (issue 9): the specs (`--sandbox-specs` or the
//! built-in preset), the runtimes by name, the secret key, the sandboxes' environment and
//! webhook URL, and the background jobs registered with the supervisor.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use switchboard_domain::Switchboard;
use switchboard_domain::jobs::Job;
use switchboard_domain::sandboxes::event_streams::AgentEventStreams;
use switchboard_domain::sandboxes::runtime::StatusPolicy;
use switchboard_domain::sandboxes::settings::{
    ManagedSandboxes, Runtimes, SandboxObserver, SandboxSettings,
};
use switchboard_sandbox::docker::RUNTIME_NAME as DOCKER_RUNTIME;
use switchboard_sandbox::docker::upkeep::{
    OrphanSweeper, docker_images, image_pull_job, orphan_sweep_job,
};
use switchboard_sandbox::kubernetes::upkeep::orphan_sweep_job as kube_orphan_sweep_job;
use switchboard_sandbox::{
    HttpAgentServerClient, KubernetesRuntime, ProcessRuntime, WsEventStreams,
};

use crate::cli::SandboxArgs;
use crate::docker::{self, DockerWiring};
use crate::kube;
use crate::specs::load_specs;
use switchboard_runtime::Wakes;
use switchboard_sandbox::confinement;

/// Variables every sandbox gets from Switchboard's environment, besides the
/// operator's `--sandbox-env` names.
const ALWAYS_PASSED: [&str; 3] = ["PATH", "HOME", "LANG"];
/// The timeout of one `/alive` probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

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
    /// The Kubernetes runtime, when a spec runs on it.
    pub kube: Option<Arc<KubernetesRuntime>>,
}

/// A cap on process sandboxes' log files (`--sandbox-log-max-mib`), kept by a job.
pub struct LogCap {
    /// The runtime whose sandboxes' logs are capped.
    pub runtime: Arc<ProcessRuntime>,
    /// The cap, in bytes.
    pub max_bytes: u64,
}

/// Switchboard's URL as clients and sandboxes reach it: `--public-url`, else the bound
/// address (loopback for an unspecified one) as `http://host:port`.
pub fn public_url(args: &SandboxArgs, bound: SocketAddr) -> String {
    match &args.public_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => {
            let mut addr = bound;
            if addr.ip().is_unspecified() {
                addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
            }
            format!("http://{addr}")
        }
    }
}

/// The variables of Switchboard's own environment every sandbox gets: [`ALWAYS_PASSED`] when
/// set, and each `--sandbox-env` name (a warning for one that is not set).
fn passthrough_env(args: &SandboxArgs) -> Vec<(String, String)> {
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
    passthrough_env
}

// Long: each runtime is wired in turn from its flags, in the order they depend on each other.
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
    key: switchboard_ops::installation::InstallationKey,
    bound: SocketAddr,
    observer: Arc<dyn SandboxObserver>,
    wakes: &Wakes,
    hidden: Vec<PathBuf>,
) -> Result<Configured> {
    let (specs, source) = load_specs(&args.specs)?;
    let defaults = args.confine.default_limits();
    let specs = crate::specs::with_default_limits(specs, &args.specs.sandbox_runtime, defaults);
    let data_dir = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    // Where sandboxes post their webhooks: --webhook-url, else the public URL.
    let public_url = match &args.webhook_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => public_url(args, bound),
    };
    let passthrough_env = passthrough_env(args);
    let switchboard_ops::installation::InstallationKey {
        sealer,
        key_file,
        installation: record,
    } = key;
    let asked = args.confine.confinement();
    let (process, local_repositories) = confinement::process_runtime(
        &asked,
        &args.allow_local_repositories,
        &specs,
        &args.specs.sandbox_runtime,
        &data_dir,
        &key_file,
        hidden,
    )?;
    if source == "--agent-server-command"
        && args.specs.sandbox_runtime == switchboard_sandbox::process::RUNTIME_NAME
    {
        check_agent_server_command(args, &process, &specs[0], &passthrough_env)?;
    }
    let log_cap = (args.sandbox_log_max_mib > 0).then(|| LogCap {
        runtime: process.clone(),
        max_bytes: args.sandbox_log_max_mib.saturating_mul(1024 * 1024),
    });
    let mut runtimes = Runtimes::new().with(process);
    let docker_images = docker_images(&specs, &args.specs.sandbox_runtime);
    let docker = if args.specs.sandbox_runtime == DOCKER_RUNTIME || !docker_images.is_empty() {
        let installation = docker::installation_id(&args.docker, &record.id);
        let wiring = docker::connect(
            &args.docker,
            installation,
            bound,
            &public_url,
            args.sandbox_log_max_mib,
            &local_repositories,
            confinement::docker_egress(&asked, args.docker.docker_network)?,
        )?;
        runtimes = runtimes.with(wiring.runtime.clone());
        Some(wiring)
    } else {
        None
    };
    let kube = if kube::wanted(&specs, &args.specs.sandbox_runtime) {
        let installation = kube::installation_id(&args.kube, &record.id);
        let runtime = kube::connect(
            &args.kube,
            kube::config(&args.kube, installation, &public_url),
        )?;
        runtimes = runtimes.with(runtime.clone());
        Some(runtime)
    } else {
        None
    };
    let event_streams: Option<Arc<dyn AgentEventStreams>> = if args.no_event_streams {
        None
    } else {
        Some(Arc::new(WsEventStreams::new().map_err(|e| {
            anyhow::anyhow!("cannot start the agent event streams' client: {e}")
        })?))
    };
    let wakes = wakes.clone();
    let managed = ManagedSandboxes {
        settings: SandboxSettings {
            specs,
            default_runtime: args.specs.sandbox_runtime.clone(),
            webhook_base_url: format!("{public_url}/api/v1/webhooks"),
            llm_proxy_url: args
                .llm_proxy_url
                .as_deref()
                .map(|u| u.trim_end_matches('/').to_owned()),
            passthrough_env,
            policy: StatusPolicy {
                start_timeout: Duration::from_secs(args.sandbox_start_timeout),
                ..StatusPolicy::default()
            },
            max_running_per_user: args.max_running_sandboxes,
            max_sandboxes_per_user: args.max_sandboxes_per_user,
            max_sandboxes_per_org: args.max_sandboxes_per_org,
            warm_sandboxes: args.warm_sandboxes,
            max_conversations_per_sandbox: args.sandbox_max_conversations,
            probe_timeout: PROBE_TIMEOUT,
            local_repositories,
            git_provider_urls: args.git_provider_urls.iter().cloned().collect(),
        },
        runtimes,
        client: Arc::new(HttpAgentServerClient::new()),
        sealer,
        observer: Some(observer),
        wake: Some(Arc::new(move || wakes.wake_all())),
        event_streams,
    };
    managed.validate(&source).map_err(anyhow::Error::msg)?;
    Ok(Configured {
        managed,
        docker,
        docker_images,
        log_cap,
        kube,
    })
}

/// Checks at start that the built-in spec's agent-server command can run in a process
/// sandbox ([`ProcessRuntime::check_command`]). When it cannot, `serve` refuses to start if the
/// operator named the command (`--agent-server-command`) or keeps a warm pool (whose sandboxes
/// would fail at once, again and again); with the default command and no pool it starts and
/// says so loudly: it still serves everything else (registered agent servers, the API), and
/// each sandbox start then fails at once with the same advice in its `status_message`.
///
/// # Errors
/// The command cannot run, and was named or a warm pool is kept.
fn check_agent_server_command(
    args: &SandboxArgs,
    process: &ProcessRuntime,
    spec: &switchboard_domain::sandboxes::specs::SandboxSpec,
    passthrough_env: &[(String, String)],
) -> Result<()> {
    use switchboard_sandbox::process::CommandCheck;
    let command = spec.command.join(" ");
    match process.check_command(spec, passthrough_env) {
        CommandCheck::Runs => {
            tracing::info!(command = %command, "the agent server command can run in a sandbox");
            Ok(())
        }
        CommandCheck::Unknown(why) => {
            tracing::warn!(command = %command, why = %why, "the agent server command could not be checked");
            Ok(())
        }
        CommandCheck::Fails(why) => {
            let advice = format!(
                "the agent server command `{command}` cannot run in a sandbox: {why}. Install the \
                 OpenHands agent server (its `agent-server` program on PATH, or the \
                 openhands-agent-server package for python3), or set --agent-server-command \
                 to a command that runs it (or give --sandbox-specs, or --sandbox-runtime docker)"
            );
            if args.specs.agent_server_command.is_some() || args.warm_sandboxes > 0 {
                anyhow::bail!("{advice}");
            }
            tracing::warn!("{advice}; every sandbox start will fail until then");
            Ok(())
        }
    }
}

/// The sandbox jobs: the sandbox service's (launcher, reconciler, warm pool when `warm`,
/// cleanup of deleted sandboxes), the cap on process sandboxes' logs (when set) and, with the
/// Docker runtime, the pull of missing images and the sweep of containers no record names
/// (after `orphan_grace`); with the Kubernetes runtime, the sweep of its pods, claims and
/// secrets no record names (after its own grace).
pub fn jobs(
    services: &Switchboard,
    warm: bool,
    docker: Option<(&DockerWiring, Vec<String>)>,
    orphan_grace: Duration,
    log_cap: Option<LogCap>,
    kube: Option<(Arc<KubernetesRuntime>, Duration)>,
) -> Vec<Job> {
    let mut jobs = Vec::new();
    if let Some((runtime, grace)) = kube {
        jobs.push(kube_orphan_sweep_job(
            runtime,
            grace,
            services.sandboxes().clone(),
        ));
    }
    if let Some(cap) = log_cap {
        jobs.push(cap.runtime.log_cap_job(cap.max_bytes));
    }
    if let Some((wiring, images)) = docker {
        jobs.extend(image_pull_job(wiring.runtime.clone(), images));
        let sweeper = OrphanSweeper::new(wiring.runtime.clone(), orphan_grace);
        jobs.push(orphan_sweep_job(sweeper, services.sandboxes().clone()));
    }
    jobs.extend(services.sandboxes().jobs(warm));
    jobs
}
