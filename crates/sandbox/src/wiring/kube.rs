//! The Kubernetes runtime wired from the options (issue 32; docs/kubernetes.md): the
//! cluster, the namespace, the installation id, the URL pods post webhooks to, and what each
//! pod gets (storage, requests, limits, RuntimeClass). The runtime's background work (the
//! orphan sweep) is [`crate::kubernetes::upkeep`]'s.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use switchboard_domain::sandboxes::specs::SandboxSpec;

use super::options::KubeOptions;
use crate::kubernetes::RUNTIME_NAME;
use crate::{KubernetesConfig, KubernetesError, KubernetesRuntime};

/// Whether a spec runs on Kubernetes (naming it, or naming no runtime when `default_runtime`
/// is `kubernetes`).
pub fn wanted(specs: &[SandboxSpec], default_runtime: &str) -> bool {
    specs
        .iter()
        .any(|s| s.runtime.as_deref().unwrap_or(default_runtime) == RUNTIME_NAME)
}

/// This installation's id: `--kube-installation`, else the id of the database's installation
/// record (`recorded`; the same for every replica, new for a restored copy).
pub fn installation_id(options: &KubeOptions, recorded: &str) -> String {
    options
        .installation
        .clone()
        .unwrap_or_else(|| recorded.to_owned())
}

/// The runtime's configuration from the options; pods post webhooks to `--kube-public-url`,
/// else `webhook_root` (Switchboard's URL as sandboxes reach it), either without a final
/// `/`; an empty storage or runtime class is the cluster's default.
pub fn config(options: &KubeOptions, installation: String, webhook_root: &str) -> KubernetesConfig {
    let root = options
        .public_url
        .as_deref()
        .unwrap_or(webhook_root)
        .trim_end_matches('/');
    let mut config = KubernetesConfig::new(installation, options.namespace.clone());
    config.storage_class = options.storage_class.clone().filter(|c| !c.is_empty());
    config.workspace_size.clone_from(&options.workspace_size);
    config.cpu_request.clone_from(&options.cpu_request);
    config.memory_request.clone_from(&options.memory_request);
    config.cpu_limit.clone_from(&options.cpu_limit);
    config.memory_limit.clone_from(&options.memory_limit);
    config
        .ephemeral_storage_limit
        .clone_from(&options.ephemeral_storage_limit);
    config.runtime_class = options.runtime_class.clone().filter(|c| !c.is_empty());
    config
        .image_pull_policy
        .clone_from(&options.image_pull_policy);
    config.address_timeout = options.address_timeout.max(Duration::from_secs(1));
    config.node_loss_toleration = options.node_loss_toleration;
    config.webhook_base_url = Some(format!("{root}/api/v1/webhooks"));
    config.reach = options.reach;
    config
}

/// Connects the Kubernetes runtime for `serve` (the cluster of `--kubeconfig`).
///
/// # Errors
/// The configuration is refused (the message names the flag's field), or the API server
/// cannot be used (not answering, refusing the credentials, or the namespace).
pub fn connect(options: &KubeOptions, config: KubernetesConfig) -> Result<Arc<KubernetesRuntime>> {
    let runtime = match KubernetesRuntime::connect(options.kubeconfig.as_deref(), config) {
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
    use crate::kubernetes::Reach;

    fn options() -> KubeOptions {
        KubeOptions {
            kubeconfig: None,
            namespace: "switchboard-sandboxes".into(),
            public_url: None,
            installation: None,
            storage_class: None,
            workspace_size: crate::kubernetes::config::DEFAULT_WORKSPACE_SIZE.into(),
            cpu_request: None,
            memory_request: None,
            cpu_limit: None,
            memory_limit: None,
            ephemeral_storage_limit: None,
            runtime_class: None,
            image_pull_policy: "IfNotPresent".into(),
            address_timeout: Duration::from_secs(180),
            node_loss_toleration: Duration::from_secs(30),
            orphan_grace: Duration::from_secs(300),
            reach: Reach::PodAddress,
        }
    }

    #[test]
    fn the_options_make_the_configuration() {
        let mut o = options();
        o.namespace = "sandboxes".into();
        o.memory_limit = Some("4Gi".into());
        o.storage_class = Some(String::new());
        o.public_url = Some("http://10.89.0.1:8080/".into());
        let c = config(&o, "sb-1".into(), "http://127.0.0.1:8080");
        assert_eq!(c.namespace, "sandboxes");
        assert_eq!(c.memory_limit.as_deref(), Some("4Gi"));
        assert_eq!(c.storage_class, None);
        assert_eq!(
            c.webhook_base_url.as_deref(),
            Some("http://10.89.0.1:8080/api/v1/webhooks")
        );
        assert_eq!(c.validate(), Ok(()));
        let c = config(&options(), "sb-1".into(), "http://h:1");
        assert_eq!(
            c.webhook_base_url.as_deref(),
            Some("http://h:1/api/v1/webhooks")
        );
        assert_eq!(c.namespace, "switchboard-sandboxes");
        assert_eq!(c.reach, Reach::PodAddress);
        let o = KubeOptions {
            reach: Reach::PortForward,
            ..options()
        };
        assert_eq!(
            config(&o, "sb-1".into(), "http://h:1").reach,
            Reach::PortForward
        );
    }

    #[test]
    fn the_installation_id_comes_from_the_option_or_the_record() {
        assert_eq!(installation_id(&options(), "sb-1"), "sb-1");
        let o = KubeOptions {
            installation: Some("prod".into()),
            ..options()
        };
        assert_eq!(installation_id(&o, "sb-1"), "prod");
    }
}
