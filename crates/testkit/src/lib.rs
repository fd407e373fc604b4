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
pub mod oidc;
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

/// The real OpenHands agent server's program, when this machine has it: the path in
/// `SWITCHBOARD_TEST_AGENT_SERVER`, else `${TMPDIR:-/tmp}/agent-server-venv/bin/agent-server`
/// (the venv `scripts/e2e.sh` installs where Python 3.12+ is present; CI runs it before the
/// tests). `None`: tests use [`standin_agent_server`] and say so.
pub fn real_agent_server() -> Option<PathBuf> {
    let path = std::env::var_os("SWITCHBOARD_TEST_AGENT_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir()
                .join("agent-server-venv")
                .join("bin")
                .join("agent-server")
        });
    path.is_file().then_some(path)
}

/// A Python with the OpenHands SDK's client workspace (`openhands-workspace` 1.58.2, whose
/// `OpenHandsCloudWorkspace` drives Switchboard as OpenHands Cloud), when this machine has
/// one: `SWITCHBOARD_TEST_SDK_PYTHON`, else `${TMPDIR:-/tmp}/openhands-workspace-venv/bin/python`
/// (the venv `scripts/e2e.sh` installs beside the agent server's). `None`: the tests that need
/// it say so and skip.
pub fn sdk_workspace_python() -> Option<PathBuf> {
    let path = std::env::var_os("SWITCHBOARD_TEST_SDK_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir()
                .join("openhands-workspace-venv")
                .join("bin")
                .join("python")
        });
    path.is_file().then_some(path)
}

/// The OpenHands CLI's program (`openhands` 1.16.0 from PyPI, whose `openhands cloud -t TASK`
/// starts a conversation in OpenHands Cloud, here Switchboard), when this machine has it:
/// `SWITCHBOARD_TEST_OPENHANDS_CLI`, else `${TMPDIR:-/tmp}/openhands-cli-venv/bin/openhands`
/// (the venv `scripts/e2e.sh` installs beside the SDK's). `None`: the tests that need it say
/// so and skip.
pub fn openhands_cli() -> Option<PathBuf> {
    let path = std::env::var_os("SWITCHBOARD_TEST_OPENHANDS_CLI")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir()
                .join("openhands-cli-venv")
                .join("bin")
                .join("openhands")
        });
    path.is_file().then_some(path)
}

/// A Python with OpenHands' automation service (`openhands-automation` 1.26.0 from PyPI, run
/// as its README says: `uvicorn openhands.automation.app:app`), when this machine has one:
/// `SWITCHBOARD_TEST_AUTOMATION_PYTHON`, else
/// `${TMPDIR:-/tmp}/openhands-automation-venv/bin/python` (the venv `scripts/e2e.sh prepare`
/// installs). `None`: the tests that need it say so and skip.
pub fn automation_service_python() -> Option<PathBuf> {
    let path = std::env::var_os("SWITCHBOARD_TEST_AUTOMATION_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir()
                .join("openhands-automation-venv")
                .join("bin")
                .join("python")
        });
    path.is_file().then_some(path)
}

/// The environment the real agent server gets in tests (as in `scripts/e2e-sandbox.sh`): no
/// network fetch of LiteLLM's cost map, no banner, no VS Code, VNC or browser, tools loaded
/// on use, unbuffered output, webhooks sent at once.
pub const REAL_AGENT_SERVER_ENV: [(&str, &str); 9] = [
    ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
    ("OPENHANDS_SUPPRESS_BANNER", "1"),
    ("OH_ENABLE_VSCODE", "false"),
    ("OH_ENABLE_VNC", "false"),
    ("OH_PRELOAD_TOOLS", "false"),
    ("OH_ENABLE_BROWSER", "false"),
    ("PYTHONUNBUFFERED", "1"),
    ("OH_WEBHOOKS_0_EVENT_BUFFER_SIZE", "1"),
    ("OH_WEBHOOKS_0_FLUSH_DELAY", "0.5"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names() {
        assert_eq!(Backend::ALL.map(Backend::name), ["sqlite", "postgres"]);
        assert_eq!(Backend::Postgres.to_string(), "postgres");
    }
}
