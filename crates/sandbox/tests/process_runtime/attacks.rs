//! The promise of issue 18, tested as an attacker would (docs/API.md, "What a sandbox can
//! reach"): each attempt of the probe runs through the attacker sandbox's own agent server
//! command API (`POST /api/bash/execute_bash_command`; the real agent server when this
//! machine has it, else the stand-in), against a confined runtime, and fails; while the
//! sandbox still does its job (clone, build and test in its directory, reach the LLM and
//! Switchboard's webhooks over loopback). The control test runs the same attempts against an
//! unconfined sandbox (`--process-isolation none`, the runtime before issue 18), where they
//! succeed: the attempts are able to see a breach.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard_domain::sandboxes::runtime::{LaunchSpec, SandboxRuntime};
use switchboard_sandbox::ProcessIdentity;
use switchboard_sandbox::process::sandbox_processes;

use crate::common::{Fixture, Sandbox, launch_spec, passthrough, wait_until};

const DB_CONTENT: &str = "SQLite format 3\0 role=member";
const SECRET_KEY: &str = "secret-key-0123456789abcdef";
const LLM_KEY: &str = "sk-llm-key-of-the-operator-4242";

/// Switchboard's files as the probe found them: the database and `secret.key` in the data
/// directory (the fixture's root), and the LLM key file in a directory sandboxes may read
/// (here: next to the local repositories).
struct Scene {
    db: PathBuf,
    secret: PathBuf,
    llm_key: PathBuf,
    repos: PathBuf,
    _repos_dir: tempfile::TempDir,
}

impl Scene {
    fn new(data_dir: &Path, repos_dir: tempfile::TempDir) -> Self {
        let db = data_dir.join("switchboard.sqlite");
        fs::write(&db, DB_CONTENT).unwrap();
        let secret = data_dir.join("secret.key");
        fs::write(&secret, SECRET_KEY).unwrap();
        fs::set_permissions(&secret, fs::Permissions::from_mode(0o600)).unwrap();
        let repos = fs::canonicalize(repos_dir.path()).unwrap();
        fs::set_permissions(&repos, fs::Permissions::from_mode(0o755)).unwrap();
        let llm_key = repos.join("llm.key");
        fs::write(&llm_key, LLM_KEY).unwrap();
        fs::set_permissions(&llm_key, fs::Permissions::from_mode(0o644)).unwrap();
        git_repo(&repos.join("project"));
        Scene {
            db,
            secret,
            llm_key,
            repos,
            _repos_dir: repos_dir,
        }
    }
}

/// A world-readable git repository with one commit on `main`.
fn git_repo(dir: &Path) {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join("README"), "main\n").unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "main"]);
    let _ = std::process::Command::new("chmod")
        .args(["-R", "a+rX", &dir.display().to_string()])
        .status();
}

/// A loopback HTTP server answering every request 200 `{"ok": true}` and recording the
/// request lines: the fake LLM and Switchboard's webhooks as a sandbox reaches them.
fn loopback_server() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            record.lock().unwrap().push(line.trim().to_owned());
            // The whole request (headers and body) is read before the answer: closing with
            // unread bytes resets the connection, and the answer can be lost with it.
            let mut length = 0usize;
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                    break;
                }
                if let Some((name, value)) = header.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let _ = std::io::Read::read_exact(&mut reader, &mut vec![0; length]);
            let body = "{\"ok\": true}";
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, seen)
}

/// The attacker's launch: the real agent server when this machine has it, else the stand-in.
fn attacker_launch(local_repositories: Vec<PathBuf>) -> (LaunchSpec, &'static str) {
    let mut launch = launch_spec("", 0);
    let which = match switchboard_testkit::real_agent_server() {
        Some(program) => {
            launch.spec.command = vec![program.display().to_string()];
            launch.spec.initial_env = switchboard_testkit::REAL_AGENT_SERVER_ENV
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            launch.passthrough_env = passthrough();
            "the real agent server"
        }
        None => "the stand-in agent server (no real agent server on this machine)",
    };
    launch.local_repositories = local_repositories;
    (launch, which)
}

