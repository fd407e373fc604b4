//! Issue 33, egress rules of bridged containers: loaded on the Docker host for the bridge,
//! they close the host's services (but the webhook URL's port and the operator's host ports)
//! and link-local addresses (cloud metadata) to a container, under runc and under gVisor,
//! whose network stack no rule inside the container would hold. The same container on a
//! network without the rules reaches the closed service: the control that shows the rules
//! are what refuses. A spec with lists of its own gets a network of those lists: its
//! container reaches what the spec allows, and still not the host.

use std::net::TcpListener;

use switchboard_domain::sandboxes::runtime::{
    AgentServerClient, BashCommand, RuntimeHandle, SandboxRuntime, SessionKey,
};
use switchboard_sandbox::docker::DockerEgress;

use crate::common::{Fixture, launch_spec, preset};

/// What a connection from inside the container to `host:port` came to: `connected`, or the
/// exception's class (`ConnectionRefusedError`, `TimeoutError`).
fn attempt(
    fx: &Fixture,
    handle: &RuntimeHandle,
    key: &SessionKey,
    host: &str,
    port: u16,
) -> String {
    let script = format!(
        "import socket\ntry:\n    socket.create_connection(('{host}', {port}), timeout=5)\n    \
         print('connected')\nexcept OSError as e:\n    print(type(e).__name__)\n"
    );
    let out = fx
        .client
        .execute_bash(
            &handle.agent_server_url,
            key,
            &BashCommand {
                command: format!("python3 -c \"{script}\""),
                cwd: None,
                timeout_secs: 60,
            },
        )
        .unwrap_or_else(|e| panic!("{host}:{port}: {e}"));
    out.stdout.trim().to_owned()
}

/// Whether the daemon has gVisor's runtime.
fn has_runsc(fx: &Fixture) -> bool {
    fx.daemon
        .run(fx.daemon.docker.info())
        .ok()
        .and_then(|i| i.runtimes)
        .is_some_and(|r| r.contains_key("runsc"))
}

#[test]
fn a_container_reaches_the_host_only_at_its_ports_and_no_link_local_address() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIPPED: egress rules are loaded on the Docker host with nft, as root");
        return;
    }
    // Two services of the host on every address: one given to sandboxes, one not. A
    // connection completes in the listener's backlog: nothing needs to accept it.
    let given = TcpListener::bind("0.0.0.0:0").unwrap();
    let closed = TcpListener::bind("0.0.0.0:0").unwrap();
    let (given, closed) = (
        given.local_addr().unwrap().port(),
        closed.local_addr().unwrap().port(),
    );
    let rules = DockerEgress::detect(vec![], vec![], vec![given]).expect("nft is installed");
    let mut gvisor = false;
    for (network, egress, oci_runtime, spec_allows) in [
        ("sbtest-egress-open", None, None, None),
        ("sbtest-egress", Some(rules.clone()), None, None),
        ("sbtest-egress", Some(rules.clone()), Some("runsc"), None),
        (
            "sbtest-egress",
            Some(rules.clone()),
            None,
            Some("169.254.169.254"),
        ),
    ] {
        let Some(fx) = Fixture::with("egress", |c| {
            c.with_bridge_network(network)
                .with_egress(egress.clone())
                .with_oci_runtime(oci_runtime.map(str::to_owned))
        }) else {
            return;
        };
        if oci_runtime.is_some() {
            if !has_runsc(&fx) {
                eprintln!("egress under gVisor: SKIPPED (the daemon has no runsc runtime)");
                continue;
            }
            gvisor = true;
        }
        let mut spec = preset();
        spec.egress.allow = spec_allows.iter().map(|d| d.parse().unwrap()).collect();
        let launch = launch_spec(spec);
        let handle = fx.runtime.start(&launch).expect("the image starts");
        let joined: Vec<String> = fx
            .inspect(&handle)
            .and_then(|c| c.network_settings?.networks)
            .map(|n| n.into_keys().collect())
            .unwrap_or_default();
        if spec_allows.is_some() {
            assert_eq!(joined.len(), 1, "{joined:?}");
            assert!(
                joined[0].starts_with("sbtest-egress-"),
                "a network of its lists: {joined:?}"
            );
        } else {
            assert_eq!(joined, [network]);
        }
        fx.wait_alive(&handle);
        let key = &launch.session_key;
        let run = |host: &str, port: u16| attempt(&fx, &handle, key, host, port);
        let what = format!("{network} under {}", oci_runtime.unwrap_or("runc"));
        if egress.is_none() {
            assert_eq!(run("host.docker.internal", closed), "connected", "{what}");
        } else {
            assert_eq!(run("host.docker.internal", given), "connected", "{what}");
            assert_eq!(
                run("host.docker.internal", closed),
                "ConnectionRefusedError",
                "{what}"
            );
            // Refused at once, unless the spec allows it: then the packets leave (and,
            // where the machine has a metadata service, it answers; else a timeout).
            let metadata = run("169.254.169.254", 80);
            if spec_allows.is_some() {
                assert_ne!(metadata, "ConnectionRefusedError", "{what}");
            } else {
                assert_eq!(metadata, "ConnectionRefusedError", "{what}");
            }
        }
        fx.runtime.delete(&handle).unwrap();
    }
    if std::env::var("SWITCHBOARD_REQUIRE_RUNSC").as_deref() == Ok("1") {
        assert!(
            gvisor,
            "SWITCHBOARD_REQUIRE_RUNSC=1 but the egress rules were not tried under gVisor"
        );
    }
}
