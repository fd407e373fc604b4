//! Wiring of the Docker runtime (issue 12; docs/docker.md): connecting to the daemon at
//! `DOCKER_HOST`, the installation id, the URL containers post webhooks to and the extra
//! listener on the bridge gateway that makes it reachable, the background pull of missing
//! images at start, `switchboard specs pull`, and the sweep of containers no record names.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::json;
use switchboard_domain::identity::sealing::Sealer;
use switchboard_domain::sandboxes::specs::SandboxSpec;
use switchboard_domain::{SandboxId, Switchboard};
use switchboard_sandbox::docker::{RUNTIME_NAME, SandboxContainer};
use switchboard_sandbox::{DockerConfig, DockerNetwork, DockerRuntime};

use crate::cli::{DockerArgs, SpecArgs};
use crate::commands::print;
use crate::sandboxes::load_specs;

/// The Docker runtime as `serve` configured it.
pub struct DockerWiring {
    /// The runtime (shared with the sandbox service).
    pub runtime: Arc<DockerRuntime>,
    /// Where Switchboard must also listen so containers reach it (the bridge gateway, on the
    /// main listener's port), when the main listener does not already cover it.
    pub extra_listen: Option<SocketAddr>,
}

/// The images of the specs that run on Docker, in order, without repeats.
pub fn docker_images(specs: &[SandboxSpec], default_runtime: &str) -> Vec<String> {
    let mut images: Vec<String> = Vec::new();
    for spec in specs {
        let runtime = spec.runtime.as_deref().unwrap_or(default_runtime);
        if runtime == RUNTIME_NAME && !images.contains(&spec.id) {
            images.push(spec.id.clone());
        }
    }
    images
}

/// This installation's id: `--docker-installation`, else `sb-` and the secret key's public id
/// ([`Sealer::key_id`]), so it survives restarts and replicas sharing the key (they must, to
/// open each other's session keys) agree on it.
pub fn installation_id(args: &DockerArgs, sealer: &Sealer) -> String {
    args.docker_installation
        .clone()
        .unwrap_or_else(|| format!("sb-{}", sealer.key_id()))
}

/// Connects the Docker runtime for `serve`: the daemon at `DOCKER_HOST`, and the URL
/// containers post webhooks to (`--docker-public-url`; on a bridge
/// `http://host.docker.internal:<port>` with an extra listener on the bridge gateway when
/// `bound` is a loopback address; with host networking `public_url`); containers log with
/// `json-file` capped at `log_max_mib` MiB (0: the daemon's default). Containers run under
/// `--docker-oci-runtime`, with `--docker-pids-limit`, a read-only root unless
/// `--docker-writable-root`, and `read_only_binds` (the allowed local repository
/// directories) bound read-only at the same path.
///
/// # Errors
/// No daemon answers, the configuration is refused (an OCI runtime the daemon does not
/// have: the message lists those it has), or the bridge has no IPv4 gateway while one is
/// needed (each message says what to do).
pub fn connect(
    args: &DockerArgs,
    installation: String,
    bound: SocketAddr,
    public_url: &str,
    log_max_mib: u64,
    read_only_binds: &[std::path::PathBuf],
) -> Result<DockerWiring> {
    let mut binds = Vec::with_capacity(read_only_binds.len());
    for dir in read_only_binds {
        let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
        if !abs.is_dir() {
            bail!(
                "--allow-local-repositories {}: not a directory on this host (Docker sandboxes \
                 see it read-only at the same path, so it must exist)",
                dir.display()
            );
        }
        binds.push(abs);
    }
    let mut extra_listen = None;
    let webhook_root = match (&args.docker_public_url, args.docker_network) {
        (Some(url), _) => url.trim_end_matches('/').to_owned(),
        (None, DockerNetwork::Host) => public_url.to_owned(),
        (None, DockerNetwork::Bridge) => format!("http://host.docker.internal:{}", bound.port()),
    };
    let config = DockerConfig::new(installation)
        .with_network(args.docker_network)
        .with_log_max_mib(log_max_mib)
        .with_webhook_base_url(Some(format!("{webhook_root}/api/v1/webhooks")))
        .with_bridge_network(args.docker_bridge_network.clone())
        .with_oci_runtime(args.docker_oci_runtime.clone().filter(|r| !r.is_empty()))
        .with_pids_limit(args.docker_pids_limit)
        .with_read_only_root(!args.docker_writable_root)
        .with_read_only_binds(binds);
    let runtime = match DockerRuntime::connect(config) {
        Ok(runtime) => runtime,
        Err(e @ switchboard_sandbox::DockerError::Config(_)) => {
            bail!("the Docker runtime cannot run sandboxes as configured: {e}")
        }
        Err(e) => Err(e).context(
            "the Docker runtime is configured (--sandbox-runtime docker, or a spec's runtime) \
             but the Docker daemon cannot be used; start it, or set DOCKER_HOST",
        )?,
    };
    if args.docker_public_url.is_none() && args.docker_network == DockerNetwork::Bridge {
        let gateway = runtime
            .bridge_gateway()
            .context("finding the Docker bridge's gateway address")?;
        let Some(gateway) = gateway else {
            bail!(
                "Docker's bridge network has no IPv4 gateway, so containers cannot reach \
                 Switchboard through host.docker.internal: set --docker-public-url or \
                 --docker-network host"
            );
        };
        let ip = bound.ip();
        if !ip.is_unspecified() && ip != IpAddr::V4(gateway) {
            extra_listen = Some(SocketAddr::new(IpAddr::V4(gateway), bound.port()));
        }
    }
    tracing::info!(
        host = runtime.host(),
        api = %runtime.api_version(),
        installation = %runtime.config().installation,
        network = %args.docker_network,
        bridge_network = %runtime.config().bridge_network,
        oci_runtime = runtime.config().oci_runtime.as_deref().unwrap_or("(the daemon's default)"),
        pids_limit = runtime.config().pids_limit,
        webhooks = %runtime.config().webhook_base_url.as_deref().unwrap_or_default(),
        "Docker runtime connected"
    );
    Ok(DockerWiring {
        runtime: Arc::new(runtime),
        extra_listen,
    })
}

