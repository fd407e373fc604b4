//! The configuration file: `switchboard --config FILE` (or `SWITCHBOARD_CONFIG=FILE`), TOML
//! whose keys are the long names of the flags, e.g. `bind = "0.0.0.0:3000"` or
//! `cors-allowed-origin = ["https://app.example.com"]` (docs/configuration.md).
//!
//! Every command reads it: `serve` and the operator commands that take the same flags
//! (`--database-url`, `--data-dir`, `--secret-key-file`, `--sandbox-specs`, …). How the file's
//! values become the flags' defaults, and how it is checked, is
//! [`switchboard_runtime::config_file`]'s; this module names the file's variable.

use clap::{Command, CommandFactory};
use switchboard_runtime::config_file;

use crate::cli::Cli;

/// The environment variable naming the configuration file when `--config` is not given.
pub const CONFIG_ENV: &str = "SWITCHBOARD_CONFIG";

/// The command line parsed with the configuration file's values (if one is named) as the
/// flags' defaults ([`config_file::parse_or_exit`]).
pub fn parse() -> Cli {
    config_file::parse_or_exit(command(), CONFIG_ENV)
}

/// The whole command line: [`Cli`]'s, `--config`, and `-h` made short
/// ([`switchboard_runtime::help::short_help`]).
pub fn command() -> Command {
    let cmd = config_file::with_config_flag(Cli::command(), CONFIG_ENV);
    switchboard_runtime::help::short_help(cmd)
}
