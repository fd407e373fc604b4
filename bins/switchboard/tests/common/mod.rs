//! Helpers for black-box tests of the `switchboard` binary: run operator commands, spawn
//! `serve` and wait for its address, and always kill spawned servers on drop so a failing
//! test leaves no process behind.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

mod agents;
mod keys;
mod sandboxes;
#[allow(unused_imports)]
pub use agents::*;
#[allow(unused_imports)]
pub use sandboxes::*;

/// The binary under test, built by cargo for this test target.
pub const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

/// Environment variables the binary reads; removed from every child so the tests do not
/// depend on the environment they run in.
const SWITCHBOARD_ENV: &[&str] = &[
    "SWITCHBOARD_CONFIG",
    "SWITCHBOARD_DATABASE_URL",
    "SWITCHBOARD_DATA_DIR",
    "SWITCHBOARD_BIND",
    "SWITCHBOARD_WORKERS",
    "SWITCHBOARD_DB_POOL_SIZE",
    "SWITCHBOARD_LOG_FORMAT",
    "SWITCHBOARD_MAX_BODY_BYTES_IN_FLIGHT",
    "SWITCHBOARD_BODY_READ_TIMEOUT",
    "SWITCHBOARD_BODY_MIN_RATE",
    "SWITCHBOARD_RATE_LIMIT_PER_KEY",
    "SWITCHBOARD_RATE_LIMIT_PER_IP",
    "SWITCHBOARD_LOG",
    "SWITCHBOARD_SANDBOX_URL_FORM",
    "SWITCHBOARD_SANDBOX_URL_PORTS",
    "SWITCHBOARD_SANDBOX_HOST_PATTERN",
    "RUST_LOG",
    "SWITCHBOARD_PROCESS_ISOLATION",
    "SWITCHBOARD_SANDBOX_UID_RANGE",
];

/// How long a server may take to print its address.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A `Command` for the binary with a clean environment (see [`SWITCHBOARD_ENV`]), run in
/// `cwd` so the default data directory never lands in the source tree.
pub fn command(cwd: &Path) -> Command {
    let mut c = Command::new(BIN);
    for var in SWITCHBOARD_ENV {
        c.env_remove(var);
    }
    c.current_dir(cwd).stdin(Stdio::null());
    c
}

