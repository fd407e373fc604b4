//! What a sandbox's container is made of (`POST /containers/create`): image, command,
//! environment, labels, published port, limits, workspace volume, init, extra host. Pure
//! functions of the launch, the configuration and the chosen port, so they are tested
//! without a daemon.

use std::collections::HashMap;
use std::path::Path;

use bollard::models::{
    ContainerCreateBody, HostConfig, HostConfigLogConfig, Mount, MountType, PortBinding,
};
use switchboard_domain::OrgId;
use switchboard_domain::sandboxes::runtime::{LaunchSpec, RuntimeError};
use switchboard_domain::sandboxes::services::ServiceEndpoint;
use switchboard_domain::sandboxes::specs::SandboxSpec;

use crate::docker::config::{
    CONTAINER_PREFIX, DockerConfig, DockerNetwork, HOST_GATEWAY_ENTRY, LABEL_INSTALLATION,
    LABEL_ORG_ID, LABEL_SANDBOX_ID, LABEL_SPEC_ID, VOLUME_PREFIX,
};
use crate::docker::hardening::{self, ImageFacts};
use crate::launch;

/// The name of a sandbox's container: [`CONTAINER_PREFIX`] + its id.
pub fn container_name(launch: &LaunchSpec) -> String {
    format!("{CONTAINER_PREFIX}{}", launch.sandbox_id)
}

/// The name of a sandbox's workspace volume: [`VOLUME_PREFIX`] + its id.
pub fn volume_name(launch: &LaunchSpec) -> String {
    format!("{VOLUME_PREFIX}{}", launch.sandbox_id)
}

