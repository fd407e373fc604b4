//! `switchboard`: the server (`serve`) and the operator commands of API.md (`migrate`,
//! `bootstrap`, `users create`, `members add`, `keys create|list|revoke`, `sandboxes register`, `specs pull`, `secrets rotate-key`).
//!
//! Every command takes `--database-url` (env `SWITCHBOARD_DATABASE_URL`; default: the SQLite
//! file `switchboard.sqlite` in `--data-dir`, env `SWITCHBOARD_DATA_DIR`, default
//! `./switchboard-data`), applies pending migrations first, and prints one JSON object on
//! stdout; errors go to stderr with a non-zero exit. Every command reads the configuration
//! file of `--config FILE` (env `SWITCHBOARD_CONFIG`; cli.rs): flags and variables
//! win over it.

mod cli;
mod cli_confine;
mod cli_docker;
mod cli_help;
mod cli_kube;
mod cli_operator;
mod cli_sandboxes;
mod cli_storage;
mod commands;
mod sandbox_urls;
mod serve;
mod sign_in;

/// The allocator: jemalloc with its background threads, which give freed memory back to the
/// system on their own (dirty pages decay over 10 s), where glibc's arenas kept hundreds of MiB
/// after a burst of request bodies (docs/probe-2026-11-23.md; API.md, Request bodies).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use crate::cli::Command;

fn main() {
    let cli = cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve::serve(&cli.db.database(), *args),
        Command::Operator(command) => commands::run(&cli.db.database(), command),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
