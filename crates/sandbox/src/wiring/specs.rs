//! The sandbox specs the options name (`--sandbox-specs` or the built-in preset), the
//! operator's default limits applied to them, and `switchboard specs pull` (issue 12), which
//! needs the Docker daemon, not the database.

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use switchboard_domain::sandboxes::limits::ResourceLimits;
use switchboard_domain::sandboxes::specs::{
    SandboxSpec, docker_preset, parse_sandbox_specs, process_preset,
};
use switchboard_domain::time_input::now_micros;

use super::options::SpecOptions;
use crate::docker::RUNTIME_NAME as DOCKER_RUNTIME;
use crate::docker::upkeep::{PullOutcome, docker_images, pull_missing};
use crate::{DockerConfig, DockerRuntime};

/// The specs the options name and where they came from (the name error messages use): the
/// `--sandbox-specs` file, else the built-in preset (a process running
/// `--agent-server-command`, or with `--sandbox-runtime docker` or `kubernetes` a container of
/// `--agent-server-image`).
///
/// # Errors
/// A specs file that cannot be read or is invalid (the message names the file and the
/// field) or holds a spec its runtime cannot enforce ([`refuse_unenforced_egress`]), or a
/// preset that cannot be made.
pub fn load_specs(options: &SpecOptions) -> Result<(Vec<SandboxSpec>, String)> {
    let now = now_micros();
    match &options.sandbox_specs {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the sandbox specs file {}", path.display()))?;
            let name = path.display().to_string();
            let specs = parse_sandbox_specs(&text, &name, now).map_err(anyhow::Error::msg)?;
            refuse_unenforced_egress(&specs, &options.sandbox_runtime)?;
            Ok((specs, name))
        }
        None if options.sandbox_runtime == DOCKER_RUNTIME
            || options.sandbox_runtime == crate::kubernetes::RUNTIME_NAME =>
        {
            let spec =
                docker_preset(&options.agent_server_image, now).map_err(anyhow::Error::msg)?;
            Ok((vec![spec], "--agent-server-image".to_owned()))
        }
        None => {
            let path = std::env::var_os("PATH");
            let command = options.agent_server_command.as_deref();
            let spec = process_preset(command, path.as_deref(), now).map_err(anyhow::Error::msg)?;
            Ok((vec![spec], "--agent-server-command".to_owned()))
        }
    }
}

/// `switchboard specs pull`: pulls every Docker spec's image that is not on the Docker host,
/// handing `line` one JSON object per image (`{"image", "result"}`: `present`, `pulled`, or
/// `failed` with the daemon's or the registry's words in `detail`), or one
/// `{"event": "nothing to pull"}` when no spec runs on Docker.
///
/// # Errors
/// The specs cannot be read, the daemon cannot be used, or an image could not be pulled
/// (the message lists them).
pub fn specs_pull(options: &SpecOptions, mut line: impl FnMut(Value)) -> Result<()> {
    let (specs, _) = load_specs(options)?;
    let images = docker_images(&specs, &options.sandbox_runtime);
    if images.is_empty() {
        line(json!({"event": "nothing to pull", "note": "no spec runs on Docker"}));
        return Ok(());
    }
    // The installation is not used: pulling touches no container.
    let runtime = DockerRuntime::connect(DockerConfig::new("specs-pull"))
        .context("the Docker daemon cannot be used; start it, or set DOCKER_HOST")?;
    let mut failed = Vec::new();
    pull_missing(&runtime, &images, |image, outcome| match outcome {
        PullOutcome::Present => line(json!({"image": image, "result": "present"})),
        PullOutcome::Pulled => line(json!({"image": image, "result": "pulled"})),
        PullOutcome::Failed(e) => {
            line(json!({"image": image, "result": "failed", "detail": e.to_string()}));
            failed.push(image.to_owned());
        }
    })?;
    if !failed.is_empty() {
        bail!("could not pull: {}", failed.join(", "));
    }
    Ok(())
}

/// `specs` with the operator's `defaults` (`--sandbox-memory-mb`, `--sandbox-cpus`) where a
/// spec that runs on the process or Docker runtime (its own `runtime`, else
/// `default_runtime`) gives no `memory_mb` or `cpus`. Kubernetes specs keep theirs:
/// that runtime has its own defaults (`--kube-*` limits).
pub fn with_default_limits(
    mut specs: Vec<SandboxSpec>,
    default_runtime: &str,
    defaults: ResourceLimits,
) -> Vec<SandboxSpec> {
    for spec in &mut specs {
        let runtime = spec.runtime.as_deref().unwrap_or(default_runtime);
        if runtime == DOCKER_RUNTIME || runtime == crate::process::RUNTIME_NAME {
            let limits = &mut spec.limits;
            limits.memory_mb = limits.memory_mb.or(defaults.memory_mb);
            limits.cpus = limits.cpus.or(defaults.cpus);
        }
    }
    specs
}

/// Refuses specs whose runtime (the spec's, else `default_runtime`) cannot enforce their own
/// egress lists: the Kubernetes runtime's pods are on the cluster's network (issue 33; a
/// NetworkPolicy, enforced by the cluster's network plugin, is the place for such rules).
///
/// # Errors
/// The first such spec, named, with what to do.
pub fn refuse_unenforced_egress(specs: &[SandboxSpec], default_runtime: &str) -> Result<()> {
    let kube = crate::kubernetes::RUNTIME_NAME;
    match specs
        .iter()
        .find(|s| !s.egress.is_empty() && s.runtime.as_deref().unwrap_or(default_runtime) == kube)
    {
        Some(spec) => bail!(
            "sandbox spec {:?}: egress_allow and egress_deny are not enforced by the {kube} \
             runtime (its pods are on the cluster's network: give them a NetworkPolicy); remove \
             them from the spec",
            spec.id
        ),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_domain::sandboxes::limits::Cpus;

    #[test]
    fn kubernetes_specs_with_egress_lists_are_refused() {
        let text = r#"[{"id": "a", "command": ["x"], "egress_allow": ["10.0.0.0/8"]},
                       {"id": "k", "command": ["x"], "runtime": "kubernetes"}]"#;
        let specs =
            parse_sandbox_specs(text, "specs.json", time::OffsetDateTime::UNIX_EPOCH).unwrap();
        assert!(refuse_unenforced_egress(&specs, "process").is_ok());
        let e = refuse_unenforced_egress(&specs, "kubernetes")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("sandbox spec \"a\": egress_allow"), "{e}");
    }

    #[test]
    fn defaults_fill_only_what_process_and_docker_specs_leave_open() {
        let text = r#"[{"id": "a", "command": ["x"]},
                       {"id": "b", "command": ["x"], "memory_mb": 512, "runtime": "docker"},
                       {"id": "c", "command": ["x"], "runtime": "kubernetes"}]"#;
        let specs = parse_sandbox_specs(text, "specs.json", now_micros()).unwrap();
        let defaults = ResourceLimits {
            memory_mb: Some(4096),
            cpus: Some(Cpus::from_cpus(1.5).unwrap()),
        };
        let specs = with_default_limits(specs, "process", defaults);
        assert_eq!(specs[0].limits, defaults);
        assert_eq!(specs[1].limits.memory_mb, Some(512));
        assert_eq!(specs[1].limits.cpus, defaults.cpus);
        assert_eq!(specs[2].limits, ResourceLimits::default());
    }
}
