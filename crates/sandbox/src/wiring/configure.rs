//! The sandboxes Switchboard runs, wired from the options (issue 9): the specs, the runtimes
//! by name, the sandboxes' environment and webhook URL, and what their runtimes need done in
//! the background ([`Upkeep`]).

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use switchboard_domain::identity::sealing::Sealer;
use switchboard_domain::sandboxes::event_streams::AgentEventStreams;
use switchboard_domain::sandboxes::runtime::StatusPolicy;
use switchboard_domain::sandboxes::settings::{
    ManagedSandboxes, Runtimes, SandboxObserver, SandboxSettings,
};
use switchboard_domain::sandboxes::specs::SandboxSpec;

use super::options::SandboxOptions;
use super::specs::{load_specs, with_default_limits};
use super::upkeep::{DockerUpkeep, LogCap, Upkeep};
use super::{docker, kube};
use crate::docker::RUNTIME_NAME as DOCKER_RUNTIME;
use crate::docker::upkeep::docker_images;
use crate::process::CommandCheck;
use crate::{HttpAgentServerClient, ProcessRuntime, WsEventStreams, confinement};

/// Variables every sandbox gets from Switchboard's environment, besides the
/// operator's `--sandbox-env` names.
const ALWAYS_PASSED: [&str; 3] = ["PATH", "HOME", "LANG"];
/// The timeout of one `/alive` probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// What the server the sandboxes belong to knows besides the options.
pub struct Server {
    /// The data directory; sandboxes live under `<data_dir>/sandboxes`.
    pub data_dir: PathBuf,
    /// The installation key file (no sandbox may see it).
    pub key_file: PathBuf,
    /// The installation record's id: the runtimes' installation id unless an option names
    /// one.
    pub installation: String,
    /// The address the server listens on (the default public URL).
    pub bound: SocketAddr,
    /// Files no sandbox may see besides the data directory and the key file (the LLM key
    /// file, a database elsewhere).
    pub hidden: Vec<PathBuf>,
}

/// What the sandbox service runs with, and what its runtimes need of the server.
pub struct Configured {
    /// The sandbox service's configuration.
    pub managed: ManagedSandboxes,
    /// The runtimes' background work.
    pub upkeep: Upkeep,
    /// The server's listener on the Docker bridge gateway (on the main listener's port),
    /// bound here when containers reach the server through it and the main listener does not
    /// cover it.
    pub docker_listener: Option<TcpListener>,
    /// The Docker bridge's gateway, when containers reach the server as
    /// `host.docker.internal`: what that name stands for on this host.
    pub docker_gateway: Option<Ipv4Addr>,
}

