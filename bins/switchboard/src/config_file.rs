//! The configuration file: `switchboard --config FILE` (or `SWITCHBOARD_CONFIG=FILE`), TOML
//! whose keys are the long names of the flags, e.g. `bind = "0.0.0.0:3000"` or
//! `cors-allowed-origin = ["https://app.example.com"]` (docs/configuration.md).
//!
//! Every command reads it: `serve` and the operator commands that take the same flags
//! (`--database-url`, `--data-dir`, `--secret-key-file`, `--sandbox-specs`, …). How the file's
//! values become the flags' defaults, and how it is checked, is
//! [`switchboard_runtime::config_file`]'s; this module names the file's flag and variable and
//! its tests hold the real command line to the example file and the documentation.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Arg, Command, CommandFactory};
use switchboard_runtime::config_file::{self, ParseError};

use crate::cli::Cli;

/// The environment variable naming the configuration file when `--config` is not given.
pub const CONFIG_ENV: &str = "SWITCHBOARD_CONFIG";

/// The command line parsed with the configuration file's values (if one is named) as the
/// flags' defaults; prints the error and exits as clap does (status 2) when the file or the
/// command line is wrong, and prints help or the version and exits when asked.
pub fn parse() -> Cli {
    let args: Vec<OsString> = std::env::args_os().collect();
    let env = std::env::var_os(CONFIG_ENV);
    match parse_from(&args, env.as_deref()) {
        Ok(cli) => cli,
        Err(ParseError::Clap(e)) => e.exit(),
        Err(ParseError::Config(e)) => {
            eprintln!("error: {e:#}");
            std::process::exit(2);
        }
    }
}

/// [`parse`] of `args` (the program's name first), `env` being `SWITCHBOARD_CONFIG`'s value.
///
/// # Errors
/// As [`switchboard_runtime::config_file::parse_from`].
pub fn parse_from(args: &[OsString], env: Option<&std::ffi::OsStr>) -> Result<Cli, ParseError> {
    config_file::parse_from(command(), args, env)
}

/// The whole command line: [`Cli`]'s, `--config`, and `-h` made short
/// ([`crate::cli_help::short_help`]).
pub fn command() -> Command {
    let config = Arg::new("config")
        .long("config")
        .env(CONFIG_ENV)
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
    crate::cli_help::short_help(Cli::command().arg(config))
}

#[cfg(test)]
mod tests;