/// A temporary directory removed on drop (no extra dev-dependency needed).
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new, empty directory under the system temporary directory.
    pub fn new() -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = std::env::temp_dir().join(format!(
            "switchboard-bin-test-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Process sandboxes' directories are file systems of their own (issue 33): unmounted
        // first (lazily: a sandbox still running keeps its own), deepest first.
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mut under: Vec<&str> = mounts
            .lines()
            .filter_map(|l| l.split(' ').nth(4))
            .filter(|m| Path::new(m).starts_with(&self.0))
            .collect();
        under.sort_by_key(|m| std::cmp::Reverse(m.len()));
        for mount in under {
            let _ = Command::new("umount").args(["--lazy", mount]).status();
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a finished command printed.
#[derive(Debug)]
pub struct CliOutput {
    /// Exit status.
    pub status: ExitStatus,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs `cmd` to completion.
pub fn output(mut cmd: Command) -> CliOutput {
    let out = cmd.output().expect("running the switchboard binary");
    CliOutput {
        status: out.status,
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}

/// Runs `switchboard --database-url URL ARGS…` in a fresh temporary directory.
pub fn cli(url: &str, args: &[&str]) -> CliOutput {
    let dir = TempDir::new();
    let mut cmd = command(dir.path());
    cmd.arg("--database-url").arg(url).args(args);
    output(cmd)
}

/// Asserts a successful command that printed exactly one JSON object (one line) on stdout,
/// and returns it.
#[track_caller]
pub fn expect_json(out: &CliOutput) -> serde_json::Map<String, Value> {
    assert!(
        out.status.success(),
        "expected success, got {}; stdout: {}; stderr: {}",
        out.status,
        out.stdout,
        out.stderr
    );
    assert!(
        out.stdout.ends_with('\n') && out.stdout.lines().count() == 1,
        "expected exactly one line on stdout, got {:?}",
        out.stdout
    );
    match serde_json::from_str::<Value>(&out.stdout) {
        Ok(Value::Object(obj)) => obj,
        other => panic!("stdout is not a JSON object: {other:?}: {:?}", out.stdout),
    }
}

/// Asserts a failed command with nothing on stdout and a message on stderr, and returns
/// the message.
#[track_caller]
pub fn expect_error(out: &CliOutput) -> String {
    assert!(
        !out.status.success(),
        "expected failure, got success; stdout: {}",
        out.stdout
    );
    assert_eq!(
        out.stdout, "",
        "expected nothing on stdout; stderr: {}",
        out.stderr
    );
    assert!(
        !out.stderr.trim().is_empty(),
        "expected a message on stderr"
    );
    out.stderr.clone()
}

/// `switchboard --database-url URL ARGS…`, expected to succeed with one JSON object.
#[track_caller]
pub fn cli_json(url: &str, args: &[&str]) -> serde_json::Map<String, Value> {
    expect_json(&cli(url, args))
}

/// `switchboard --database-url URL ARGS…`, expected to fail; returns stderr.
#[track_caller]
pub fn cli_error(url: &str, args: &[&str]) -> String {
    expect_error(&cli(url, args))
}

/// A new user (`email`) made a member of organization `org` with `role` through the CLI on
/// database `db`, and an API key of theirs for `org`: (user id, key).
#[track_caller]
pub fn add_member(db: &str, org: &str, email: &str, role: &str) -> (String, String) {
    let user = cli_json(db, &["users", "create", "--email", email]);
    let user_id = str_of(&user, "user_id").to_owned();
    cli_json(
        db,
        &[
            "members",
            "add",
            "--org-id",
            org,
            "--user-id",
            &user_id,
            "--role",
            role,
        ],
    );
    let key = cli_json(
        db,
        &["keys", "create", "--user-id", &user_id, "--org-id", org],
    );
    let key = str_of(&key, "api_key").to_owned();
    (user_id, key)
}

/// The string at `key` of a JSON object.
#[track_caller]
pub fn str_of<'a>(obj: &'a serde_json::Map<String, Value>, key: &str) -> &'a str {
    obj.get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string {key:?} in {obj:?}"))
}

/// Ports of the host's loopback that the sandboxes of every server this test process spawns
/// from now on may reach (`--sandbox-host-port`): its fake LLMs. Process sandboxes have a
/// network of their own (issue 33), from which the host's loopback is out of reach.
static SANDBOX_HOST_PORTS: Mutex<Vec<u16>> = Mutex::new(Vec::new());

/// Gives the sandboxes of the servers spawned from now on `127.0.0.1:port` of the host (a fake
/// LLM's).
pub fn give_sandboxes_host_port(port: u16) {
    SANDBOX_HOST_PORTS.lock().unwrap().push(port);
}

/// A running `switchboard serve`, killed on drop.
pub struct Server {
    child: Option<Child>,
    /// `http://127.0.0.1:PORT`.
    pub address: String,
    /// The `{"event":"bootstrapped",…}` line, if the server printed one.
    pub bootstrapped: Option<serde_json::Map<String, Value>>,
    /// Lines printed on stdout after the `listening` line, as they come.
    stdout: Receiver<String>,
    /// Every line printed on stderr so far.
    stderr: Arc<Mutex<Vec<String>>>,
    _cwd: TempDir,
}

/// Options for [`Server::spawn`].
#[derive(Default)]
pub struct ServeOptions<'a> {
    /// Extra arguments after `serve …`.
    pub args: Vec<&'a str>,
    /// Extra environment variables.
    pub env: Vec<(&'a str, &'a str)>,
}

fn spawn_line_reader(out: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

impl Server {
    /// `switchboard serve --bind 127.0.0.1:0 --database-url URL --workers 2`, waiting for
    /// its `listening` line (and recording a `bootstrapped` line printed before it).
    #[track_caller]
    pub fn spawn(url: &str) -> Server {
        Server::spawn_with(url, ServeOptions::default())
    }

    /// As [`Server::spawn`], with extra arguments and environment.
    #[track_caller]
    pub fn spawn_with(url: &str, options: ServeOptions<'_>) -> Server {
        Server::spawn_under(&[], url, options)
    }

    /// As [`Server::spawn_with`], the binary run by `launcher` (a program and its arguments
    /// before the binary's path, e.g. `["prlimit", "--nofile=256:256", "--"]`); none: the
    /// binary itself.
    #[track_caller]
    pub fn spawn_under(launcher: &[&str], url: &str, options: ServeOptions<'_>) -> Server {
        Server::spawn_bound(launcher, "127.0.0.1:0", url, options)
    }

    /// As [`Server::spawn_under`], listening on `bind` (e.g. the port a previous server of the
    /// test had, which its sandboxes' webhooks still name).
    ///
    /// Sandbox URLs are shown in the path form (`--sandbox-url-form path`) unless `options`
    /// name a URL flag: the helpers of these tests find a sandbox from its URL's path
    /// ([`proxied_sandbox`]), and parallel servers would contend for one port range. The tests
    /// of the URL forms use [`Server::spawn_as_readme`].
    #[track_caller]
    pub fn spawn_bound(
        launcher: &[&str],
        bind: &str,
        url: &str,
        options: ServeOptions<'_>,
    ) -> Server {
        let named = options
            .args
            .iter()
            .any(|a| a.starts_with("--sandbox-url-") || *a == "--sandbox-host-pattern");
        let mut options = options;
        if !named {
            options.args.extend(["--sandbox-url-form", "path"]);
        }
        Server::spawn_as_readme(launcher, bind, url, options)
    }

    /// As [`Server::spawn_bound`], with nothing added to `options`: the sandbox URLs in the
    /// form the README's quick start gives them.
    #[track_caller]
    pub fn spawn_as_readme(
        launcher: &[&str],
        bind: &str,
        url: &str,
        options: ServeOptions<'_>,
    ) -> Server {
        let cwd = TempDir::new();
        let key_file = keys::shared_key_file(url, cwd.path(), &options);
        let mut cmd = match launcher.split_first() {
            None => command(cwd.path()),
            Some((program, args)) => {
                let mut c = Command::new(program);
                for var in SWITCHBOARD_ENV {
                    c.env_remove(var);
                }
                c.current_dir(cwd.path()).stdin(Stdio::null());
                c.args(args).arg(BIN);
                c
            }
        };
        cmd.args([
            "serve",
            "--bind",
            bind,
            "--database-url",
            url,
            "--workers",
            "2",
        ])
        .args(&options.args)
        .args(
            SANDBOX_HOST_PORTS
                .lock()
                .unwrap()
                .iter()
                .flat_map(|port| ["--sandbox-host-port".to_owned(), port.to_string()]),
        )
        .envs(options.env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawning switchboard serve");
        let stdout: ChildStdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let stderr_lines = Arc::new(Mutex::new(Vec::new()));
        {
            let lines = stderr_lines.clone();
            thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    lines.lock().unwrap().push(line);
                }
            });
        }
        let mut server = Server {
            child: Some(child),
            address: String::new(),
            bootstrapped: None,
            stdout: spawn_line_reader(stdout),
            stderr: stderr_lines,
            _cwd: cwd,
        };
        server.wait_for_address();
        if let Some(path) = key_file {
            keys::remember_key(url, &path);
        }
        server
    }

    #[track_caller]
    fn wait_for_address(&mut self) {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let line = self.next_stdout_line(deadline.saturating_duration_since(Instant::now()));
            let Some(line) = line else {
                panic!(
                    "the server printed no address; stderr:\n{}",
                    self.stderr_lines().join("\n")
                );
            };
            let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(&line) else {
                panic!("stdout line is not a JSON object: {line:?}");
            };
            match obj.get("event").and_then(Value::as_str) {
                Some("bootstrapped") => {
                    assert!(
                        self.bootstrapped.is_none(),
                        "two bootstrapped lines: {line}"
                    );
                    self.bootstrapped = Some(obj);
                }
                Some("listening") => {
                    self.address = str_of(&obj, "address").to_owned();
                    return;
                }
                _ => panic!("unexpected stdout line before listening: {line}"),
            }
        }
    }

    /// The next stdout line, waiting at most `timeout`; `None` on timeout or end of output.
    pub fn next_stdout_line(&self, timeout: Duration) -> Option<String> {
        self.stdout.recv_timeout(timeout).ok()
    }

    /// `address` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    /// `host:port` of the listening socket.
    pub fn socket_addr(&self) -> std::net::SocketAddr {
        self.address
            .strip_prefix("http://")
            .expect("http:// address")
            .parse()
            .expect("a socket address")
    }

    /// The bootstrap key printed on first start.
    #[track_caller]
    pub fn bootstrap_key(&self) -> String {
        let b = self.bootstrapped.as_ref().expect("the server bootstrapped");
        str_of(b, "api_key").to_owned()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Sends SIGTERM.
    #[track_caller]
    pub fn sigterm(&self) {
        self.signal("TERM");
    }

    /// Sends the signal `name` (`TERM`, `INT`, …) through `kill`, as `libc` is not a
    /// dependency.
    #[track_caller]
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.pid().to_string()])
            .status()
            .expect("running kill");
        assert!(status.success(), "kill -{name} failed: {status}");
    }

    /// Waits for the process to exit, at most `timeout`; `None` if it is still running.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let child = self.child.as_mut()?;
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = child.try_wait().expect("waiting for the server") {
                self.child = None;
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, then asserts a clean exit (status 0) within `timeout`.
    #[track_caller]
    pub fn stop(mut self, timeout: Duration) {
        self.sigterm();
        let status = self.wait_exit(timeout);
        assert!(
            status.is_some_and(|s| s.success()),
            "expected exit 0 within {timeout:?}, got {status:?}; stderr:\n{}",
            self.stderr_lines().join("\n")
        );
    }

    /// Every stderr line so far.
    pub fn stderr_lines(&self) -> Vec<String> {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits up to `timeout` for a stderr line containing `needle`.
    pub fn wait_for_stderr(&self, needle: &str, timeout: Duration) -> Option<String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(line) = self
                .stderr
                .lock()
                .unwrap()
                .iter()
                .find(|l| l.contains(needle))
            {
                return Some(line.clone());
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Server {
    /// Kills the process at once (SIGKILL, as a crash) and waits for it.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A blocking HTTP client with a timeout, without connection reuse (so no idle
/// connection outlives a request and holds up a graceful shutdown).
pub fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
}

/// Sends `req` and returns the status and the JSON body.
#[track_caller]
pub fn send_json(req: reqwest::blocking::RequestBuilder) -> (u16, Value) {
    let res = req.send().expect("sending the request");
    let status = res.status().as_u16();
    let text = res.text().expect("reading the body");
    let body =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("body is not JSON ({e}): {text:?}"));
    (status, body)
}

/// The path of the `python3` on `PATH` (sandbox specs name their interpreter absolutely,
/// since a sandbox's environment is cleared).
pub fn python() -> String {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Waits up to 30 s for sandbox `id` to show `status` through the batch get, and returns its
/// info; on timeout, fails with the server's stderr.
pub fn wait_sandbox_status(server: &Server, key: &str, id: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, body) = send_json(
            client()
                .get(server.url(&format!("/api/v1/sandboxes?id={id}")))
                .header("X-Access-Token", key),
        );
        assert_eq!(code, 200, "{body}");
        if body[0]["status"] == status {
            return body[0].clone();
        }
        assert!(
            Instant::now() < deadline,
            "sandbox {id} is {} (waiting for {status}); stderr:\n{}",
            body[0]["status"],
            server.stderr_lines().join("\n")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
