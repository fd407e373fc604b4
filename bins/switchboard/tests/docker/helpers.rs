//! Helpers of the Docker tests of the binary: whether Docker and the image are there (skip
//! with a message, or fail with `SWITCHBOARD_REQUIRE_DOCKER=1`), an installation id per test
//! whose containers and volumes are removed when the test ends (even by panic), the `docker`
//! CLI to look behind Switchboard's back, and waiting on the API.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;

/// The image the tests run (built by `scripts/agent-server-image.sh`).
pub const IMAGE: &str = "switchboard/agent-server:local";
/// How long a container may take to be `RUNNING` (6–16 s measured; 10 at once on a loaded
/// 2-core machine much more).
pub const RUNNING_LIMIT: Duration = Duration::from_secs(480);
/// `--sandbox-start-timeout` of the tests' servers, the same as [`RUNNING_LIMIT`].
const START_TIMEOUT_ARG: &str = "480";

/// Whether the Docker tests can run: a daemon answers and the image is there. When not, says
/// why and returns false, or panics with `SWITCHBOARD_REQUIRE_DOCKER=1`.
pub fn docker_ready(test: &str) -> bool {
    let why = match Command::new("docker")
        .args(["image", "inspect", "--format", "{{.Id}}", IMAGE])
        .output()
    {
        Err(e) => format!("the docker CLI cannot run: {e}"),
        Ok(out) if out.status.success() => return true,
        Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_owned(),
    };
    let message = format!(
        "{test}: Docker cannot be used ({why}); start the daemon and build the image with \
         scripts/ci-docker.sh"
    );
    if std::env::var("SWITCHBOARD_REQUIRE_DOCKER").as_deref() == Ok("1") {
        panic!("{message} (SWITCHBOARD_REQUIRE_DOCKER=1)");
    }
    eprintln!("SKIPPED {message}");
    false
}

