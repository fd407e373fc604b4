//! # switchboard-testkit
//!
//! Gives every test of the project a fresh, real, empty database, on SQLite and on
//! PostgreSQL, so tests never share state and can run in parallel.
//!
//! ```no_run
//! use switchboard_testkit::{Backend, TestDatabase};
//!
//! for backend in Backend::ALL {
//!     let db = TestDatabase::new(backend);
//!     // connect to `db.url()` with the connection type of `backend` ...
//!     println!("{}: {}", backend.name(), db.url());
//! } // each database is removed here
//! ```
//!
//! ## Where the PostgreSQL server comes from
//!
//! [`postgres_server_url`] finds a server once per process, taking the first of these
//! that works:
//!
//! 1. the URL in the environment variable `SWITCHBOARD_TEST_PG_URL` (see [`PG_URL_ENV`]);
//!    it must name a database to connect to, usually the maintenance database
//!    `postgres`, as a user allowed to create databases; if it cannot be connected to,
//!    the call panics rather than falling back;
//! 2. `postgres://postgres@127.0.0.1:5432/postgres` (see [`DEFAULT_PG_URL`]);
//! 3. a throwaway cluster made with `initdb` and started with `pg_ctl`, both found on
//!    `PATH` or under `/usr/lib/postgresql/*/bin/` (through `runuser -u postgres` when
//!    running as root). Its data directory is `switchboard-testkit-pg-<port>` in the
//!    system temporary directory, and the server is left running when the tests end:
//!    later test processes reuse it, and the operating system cleans the directory.
//!
//! When none of them works, it panics with a message saying how to provide a server:
//! tests that need PostgreSQL fail, they are never skipped.

mod database;
mod postgres;

use std::fmt;
use std::path::{Path, PathBuf};

pub use database::{PG_DATABASE_PREFIX, SQLITE_FILE_NAME, TestDatabase};
pub use postgres::{DEFAULT_PG_URL, OwnedCluster, PG_URL_ENV, postgres_server_url};

/// Which database engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// SQLite, in a file of its own (built into the test binary; no server needed).
    Sqlite,
    /// PostgreSQL, as a database of its own on the server of [`postgres_server_url`].
    Postgres,
}

impl Backend {
    /// Both backends, for tests that run the same body on each:
    /// `for backend in Backend::ALL { ... }`.
    pub const ALL: [Backend; 2] = [Backend::Sqlite, Backend::Postgres];

    /// The backend's lowercase name, `"sqlite"` or `"postgres"`: the scheme of its URLs,
    /// and a label for test output.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The stand-in agent server for tests: a Python 3 stdlib-only script
/// (`fixtures/standin_agent_server.py`) started like the real agent server
/// (`--host 127.0.0.1 --port N`, `OH_SESSION_API_KEYS_0`, `OH_WEBHOOKS_0_BASE_URL`) that
/// answers `/alive`, `/health`, `/ready` and `/server_info`, and crashes, hangs, ignores
/// SIGTERM, exits later or forks children when told to by `STANDIN_MODE` / `STANDIN_FORK`
/// (the script's docstring lists them). Run it with `python3 <path>`.
pub fn standin_agent_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/standin_agent_server.py")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names() {
        assert_eq!(Backend::ALL.map(Backend::name), ["sqlite", "postgres"]);
        assert_eq!(Backend::Postgres.to_string(), "postgres");
    }
}
