//! Switchboard's installation operations, as a library (docs/operations.md): what the
//! operator commands and a starting server do with an installation's database, key file and
//! data directory, each returning what happened instead of printing it, so that the binary's
//! commands only parse flags and print, and tests call the operations directly.
//!
//! - [`Database`]: the database an operator names (`--database-url`, its file, or SQLite in
//!   the data directory), opened with its migrations applied.
//! - [`secret_key`]: the installation key file (mode 0600, 64 hex characters).
//! - [`installation`]: that key checked against the database's installation record.
//! - [`replica`]: this replica's id in the data directory.
//! - [`backup`] and [`restore`]: a backup directory written and read back; `migrate --status`.
//! - [`rotate_key`]: a new installation key, every sealed value re-sealed with it.
//! - [`key_files`]: the server's other secrets read from their files (the LLM API key, the
//!   service key).
//! - [`operator`] and [`users`]: the operator commands on organizations, keys, registered
//!   sandboxes, users, members and the audit log; [`first_start`]: what a starting server
//!   does once (the first organization on an empty database).
//!
//! Depends on the domain and the storage adapters; no web layer.

pub mod backup;
mod database;
pub mod first_start;
pub mod installation;
pub mod key_files;
pub mod operator;
pub mod replica;
pub mod restore;
pub mod rotate_key;
pub mod secret_key;
pub mod users;

pub use database::Database;

/// The domain's refusal as an operation's error (its message).
pub fn domain(e: switchboard_domain::DomainError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

/// An id argument of an operator command (`--{flag}`), parsed (a UUID).
///
/// # Errors
/// `s` is not one: `--{flag}: not a UUID: {s}`.
pub fn parse_id<T: std::str::FromStr>(s: &str, flag: &str) -> anyhow::Result<T> {
    s.parse()
        .map_err(|_| anyhow::anyhow!("--{flag}: not a UUID: {s}"))
}
