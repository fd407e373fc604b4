//! Two replicas of one PostgreSQL database: each binds a sandbox's port on its own address,
//! so both serve its port form; a replica on an address where the port is taken shows the
//! path form for it (API.md, Sandbox proxy, "Sandbox URLs": the port form is per address).

use serde_json::json;
use switchboard_testkit::{Backend, TestDatabase};

use crate::common::*;
use crate::sandbox_urls::forms::{
    agent_url, echo, port_of, running_sandbox, standin_data, wait_refused,
};

/// `serve` bound on `bind` with the stand-in, the ports `21200-21209`, its own data
/// directory (each replica has its own id there) and the installation's one secret key.
fn replica(bind: &str, db: &TestDatabase, specs: &str, dir: &str, secret: &str) -> Server {
    Server::spawn_as_readme(
        &[],
        bind,
        db.url(),
        ServeOptions {
            args: vec![
                "--data-dir",
                dir,
                "--sandbox-specs",
                specs,
                "--sandbox-url-ports",
                "21200-21209",
                "--secret-key-file",
                secret,
            ],
            env: vec![],
        },
    )
}

#[test]
fn replicas_on_different_addresses_both_serve_the_port() {
    let db = TestDatabase::new(Backend::Postgres);
    let (data, dir, specs) = standin_data();
    let _end = EndProcessesUnder(data.path().to_path_buf());
    let dirs: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|r| format!("{dir}/{r}"))
        .collect();
    let secret = format!("{dir}/secret.key");
    let a = replica("127.0.0.1:0", &db, &specs, &dirs[0], &secret);
    let key = a.bootstrap_key();
    let b = replica("127.0.0.2:0", &db, &specs, &dirs[1], &secret);
    let (id, session, url_a) = running_sandbox(&a, &key);
    let port = port_of(&url_a, "127.0.0.1");
    assert_eq!(port, 21200);

    // B binds the same port on its own address and shows it with its host.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let url_b = loop {
        let info = wait_sandbox_status(&b, &key, &id, "RUNNING");
        let url = agent_url(&info);
        if !url.contains("/sandboxes/") || std::time::Instant::now() > deadline {
            break url;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(url_b, format!("http://127.0.0.2:{port}"));
    for url in [&url_a, &url_b] {
        let (code, body) = echo(url, "X-Session-API-Key", &session);
        assert_eq!(code, 200, "{url}: {body}");
        assert_eq!(body["path"], "/api/standin/echo?x=1");
    }

    // C on A's address: the port is A's there, so C shows (and serves) the path form.
    let c = replica("127.0.0.1:0", &db, &specs, &dirs[2], &secret);
    std::thread::sleep(std::time::Duration::from_secs(2));
    let info = wait_sandbox_status(&c, &key, &id, "RUNNING");
    let url_c = agent_url(&info);
    assert_eq!(url_c, c.url(&format!("/sandboxes/{id}/agent_server")));
    let (code, body) = echo(&url_c, "X-Access-Token", &key);
    assert_eq!(
        (code, &body["path"]),
        (200, &json!("/api/standin/echo?x=1"))
    );
    assert!(
        c.wait_for_stderr("sandbox port not bound", std::time::Duration::from_secs(5))
            .is_some(),
        "C did not log the port it could not bind"
    );

    // Deleted through B: both addresses close the port.
    let code = client()
        .delete(b.url(&format!("/api/v1/sandboxes/{id}")))
        .header("X-Access-Token", &key)
        .send()
        .unwrap()
        .status()
        .as_u16();
    assert_eq!(code, 200);
    wait_refused("127.0.0.2", port);
    wait_refused("127.0.0.1", port);
}