fn wait_alive_long(fx: &Fixture, sb: &Sandbox) {
    use switchboard_domain::sandboxes::runtime::AgentServerClient;
    let ok = wait_until(Duration::from_secs(180), || {
        fx.client
            .alive(&sb.handle.agent_server_url, Duration::from_secs(2))
            .is_ok()
    });
    assert!(
        ok,
        "the attacker's agent server never answered; log:\n{}",
        fx.runtime.log_tail(&sb.handle, 40).unwrap_or_default()
    );
}

/// What the probe of issue 18 obtained, attempt by attempt.
#[derive(Debug, Default)]
struct Loot {
    database_read: bool,
    database_written: bool,
    secret_key: bool,
    llm_key: bool,
    signalled_switchboard: bool,
    other_session_key: bool,
    other_directory: bool,
    switchboard_environment: bool,
    /// Issue 33: a TCP connection to a listener of the host's loopback the sandbox was not
    /// given (a stand-in for any local service), to the victim's agent server, and to
    /// PostgreSQL (5432) and Redis (6379) where the host reaches them.
    host_listener: bool,
    other_agent_server: bool,
    host_postgres: bool,
    host_redis: bool,
}

/// Whether this (the host's) side reaches `127.0.0.1:port`.
fn host_reaches(port: u16) -> bool {
    std::net::TcpStream::connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_secs(2),
    )
    .is_ok()
}

/// Runs every attempt of the probe through the attacker's command API.
fn probe(
    fx: &Fixture,
    attacker: &Sandbox,
    a: &LaunchSpec,
    scene: &Scene,
    victim: (&Sandbox, &LaunchSpec),
) -> Loot {
    let run = |c: &str| fx.bash(attacker, &a.session_key, c);
    let me = std::process::id();
    let (victim, v) = victim;
    let victim_pid = sandbox_processes(&victim.handle)
        .unwrap()
        .into_iter()
        .map(|p| p.pid)
        .max()
        .unwrap();
    let before = fs::read(&scene.db).unwrap();
    let db = scene.db.display();
    let read_db = run(&format!("cat '{db}'"));
    run(&format!(
        "printf 'role=owner' >> '{db}'; python3 -c \"import sqlite3; sqlite3.connect('{db}').execute('create table pwned(x)')\""
    ));
    let victim_dir = victim.handle.working_dir.display();
    let connects = |port: u16| {
        run(&format!(
            "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')\""
        ))
        .stdout
        .contains("connected")
    };
    let host_service = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let victim_port = victim.handle.host_port;
    Loot {
        host_listener: connects(host_service.local_addr().unwrap().port()),
        other_agent_server: connects(victim_port),
        host_postgres: host_reaches(5432) && connects(5432),
        host_redis: host_reaches(6379) && connects(6379),
        database_read: read_db.stdout.contains("role=member"),
        database_written: fs::read(&scene.db).unwrap() != before,
        secret_key: run(&format!("cat '{}'", scene.secret.display()))
            .stdout
            .contains(SECRET_KEY),
        llm_key: run(&format!("cat '{}'", scene.llm_key.display()))
            .stdout
            .contains(LLM_KEY),
        signalled_switchboard: run(&format!("kill -CONT {me} && kill -0 {me} && echo sent"))
            .stdout
            .contains("sent"),
        other_session_key: run(&format!(
            "cat /proc/{victim_pid}/environ; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'"
        ))
        .stdout
        .contains(v.session_key.expose()),
        other_directory: run(&format!(
            "ls -a '{victim_dir}' && cat '{victim_dir}/agent-server.log'"
        ))
        .stdout
        .contains("agent-server.log"),
        switchboard_environment: run(&format!(
            "cat /proc/{me}/environ; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'"
        ))
        .stdout
        .contains("CARGO_MANIFEST_DIR"),
    }
}

