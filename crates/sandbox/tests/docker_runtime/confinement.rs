//! What a container is given and what it is not: limits, a port on loopback only, exactly the
//! environment it was given, labels, init, its own volume; host networking; images that are
//! not there.

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use switchboard_domain::sandboxes::limits::{Cpus, ResourceLimits};
use switchboard_domain::sandboxes::runtime::{RuntimeError, SandboxRuntime};
use switchboard_sandbox::DockerNetwork;
use switchboard_sandbox::docker::{
    DEFAULT_PIDS_LIMIT, LABEL_INSTALLATION, LABEL_SANDBOX_ID, LABEL_SPEC_ID, SandboxContainer,
};

use crate::common::{Fixture, IMAGE, PASSTHROUGH, WEBHOOK_URL, identity, launch_spec, preset};

#[test]
fn a_container_gets_its_limits_a_loopback_port_and_only_its_environment() {
    let Some(fx) = Fixture::new("a_container_gets_its_limits") else {
        return;
    };
    let mut spec = preset();
    spec.limits = ResourceLimits {
        memory_mb: Some(768),
        cpus: Some(Cpus::from_cpus(1.5).unwrap()),
    };
    let launch = launch_spec(spec.clone());
    let handle = fx.runtime.start(&launch).unwrap();
    let c = fx.inspect(&handle).unwrap();
    let host = c.host_config.clone().unwrap();

    // Limits, enforced by the engine.
    assert_eq!(host.memory, Some(768 * 1024 * 1024));
    assert_eq!(host.memory_swap, Some(768 * 1024 * 1024));
    assert_eq!(host.nano_cpus, Some(1_500_000_000));
    assert_eq!(host.init, Some(true));
    // Its log is capped (issue 13): json-file, 64 MiB, two files.
    let log = host.log_config.clone().unwrap();
    assert_eq!(log.typ.as_deref(), Some("json-file"));
    let options = log.config.unwrap();
    assert_eq!(options.get("max-size").map(String::as_str), Some("64m"));
    assert_eq!(options.get("max-file").map(String::as_str), Some("2"));
    assert_eq!(
        host.extra_hosts.unwrap(),
        ["host.docker.internal:host-gateway"]
    );
    // Confined (issue 18): no new privileges, no capability (the image runs as uid 10001),
    // the pids limit, never privileged, private IPC, the read-only root with the tmpfs the
    // image declares.
    assert_eq!(host.security_opt.clone().unwrap(), ["no-new-privileges"]);
    assert_eq!(host.cap_drop.clone().unwrap(), ["ALL"]);
    assert_eq!(
        host.cap_add.clone().unwrap_or_default(),
        Vec::<String>::new()
    );
    assert_eq!(host.pids_limit, Some(DEFAULT_PIDS_LIMIT));
    assert_eq!(host.privileged, Some(false));
    assert_eq!(host.ipc_mode.as_deref(), Some("private"));
    assert_eq!(host.readonly_rootfs, Some(true));
    let tmpfs = host.tmpfs.clone().unwrap();
    assert_eq!(
        tmpfs.keys().collect::<BTreeSet<_>>(),
        BTreeSet::from([&"/home/openhands".to_owned(), &"/tmp".to_owned()])
    );

    // The port: on 127.0.0.1 only, as configured and as bound.
    let configured = host.port_bindings.unwrap();
    let bound = c.network_settings.unwrap().ports.unwrap();
    for bindings in [&configured, &bound] {
        assert_eq!(bindings.len(), 1, "{bindings:?}");
        let list = bindings["8000/tcp"].as_ref().unwrap();
        assert_eq!(
            list.len(),
            1,
            "one binding, no IPv6 or wildcard one: {list:?}"
        );
        assert_eq!(list[0].host_ip.as_deref(), Some("127.0.0.1"));
        assert_eq!(list[0].host_port, Some(handle.host_port.to_string()));
    }
    // Reachable on loopback, refused on the host's bridge address.
    let port = handle.host_port;
    assert!(TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), SECOND).is_ok());
    if let Some(gateway) = fx.runtime.bridge_gateway().unwrap() {
        let other = SocketAddr::from((gateway, port));
        assert!(
            TcpStream::connect_timeout(&other, SECOND).is_err(),
            "{other} must not reach the agent server"
        );
    }

    // The environment: the image's own, then exactly what the launch gave.
    let mut expected: BTreeSet<String> = fx.daemon.image_env(IMAGE).into_iter().collect();
    let given = spec
        .initial_env
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .chain([
            format!("{}={}", PASSTHROUGH.0, PASSTHROUGH.1),
            format!("OH_SESSION_API_KEYS_0={}", launch.session_key.expose()),
            format!("OH_WEBHOOKS_0_BASE_URL={WEBHOOK_URL}"),
            // The webhook's fast path (issue 19).
            "OH_WEBHOOKS_0_EVENT_BUFFER_SIZE=1".to_owned(),
            "OH_WEBHOOKS_0_FLUSH_DELAY=0.1".to_owned(),
            // The agent server's address inside (issue 31).
            "AGENT_SERVER_PORT=8000".to_owned(),
            "AGENT_SERVER=8000".to_owned(),
            format!("SANDBOX_ID={}", launch.sandbox_id),
        ]);
    for pair in given {
        let name = pair.split('=').next().unwrap().to_owned();
        expected.retain(|e| !e.starts_with(&format!("{name}=")));
        expected.insert(pair);
    }
    let config = c.config.unwrap();
    let actual: BTreeSet<String> = config.env.unwrap().into_iter().collect();
    assert_eq!(actual, expected);

    // Labels, the command with the listening address appended, the workspace volume.
    let labels = config.labels.unwrap();
    assert_eq!(labels[LABEL_INSTALLATION], fx.installation);
    assert_eq!(labels[LABEL_SANDBOX_ID], launch.sandbox_id.to_string());
    assert_eq!(labels[LABEL_SPEC_ID], IMAGE);
    assert_eq!(
        config.cmd.unwrap(),
        ["--port", "8000", "--host", "0.0.0.0", "--port", "8000"]
    );
    let mounts = c.mounts.unwrap();
    assert_eq!(mounts.len(), 1, "{mounts:?}");
    assert_eq!(
        mounts[0].name.as_deref(),
        Some(identity(&handle).volume.as_str())
    );
    assert_eq!(mounts[0].destination.as_deref(), Some("/workspace"));
    fx.runtime.delete(&handle).unwrap();
}