/// The variables of Switchboard's own environment every sandbox gets: [`ALWAYS_PASSED`] when
/// set, and each `--sandbox-env` name (a warning for one that is not set).
fn passthrough_env(options: &SandboxOptions) -> Vec<(String, String)> {
    let mut passthrough_env = Vec::new();
    for name in ALWAYS_PASSED
        .iter()
        .copied()
        .chain(options.sandbox_env.iter().map(String::as_str))
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

// Long: each runtime is wired in turn from its options, in the order they depend on each other.
/// The sandbox configuration from the options. The Docker runtime is connected when the
/// default runtime or a spec's is `docker` (binding the operator's
/// `--allow-local-repositories` read-only into every container), the Kubernetes runtime when
/// one is `kubernetes` (with, on Docker's bridge, the server's listener on its gateway when
/// the main listener does not cover it). `sealer` seals session keys; `observer` counts sandbox events;
/// `wake` wakes the sandbox jobs at once.
///
/// # Errors
/// A specs file that cannot be read or is invalid (the message names the file and the
/// field), an unknown runtime, a Docker daemon or cluster that cannot be used while a spec
/// needs it, the bridge gateway's address that cannot be bound, process sandboxes that cannot
/// be confined, or a `--allow-local-repositories` directory that is refused.
pub fn configure(
    options: &SandboxOptions,
    server: Server,
    sealer: Sealer,
    observer: Arc<dyn SandboxObserver>,
    wake: Arc<dyn Fn() + Send + Sync>,
) -> Result<Configured> {
    let (specs, source) = load_specs(&options.specs)?;
    let default_runtime = &options.specs.sandbox_runtime;
    let specs = with_default_limits(specs, default_runtime, options.default_limits);
    let data_dir = std::path::absolute(&server.data_dir).unwrap_or(server.data_dir);
    let public_url = options.webhook_root(server.bound);
    let passthrough_env = passthrough_env(options);
    let asked = &options.confinement;
    let (process, local_repositories) = confinement::process_runtime(
        asked,
        &options.allow_local_repositories,
        &specs,
        default_runtime,
        &data_dir,
        &server.key_file,
        server.hidden,
    )?;
    if source == "--agent-server-command" && default_runtime == crate::process::RUNTIME_NAME {
        check_agent_server_command(options, &process, &specs[0], &passthrough_env)?;
    }
    let log_cap = (options.log_max_mib > 0).then(|| LogCap {
        runtime: process.clone(),
        max_bytes: options.log_max_mib.saturating_mul(1024 * 1024),
    });
    let mut runtimes = Runtimes::new().with(process);
    let images = docker_images(&specs, default_runtime);
    let (mut docker_listener, mut docker_gateway) = (None, None);
    let docker = if default_runtime == DOCKER_RUNTIME || !images.is_empty() {
        let wiring = docker::connect(
            &options.docker,
            docker::installation_id(&options.docker, &server.installation),
            server.bound,
            &public_url,
            options.log_max_mib,
            &local_repositories,
            confinement::docker_egress(asked, options.docker.network)?,
        )?;
        runtimes = runtimes.with(wiring.runtime.clone());
        docker_gateway = wiring.gateway;
        // Containers on Docker's bridge reach the host only through the bridge gateway.
        if let Some(extra) = wiring.extra_listen {
            docker_listener = Some(TcpListener::bind(extra).with_context(|| {
                format!(
                    "binding {extra}, the Docker bridge gateway, so that containers reach \
                     Switchboard (or bind 0.0.0.0, or set --docker-public-url / --docker-network host)"
                )
            })?);
        }
        Some(DockerUpkeep {
            runtime: wiring.runtime,
            images,
            orphan_grace: options.docker.orphan_grace,
        })
    } else {
        None
    };
    let kube = if kube::wanted(&specs, default_runtime) {
        let installation = kube::installation_id(&options.kube, &server.installation);
        let config = kube::config(&options.kube, installation, &public_url);
        let runtime = kube::connect(&options.kube, config)?;
        runtimes = runtimes.with(runtime.clone());
        Some((runtime, options.kube.orphan_grace))
    } else {
        None
    };
    let event_streams: Option<Arc<dyn AgentEventStreams>> = if options.event_streams {
        Some(Arc::new(WsEventStreams::new().map_err(|e| {
            anyhow::anyhow!("cannot start the agent event streams' client: {e}")
        })?))
    } else {
        None
    };
    let managed = ManagedSandboxes {
        settings: SandboxSettings {
            specs,
            default_runtime: default_runtime.clone(),
            webhook_base_url: format!("{public_url}/api/v1/webhooks"),
            llm_proxy_url: options
                .llm_proxy_url
                .as_deref()
                .map(|u| u.trim_end_matches('/').to_owned()),
            passthrough_env,
            policy: StatusPolicy {
                start_timeout: options.start_timeout,
                ..StatusPolicy::default()
            },
            max_running_per_user: options.max_running_sandboxes,
            max_sandboxes_per_user: options.max_sandboxes_per_user,
            max_sandboxes_per_org: options.max_sandboxes_per_org,
            warm_sandboxes: options.warm_sandboxes,
            max_conversations_per_sandbox: options.max_conversations_per_sandbox,
            probe_timeout: PROBE_TIMEOUT,
            local_repositories,
            git_provider_urls: options.git_provider_urls.iter().cloned().collect(),
        },
        runtimes,
        client: Arc::new(HttpAgentServerClient::new()),
        sealer,
        observer: Some(observer),
        wake: Some(wake),
        event_streams,
    };
    managed.validate(&source).map_err(anyhow::Error::msg)?;
    let upkeep = Upkeep {
        warm: options.warm_sandboxes > 0,
        log_cap,
        docker,
        kube,
    };
    Ok(Configured {
        managed,
        upkeep,
        docker_listener,
        docker_gateway,
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
    options: &SandboxOptions,
    process: &ProcessRuntime,
    spec: &SandboxSpec,
    passthrough_env: &[(String, String)],
) -> Result<()> {
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
            if options.specs.agent_server_command.is_some() || options.warm_sandboxes > 0 {
                anyhow::bail!("{advice}");
            }
            tracing::warn!("{advice}; every sandbox start will fail until then");
            Ok(())
        }
    }
}