#[test]
fn a_confined_sandbox_reaches_nothing_that_is_not_its_own_and_still_does_its_job() {
    let repos_dir = tempfile::TempDir::new().unwrap();
    let llm_key = fs::canonicalize(repos_dir.path()).unwrap().join("llm.key");
    // The LLM and the webhooks, on the host's loopback: the one port the sandbox is given.
    let (port, seen) = loopback_server();
    let fx = Fixture::confined_with(vec![llm_key], Some(vec![port]));
    let scene = Scene::new(fx.root.path(), repos_dir);
    let (a, which) = attacker_launch(vec![scene.repos.clone()]);
    eprintln!("attacker sandbox: {which}");
    let attacker = Sandbox::new(fx.runtime.start(&a).unwrap());
    let v = launch_spec("", 0);
    let victim = Sandbox::new(fx.runtime.start(&v).unwrap());
    fx.wait_alive(&victim);
    wait_alive_long(&fx, &attacker);

    let loot = probe(&fx, &attacker, &a, &scene, (&victim, &v));
    assert!(
        !loot.database_read
            && !loot.database_written
            && !loot.secret_key
            && !loot.llm_key
            && !loot.signalled_switchboard
            && !loot.other_session_key
            && !loot.other_directory
            && !loot.switchboard_environment
            && !loot.host_listener
            && !loot.other_agent_server
            && !loot.host_postgres
            && !loot.host_redis,
        "the attacker obtained: {loot:?}"
    );
    // Its own user: another than the victim's, and not Switchboard's.
    let ids = |sb: &Sandbox| ProcessIdentity::of(&sb.handle).unwrap().uid;
    if rustix::process::geteuid().is_root() {
        assert!(ids(&attacker).is_some() && ids(&attacker) != ids(&victim));
        let uid = fx.bash(&attacker, &a.session_key, "id -u").stdout;
        assert_eq!(uid.trim(), ids(&attacker).unwrap().to_string());
    }

    // The job: clone, build and test in its own directory, reach the LLM and the webhooks.
    let run = |c: &str| fx.bash(&attacker, &a.session_key, c);
    let own = attacker.handle.working_dir.display();
    let project = scene.repos.join("project").display().to_string();
    let clone = run(&format!(
        "cd '{own}' && git clone -q '{project}' work && cat work/README"
    ));
    assert_eq!(
        (clone.exit_code, clone.stdout.trim()),
        (Some(0), "main"),
        "{clone:?}"
    );
    let test = run(&format!(
        "cd '{own}/work' && printf 'import unittest\\nclass T(unittest.TestCase):\\n    def test_sum(self):\\n        self.assertEqual(1 + 1, 2)\\n' > test_sum.py && python3 -m unittest -q test_sum"
    ));
    assert_eq!(test.exit_code, Some(0), "{test:?}");
    for path in ["/v1/chat/completions", "/api/v1/webhooks/events/x"] {
        let call = run(&format!(
            "python3 -c \"import urllib.request as u; print(u.urlopen(u.Request('http://127.0.0.1:{port}{path}', data=b'{{}}'), timeout=10).read().decode())\""
        ));
        assert_eq!(call.exit_code, Some(0), "{path}: {call:?}");
        assert!(call.stdout.contains("\"ok\""), "{path}: {call:?}");
    }
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter().any(|l| l.contains("/v1/chat/completions")),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|l| l.contains("/api/v1/webhooks/events/x")),
        "{seen:?}"
    );

    // The internet, through the sandbox's own network: a package registry.
    let registry = run(
        "python3 -c \"import urllib.request as u; print(u.urlopen('https://pypi.org/simple/six/', timeout=20).status)\"",
    );
    assert_eq!(registry.stdout.trim(), "200", "{registry:?}");

    fx.runtime.delete(&attacker.handle).unwrap();
    fx.runtime.delete(&victim.handle).unwrap();
}

