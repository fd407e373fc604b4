//! Containers whose port is not published (`publish_ports` off, issue 22): nothing on the
//! host's ports, the agent server reached at the container's address on its network; pause
//! and resume keep that address, and a container started again after it exited, whose
//! address another container took meanwhile, is found at its new one
//! (`handle_after_resume`).

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::process::Command;

use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::CreateContainerOptionsBuilder;
use switchboard_domain::sandboxes::runtime::{RuntimeHandle, SandboxRuntime};
use switchboard_sandbox::docker::{LABEL_INSTALLATION, SANDBOX_NETWORK};

use crate::common::{Fixture, IMAGE, identity};

/// The container's address on Switchboard's sandbox network, as the daemon shows it.
fn address(fx: &Fixture, container: &str) -> Ipv4Addr {
    let c = fx.daemon.inspect(container).expect("the container exists");
    c.network_settings
        .and_then(|s| s.networks)
        .and_then(|mut n| n.remove(SANDBOX_NETWORK))
        .and_then(|e| e.ip_address)
        .and_then(|ip| ip.parse().ok())
        .unwrap_or_else(|| panic!("{container} has no address on {SANDBOX_NETWORK}"))
}

/// `docker port CONTAINER`: what the container publishes on the host, one line each.
fn docker_port(container: &str) -> String {
    let out = Command::new("docker")
        .args(["port", container])
        .output()
        .expect("the docker CLI");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A container of the test's installation (swept with it) that only holds an address on the
/// sandbox network; its address.
fn address_holder(fx: &Fixture) -> Ipv4Addr {
    let name = format!("{}-holder", fx.installation);
    let body = ContainerCreateBody {
        image: Some(IMAGE.to_owned()),
        entrypoint: Some(vec!["sleep".to_owned()]),
        cmd: Some(vec!["600".to_owned()]),
        labels: Some(HashMap::from([(
            LABEL_INSTALLATION.to_owned(),
            fx.installation.clone(),
        )])),
        host_config: Some(HostConfig {
            network_mode: Some(SANDBOX_NETWORK.to_owned()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let options = CreateContainerOptionsBuilder::default().name(&name).build();
    let created = fx
        .daemon
        .run(fx.daemon.docker.create_container(Some(options), body))
        .expect("creating the holder");
    fx.daemon
        .run(fx.daemon.docker.start_container(&created.id, None))
        .expect("starting the holder");
    address(fx, &created.id)
}

#[test]
fn an_unpublished_container_is_reached_at_its_address_even_after_it_moves() {
    let Some(fx) = Fixture::with("unpublished", |c| c.with_publish_ports(false)) else {
        return;
    };
    let handle = fx.start();
    let container = identity(&handle).container_id;
    let ip = address(&fx, &container);
    assert_eq!(handle.agent_server_url, format!("http://{ip}:8000"));
    assert_eq!((handle.host_port, handle.sandbox_port), (8000, 8000));
    fx.wait_alive(&handle);
    // Nothing on the host: no binding, nothing `docker port` lists.
    assert_eq!(docker_port(&container), "");
    let c = fx.inspect(&handle).unwrap();
    let bound = c
        .host_config
        .and_then(|h| h.port_bindings)
        .unwrap_or_default();
    assert!(bound.is_empty(), "{bound:?}");

    // Pause and resume keep the address.
    fx.runtime.pause(&handle).unwrap();
    fx.runtime.resume(&handle).unwrap();
    assert_eq!(fx.runtime.handle_after_resume(&handle), None);
    fx.wait_alive(&handle);

    // Exited (as a daemon restart leaves it), its address taken meanwhile: started again by
    // resume, it has another, which the runtime tells.
    fx.daemon.kill(&container);
    let taken = address_holder(&fx);
    fx.runtime.resume(&handle).unwrap();
    let now = address(&fx, &container);
    let moved = fx.runtime.handle_after_resume(&handle);
    eprintln!("address {ip} → {now} (the holder took {taken})");
    if taken == ip {
        assert_ne!(now, ip);
        assert!(moved.is_some(), "the address changed: {ip} → {now}");
    }
    let current: RuntimeHandle = moved.unwrap_or_else(|| handle.clone());
    assert_eq!(current.agent_server_url, format!("http://{now}:8000"));
    assert_eq!(current.data, handle.data, "the same container");
    fx.wait_alive(&current);
    assert_eq!(docker_port(&container), "");
    fx.runtime.delete(&current).unwrap();
    assert!(fx.inspect(&current).is_none());
}
