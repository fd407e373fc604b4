//! What the tests that run the real agent server share: the fake LLM it talks to, and the wait
//! for the warm pool's sandbox (the real agent server takes about 20 s to answer).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use switchboard_testkit::Backend;

use super::{Server, client, python};

/// `specs.json` in `dir` with one spec, `standin`: the stand-in agent server
/// (`switchboard_testkit::standin_agent_server`) run by this machine's Python. Returns its path.
pub fn standin_specs_file(dir: &Path) -> String {
    let path = dir.join("specs.json");
    let spec = serde_json::json!([{
        "id": "standin",
        "command": [python(), switchboard_testkit::standin_agent_server()],
    }]);
    std::fs::write(&path, spec.to_string()).unwrap();
    path.display().to_string()
}

/// A child process killed (and reaped) on drop.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the fake LLM (scripts/e2e/fake_llm.py) on a free loopback port and waits (20 s at
/// most) until it listens; servers spawned after give their sandboxes its port
/// ([`super::give_sandboxes_host_port`]). Returns the process, killed on drop, and its `/v1`
/// base URL.
pub fn fake_llm() -> (Killed, String) {
    fake_llm_on("127.0.0.1")
}

/// As [`fake_llm`], listening on `host` (e.g. the address pods of the test cluster reach).
pub fn fake_llm_on(host: &str) -> (Killed, String) {
    let (llm, port) = fake_llm_port(host);
    (llm, format!("http://{host}:{port}/v1"))
}

/// The fake LLM listening on `host` (the Docker bridge's gateway, where containers reach
/// it as `host.docker.internal`), and its port, which the sandboxes of servers spawned from
/// now on are given (`--sandbox-host-port`: their egress rules open it).
pub fn fake_llm_port(host: &str) -> (Killed, u16) {
    let port = std::net::TcpListener::bind((host, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/e2e/fake_llm.py");
    let child = Command::new(python())
        .arg(script)
        .args(["--host", host, "--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting the fake LLM");
    let llm = Killed(child);
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect((host, port)).is_err() {
        assert!(Instant::now() < deadline, "the fake LLM did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    super::give_sandboxes_host_port(port);
    (llm, port)
}

/// Waits (6 minutes at most) until the warm pool holds a `RUNNING` sandbox
/// (`sandbox_warm_pool_ready 1` in `/metrics`), so that a start claims a running one.
pub fn wait_warm(server: &Server, backend: Backend) {
    let deadline = Instant::now() + Duration::from_secs(360);
    loop {
        let metrics = client()
            .get(server.url("/metrics"))
            .send()
            .and_then(|r| r.text())
            .unwrap_or_default();
        if metrics
            .lines()
            .any(|l| l.starts_with("sandbox_warm_pool_ready") && l.ends_with(" 1"))
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{backend}: no warm sandbox:\n{}",
            server.stderr_lines().join("\n")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
