//! A configuration file for a clap command line: TOML whose keys are the long names of the
//! command's flags, e.g. `bind = "0.0.0.0:3000"` or `cors-allowed-origin =
//! ["https://app.example.com"]` (docs/configuration.md), named by `--config FILE` or an
//! environment variable. The flags a file may set are the command's global ones and those of
//! its `serve` subcommand (the server's; an operator command's own flags are its arguments).
//!
//! A value from the file becomes the flag's default, so clap's own order decides: a flag on
//! the command line wins over its environment variable, which wins over the file, which wins
//! over the built-in default. The file is checked whole before anything runs: an unknown key
//! is an error naming the closest flag, a value of the wrong type names the type expected, and
//! a value the flag would refuse is refused with the flag's own reason.

use std::any::TypeId;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Arg, ArgAction, Command, FromArgMatches};

/// Why [`parse_from`] failed.
#[derive(Debug)]
pub enum ParseError {
    /// The command line (or a request for help or the version).
    Clap(clap::Error),
    /// The configuration file.
    Config(anyhow::Error),
}

/// `args` (the program's name first) parsed by `cmd` into `T`, with the values of the
/// configuration file named by `--config FILE` (else by `env`, the environment variable's
/// value, when not empty) as the flags' defaults. `cmd` must declare `--config` itself.
///
/// # Errors
/// [`ParseError::Config`] when the named file cannot be read or is wrong;
/// [`ParseError::Clap`] when the command line is.
pub fn parse_from<T: FromArgMatches>(
    mut cmd: Command,
    args: &[OsString],
    env: Option<&OsStr>,
) -> Result<T, ParseError> {
    let path = config_path(args).or_else(|| env.filter(|e| !e.is_empty()).map(PathBuf::from));
    if let Some(path) = path {
        let file = ConfigFile::load(&path).map_err(ParseError::Config)?;
        cmd = file.apply(cmd).map_err(ParseError::Config)?;
    }
    let matches = cmd
        .clone()
        .try_get_matches_from(args)
        .map_err(ParseError::Clap)?;
    T::from_arg_matches(&matches).map_err(|e| ParseError::Clap(e.format(&mut cmd)))
}

/// `cmd` with the global `--config FILE` flag (also named by the variable `env`) that
/// [`parse_from`] reads, shown without a heading; its help says what the file holds and that
/// flags and variables win over it.
pub fn with_config_flag(cmd: Command, env: &'static str) -> Command {
    let config = Arg::new("config")
        .long("config")
        .env(env)
        .global(true)
        .value_name("FILE")
        .value_parser(clap::value_parser!(PathBuf))
        .help_heading(None)
        .help("A TOML configuration file whose keys are the flags' long names")
        .long_help(
            "A TOML configuration file whose keys are the flags' long names (e.g. \
             `database-url = \"postgres://…\"`); a flag or its environment variable wins over \
             the file, the file over the defaults (docs/configuration.md).",
        );
    cmd.arg(config)
}

/// The process's command line parsed by `cmd` ([`parse_from`], the file named by `--config`
/// or the variable `env`); prints the error and exits as clap does (status 2) when the file or
/// the command line is wrong, and prints help or the version and exits when asked.
pub fn parse_or_exit<T: FromArgMatches>(cmd: Command, env: &str) -> T {
    let args: Vec<OsString> = std::env::args_os().collect();
    let file = std::env::var_os(env);
    match parse_from(cmd, &args, file.as_deref()) {
        Ok(parsed) => parsed,
        Err(ParseError::Clap(e)) => e.exit(),
        Err(ParseError::Config(e)) => {
            eprintln!("error: {e:#}");
            std::process::exit(2);
        }
    }
}

/// The value of `--config FILE` or `--config=FILE` on the command line (before a `--`).
fn config_path(args: &[OsString]) -> Option<PathBuf> {
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        let arg = arg.to_string_lossy();
        if arg == "--" {
            return None;
        }
        if arg == "--config" {
            return rest.next().map(PathBuf::from);
        }
        if let Some(value) = arg.strip_prefix("--config=") {
            return Some(PathBuf::from(value));
        }
    }
    None
}