/// Pulls the `images` that are not on the Docker host, one after the other, logging each
/// outcome; run on a thread of its own when `serve` starts, never on a request path (a
/// sandbox of a missing image is `ERROR` until the pull has finished).
pub fn pull_missing_in_background(runtime: Arc<DockerRuntime>, images: Vec<String>) {
    if images.is_empty() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("docker-pull".into())
        .spawn(move || {
            let missing = match runtime.missing_images(images.iter().map(String::as_str)) {
                Ok(m) => m,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot check the sandbox images");
                    return;
                }
            };
            for image in missing {
                tracing::info!(%image, "pulling a sandbox image that is not on the Docker host");
                match runtime.pull(&image) {
                    Ok(()) => tracing::info!(%image, "sandbox image pulled"),
                    Err(e) => tracing::warn!(
                        %image, error = %e,
                        "pulling a sandbox image failed; sandboxes of it are ERROR until it is \
                         on the Docker host (`switchboard specs pull`, `docker pull`, or \
                         scripts/agent-server-image.sh)"
                    ),
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the image pull");
    }
}

/// `switchboard specs pull`: pulls every Docker spec's image that is not on the Docker host,
/// printing one JSON line per image (`present`, `pulled`, or `failed` with the daemon's or the
/// registry's words).
///
/// # Errors
/// The specs cannot be read, the daemon cannot be used, or an image could not be pulled.
pub fn specs_pull(args: &SpecArgs) -> Result<()> {
    let (specs, _) = load_specs(args)?;
    let images = docker_images(&specs, &args.sandbox_runtime);
    if images.is_empty() {
        print(json!({"event": "nothing to pull", "note": "no spec runs on Docker"}));
        return Ok(());
    }
    // The installation is not used: pulling touches no container.
    let runtime = DockerRuntime::connect(DockerConfig::new("specs-pull"))
        .context("the Docker daemon cannot be used; start it, or set DOCKER_HOST")?;
    let mut failed = Vec::new();
    for image in images {
        if runtime.image_present(&image)? {
            print(json!({"image": image, "result": "present"}));
            continue;
        }
        match runtime.pull(&image) {
            Ok(()) => print(json!({"image": image, "result": "pulled"})),
            Err(e) => {
                print(json!({"image": image, "result": "failed", "detail": e.to_string()}));
                failed.push(image);
            }
        }
    }
    if !failed.is_empty() {
        bail!("could not pull: {}", failed.join(", "));
    }
    Ok(())
}

/// The sweep of this installation's containers that no sandbox record names (issue 12: "a
/// Switchboard container with no record is reported in the log and removed after a grace
/// period"): one listing per pass; a container is logged when first seen without a record and
/// removed (with its volume) once it has been seen so for the grace period. Workspace volumes
/// without a container or a record are removed the same way.
pub struct OrphanSweeper {
    runtime: Arc<DockerRuntime>,
    grace: Duration,
    first_seen: Mutex<HashMap<String, Instant>>,
}

impl OrphanSweeper {
    /// A sweeper removing orphans after `grace`.
    pub fn new(runtime: Arc<DockerRuntime>, grace: Duration) -> Self {
        OrphanSweeper {
            runtime,
            grace,
            first_seen: Mutex::new(HashMap::new()),
        }
    }

    /// How often a pass should run: half the grace period, between 1 and 30 seconds.
    pub fn period(&self) -> Duration {
        (self.grace / 2).clamp(Duration::from_secs(1), Duration::from_secs(30))
    }

    /// One pass.
    ///
    /// # Errors
    /// The daemon or the database failed (the pass is retried at the next period).
    pub fn sweep(&self, services: &Switchboard) -> Result<()> {
        // Listed first, records read after: a record is inserted before its container is
        // created, so a container listed here whose record is missing below has none.
        let containers = self.runtime.list_sandboxes()?;
        let volumes = self.runtime.list_volumes()?;
        let known: HashSet<String> = services
            .sandboxes()
            .sandbox_ids_with_records()
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .iter()
            .map(SandboxId::to_string)
            .collect();
        let now = Instant::now();
        let mut seen = self.first_seen.lock().expect("orphan table poisoned");
        let mut still = HashMap::new();
        let orphans: Vec<&SandboxContainer> = containers
            .iter()
            .filter(|c| !known.contains(&c.sandbox_id))
            .collect();
        let with_container: HashSet<String> =
            containers.iter().map(SandboxContainer::volume).collect();
        for c in &orphans {
            let first = *seen.get(&c.container_id).unwrap_or(&now);
            if first == now {
                tracing::warn!(
                    container = %c.container_name, sandbox = %c.sandbox_id, grace = ?self.grace,
                    "a container of this installation has no sandbox record; it is removed \
                     after the grace period"
                );
            }
            if now.duration_since(first) >= self.grace {
                match self.runtime.remove_orphan(c) {
                    Ok(()) => {
                        tracing::warn!(container = %c.container_name, "orphan container removed");
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!(container = %c.container_name, error = %e, "removing an orphan container failed");
                    }
                }
            }
            still.insert(c.container_id.clone(), first);
        }
        for v in volumes
            .iter()
            .filter(|v| !known.contains(&v.sandbox_id) && !with_container.contains(&v.name))
        {
            let key = format!("volume:{}", v.name);
            let first = *seen.get(&key).unwrap_or(&now);
            if now.duration_since(first) >= self.grace {
                match self.runtime.remove_orphan_volume(v) {
                    Ok(()) => {
                        tracing::warn!(volume = %v.name, "orphan workspace volume removed");
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!(volume = %v.name, error = %e, "removing an orphan volume failed");
                    }
                }
            }
            still.insert(key, first);
        }
        *seen = still;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_domain::sandboxes::specs::{docker_preset, process_preset};
    use time::OffsetDateTime;

    #[test]
    fn the_images_to_pull_are_the_docker_specs_once_each() {
        let now = OffsetDateTime::UNIX_EPOCH;
        let a = docker_preset("img/a:1", now).unwrap();
        let mut b = docker_preset("img/b:1", now).unwrap();
        b.runtime = Some("docker".into());
        let mut process = process_preset(Some("agent-server"), None, now).unwrap();
        process.id = "img/c:1".into();
        let specs = [a.clone(), b, process, a];
        // Default runtime process: only the spec naming docker.
        assert_eq!(docker_images(&specs, "process"), ["img/b:1"]);
        // Default runtime docker: every spec naming none too; the process spec never.
        let mut specs = specs.to_vec();
        specs[2].runtime = Some("process".into());
        assert_eq!(docker_images(&specs, "docker"), ["img/a:1", "img/b:1"]);
    }

    #[test]
    fn the_installation_id_comes_from_the_flag_or_the_secret_key() {
        let sealer = Sealer::new(&[1u8; 32]);
        let mut args = DockerArgs {
            docker_network: DockerNetwork::Bridge,
            docker_public_url: None,
            docker_installation: None,
            docker_orphan_grace: 300,
            docker_bridge_network: "switchboard-sandboxes".into(),
            docker_oci_runtime: None,
            docker_pids_limit: 1024,
            docker_writable_root: false,
        };
        let derived = installation_id(&args, &sealer);
        assert_eq!(derived, format!("sb-{}", sealer.key_id()));
        assert!(DockerConfig::new(derived).validate().is_ok());
        assert_ne!(
            installation_id(&args, &sealer),
            installation_id(&args, &Sealer::new(&[2u8; 32]))
        );
        args.docker_installation = Some("prod-eu".into());
        assert_eq!(installation_id(&args, &sealer), "prod-eu");
    }
}