#[test]
fn host_networking_serves_on_loopback_without_publishing() {
    let Some(fx) = Fixture::with("host_networking", |c| c.with_network(DockerNetwork::Host)) else {
        return;
    };
    let handle = fx.start();
    let c = fx.inspect(&handle).unwrap();
    let host = c.host_config.unwrap();
    assert_eq!(host.network_mode.as_deref(), Some("host"));
    assert!(host.port_bindings.unwrap_or_default().is_empty());
    assert_eq!(handle.sandbox_port, handle.host_port);
    let port = handle.host_port.to_string();
    assert_eq!(
        c.config.unwrap().cmd.unwrap(),
        [
            "--port",
            "8000",
            "--host",
            "127.0.0.1",
            "--port",
            port.as_str()
        ]
    );
    fx.wait_alive(&handle);
    fx.runtime.delete(&handle).unwrap();
    assert!(fx.inspect(&handle).is_none());
}

#[test]
fn a_missing_image_is_a_clear_error_and_leaves_nothing_behind() {
    let Some(fx) = Fixture::new("a_missing_image") else {
        return;
    };
    let mut spec = preset();
    spec.id = "switchboard/no-such-image:missing".into();
    let err = fx.runtime.start(&launch_spec(spec)).unwrap_err();
    assert_eq!(
        err,
        RuntimeError::Launch(
            "the image switchboard/no-such-image:missing is not on the Docker host; images are \
             never pulled when a sandbox starts: pull it first (`switchboard specs pull`, or \
             `docker pull switchboard/no-such-image:missing`)"
                .into()
        )
    );
    let mut relative = preset();
    relative.working_dir = "project".into();
    assert!(matches!(
        fx.runtime.start(&launch_spec(relative)),
        Err(RuntimeError::InvalidSpec(_))
    ));
    assert_eq!(
        fx.runtime.list_sandboxes().unwrap(),
        Vec::<SandboxContainer>::new()
    );
    assert!(fx.runtime.list_volumes().unwrap().is_empty());

    // Pulling is a separate, explicit step; an unreachable registry is a clear error.
    let unreachable = "127.0.0.1:9/switchboard/none";
    let pull = fx.runtime.pull(unreachable).unwrap_err().to_string();
    assert!(
        pull.starts_with("pulling image 127.0.0.1:9/switchboard/none:latest: "),
        "{pull}"
    );
    assert_eq!(
        fx.runtime
            .missing_images([IMAGE, unreachable, IMAGE, unreachable])
            .unwrap(),
        [unreachable]
    );
}

#[test]
fn installations_sharing_a_daemon_never_touch_each_others_containers() {
    let Some(mine) = Fixture::new("installations_sharing_a_daemon") else {
        return;
    };
    let Some(theirs) = Fixture::new("installations_sharing_a_daemon") else {
        return;
    };
    let handle = theirs.start();
    let id = identity(&handle);

    // Not listed, not observed, not deleted by the other installation.
    assert!(mine.runtime.list_sandboxes().unwrap().is_empty());
    assert!(matches!(
        mine.runtime.delete(&handle),
        Err(RuntimeError::BadHandle(_))
    ));
    assert_eq!(
        mine.runtime.observe(&handle),
        switchboard_domain::sandboxes::runtime::Observed::Gone
    );
    let listed = theirs.runtime.list_sandboxes().unwrap();
    assert_eq!(listed.len(), 1);
    assert!(mine.runtime.remove_orphan(&listed[0]).is_err());
    assert!(theirs.inspect(&handle).is_some(), "still there");

    // Its own installation lists it, with its labels, and can remove it as an orphan.
    let found = &listed[0];
    assert_eq!(found.container_id, id.container_id);
    assert_eq!(found.container_name, id.container_name);
    assert_eq!(found.sandbox_id, id.sandbox_id);
    assert_eq!(found.spec_id.as_deref(), Some(IMAGE));
    assert_eq!(found.org_id, None);
    assert!(found.created_at.is_some());
    theirs.runtime.remove_orphan(found).unwrap();
    assert!(theirs.inspect(&handle).is_none());
    assert!(!theirs.daemon.volume_exists(&id.volume));
    assert!(theirs.runtime.list_volumes().unwrap().is_empty());
}

const SECOND: Duration = Duration::from_secs(1);