/// A configuration file, read and checked against the flags.
#[derive(Debug)]
pub struct ConfigFile {
    path: PathBuf,
    table: toml::Table,
}

impl ConfigFile {
    /// Reads and parses the file at `path` (TOML; its keys are not checked yet).
    ///
    /// # Errors
    /// The file does not exist, cannot be read, or is not TOML (the line is named).
    pub fn load(path: &Path) -> Result<ConfigFile> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the configuration file {}", path.display()))?;
        ConfigFile::parse(path, &text)
    }

    /// Parses `text`, the content of the file at `path`.
    ///
    /// # Errors
    /// `text` is not TOML.
    pub fn parse(path: &Path, text: &str) -> Result<ConfigFile> {
        let table: toml::Table = toml::from_str(text).map_err(|e| {
            anyhow::anyhow!("the configuration file {} is not TOML: {e}", path.display())
        })?;
        Ok(ConfigFile {
            path: path.to_owned(),
            table,
        })
    }

    /// The values of the file as the flags' command-line strings, by long flag name; the
    /// flags are those of `cmd`'s `serve` and `cmd` itself (the global ones).
    ///
    /// # Errors
    /// An unknown key, a value of the wrong type, or a value its flag refuses: the message
    /// names the file, the key and what was expected.
    pub fn values(&self, cmd: &Command) -> Result<BTreeMap<String, Vec<String>>> {
        self.checked(cmd, true)
    }

    /// [`ConfigFile::values`], the values' own checks by their flags' parsers only when
    /// `parse` (without: the keys and the types only, e.g. for an example file whose values
    /// name files of another host).
    ///
    /// # Errors
    /// As [`ConfigFile::values`] (without `parse`: no value refused by its flag).
    pub fn checked(&self, cmd: &Command, parse: bool) -> Result<BTreeMap<String, Vec<String>>> {
        let flags = known_flags(cmd);
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (key, value) in &self.table {
            let in_file =
                |e: String| anyhow::anyhow!("configuration file {}: {e}", self.path.display());
            let Some(arg) = flags.get(key.as_str()) else {
                return Err(in_file(unknown_key(key, value, &flags)));
            };
            let long = arg.get_long().unwrap_or(key).to_owned();
            let strings = strings_of(arg, key, value).map_err(in_file)?;
            for s in strings.iter().filter(|_| parse) {
                check_value(arg, s).map_err(|e| in_file(format!("`{key}`: {e}")))?;
            }
            if out.insert(long.clone(), strings).is_some() {
                return Err(in_file(format!(
                    "`{key}` is given twice (as `{long}` and its former name)"
                )));
            }
        }
        Ok(out)
    }

    /// `cmd` with the file's values as the defaults of their flags, in every subcommand that
    /// has a flag of that long name.
    ///
    /// # Errors
    /// As [`ConfigFile::values`].
    pub fn apply(&self, cmd: Command) -> Result<Command> {
        // clap keeps default values as `&'static str` (without its `string` feature): these
        // few strings live as long as the process.
        let values = self
            .values(&cmd)?
            .into_iter()
            .map(|(k, v)| {
                let v = v
                    .into_iter()
                    .map(|s| &*Box::leak(s.into_boxed_str()))
                    .collect();
                (k, v)
            })
            .collect();
        Ok(with_defaults(cmd, &values))
    }
}

/// `cmd` and its subcommands with `values` (by long name) as their flags' defaults.
fn with_defaults(cmd: Command, values: &BTreeMap<String, Vec<&'static str>>) -> Command {
    cmd.mut_args(|arg| match arg.get_long().and_then(|l| values.get(l)) {
        Some(v) => arg.default_values(v.clone()),
        None => arg,
    })
    .mut_subcommands(|sub| with_defaults(sub, values))
}

