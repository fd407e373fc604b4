//! The configuration file against the real command line: precedence over defaults, flags
//! winning over it, and the messages of wrong files.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use switchboard_runtime::config_file::{ConfigFile, ParseError};

use super::{command, parse_from};
use crate::cli::{Cli, Command as Sub, LogFormat, ServeArgs};

/// `text` written to a file in a new temporary directory (kept alive by the guard).
fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("switchboard.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

fn args(list: &[&str]) -> Vec<OsString> {
    std::iter::once("switchboard")
        .chain(list.iter().copied())
        .map(OsString::from)
        .collect()
}

fn serve(cli: Cli) -> (crate::cli::DbArgs, ServeArgs) {
    match cli.command {
        Sub::Serve(args) => (cli.db, *args),
        Sub::Operator(_) => panic!("not serve"),
    }
}

/// The configuration error for `text` (as the file of `serve`).
fn config_error(text: &str) -> String {
    let (_dir, path) = file(text);
    let p = path.to_str().unwrap();
    match parse_from(&args(&["--config", p, "serve"]), None) {
        Err(ParseError::Config(e)) => {
            let message = format!("{e:#}");
            assert!(message.contains(p), "the message names the file: {message}");
            message
        }
        Err(ParseError::Clap(e)) => panic!("expected a configuration error, got clap's: {e}"),
        Ok(_) => panic!("expected a configuration error for {text:?}"),
    }
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
    let cli = parse_from(&args(&["--config", path.to_str().unwrap(), "serve"]), None).unwrap();
    let (db, serve) = serve(cli);
    assert_eq!(
        db.database_url.as_deref(),
        Some("sqlite:///tmp/from-file.sqlite")
    );
    assert_eq!(serve.bind.to_string(), "127.0.0.1:4100");
    assert_eq!(serve.workers, Some(3));
    assert!(matches!(serve.log_format, LogFormat::Json));
    assert!(serve.llm.llm_stream);
    assert!(!serve.sandboxes.docker.docker_publish_ports);
    assert_eq!(
        serve.cors_allowed_origin,
        ["https://a.example", "https://b.example"]
    );
    assert!(serve.sandboxes.confine.sandbox_cpus.is_some());
    assert_eq!(serve.sandboxes.confine.sandbox_memory_mb, 2048);
    // A former name (alias) sets the flag.
    assert_eq!(serve.max_sockets_per_member, 7);
    // What the file does not name keeps its default.
    assert_eq!(serve.proxy_read_timeout, 600);
}

#[test]
fn a_flag_wins_over_the_file_wherever_config_is_given() {
    let (_dir, path) = file(FILE);
    let p = path.to_str().unwrap();
    for list in [
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
            &format!("--config={p}"),
            "--workers",
            "5",
            "--log-format",
            "text",
        ],
    ] {
        let (_, serve) = serve(parse_from(&args(&list), None).unwrap());
        assert_eq!(serve.workers, Some(5), "{list:?}");
        assert!(matches!(serve.log_format, LogFormat::Text), "{list:?}");
        // Repeated flags replace the file's list, not add to it.
        assert_eq!(serve.bind.to_string(), "127.0.0.1:4100");
    }
    let (_, serve) = serve(
        parse_from(
            &args(&[
                "--config",
                p,
                "serve",
                "--cors-allowed-origin",
                "https://c.example",
            ]),
            None,
        )
        .unwrap(),
    );
    assert_eq!(serve.cors_allowed_origin, ["https://c.example"]);
}

#[test]
fn the_environment_names_the_file_when_the_command_line_does_not() {
    let (_dir, path) = file("workers = 9\n");
    let (_other, other) = file("workers = 4\n");
    let (_, s) = serve(parse_from(&args(&["serve"]), Some(path.as_os_str())).unwrap());
    assert_eq!(s.workers, Some(9));
    // --config wins over SWITCHBOARD_CONFIG; an empty variable names no file.
    let list = args(&["serve", "--config", other.to_str().unwrap()]);
    let (_, s) = serve(parse_from(&list, Some(path.as_os_str())).unwrap());
    assert_eq!(s.workers, Some(4));
    let (_, s) = serve(parse_from(&args(&["serve"]), Some("".as_ref())).unwrap());
    assert_eq!(s.workers, None);
}

#[test]
fn operator_commands_read_the_shared_keys() {
    let (_dir, path) = file(
        "data-dir = \"/srv/switchboard\"\nsecret-key-file = \"/etc/sb/key\"\nbind = \"0.0.0.0:80\"\n",
    );
    let p = path.to_str().unwrap();
    let cli = parse_from(&args(&["--config", p, "secrets", "rotate-key"]), None).unwrap();
    assert_eq!(cli.db.data_dir, Path::new("/srv/switchboard"));
    match cli.command {
        Sub::Operator(crate::cli::OperatorCommand::Secrets(
            crate::cli::SecretsCommand::RotateKey { secret_key_file },
        )) => assert_eq!(secret_key_file.as_deref(), Some(Path::new("/etc/sb/key"))),
        _ => panic!("not rotate-key"),
    }
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
    let missing = std::env::temp_dir().join("switchboard-no-such-config.toml");
    let p = missing.to_str().unwrap();
    match parse_from(&args(&["--config", p, "serve"]), None) {
        Err(ParseError::Config(e)) => {
            assert!(format!("{e:#}").contains(p), "{e:#}");
        }
        _ => panic!("a missing file must be an error"),
    }
    let e = config_error("bind = \n");
    assert!(e.contains("is not TOML") && e.contains("line 1"), "{e}");
}

#[test]
fn every_flag_of_serve_has_an_environment_variable() {
    let mut cmd = command();
    cmd.build();
    let serve = cmd.find_subcommand("serve").unwrap();
    let missing: Vec<&str> = serve
        .get_arguments()
        .filter(|a| {
            a.get_long()
                .is_some_and(|l| !matches!(l, "help" | "version"))
        })
        .filter(|a| a.get_env().is_none())
        .filter_map(|a| a.get_long())
        .collect();
    assert!(missing.is_empty(), "flags without `env`: {missing:?}");
}

#[test]
fn the_example_file_is_read_by_the_real_loader() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/switchboard.example.toml");
    let file = ConfigFile::load(&path).unwrap();
    let values = file.values(&command()).unwrap();
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
        assert!(values.contains_key(key), "the example sets `{key}`");
    }
    // The commented-out keys are flags too: uncommenting one never gives an unknown key.
    let text = std::fs::read_to_string(&path).unwrap();
    let commented: String = text
        .lines()
        .filter_map(|l| l.strip_prefix("# "))
        .filter(|l| l.split_once(" = ").is_some_and(|(k, _)| !k.contains(' ')))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        commented.lines().count() > 20,
        "the example shows many keys commented out"
    );
    // Keys and types: the values may name files of the host it is deployed on.
    ConfigFile::parse(&path, &commented)
        .and_then(|f| f.checked(&command(), false))
        .unwrap();
}

#[test]
fn the_configuration_page_names_every_key() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
    let page = std::fs::read_to_string(path).unwrap();
    let mut cmd = command();
    cmd.build();
    let serve = cmd.find_subcommand("serve").unwrap();
    let missing: Vec<&str> = serve
        .get_arguments()
        .filter_map(|a| a.get_long())
        .filter(|l| !matches!(*l, "help" | "version" | "config"))
        .filter(|l| !page.contains(&format!("| `{l}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/configuration.md lacks {missing:?}"
    );
}
