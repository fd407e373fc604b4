//! Wiring of the Kubernetes runtime from the flags (issue 32; docs/kubernetes.md): the
//! cluster, the namespace, the installation id, the URL pods post webhooks to, and what each
//! pod gets (storage, requests, limits, RuntimeClass). The runtime's background work (the
//! orphan sweep) is `switchboard_sandbox::kubernetes::upkeep`'s.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use switchboard_domain::sandboxes::specs::SandboxSpec;
use switchboard_sandbox::kubernetes::{RUNTIME_NAME, Reach};
use switchboard_sandbox::{KubernetesConfig, KubernetesError, KubernetesRuntime};

use crate::cli_kube::KubeArgs;

/// Whether a spec runs on Kubernetes (naming it, or naming no runtime when `default_runtime`
/// is `kubernetes`).
pub fn wanted(specs: &[SandboxSpec], default_runtime: &str) -> bool {
    specs
        .iter()
        .any(|s| s.runtime.as_deref().unwrap_or(default_runtime) == RUNTIME_NAME)
}

/// This installation's id: `--kube-installation`, else the id of the database's installation
/// record (`recorded`; the same for every replica, new for a restored copy).
pub fn installation_id(args: &KubeArgs, recorded: &str) -> String {
    args.kube_installation
        .clone()
        .unwrap_or_else(|| recorded.to_owned())
}

/// The runtime's configuration from the flags; pods post webhooks to `--kube-public-url`,
/// else `webhook_root` (Switchboard's URL as sandboxes reach it).
pub fn config(args: &KubeArgs, installation: String, webhook_root: &str) -> KubernetesConfig {
    let root = args
        .kube_public_url
        .as_deref()
        .unwrap_or(webhook_root)
        .trim_end_matches('/');
    let mut config = KubernetesConfig::new(installation, args.kube_namespace.clone());
    config.storage_class = args.kube_storage_class.clone().filter(|c| !c.is_empty());
    config.workspace_size.clone_from(&args.kube_workspace_size);
    config.cpu_request.clone_from(&args.kube_cpu_request);
    config.memory_request.clone_from(&args.kube_memory_request);
    config.cpu_limit.clone_from(&args.kube_cpu_limit);
    config.memory_limit.clone_from(&args.kube_memory_limit);
    config
        .ephemeral_storage_limit
        .clone_from(&args.kube_ephemeral_storage_limit);
    config.runtime_class = args.kube_runtime_class.clone().filter(|c| !c.is_empty());
    config
        .image_pull_policy
        .clone_from(&args.kube_image_pull_policy);
    config.address_timeout = Duration::from_secs(args.kube_address_timeout.max(1));
    config.node_loss_toleration = Duration::from_secs(args.kube_node_loss_toleration);
    config.webhook_base_url = Some(format!("{root}/api/v1/webhooks"));
    config.reach = if args.kube_reach == "port-forward" {
        Reach::PortForward
    } else {
        Reach::PodAddress
    };
    config
}

/// Connects the Kubernetes runtime for `serve`.
///
/// # Errors
/// The configuration is refused (the message names the flag's field), or the API server
/// cannot be used (not answering, refusing the credentials, or the namespace).
pub fn connect(args: &KubeArgs, config: KubernetesConfig) -> Result<Arc<KubernetesRuntime>> {
    let runtime = match KubernetesRuntime::connect(args.kubeconfig.as_deref(), config) {
        Ok(runtime) => runtime,
        Err(e @ KubernetesError::Config(_)) => {
            bail!("the Kubernetes runtime cannot run sandboxes as configured: {e}")
        }
        Err(e) => Err(e).context(
            "the Kubernetes runtime is configured (--sandbox-runtime kubernetes, or a spec's \
             runtime) but the cluster cannot be used; check --kubeconfig and --kube-namespace",
        )?,
    };
    tracing::info!(
        server = runtime.server_version(),
        namespace = %runtime.config().namespace,
        installation = %runtime.config().installation,
        storage_class = runtime.config().storage_class.as_deref().unwrap_or("(the cluster's default)"),
        runtime_class = runtime.config().runtime_class.as_deref().unwrap_or("(the cluster's default)"),
        webhooks = %runtime.config().webhook_base_url.as_deref().unwrap_or_default(),
        "Kubernetes runtime connected"
    );
    Ok(Arc::new(runtime))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        kube: KubeArgs,
    }

    #[test]
    fn the_flags_make_the_configuration() {
        let flags = Flags::parse_from([
            "x",
            "--kube-namespace",
            "sandboxes",
            "--kube-memory-limit",
            "4Gi",
            "--kube-storage-class",
            "",
            "--kube-public-url",
            "http://10.89.0.1:8080/",
        ]);
        let c = config(&flags.kube, "sb-1".into(), "http://127.0.0.1:8080");
        assert_eq!(c.namespace, "sandboxes");
        assert_eq!(c.memory_limit.as_deref(), Some("4Gi"));
        assert_eq!(c.storage_class, None);
        assert_eq!(
            c.webhook_base_url.as_deref(),
            Some("http://10.89.0.1:8080/api/v1/webhooks")
        );
        assert_eq!(c.validate(), Ok(()));
        let c = config(&Flags::parse_from(["x"]).kube, "sb-1".into(), "http://h:1");
        assert_eq!(
            c.webhook_base_url.as_deref(),
            Some("http://h:1/api/v1/webhooks")
        );
        assert_eq!(c.namespace, "switchboard-sandboxes");
        assert_eq!(c.reach, Reach::PodAddress);
        let flags = Flags::parse_from(["x", "--kube-reach", "port-forward"]);
        assert_eq!(
            config(&flags.kube, "sb-1".into(), "http://h:1").reach,
            Reach::PortForward
        );
        assert!(Flags::try_parse_from(["x", "--kube-reach", "proxy"]).is_err());
    }
}