/// The flags a file may set, by long name and former names (aliases): `serve`'s and the
/// global ones; not `--config` itself.
fn known_flags(cmd: &Command) -> BTreeMap<&str, &Arg> {
    let serve = cmd.find_subcommand("serve").into_iter();
    let mut out = BTreeMap::new();
    for arg in cmd
        .get_arguments()
        .chain(serve.flat_map(Command::get_arguments))
    {
        let Some(long) = arg.get_long() else { continue };
        if matches!(long, "config" | "help" | "version") {
            continue;
        }
        out.insert(long, arg);
        for alias in arg.get_all_aliases().into_iter().flatten() {
            out.insert(alias, arg);
        }
    }
    out
}

/// The message for a key no flag has: the closest flag's name.
fn unknown_key(key: &str, value: &toml::Value, flags: &BTreeMap<&str, &Arg>) -> String {
    let closest = flags
        .keys()
        .min_by_key(|k| edit_distance(key, k))
        .copied()
        .unwrap_or("bind");
    let table = if value.is_table() {
        " (a table: keys are the flags' long names, at the top level of the file)"
    } else {
        ""
    };
    format!(
        "unknown key `{key}`{table}; the closest flag is `{closest}` \
         (`switchboard serve --help` lists them all)"
    )
}

/// What type of TOML value a flag takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `true` or `false`.
    Boolean,
    /// A whole number.
    Integer,
    /// A string.
    Text,
    /// A string or a number, taken as written (e.g. `sandbox-cpus = 1.5`).
    TextOrNumber,
}

impl Kind {
    /// The kind of one value of `arg`, from its action and value parser.
    fn of(arg: &Arg) -> Kind {
        if matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse) {
            return Kind::Boolean;
        }
        let ty = arg.get_value_parser().type_id();
        let integers = [
            TypeId::of::<u8>(),
            TypeId::of::<u16>(),
            TypeId::of::<u32>(),
            TypeId::of::<u64>(),
            TypeId::of::<usize>(),
            TypeId::of::<i8>(),
            TypeId::of::<i16>(),
            TypeId::of::<i32>(),
            TypeId::of::<i64>(),
            TypeId::of::<isize>(),
        ];
        if ty == TypeId::of::<bool>() {
            Kind::Boolean
        } else if integers.iter().any(|t| ty == *t) {
            Kind::Integer
        } else if [
            TypeId::of::<String>(),
            TypeId::of::<PathBuf>(),
            TypeId::of::<OsString>(),
        ]
        .iter()
        .any(|t| ty == *t)
        {
            Kind::Text
        } else {
            Kind::TextOrNumber
        }
    }

    /// The name of this kind in messages.
    fn name(self) -> &'static str {
        match self {
            Kind::Boolean => "a boolean (true or false)",
            Kind::Integer => "an integer",
            Kind::Text => "a string",
            Kind::TextOrNumber => "a string or a number",
        }
    }

    /// The name of many values of this kind in messages.
    fn plural(self) -> &'static str {
        match self {
            Kind::Boolean => "booleans",
            Kind::Integer => "integers",
            Kind::Text => "strings",
            Kind::TextOrNumber => "strings or numbers",
        }
    }
}

/// Whether `arg` takes many values (a repeatable flag: a TOML array).
fn is_list(arg: &Arg) -> bool {
    matches!(arg.get_action(), ArgAction::Append)
}

/// `value` of `key` as the strings the flag would be given on the command line.
fn strings_of(arg: &Arg, key: &str, value: &toml::Value) -> Result<Vec<String>, String> {
    let kind = Kind::of(arg);
    let one = |v: &toml::Value| -> Option<String> {
        match (kind, v) {
            (Kind::Boolean, toml::Value::Boolean(b)) => Some(b.to_string()),
            (Kind::Integer, toml::Value::Integer(i)) => Some(i.to_string()),
            (Kind::Text | Kind::TextOrNumber, toml::Value::String(s)) => Some(s.clone()),
            (Kind::TextOrNumber, toml::Value::Integer(i)) => Some(i.to_string()),
            (Kind::TextOrNumber, toml::Value::Float(f)) => Some(f.to_string()),
            _ => None,
        }
    };
    let found = |v: &toml::Value| v.type_str();
    match value {
        toml::Value::Array(items) if is_list(arg) => items
            .iter()
            .map(|v| {
                one(v).ok_or_else(|| {
                    format!(
                        "`{key}`: expected an array of {}, found an array holding {} {}",
                        kind.plural(),
                        article(found(v)),
                        found(v)
                    )
                })
            })
            .collect(),
        _ => one(value).map(|s| vec![s]).ok_or_else(|| {
            let expected = if is_list(arg) {
                format!("{} or an array of them", kind.name())
            } else {
                kind.name().to_owned()
            };
            format!(
                "`{key}`: expected {expected}, found {} {}",
                article(found(value)),
                found(value)
            )
        }),
    }
}