/// The bridge network a sandbox's container joins: [`DockerConfig::bridge_network`], or, for a
/// spec with egress lists of its own while egress rules are loaded, a network of those lists
/// (`<bridge network>-<16 hex digits of their FNV-1a hash>`), whose bridge gets the operator's
/// lists and the spec's (issue 33: the rules are the bridge's, so containers whose lists
/// differ cannot share one). The same lists always name the same network.
pub fn network_of(config: &DockerConfig, spec: &SandboxSpec) -> String {
    if config.egress.is_none() || spec.egress.is_empty() {
        return config.bridge_network.clone();
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let lists = [("allow", &spec.egress.allow), ("deny", &spec.egress.deny)];
    for (name, list) in lists {
        let entries = list.iter().map(ToString::to_string);
        for part in std::iter::once(name.to_owned()).chain(entries) {
            for byte in part.bytes().chain([b'\n']) {
                hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    format!("{}-{hash:016x}", config.bridge_network)
}

/// The labels of a sandbox's container and volume: installation, sandbox id, spec id and,
/// when known, the org.
pub fn labels(
    config: &DockerConfig,
    launch: &LaunchSpec,
    org_id: Option<&OrgId>,
) -> HashMap<String, String> {
    let mut labels = HashMap::from([
        (LABEL_INSTALLATION.to_owned(), config.installation.clone()),
        (LABEL_SANDBOX_ID.to_owned(), launch.sandbox_id.to_string()),
        (LABEL_SPEC_ID.to_owned(), launch.spec.id.clone()),
    ]);
    if let Some(org) = org_id {
        labels.insert(LABEL_ORG_ID.to_owned(), org.to_string());
    }
    labels
}

/// The container's arguments: the spec's command (the image's entry point is the agent
/// server, as in OpenHands' Docker preset) + `--host 0.0.0.0 --port <container port>` on a
/// bridge, or `--host 127.0.0.1 --port <host port>` with host networking. The agent server
/// takes the last `--host` and `--port` it is given.
pub fn command(launch: &LaunchSpec, config: &DockerConfig, host_port: u16) -> Vec<String> {
    let host = match config.network {
        DockerNetwork::Bridge => "0.0.0.0".to_owned(),
        DockerNetwork::Host => config.publish_address.to_string(),
    };
    let port = agent_port(config, host_port);
    let mut command = launch.spec.command.clone();
    command.extend([
        "--host".to_owned(),
        host,
        "--port".to_owned(),
        port.to_string(),
    ]);
    command
}

/// The port the agent server listens on inside the container: [`DockerConfig::container_port`]
/// on a bridge, `host_port` with host networking (told to the sandbox as `AGENT_SERVER_PORT`).
pub fn agent_port(config: &DockerConfig, host_port: u16) -> u16 {
    match config.network {
        DockerNetwork::Bridge => config.container_port,
        DockerNetwork::Host => host_port,
    }
}

/// The container's working directory: the spec's, an absolute path inside the container, or
/// `None` (the image's own) for `.`, the default of a spec that names none.
///
/// # Errors
/// [`RuntimeError::InvalidSpec`] for any other relative path.
pub fn working_dir(spec_working_dir: &str) -> Result<Option<String>, RuntimeError> {
    if spec_working_dir == "." {
        Ok(None)
    } else if Path::new(spec_working_dir).is_absolute() {
        Ok(Some(spec_working_dir.to_owned()))
    } else {
        Err(RuntimeError::InvalidSpec(format!(
            "working_dir {spec_working_dir:?}: the Docker runtime needs an absolute path inside \
             the container (or `.` for the image's own)"
        )))
    }
}

/// The request body creating the container of `launch`, its agent server on `host_port` of
/// the Docker host (published from [`DockerConfig::container_port`] on a bridge; on a bridge
/// without [`DockerConfig::publish_ports`], nothing is published or exposed and `host_port`
/// is unused), its other exposed services (`services`: VSCODE, WORKER_1, WORKER_2 on their
/// OpenHands container ports, issue 22) published the same way on theirs, confined as
/// [`hardening::confine`] says for `image`.
///
/// The environment is exactly [`launch::environment_with`] (the passthrough variables, the
/// spec's `initial_env`, the session key, the webhook URL and its fast-path settings, and
/// each exposed service's container port, `WORKER_1=8011` as OpenHands' Docker runtime sets
/// it), on top of the image's own; nothing of Switchboard's own environment is added.
///
/// # Errors
/// [`RuntimeError::InvalidSpec`] for a working directory or variable that cannot be used.
pub fn container_body(
    launch: &LaunchSpec,
    config: &DockerConfig,
    labels: HashMap<String, String>,
    host_port: u16,
    services: &[ServiceEndpoint],
    image: &ImageFacts,
) -> Result<ContainerCreateBody, RuntimeError> {
    let ports: Vec<_> = services
        .iter()
        .map(|s| (s.service, s.sandbox_port))
        .collect();
    let env = launch::environment_with(launch, agent_port(config, host_port), &ports)?
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let limits = &launch.spec.limits;
    let memory = limits
        .memory_bytes()
        .map(|bytes| i64::try_from(bytes).unwrap_or(i64::MAX));
    let nano_cpus = limits
        .cpus
        .map(|c| i64::try_from(c.nano_cpus()).unwrap_or(i64::MAX));
    let mut host_config = HostConfig {
        init: Some(true),
        extra_hosts: Some(vec![HOST_GATEWAY_ENTRY.to_owned()]),
        memory,
        // Swap limited to the memory limit: the limit is the real one (no swap on top).
        memory_swap: memory,
        nano_cpus,
        mounts: Some(vec![Mount {
            typ: Some(MountType::VOLUME),
            source: Some(volume_name(launch)),
            target: Some(config.workspace_mount.clone()),
            ..Default::default()
        }]),
        log_config: (config.log_max_mib > 0).then(|| HostConfigLogConfig {
            typ: Some("json-file".to_owned()),
            config: Some(HashMap::from([
                ("max-size".to_owned(), format!("{}m", config.log_max_mib)),
                ("max-file".to_owned(), "2".to_owned()),
            ])),
        }),
        ..Default::default()
    };
    hardening::confine(&mut host_config, config, image);
    let exposed_ports = match config.network {
        DockerNetwork::Bridge if !config.publish_ports => {
            // Reached at its address on the network, through nothing on the host.
            host_config.network_mode = Some(network_of(config, &launch.spec));
            None
        }
        DockerNetwork::Bridge => {
            host_config.network_mode = Some(network_of(config, &launch.spec));
            let published: Vec<(String, u16)> =
                std::iter::once((format!("{}/tcp", config.container_port), host_port))
                    .chain(
                        services
                            .iter()
                            .map(|s| (format!("{}/tcp", s.sandbox_port), s.host_port)),
                    )
                    .collect();
            host_config.port_bindings = Some(
                published
                    .iter()
                    .map(|(key, port)| {
                        let binding = PortBinding {
                            host_ip: Some(config.publish_address.to_string()),
                            host_port: Some(port.to_string()),
                        };
                        (key.clone(), Some(vec![binding]))
                    })
                    .collect(),
            );
            Some(published.into_iter().map(|(key, _)| key).collect())
        }
        DockerNetwork::Host => {
            host_config.network_mode = Some("host".to_owned());
            None
        }
    };
    Ok(ContainerCreateBody {
        image: Some(launch.spec.id.clone()),
        cmd: Some(command(launch, config, host_port)),
        env: Some(env),
        working_dir: working_dir(&launch.spec.working_dir)?,
        labels: Some(labels),
        exposed_ports,
        host_config: Some(host_config),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_domain::SandboxId;
    use switchboard_domain::sandboxes::limits::{Cpus, ResourceLimits};
    use switchboard_domain::sandboxes::runtime::SessionKey;

    fn launch(working_dir: &str, limits: ResourceLimits) -> LaunchSpec {
        LaunchSpec {
            sandbox_id: SandboxId::new_random(),
            spec: SandboxSpec {
                id: "switchboard/agent-server:local".into(),
                command: vec!["--port".into(), "8000".into()],
                initial_env: [("A".to_owned(), "1".to_owned())].into(),
                working_dir: working_dir.into(),
                limits,
                created_at: time::OffsetDateTime::UNIX_EPOCH,
                runtime: None,
                exposed_services: Vec::new(),
                egress: Default::default(),
            },
            session_key: SessionKey::new("secret"),
            webhook_base_url: "http://host.docker.internal:3000/api/v1/webhooks".into(),
            passthrough_env: vec![("LLM_API_KEY".into(), "k".into())],
            local_repositories: Vec::new(),
            org_id: None,
            owner_id: None,
        }
    }

    #[test]
    fn a_bridged_container_publishes_on_loopback_only() {
        let limits = ResourceLimits {
            memory_mb: Some(512),
            cpus: Some(Cpus::from_cpus(1.5).unwrap()),
        };
        let l = launch("/workspace/project", limits);
        let config = DockerConfig::new("inst");
        let body = container_body(
            &l,
            &config,
            labels(&config, &l, None),
            41234,
            &[],
            &ImageFacts::default(),
        )
        .unwrap();
        assert_eq!(
            body.image.as_deref(),
            Some("switchboard/agent-server:local")
        );
        assert_eq!(
            body.cmd.unwrap(),
            ["--port", "8000", "--host", "0.0.0.0", "--port", "8000"]
        );
        assert_eq!(
            body.env.unwrap(),
            [
                "A=1".to_owned(),
                "AGENT_SERVER=8000".to_owned(),
                "AGENT_SERVER_PORT=8000".to_owned(),
                "LLM_API_KEY=k".to_owned(),
                "OH_SESSION_API_KEYS_0=secret".to_owned(),
                "OH_WEBHOOKS_0_BASE_URL=http://host.docker.internal:3000/api/v1/webhooks"
                    .to_owned(),
                "OH_WEBHOOKS_0_EVENT_BUFFER_SIZE=1".to_owned(),
                "OH_WEBHOOKS_0_FLUSH_DELAY=0.1".to_owned(),
                format!("SANDBOX_ID={}", l.sandbox_id),
            ]
        );
        assert_eq!(body.working_dir.as_deref(), Some("/workspace/project"));
        assert_eq!(body.exposed_ports.unwrap(), ["8000/tcp"]);
        let labels = body.labels.unwrap();
        assert_eq!(labels[LABEL_INSTALLATION], "inst");
        assert_eq!(labels[LABEL_SANDBOX_ID], l.sandbox_id.to_string());
        assert_eq!(labels[LABEL_SPEC_ID], "switchboard/agent-server:local");
        assert!(!labels.contains_key(LABEL_ORG_ID));
        let host = body.host_config.unwrap();
        assert_eq!(host.init, Some(true));
        assert_eq!(host.network_mode.as_deref(), Some("switchboard-sandboxes"));
        assert_eq!(
            host.extra_hosts.unwrap(),
            ["host.docker.internal:host-gateway"]
        );
        let bindings = host.port_bindings.unwrap();
        let binding = bindings["8000/tcp"].as_ref().unwrap();
        assert_eq!(binding.len(), 1);
        assert_eq!(binding[0].host_ip.as_deref(), Some("127.0.0.1"));
        assert_eq!(binding[0].host_port.as_deref(), Some("41234"));
        assert_eq!(host.memory, Some(512 * 1024 * 1024));
        assert_eq!(host.memory_swap, Some(512 * 1024 * 1024));
        assert_eq!(host.nano_cpus, Some(1_500_000_000));
        let mount = &host.mounts.unwrap()[0];
        assert_eq!(
            mount.source.as_deref(),
            Some(format!("switchboard-workspace-{}", l.sandbox_id).as_str())
        );
        assert_eq!(mount.target.as_deref(), Some("/workspace"));
        assert_eq!(mount.typ, Some(MountType::VOLUME));
    }

    #[test]
    fn an_unpublished_bridged_container_listens_on_its_network_only() {
        let l = launch(".", ResourceLimits::default());
        let config = DockerConfig::new("inst").with_publish_ports(false);
        assert!(!config.publishes());
        let body = container_body(
            &l,
            &config,
            labels(&config, &l, None),
            8000,
            &[],
            &ImageFacts::default(),
        )
        .unwrap();
        assert_eq!(
            body.cmd.unwrap(),
            ["--port", "8000", "--host", "0.0.0.0", "--port", "8000"]
        );
        assert_eq!(body.exposed_ports, None);
        let host = body.host_config.unwrap();
        assert_eq!(host.network_mode.as_deref(), Some("switchboard-sandboxes"));
        assert_eq!(host.port_bindings, None);
        assert!(DockerConfig::new("inst").publishes());
        assert!(
            !DockerConfig::new("inst")
                .with_network(DockerNetwork::Host)
                .publishes()
        );
    }

    #[test]
    fn host_networking_listens_on_loopback_and_publishes_nothing() {
        let l = launch(".", ResourceLimits::default());
        let config = DockerConfig::new("inst").with_network(DockerNetwork::Host);
        let org = OrgId::new_random();
        let body = container_body(
            &l,
            &config,
            labels(&config, &l, Some(&org)),
            41234,
            &[],
            &ImageFacts::default(),
        )
        .unwrap();
        assert_eq!(
            body.cmd.unwrap(),
            ["--port", "8000", "--host", "127.0.0.1", "--port", "41234"]
        );
        assert!(
            body.env
                .unwrap()
                .contains(&"AGENT_SERVER_PORT=41234".to_owned()),
            "the port it listens on, the host's with host networking"
        );
        assert_eq!(body.working_dir, None, "`.`: the image's own");
        assert_eq!(body.exposed_ports, None);
        assert_eq!(body.labels.unwrap()[LABEL_ORG_ID], org.to_string());
        let host = body.host_config.unwrap();
        assert_eq!(host.network_mode.as_deref(), Some("host"));
        assert_eq!(host.port_bindings, None);
        assert_eq!(
            (host.memory, host.memory_swap, host.nano_cpus),
            (None, None, None)
        );
    }

    #[test]
    fn exposed_services_get_their_openhands_ports() {
        use switchboard_domain::sandboxes::services::ExposedService;
        let l = launch(".", ResourceLimits::default());
        let services = [
            ServiceEndpoint {
                service: ExposedService::Vscode,
                url: "http://127.0.0.1:41001".into(),
                host_port: 41001,
                sandbox_port: 8001,
            },
            ServiceEndpoint {
                service: ExposedService::Worker1,
                url: "http://127.0.0.1:41011".into(),
                host_port: 41011,
                sandbox_port: 8011,
            },
        ];
        let config = DockerConfig::new("inst");
        let labels = labels(&config, &l, None);
        let body = container_body(
            &l,
            &config,
            labels.clone(),
            41000,
            &services,
            &ImageFacts::default(),
        )
        .unwrap();
        let env = body.env.unwrap();
        for var in ["VSCODE=8001", "OH_VSCODE_PORT=8001", "WORKER_1=8011"] {
            assert!(env.contains(&var.to_owned()), "{var}: {env:?}");
        }
        assert!(!env.iter().any(|v| v.starts_with("WORKER_2=")), "{env:?}");
        let mut exposed = body.exposed_ports.unwrap();
        exposed.sort();
        assert_eq!(exposed, ["8000/tcp", "8001/tcp", "8011/tcp"]);
        let bindings = body.host_config.unwrap().port_bindings.unwrap();
        for (key, port) in [
            ("8000/tcp", "41000"),
            ("8001/tcp", "41001"),
            ("8011/tcp", "41011"),
        ] {
            let b = &bindings[key].as_ref().unwrap()[0];
            assert_eq!(
                (b.host_ip.as_deref(), b.host_port.as_deref()),
                (Some("127.0.0.1"), Some(port)),
                "{key}"
            );
        }
        // Unpublished: the same variables, nothing published.
        let config = config.with_publish_ports(false);
        let body =
            container_body(&l, &config, labels, 8000, &services, &ImageFacts::default()).unwrap();
        assert!(body.env.unwrap().contains(&"WORKER_1=8011".to_owned()));
        assert_eq!(body.exposed_ports, None);
        assert_eq!(body.host_config.unwrap().port_bindings, None);
    }

    #[test]
    fn relative_working_dirs_are_refused() {
        let l = launch("work", ResourceLimits::default());
        let config = DockerConfig::new("inst");
        let e = container_body(&l, &config, HashMap::new(), 1, &[], &ImageFacts::default())
            .unwrap_err();
        assert!(matches!(e, RuntimeError::InvalidSpec(_)), "{e}");
        assert!(e.to_string().contains("absolute path"), "{e}");
    }

    #[test]
    fn a_spec_with_lists_of_its_own_gets_a_network_of_those_lists() {
        let spec = |allow: &[&str], deny: &[&str]| {
            let mut spec = launch(".", ResourceLimits::default()).spec;
            spec.egress.allow = allow.iter().map(|d| d.parse().unwrap()).collect();
            spec.egress.deny = deny.iter().map(|d| d.parse().unwrap()).collect();
            spec
        };
        let plain = DockerConfig::new("i");
        let ruled = DockerConfig::new("i").with_egress(Some(crate::docker::DockerEgress {
            nft: "nft".into(),
            allow: vec![],
            deny: vec![],
            host_ports: vec![],
        }));
        let git = spec(&["git.internal"], &[]);
        // No rules loaded, or no lists of its own: the configured network.
        assert_eq!(network_of(&plain, &git), "switchboard-sandboxes");
        assert_eq!(network_of(&ruled, &spec(&[], &[])), "switchboard-sandboxes");
        let name = network_of(&ruled, &git);
        assert!(name.starts_with("switchboard-sandboxes-"), "{name}");
        assert_eq!(name.len(), "switchboard-sandboxes-".len() + 16, "{name}");
        assert_eq!(name, network_of(&ruled, &spec(&["git.internal"], &[])));
        // Other lists, or the same entry denied rather than allowed: another network.
        assert_ne!(name, network_of(&ruled, &spec(&[], &["git.internal"])));
        assert_ne!(
            name,
            network_of(&ruled, &spec(&["git.internal", "10.0.0.0/8"], &[]))
        );
        let body = container_body(
            &launch_with(git),
            &ruled,
            HashMap::new(),
            30000,
            &[],
            &ImageFacts::new(None, None, None),
        )
        .unwrap();
        assert_eq!(
            body.host_config.unwrap().network_mode.as_deref(),
            Some(name.as_str())
        );
    }

    fn launch_with(spec: SandboxSpec) -> LaunchSpec {
        LaunchSpec {
            spec,
            ..launch(".", ResourceLimits::default())
        }
    }
}
