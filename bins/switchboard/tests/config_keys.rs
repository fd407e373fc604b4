//! The configuration file's keys against the real command line: a file's values become the
//! flags' defaults (as `--help` shows them), wherever `--config` or `SWITCHBOARD_CONFIG`
//! names it and for the operator commands too; a flag wins over the file wherever `--config`
//! is given (a server started each way); the messages of wrong files; the example file read
//! by the real loader.

use crate::common;
use crate::help::{flag, serve_flags};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Instant;

use common::{TempDir, client, command, output};

/// `text` written to `switchboard.toml` in a new temporary directory.
fn file(text: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::new();
    let path = dir.path().join("switchboard.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// The configuration error of `switchboard --config FILE serve` for a file of `text`: the
/// command stops with status 2, its message naming the file.
#[track_caller]
fn config_error(text: &str) -> String {
    let (dir, path) = file(text);
    let p = path.to_str().unwrap();
    let mut cmd = command(dir.path());
    cmd.args(["--config", p, "serve"]);
    let out = output(cmd);
    assert_eq!(out.status.code(), Some(2), "{text:?}: {}", out.stderr);
    assert!(
        out.stderr.contains(p),
        "the message names the file: {}",
        out.stderr
    );
    out.stderr
}

const FILE: &str = r#"
database-url = "sqlite:///tmp/from-file.sqlite"
bind = "127.0.0.1:4100"
workers = 3
log-format = "json"
llm-stream = true
docker-publish-ports = false
cors-allowed-origin = ["https://a.example", "https://b.example"]
sandbox-cpus = 1.5
sandbox-memory-mb = 2048
max-sockets-per-key = 7
"#;

#[test]
fn the_file_sets_what_no_flag_sets() {
    let (_dir, path) = file(FILE);
    let flags = serve_flags(&["--config", path.to_str().unwrap()]);
    let default = |long: &str| flag(&flags, long).default().map(str::to_owned);
    assert_eq!(
        default("database-url").as_deref(),
        Some("sqlite:///tmp/from-file.sqlite")
    );
    assert_eq!(default("bind").as_deref(), Some("127.0.0.1:4100"));
    assert_eq!(default("workers").as_deref(), Some("3"));
    assert_eq!(default("log-format").as_deref(), Some("json"));
    assert_eq!(default("docker-publish-ports").as_deref(), Some("false"));
    let origins = default("cors-allowed-origin").unwrap();
    assert!(
        origins.contains("https://a.example") && origins.contains("https://b.example"),
        "{origins}"
    );
    assert_eq!(default("sandbox-cpus").as_deref(), Some("1.5"));
    assert_eq!(default("sandbox-memory-mb").as_deref(), Some("2048"));
    // A former name (alias) sets the flag.
    assert_eq!(default("max-sockets-per-member").as_deref(), Some("7"));
    // What the file does not name keeps its default.
    assert_eq!(default("proxy-read-timeout").as_deref(), Some("600"));
    // A flag taking no value (`llm-stream = true`) shows no default: the file's boolean is
    // accepted here, and `switchboard_runtime::config_file`'s tests hold it to set the flag.
}

/// A server started by `cmd`, killed on drop.
struct Started {
    child: Child,
    /// The address it printed.
    address: String,
    /// Its log (stderr) up to the `listening` line.
    log: Vec<String>,
}

impl Started {
    /// Starts `cmd` (a `serve`) and reads its stderr up to the `listening` line.
    #[track_caller]
    fn start(mut cmd: Command) -> Started {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawning switchboard serve");
        let (out_tx, out_rx) = mpsc::channel();
        let (err_tx, err_rx) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        let err = child.stderr.take().unwrap();
        for (pipe, tx) in [
            (Box::new(out) as Box<dyn std::io::Read + Send>, out_tx),
            (Box::new(err), err_tx),
        ] {
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
        }
        let deadline = Instant::now() + common::START_TIMEOUT;
        let wait = || deadline.saturating_duration_since(Instant::now());
        let mut address = None;
        while let Ok(line) = out_rx.recv_timeout(wait()) {
            let v: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
            if v["event"] == "listening" {
                address = v["address"].as_str().map(str::to_owned);
                break;
            }
        }
        let mut log = Vec::new();
        while let Ok(line) = err_rx.recv_timeout(wait()) {
            let last = line.contains("listening") && line.contains("workers");
            log.push(line);
            if last {
                break;
            }
        }
        let address = address.unwrap_or_else(|| panic!("serve printed no address: {log:?}"));
        Started {
            child,
            address,
            log,
        }
    }

    /// Whether a browser at `origin` may call the API (a CORS preflight).
    fn allows(&self, origin: &str) -> bool {
        let preflight = client()
            .request(
                reqwest::Method::OPTIONS,
                format!("{}/api/v1/users/me", self.address),
            )
            .header("Origin", origin)
            .header("Access-Control-Request-Method", "GET")
            .send()
            .unwrap();
        preflight
            .headers()
            .get("access-control-allow-origin")
            .is_some_and(|v| v == origin)
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_flag_wins_over_the_file_wherever_config_is_given() {
    let cwd = TempDir::new();
    let path = cwd.path().join("switchboard.toml");
    let text = format!(
        "bind = \"127.0.0.1:0\"\ndata-dir = \"{}\"\nsandbox-url-form = \"path\"\n\
         workers = 3\nlog-format = \"json\"\n\
         cors-allowed-origin = [\"https://a.example\", \"https://b.example\"]\n",
        cwd.path().join("data").display()
    );
    std::fs::write(&path, text).unwrap();
    let p = path.to_str().unwrap();
    let config_eq = format!("--config={p}");
    let placements = [
        vec![
            "--config",
            p,
            "serve",
            "--workers",
            "5",
            "--log-format",
            "text",
        ],
        vec!["serve", "--workers=5", "--config", p, "--log-format=text"],
        vec![
            "serve",
            &config_eq,
            "--workers",
            "5",
            "--log-format",
            "text",
            "--cors-allowed-origin",
            "https://c.example",
        ],
    ];
    for (i, list) in placements.iter().enumerate() {
        let mut cmd = command(cwd.path());
        cmd.args(list);
        let served = Started::start(cmd);
        let listening = served.log.last().unwrap();
        assert!(listening.contains("workers=5"), "{list:?}: {listening}");
        assert!(
            serde_json::from_str::<serde_json::Value>(listening).is_err(),
            "text logs: {list:?}: {listening}"
        );
        // The file's bind (a free port), not the default 127.0.0.1:3000.
        assert!(
            served.address.starts_with("http://127.0.0.1:") && !served.address.ends_with(":3000"),
            "{}",
            served.address
        );
        assert!(cwd.path().join("data/switchboard.sqlite").exists());
        if i == 2 {
            // Repeated flags replace the file's list, not add to it.
            assert!(served.allows("https://c.example"));
            assert!(!served.allows("https://a.example"));
        } else {
            assert!(served.allows("https://b.example"));
        }
    }
}

#[test]
fn the_environment_names_the_file_when_the_command_line_does_not() {
    let (dir, path) = file("workers = 9\n");
    let (_other_dir, other) = file("workers = 4\n");
    let workers = |env: &str, args: &[&str]| {
        let mut cmd = command(dir.path());
        cmd.env("SWITCHBOARD_CONFIG", env)
            .args(args)
            .args(["serve", "--help"]);
        let out = output(cmd);
        assert!(out.status.success(), "{}", out.stderr);
        let flags = crate::help::flags(&out.stdout);
        flag(&flags, "workers").default().map(str::to_owned)
    };
    assert_eq!(workers(path.to_str().unwrap(), &[]).as_deref(), Some("9"));
    // --config wins over SWITCHBOARD_CONFIG; an empty variable names no file.
    let config = ["--config", other.to_str().unwrap()];
    assert_eq!(
        workers(path.to_str().unwrap(), &config).as_deref(),
        Some("4")
    );
    assert_eq!(workers("", &[]), None);
}

#[test]
fn operator_commands_read_the_shared_keys() {
    let (_dir, path) = file(
        "data-dir = \"/srv/switchboard\"\nsecret-key-file = \"/etc/sb/key\"\nbind = \"0.0.0.0:80\"\n",
    );
    let p = path.to_str().unwrap();
    let help = crate::help::help_of(&["--config", p, "secrets", "rotate-key", "--help"]);
    let flags = crate::help::flags(&help);
    assert_eq!(flag(&flags, "data-dir").default(), Some("/srv/switchboard"));
    assert_eq!(
        flag(&flags, "secret-key-file").default(),
        Some("/etc/sb/key")
    );
}

#[test]
fn an_unknown_key_names_the_closest_flag() {
    let e = config_error("bnid = \"127.0.0.1:3000\"\n");
    assert!(e.contains("unknown key `bnid`"), "{e}");
    assert!(e.contains("closest flag is `bind`"), "{e}");
    let e = config_error("databse-url = \"sqlite:///x\"\n");
    assert!(e.contains("`database-url`"), "{e}");
    // Tables are not headings: keys are flat.
    let e = config_error("[server]\nbind = \"127.0.0.1:3000\"\n");
    assert!(
        e.contains("unknown key `server`") && e.contains("a table"),
        "{e}"
    );
    // The file's own flag is no key.
    assert!(config_error("config = \"x.toml\"\n").contains("unknown key `config`"));
}

#[test]
fn a_value_of_the_wrong_type_names_the_type_expected() {
    let e = config_error("workers = \"four\"\n");
    assert!(
        e.contains("`workers`: expected an integer, found a string"),
        "{e}"
    );
    let e = config_error("llm-stream = \"yes\"\n");
    assert!(e.contains("`llm-stream`: expected a boolean"), "{e}");
    let e = config_error("bind = 3000\n");
    assert!(
        e.contains("`bind`: expected a string or a number") || e.contains("`bind`: invalid value"),
        "{e}"
    );
    let e = config_error("llm-model = 4\n");
    assert!(
        e.contains("`llm-model`: expected a string, found an integer"),
        "{e}"
    );
    let e = config_error("cors-allowed-origin = [1]\n");
    assert!(
        e.contains("expected an array of strings, found an array holding an integer"),
        "{e}"
    );
    let e = config_error("workers = [1, 2]\n");
    assert!(
        e.contains("`workers`: expected an integer, found an array"),
        "{e}"
    );
}

#[test]
fn a_value_its_flag_refuses_is_refused_with_the_flags_reason() {
    let e = config_error("log-format = \"xml\"\n");
    assert!(e.contains("`log-format`: invalid value \"xml\""), "{e}");
    assert!(e.contains("text") && e.contains("json"), "{e}");
    let e = config_error("body-read-timeout = 0\n");
    assert!(
        e.contains("`body-read-timeout`: invalid value \"0\""),
        "{e}"
    );
    let e = config_error("bind = \"nowhere\"\n");
    assert!(e.contains("`bind`: invalid value \"nowhere\""), "{e}");
    let e = config_error("max-body-bytes-in-flight = 10\n");
    assert!(e.contains("webhook body limit"), "{e}");
    // Two names of one flag.
    let e = config_error("max-sockets-per-key = 1\nmax-sockets-per-member = 2\n");
    assert!(e.contains("given twice"), "{e}");
}

#[test]
fn a_missing_or_malformed_file_is_an_error() {
    let cwd = TempDir::new();
    let missing = cwd.path().join("switchboard-no-such-config.toml");
    let p = missing.to_str().unwrap();
    let mut cmd = command(cwd.path());
    cmd.args(["--config", p, "serve"]);
    let out = output(cmd);
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains(p), "{}", out.stderr);
    let e = config_error("bind = \n");
    assert!(e.contains("is not TOML") && e.contains("line 1"), "{e}");
}

/// The value of the uncommented line `key = "value"` of `text`.
fn value_in(text: &str, key: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with(&format!("{key} = ")))?;
    let value = line.split_once(" = ")?.1.trim();
    Some(value.trim_matches('"').to_owned())
}

#[test]
fn the_example_file_is_read_by_the_real_loader() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/switchboard.example.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let flags = serve_flags(&["--config", path.to_str().unwrap()]);
    for key in [
        "database-url-file",
        "data-dir",
        "secret-key-file",
        "bind",
        "public-url",
        "sandbox-runtime",
        "llm-model",
        "log-format",
    ] {
        let value = value_in(&text, key).unwrap_or_else(|| panic!("the example sets `{key}`"));
        assert_eq!(flag(&flags, key).default(), Some(value.as_str()), "{key}");
    }
    // The commented-out keys are flags too: uncommenting one never gives an unknown key or a
    // value of the wrong type. Their values may name files of the host it is deployed on: a
    // value its flag refuses only for that is left out.
    let mut commented: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# "))
        .filter(|l| l.split_once(" = ").is_some_and(|(k, _)| !k.contains(' ')))
        .map(str::to_owned)
        .collect();
    assert!(
        commented.len() > 20,
        "the example shows many keys commented out"
    );
    let (dir, uncommented) = file("");
    loop {
        std::fs::write(&uncommented, commented.join("\n")).unwrap();
        let mut cmd = command(dir.path());
        cmd.arg("--config")
            .arg(&uncommented)
            .args(["serve", "--help"]);
        let out = output(cmd);
        if out.status.success() {
            break;
        }
        let refused = commented
            .iter()
            .position(|l| {
                let key = l.split_once(" = ").unwrap().0;
                out.stderr.contains(&format!("`{key}`: invalid value"))
            })
            .unwrap_or_else(|| panic!("{}", out.stderr));
        commented.remove(refused);
    }
}