/// Runs `docker args…` and returns its stdout; `None` when it fails.
pub fn docker(args: &[&str]) -> Option<String> {
    let out = Command::new("docker").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// `docker inspect` of a container (by name or id); `None` when it is not there.
pub fn inspect(container: &str) -> Option<Value> {
    let text = docker(&["container", "inspect", container])?;
    let mut all: Vec<Value> = serde_json::from_str(&text).ok()?;
    all.pop()
}

/// The name of a sandbox's container.
pub fn container_of(sandbox_id: &str) -> String {
    format!("switchboard-sandbox-{sandbox_id}")
}

/// The name of a sandbox's workspace volume.
pub fn volume_of(sandbox_id: &str) -> String {
    format!("switchboard-workspace-{sandbox_id}")
}

/// Whether a volume exists.
pub fn volume_exists(name: &str) -> bool {
    docker(&["volume", "inspect", name]).is_some()
}

/// A test's own installation id; on drop, every container and volume labelled with it is
/// removed.
pub struct Installation(pub String);

impl Installation {
    pub fn new(test: &str) -> Installation {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        Installation(format!("sbtest-{test}-{}-{nanos}", std::process::id()))
    }

    /// `label=io.switchboard.installation=<id>`.
    pub fn filter(&self) -> String {
        format!("label=io.switchboard.installation={}", self.0)
    }

    /// The names of this installation's containers.
    pub fn containers(&self) -> Vec<String> {
        docker(&[
            "ps",
            "-a",
            "--filter",
            &self.filter(),
            "--format",
            "{{.Names}}",
        ])
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
    }
}

impl Drop for Installation {
    fn drop(&mut self) {
        let filter = self.filter();
        if let Some(ids) = docker(&["ps", "-aq", "--filter", &filter]) {
            let ids: Vec<&str> = ids.lines().collect();
            if !ids.is_empty() {
                let mut args = vec!["rm", "-f", "-v"];
                args.extend(ids);
                docker(&args);
            }
        }
        if let Some(names) = docker(&["volume", "ls", "-q", "--filter", &filter]) {
            let names: Vec<&str> = names.lines().collect();
            if !names.is_empty() {
                let mut args = vec!["volume", "rm", "-f"];
                args.extend(names);
                docker(&args);
            }
        }
    }
}

/// `serve` on `url` with a data directory, the test's installation and `args`.
pub fn serve(
    url: &str,
    data: &TempDir,
    installation: &Installation,
    args: &[&str],
    env: &[(&str, &str)],
) -> Server {
    let data_dir = data.path().display().to_string();
    // A loaded machine can take minutes to start ten agent servers (ERROR is then the start
    // timeout's, not the runtime's): the start timeout is the wait limit.
    let mut all = vec![
        "--data-dir",
        &data_dir,
        "--docker-installation",
        &installation.0,
        "--sandbox-start-timeout",
        START_TIMEOUT_ARG,
    ];
    all.extend_from_slice(args);
    Server::spawn_with(
        url,
        ServeOptions {
            args: all,
            env: env.to_vec(),
        },
    )
}

/// `POST /api/v1/sandboxes` (with `spec` when given); the answer's body.
pub fn start(server: &Server, key: &str, spec: Option<&str>) -> Value {
    let mut req = client()
        .post(server.url("/api/v1/sandboxes"))
        .header("X-Access-Token", key);
    if let Some(spec) = spec {
        req = req.json(&serde_json::json!({ "sandbox_spec_id": spec }));
    }
    let (code, body) = send_json(req);
    assert_eq!(code, 200, "{body}");
    body
}

/// The sandbox as the batch get shows it.
pub fn get(server: &Server, key: &str, id: &str) -> Value {
    let (code, body) = send_json(
        client()
            .get(server.url(&format!("/api/v1/sandboxes?id={id}")))
            .header("X-Access-Token", key),
    );
    assert_eq!(code, 200, "{body}");
    body[0].clone()
}

/// Waits until the sandbox shows `status` and returns it.
#[track_caller]
pub fn wait_status(server: &Server, key: &str, id: &str, status: &str, limit: Duration) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let sandbox = get(server, key, id);
        if sandbox["status"] == status {
            return sandbox;
        }
        assert!(
            Instant::now() < deadline,
            "sandbox {id} is {} after {limit:?} (waiting for {status}); stderr:\n{}",
            sandbox["status"],
            server.stderr_lines().join("\n")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until `check` holds, up to `limit`.
#[track_caller]
pub fn wait_until(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The agent server's `/alive` answered 200 within 2 s.
pub fn alive(url: &str) -> bool {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap()
        .get(format!("{url}/alive"))
        .send()
        .is_ok_and(|r| r.status().is_success())
}

/// The agent server's own address of a `RUNNING` sandbox, as Switchboard reaches it: its
/// container's published port (`docker inspect`). The API shows the proxy's URL instead
/// ([`shown_url`], issue 22); these tests are about the container itself.
pub fn agent_url(sandbox: &Value) -> String {
    let shown = shown_url(sandbox);
    let id = sandbox["id"].as_str().unwrap();
    assert!(
        shown.contains(&format!("/sandboxes/{id}/agent_server")),
        "{shown}"
    );
    let c = inspect(&container_of(id)).unwrap_or_else(|| panic!("no container for {id}"));
    let port = c["NetworkSettings"]["Ports"]["8000/tcp"][0]["HostPort"]
        .as_str()
        .unwrap_or_else(|| panic!("no published port: {c}"))
        .to_owned();
    format!("http://127.0.0.1:{port}")
}

/// The agent server URL the API shows for a `RUNNING` sandbox: Switchboard's proxy.
pub fn shown_url(sandbox: &Value) -> String {
    sandbox["exposed_urls"][0]["url"]
        .as_str()
        .unwrap_or_else(|| panic!("no agent server URL: {sandbox}"))
        .to_owned()
}
