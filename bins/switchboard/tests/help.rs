//! The command line as the real binary shows it: `serve --help` groups every flag under a
//! known heading, `-h` is short and `--help` whole, every flag of `serve` has an environment
//! variable and a row in docs/configuration.md, and the Kubernetes flags' defaults and values.
//! [`serve_flags`] reads a help text for the other modules (the configuration file's tests).

use crate::common;

use std::path::Path;

use common::{TempDir, command, output};

/// The headings of `serve --help` (the binary's `cli_help::heading`): every flag of `serve`
/// but `--help` and `--config` is under one of them, and each has a flag.
const HEADINGS: &[&str] = &[
    "Server",
    "Storage",
    "Sign-in",
    "Sandboxes (all runtimes)",
    "Sandbox URLs and proxy",
    "Process runtime",
    "Docker runtime",
    "Kubernetes runtime",
    "Warm pool",
    "LLM",
    "Conversation starts",
    "Limits",
    "Observability",
];

/// One flag of a help text.
#[derive(Debug)]
pub struct Flag {
    /// Its long name, without the dashes.
    pub long: String,
    /// The heading it is under (`Options` for none of the command's own).
    pub heading: String,
    /// Its entry: the flag's line and its help, the lines joined by single spaces.
    pub text: String,
}

impl Flag {
    /// The default the entry shows (clap's `[default: …]`, after the help's own text), if
    /// any.
    pub fn default(&self) -> Option<&str> {
        let start = self.text.rfind("[default: ")? + "[default: ".len();
        let len = self.text[start..].find(']')?;
        Some(&self.text[start..start + len])
    }
}

/// The flags of a help text, each under its heading: a heading is a line that is not
/// indented and ends with `:`, an entry starts at a line indented at most 6 spaces whose first
/// character is `-`, and takes the lines up to the next entry or heading.
pub fn flags(help: &str) -> Vec<Flag> {
    let mut out: Vec<Flag> = Vec::new();
    let mut heading = String::new();
    for line in help.lines() {
        let indent = line.len() - line.trim_start().len();
        if indent == 0 && line.ends_with(':') {
            heading = line.trim_end_matches(':').to_owned();
            continue;
        }
        let entry = indent <= 6 && line.trim_start().starts_with('-');
        if entry && let Some(at) = line.find("--") {
            let long: String = line[at + 2..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            out.push(Flag {
                long,
                heading: heading.clone(),
                text: String::new(),
            });
        }
        if let Some(flag) = out
            .last_mut()
            .filter(|_| indent > 0 && !line.trim().is_empty())
        {
            flag.text.push(' ');
            flag.text.push_str(line.trim());
        }
    }
    out
}

/// The stdout of the binary run with `args` in a fresh directory, which must succeed.
#[track_caller]
pub fn help_of(args: &[&str]) -> String {
    let cwd = TempDir::new();
    let mut cmd = command(cwd.path());
    cmd.args(args);
    let out = output(cmd);
    assert!(out.status.success(), "{args:?}: {}", out.stderr);
    out.stdout
}

/// The flags of `switchboard [before] serve --help` (e.g. `before`: `--config FILE`).
#[track_caller]
pub fn serve_flags(before: &[&str]) -> Vec<Flag> {
    let args: Vec<&str> = before.iter().copied().chain(["serve", "--help"]).collect();
    flags(&help_of(&args))
}

/// The flag `long` of `flags`.
#[track_caller]
pub fn flag<'a>(flags: &'a [Flag], long: &str) -> &'a Flag {
    flags
        .iter()
        .find(|f| f.long == long)
        .unwrap_or_else(|| panic!("no --{long} in the help"))
}

/// Whether `f` is a flag of `serve` itself (not `--help`, `--version` or `--config`).
fn of_serve(f: &&Flag) -> bool {
    !matches!(f.long.as_str(), "help" | "version" | "config")
}

#[test]
fn every_flag_of_serve_is_under_a_known_heading() {
    let flags = serve_flags(&[]);
    assert!(flags.len() > 100, "the help lists serve's flags: {flags:?}");
    let outside: Vec<(&str, &str)> = flags
        .iter()
        .filter(of_serve)
        .filter(|f| !HEADINGS.contains(&f.heading.as_str()))
        .map(|f| (f.long.as_str(), f.heading.as_str()))
        .collect();
    assert!(
        outside.is_empty(),
        "flags under no known heading: {outside:?}"
    );
    for h in HEADINGS {
        assert!(flags.iter().any(|f| f.heading == *h), "no flag under {h}");
    }
}

#[test]
fn dash_h_is_short_and_dash_dash_help_is_whole() {
    let short = help_of(&["serve", "-h"]);
    let long = help_of(&["serve", "--help"]);
    assert!(
        short.lines().count() * 2 < long.lines().count(),
        "-h is at most half of --help"
    );
    assert!(
        short.contains("Kubernetes runtime:") && short.contains("Sign-in:"),
        "{short}"
    );
    let flag_lines = short.lines().filter(|l| l.trim_start().starts_with("--"));
    let widest = flag_lines.map(str::len).max().unwrap();
    assert!(widest < 400, "a -h line of {widest} characters");
    assert!(
        long.contains("port 0 picks a free port"),
        "--help keeps the whole text"
    );
}

#[test]
fn every_flag_of_serve_has_an_environment_variable() {
    let flags = serve_flags(&[]);
    let missing: Vec<&str> = flags
        .iter()
        .filter(|f| !matches!(f.long.as_str(), "help" | "version"))
        .filter(|f| !f.text.contains("[env: "))
        .map(|f| f.long.as_str())
        .collect();
    assert!(missing.is_empty(), "flags without `env`: {missing:?}");
}

#[test]
fn the_configuration_page_names_every_key() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
    let page = std::fs::read_to_string(path).unwrap();
    let flags = serve_flags(&[]);
    let missing: Vec<&str> = flags
        .iter()
        .filter(of_serve)
        .map(|f| f.long.as_str())
        .filter(|l| !page.contains(&format!("| `{l}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/configuration.md lacks {missing:?}"
    );
}

#[test]
fn the_kubernetes_flags_defaults_and_values() {
    let flags = serve_flags(&[]);
    assert_eq!(
        flag(&flags, "kube-namespace").default(),
        Some("switchboard-sandboxes")
    );
    assert_eq!(flag(&flags, "kube-reach").default(), Some("pod-ip"));
    let cwd = TempDir::new();
    let mut cmd = command(cwd.path());
    cmd.args(["serve", "--kube-reach", "proxy"]);
    let out = output(cmd);
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("invalid value 'proxy'") && out.stderr.contains("port-forward"),
        "{}",
        out.stderr
    );
}