/// "a" or "an" before `word`.
fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// Whether `arg`'s value parser takes `value` (as on the command line); else its reason.
fn check_value(arg: &Arg, value: &str) -> Result<(), String> {
    if Kind::of(arg) == Kind::Boolean {
        return Ok(());
    }
    let probe = Command::new("probe").no_binary_name(true).arg(
        Arg::new("value")
            .long("value")
            .action(ArgAction::Set)
            .value_parser(arg.get_value_parser().clone()),
    );
    match probe.try_get_matches_from([format!("--value={value}")]) {
        Ok(_) => Ok(()),
        Err(e) => Err(format!("invalid value {value:?}: {}", reason(&e))),
    }
}

/// The reason in a value parser's error: the parser's own message, or the values allowed.
fn reason(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    if let Some(source) = std::error::Error::source(e) {
        return source.to_string();
    }
    if let Some(ContextValue::Strings(allowed)) = e.get(ContextKind::ValidValue) {
        return format!("expected one of {}", allowed.join(", "));
    }
    let rendered = e.to_string();
    let first = rendered.lines().next().unwrap_or_default();
    first.trim_start_matches("error: ").to_owned()
}

/// Levenshtein distance between `a` and `b` (characters).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use clap::ArgMatches;

    use super::*;

    /// The matches as they are.
    struct Matches(ArgMatches);

    impl FromArgMatches for Matches {
        fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
            Ok(Matches(m.clone()))
        }

        fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
            self.0 = m.clone();
            Ok(())
        }
    }

    /// A command shaped as the server's: a global `--config`, and a `serve` subcommand with a
    /// flag taking no value and one taking a number.
    fn command() -> Command {
        let serve = Command::new("serve")
            .arg(Arg::new("stream").long("stream").action(ArgAction::SetTrue))
            .arg(
                Arg::new("workers")
                    .long("workers")
                    .value_parser(clap::value_parser!(u64)),
            );
        with_config_flag(Command::new("switchboard").subcommand(serve), "TEST_CONFIG")
    }

    /// The `serve` matches of `args` with the file `text` named by `--config`.
    fn serve(text: &str, args: &[&str]) -> ArgMatches {
        static FILES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = FILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("config-file-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{n}.toml"));
        std::fs::write(&path, text).unwrap();
        let mut list: Vec<OsString> = ["switchboard", "--config"].map(OsString::from).into();
        list.push(path.clone().into());
        list.push("serve".into());
        list.extend(args.iter().map(OsString::from));
        let Matches(matches) = parse_from(command(), &list, None).unwrap();
        let _ = std::fs::remove_file(path);
        matches.subcommand_matches("serve").unwrap().clone()
    }

    #[test]
    fn a_flag_taking_no_value_is_set_by_the_file() {
        assert!(serve("stream = true\n", &[]).get_flag("stream"));
        assert!(!serve("stream = false\n", &[]).get_flag("stream"));
        assert!(!serve("workers = 2\n", &[]).get_flag("stream"));
        // On the command line it is set whatever the file says.
        assert!(serve("stream = false\n", &["--stream"]).get_flag("stream"));
        let workers = serve("workers = 2\n", &["--workers", "3"]);
        assert_eq!(workers.get_one::<u64>("workers"), Some(&3));
    }
}