/// The control: the same attempts against unconfined sandboxes (what every sandbox was before
/// issue 18, and is with `--process-isolation none`) obtain the database, the keys and the
/// other sandbox's session key.
#[test]
fn the_same_attempts_succeed_against_an_unconfined_sandbox() {
    let fx = Fixture::new();
    let scene = Scene::new(fx.root.path(), tempfile::TempDir::new().unwrap());
    let a = launch_spec("", 0);
    let attacker = Sandbox::new(fx.runtime.start(&a).unwrap());
    let v = launch_spec("", 0);
    let victim = Sandbox::new(fx.runtime.start(&v).unwrap());
    fx.wait_alive(&attacker);
    fx.wait_alive(&victim);
    let loot = probe(&fx, &attacker, &a, &scene, (&victim, &v));
    assert!(
        loot.database_read
            && loot.database_written
            && loot.secret_key
            && loot.llm_key
            && loot.signalled_switchboard
            && loot.other_session_key
            && loot.other_directory
            && loot.switchboard_environment
            && loot.host_listener
            && loot.other_agent_server
            && loot.host_postgres == host_reaches(5432)
            && loot.host_redis == host_reaches(6379),
        "the control missed a breach: {loot:?}"
    );
    fx.runtime.delete(&attacker.handle).unwrap();
    fx.runtime.delete(&victim.handle).unwrap();
}

/// A private address of this host (e.g. Docker's bridge, `172.17.0.1`), if it has one: a
/// service of the host listening on every address answers there.
fn host_private_address() -> Option<std::net::Ipv4Addr> {
    let out = std::process::Command::new("ip")
        .args(["-4", "-o", "addr", "show"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| w.split_once('/')?.0.parse::<std::net::Ipv4Addr>().ok())
        .find(|ip| ip.is_private())
}

/// Issue 33, egress rules: from a sandbox's own network, a service of the host on a private
/// address and the metadata address are refused at once; allowed by the operator
/// (`--sandbox-egress-allow`) or by the sandbox's spec (`egress_allow`), the private address is
/// reached.
#[test]
fn private_and_link_local_addresses_are_refused_unless_allowed() {
    let Some(private) = host_private_address() else {
        eprintln!("skipped: this host has no private address to reach");
        return;
    };
    let service = TcpListener::bind(("0.0.0.0", 0)).unwrap();
    let port = service.local_addr().unwrap().port();
    let attempt = |fx: &Fixture,
                   sb: &Sandbox,
                   key: &switchboard_domain::sandboxes::runtime::SessionKey,
                   host: &str,
                   port: u16| {
        fx.bash(
            sb,
            key,
            &format!(
                "python3 -c \"
import socket
try:
    socket.create_connection(('{host}', {port}), timeout=5)
    print('connected')
except OSError as e:
    print(type(e).__name__)
\""
            ),
        )
        .stdout
        .trim()
        .to_owned()
    };
    for by in [None, Some("operator"), Some("spec")] {
        let allowed = by.is_some();
        let entry: switchboard_sandbox::confine::egress::Destination =
            format!("{private}/32").parse().unwrap();
        let mut network = switchboard_sandbox::NetworkPolicy::default();
        if by == Some("operator") {
            network.egress_allow = vec![entry.clone()];
        }
        let fx = Fixture::confined_with_policy(network);
        let mut launch = launch_spec("", 0);
        if by == Some("spec") {
            launch.spec.egress.allow = vec![entry];
        }
        let sb = Sandbox::new(fx.runtime.start(&launch).unwrap());
        fx.wait_alive(&sb);
        let host = private.to_string();
        let reached = attempt(&fx, &sb, &launch.session_key, &host, port);
        let metadata = attempt(&fx, &sb, &launch.session_key, "169.254.169.254", 80);
        if allowed {
            assert_eq!(reached, "connected", "{host}:{port} allowed by the {by:?}");
        } else {
            assert_eq!(reached, "ConnectionRefusedError", "{host}:{port}");
        }
        assert_eq!(metadata, "ConnectionRefusedError", "the metadata address");
        fx.runtime.delete(&sb.handle).unwrap();
    }
}
