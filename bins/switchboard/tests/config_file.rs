//! The configuration file against the real binary: `serve` started from a file alone, a flag
//! and an environment variable winning over it, the operator commands reading the same file,
//! and the first start on SQLite after the operator commands logging no lock error.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{TempDir, client, command, expect_json, output, str_of};

/// A `serve` started by the test, killed on drop.
struct Served {
    child: Child,
    address: String,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Served {
    /// Starts `cmd` (a `serve` command) and waits for its `listening` line.
    #[track_caller]
    fn start(mut cmd: Command) -> Served {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawning switchboard serve");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        {
            let lines = stderr.clone();
            let err = child.stderr.take().unwrap();
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    lines.lock().unwrap().push(line);
                }
            });
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + common::START_TIMEOUT;
        let address = loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = rx.recv_timeout(wait) else {
                panic!(
                    "serve printed no address; stderr:\n{}",
                    stderr.lock().unwrap().join("\n")
                );
            };
            let v: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
            if v["event"] == "listening" {
                break v["address"].as_str().unwrap().to_owned();
            }
        };
        Served {
            child,
            address,
            stderr,
        }
    }

    /// SIGTERM, then every stderr line once the process has exited.
    fn stop(mut self) -> Vec<String> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        // The reader thread has the last lines once the pipe closes.
        std::thread::sleep(Duration::from_millis(100));
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A configuration file in `dir` for a server on a free loopback port with its data in
/// `dir/data`, JSON logs, and `extra` lines.
fn config(dir: &Path, extra: &str) -> std::path::PathBuf {
    let path = dir.join("switchboard.toml");
    let text = format!(
        "# written by the test\n\
         bind = \"127.0.0.1:0\"\n\
         data-dir = \"{}\"\n\
         log-format = \"json\"\n\
         sandbox-url-form = \"path\"\n\
         workers = 2\n{extra}",
        dir.join("data").display()
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// Whether every non-empty stderr line is a JSON object (the JSON log format).
fn json_logs(lines: &[String]) -> bool {
    let lines: Vec<&String> = lines.iter().filter(|l| !l.trim().is_empty()).collect();
    assert!(!lines.is_empty(), "serve logged nothing");
    lines
        .iter()
        .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v.is_object()))
}

#[test]
fn serve_runs_from_the_file_and_a_flag_or_a_variable_wins_over_it() {
    let cwd = TempDir::new();
    let file = config(
        cwd.path(),
        "cors-allowed-origin = [\"https://a.example\"]\n",
    );
    let file = file.to_str().unwrap();

    // From the file alone (named by the variable): its data directory, its log format, its
    // list of origins.
    let mut cmd = command(cwd.path());
    cmd.env("SWITCHBOARD_CONFIG", file).arg("serve");
    let served = Served::start(cmd);
    let preflight = client()
        .request(
            reqwest::Method::OPTIONS,
            format!("{}/api/v1/users/me", served.address),
        )
        .header("Origin", "https://a.example")
        .header("Access-Control-Request-Method", "GET")
        .send()
        .unwrap();
    assert_eq!(
        preflight
            .headers()
            .get("access-control-allow-origin")
            .and_then(|v| v.to_str().ok()),
        Some("https://a.example"),
        "the file's origin is allowed"
    );
    let lines = served.stop();
    assert!(json_logs(&lines), "the file's log format: {lines:?}");
    assert!(cwd.path().join("data/switchboard.sqlite").exists());

    // The variable wins over the file.
    let mut cmd = command(cwd.path());
    cmd.args(["--config", file, "serve"])
        .env("SWITCHBOARD_LOG_FORMAT", "text");
    let lines = Served::start(cmd).stop();
    assert!(
        !json_logs(&lines),
        "SWITCHBOARD_LOG_FORMAT=text wins: {lines:?}"
    );

    // The flag wins over both: another data directory, text logs although the variable says
    // json.
    let other = cwd.path().join("other-data");
    let mut cmd = command(cwd.path());
    cmd.args([
        "serve",
        "--config",
        file,
        "--log-format",
        "text",
        "--data-dir",
    ])
    .arg(&other)
    .env("SWITCHBOARD_LOG_FORMAT", "json");
    let lines = Served::start(cmd).stop();
    assert!(!json_logs(&lines), "--log-format text wins: {lines:?}");
    assert!(other.join("switchboard.sqlite").exists(), "--data-dir wins");
}

#[test]
fn a_wrong_file_stops_every_command_naming_the_key() {
    let cwd = TempDir::new();
    let file = config(cwd.path(), "max-running-sandbox = 3\n");
    for args in [vec!["serve"], vec!["users", "list"]] {
        let mut cmd = command(cwd.path());
        cmd.arg("--config").arg(&file).args(&args);
        let out = output(cmd);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("unknown key `max-running-sandbox`")
                && out.stderr.contains("`max-running-sandboxes`"),
            "{}",
            out.stderr
        );
        assert!(!cwd.path().join("data").exists(), "nothing ran");
    }
    let mut cmd = command(cwd.path());
    cmd.args(["--config", "/nonexistent/switchboard.toml", "migrate"]);
    let out = output(cmd);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        out.stderr.contains("/nonexistent/switchboard.toml"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_first_start_on_sqlite_after_the_operator_commands_logs_no_lock_error() {
    // A newcomer's sequence on a fresh data directory: the operator commands, then serve, all
    // from one configuration file.
    let cwd = TempDir::new();
    let file = config(cwd.path(), "");
    let run = |args: &[&str]| {
        let mut cmd = command(cwd.path());
        cmd.arg("--config").arg(&file).args(args);
        let out = output(cmd);
        assert!(
            !out.stderr.contains("database is locked"),
            "{args:?}: {}",
            out.stderr
        );
        expect_json(&out)
    };
    let boot = run(&[
        "bootstrap",
        "--org-name",
        "team",
        "--email",
        "owner@example.com",
    ]);
    let org = str_of(&boot, "org_id").to_owned();
    let user = run(&["users", "create", "--email", "bob@example.com"]);
    let user = str_of(&user, "user_id").to_owned();
    run(&[
        "members",
        "add",
        "--org-id",
        &org,
        "--user-id",
        &user,
        "--role",
        "member",
    ]);
    let key = run(&["keys", "create", "--user-id", &user, "--org-id", &org]);
    let key = str_of(&key, "api_key").to_owned();

    let mut cmd = command(cwd.path());
    cmd.arg("--config").arg(&file).arg("serve");
    let served = Served::start(cmd);
    // The pool's connections, the background jobs' first rounds and a few requests.
    for _ in 0..20 {
        let r = client()
            .get(format!("{}/api/v1/users/me", served.address))
            .header("X-Access-Token", &key)
            .send()
            .unwrap();
        assert_eq!(r.status(), 200);
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    let lines = served.stop();
    let locked: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("database is locked"))
        .collect();
    assert!(
        locked.is_empty(),
        "lock errors at the first start: {locked:?}"
    );
    assert!(
        lines.iter().any(|l| l.contains("listening")),
        "the log is the server's: {lines:?}"
    );
}
