//! Who listens where Switchboard reaches a process sandbox (issue 33): a confined sandbox's
//! own agent server is the sandbox's (through its `pasta` daemon with a network of its own;
//! as its user on the host's network); a port someone else holds is foreign; a free port is
//! nobody's; an unconfined sandbox, or an address that is not `127.0.0.1`, is not checked.

use std::net::TcpListener;

use switchboard_domain::sandboxes::listeners::ListenerCheck;
use switchboard_domain::sandboxes::runtime::SandboxRuntime;
use switchboard_sandbox::ProcessIdentity;

use crate::common::{Fixture, Sandbox, launch_spec};

#[test]
fn a_sandbox_with_a_network_of_its_own_is_reached_only_through_its_pasta() {
    let fx = Fixture::confined(Vec::new());
    let sb = Sandbox::new(fx.runtime.start(&launch_spec("", 0)).unwrap());
    fx.wait_alive(&sb);
    let check = |url: &str| fx.runtime.listener(&sb.handle, url).unwrap();
    let agent = sb.handle.agent_server_url.clone();
    let helper = ProcessIdentity::of(&sb.handle).unwrap().network.unwrap();
    assert_eq!(check(&agent), ListenerCheck::Sandbox, "{agent}");
    // Any other listener, even Switchboard's own user's (the pasta's), is not the sandbox's.
    let held = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = held.local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}");
    match check(&url) {
        ListenerCheck::Foreign(why) => {
            assert!(why.contains(&format!("pid {}", helper.pid)), "{why}");
        }
        other => panic!("{url} held by this process read as {other:?}"),
    }
    drop(held);
    assert_eq!(check(&url), ListenerCheck::Nobody, "{url} after its close");
    // Deleted: its pasta is gone, and with it the agent server's port.
    fx.runtime.delete(&sb.handle).unwrap();
    assert!(helper.current().is_none(), "pasta outlived its sandbox");
    assert_eq!(check(&agent), ListenerCheck::Nobody);
}

#[test]
fn a_confined_sandbox_on_the_host_network_is_told_apart_from_other_listeners() {
    let fx = Fixture::confined_with(Vec::new(), None);
    let sb = Sandbox::new(fx.runtime.start(&launch_spec("", 0)).unwrap());
    fx.wait_alive(&sb);
    let check = |url: &str| fx.runtime.listener(&sb.handle, url).unwrap();
    let agent = sb.handle.agent_server_url.clone();
    let Some(uid) = ProcessIdentity::of(&sb.handle).unwrap().uid else {
        // Not root: the sandbox is this user, as every other sandbox; nothing is checked.
        eprintln!("not root: confined sandboxes have no user of their own here");
        assert_eq!(check(&agent), ListenerCheck::Unchecked);
        return;
    };
    assert_eq!(check(&agent), ListenerCheck::Sandbox, "{agent}");

    // A port this process (root) holds, on loopback or on every address.
    for host in ["127.0.0.1", "0.0.0.0"] {
        let held = TcpListener::bind((host, 0)).unwrap();
        let port = held.local_addr().unwrap().port();
        let url = format!("http://127.0.0.1:{port}");
        match check(&url) {
            ListenerCheck::Foreign(why) => {
                assert!(why.contains(&format!(":{port} is held by user 0")), "{why}");
                assert!(why.contains(&format!("sandbox's user {uid}")), "{why}");
            }
            other => panic!("{host}:{port} held by root read as {other:?}"),
        }
        drop(held);
        assert_eq!(check(&url), ListenerCheck::Nobody, "{url} after its close");
    }
    assert_eq!(check("http://10.1.2.3:80"), ListenerCheck::Unchecked);
    assert_eq!(check("http://localhost:80"), ListenerCheck::Unchecked);
}

#[test]
fn an_unconfined_sandbox_is_not_checked() {
    let fx = Fixture::new();
    let sb = Sandbox::new(fx.runtime.start(&launch_spec("", 0)).unwrap());
    fx.wait_alive(&sb);
    let held = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let url = format!("http://127.0.0.1:{}", held.local_addr().unwrap().port());
    assert_eq!(
        fx.runtime.listener(&sb.handle, &url).unwrap(),
        ListenerCheck::Unchecked
    );
}
