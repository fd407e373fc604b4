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

use std::fmt;
use std::fs::{self, File};
use std::io;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection};
use tempfile::TempDir;

/// The environment variable that names the PostgreSQL server for tests: a connection URL
/// such as `postgres://user:password@host:5432/postgres`, whose database is the
/// maintenance database the test databases are created from and dropped through.
pub const PG_URL_ENV: &str = "SWITCHBOARD_TEST_PG_URL";

/// The PostgreSQL server tried when [`PG_URL_ENV`] is not set: user `postgres` with
/// trust authentication on `127.0.0.1`, port 5432, maintenance database `postgres`.
pub const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The prefix of every database name made by [`TestDatabase::postgres`]; the rest of the
/// name is 32 lowercase hexadecimal digits.
pub const PG_DATABASE_PREFIX: &str = "sb_test_";

/// The name of the SQLite database file in the temporary directory of a
/// [`TestDatabase::sqlite`].
pub const SQLITE_FILE_NAME: &str = "db.sqlite";

/// The prefix of the data directory of a throwaway cluster, in the system temporary
/// directory; the port number follows it.
const CLUSTER_DIR_PREFIX: &str = "switchboard-testkit-pg-";

/// How long a connection attempt to a server that might not be there may take, in seconds.
const PROBE_CONNECT_TIMEOUT_SECS: u32 = 5;

/// How long `CREATE DATABASE` is retried while its template is busy.
const CREATE_RETRY_FOR: Duration = Duration::from_secs(10);

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

/// A fresh, empty database for one test; removed when dropped.
///
/// Each value owns its own database, so tests holding different values never see each
/// other's data and can run in parallel. Keep it alive for as long as the test uses
/// [`url`](TestDatabase::url): dropping it removes the database, ending open PostgreSQL
/// connections to it.
#[derive(Debug)]
pub struct TestDatabase {
    url: String,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// Removing the directory removes the database file with it.
    Sqlite { _dir: TempDir },
    /// The database `name` on the server at `server_url`.
    Postgres { server_url: String, name: String },
}

impl TestDatabase {
    /// A fresh, empty database on `backend`: [`TestDatabase::sqlite`] or
    /// [`TestDatabase::postgres`].
    ///
    /// # Panics
    ///
    /// As those functions do.
    #[track_caller]
    pub fn new(backend: Backend) -> TestDatabase {
        match backend {
            Backend::Sqlite => TestDatabase::sqlite(),
            Backend::Postgres => TestDatabase::postgres(),
        }
    }

    /// A fresh SQLite database: the file `db.sqlite` (see [`SQLITE_FILE_NAME`]) in a new
    /// temporary directory, with URL `sqlite://<absolute path>`.
    ///
    /// The file itself does not exist yet: SQLite creates it on the first connection. The
    /// directory and everything in it are removed on drop.
    ///
    /// # Panics
    ///
    /// If the temporary directory cannot be created or its path is not valid UTF-8.
    #[track_caller]
    pub fn sqlite() -> TestDatabase {
        let dir = tempfile::Builder::new()
            .prefix("switchboard-testkit-sqlite-")
            .tempdir()
            .unwrap_or_else(|e| {
                panic!("switchboard-testkit: cannot create a temporary directory for SQLite: {e}")
            });
        let path = dir.path().join(SQLITE_FILE_NAME);
        let path = std::path::absolute(&path).unwrap_or(path);
        let Some(path) = path.to_str() else {
            panic!(
                "switchboard-testkit: the SQLite path {} is not valid UTF-8",
                path.display()
            );
        };
        TestDatabase {
            url: format!("sqlite://{path}"),
            kind: Kind::Sqlite { _dir: dir },
        }
    }

    /// A fresh PostgreSQL database: `CREATE DATABASE sb_test_<32 random hex digits>` on
    /// the server of [`postgres_server_url`], with the URL of the server and that database
    /// name, e.g. `postgres://postgres@127.0.0.1:5432/sb_test_…`.
    ///
    /// On drop it is removed with `DROP DATABASE … WITH (FORCE)`, which ends connections
    /// still open to it; errors while dropping are ignored.
    ///
    /// # Panics
    ///
    /// If no PostgreSQL server can be had (see [`postgres_server_url`]), or the database
    /// cannot be created (the user may not create databases, or the server is gone).
    #[track_caller]
    pub fn postgres() -> TestDatabase {
        let server_url = postgres_server_url();
        let name = format!("{PG_DATABASE_PREFIX}{}", uuid::Uuid::new_v4().simple());
        if let Err(e) = create_database(server_url, &name) {
            panic!(
                "switchboard-testkit: cannot create the test database {name} on {}: {e}",
                redact(server_url)
            );
        }
        TestDatabase {
            url: with_database(server_url, &name),
            kind: Kind::Postgres {
                server_url: server_url.to_owned(),
                name,
            },
        }
    }

    /// The connection URL of this database: `sqlite://<absolute path>` or
    /// `postgres://…/sb_test_…`, for diesel's `SqliteConnection::establish` or
    /// `PgConnection::establish`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The engine this database runs on.
    pub fn backend(&self) -> Backend {
        match self.kind {
            Kind::Sqlite { .. } => Backend::Sqlite,
            Kind::Postgres { .. } => Backend::Postgres,
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Kind::Postgres { server_url, name } = &self.kind
            && let Ok(mut conn) = PgConnection::establish(server_url)
        {
            // Errors are ignored: a database left behind only costs disk space.
            let _ = conn.batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"));
        }
    }
}

/// Creates the database `name` through a connection to the maintenance database at
/// `server_url`, retrying for a while when the template database is busy (another
/// session is connected to it, which PostgreSQL refuses to copy from).
fn create_database(server_url: &str, name: &str) -> Result<(), String> {
    let mut conn = PgConnection::establish(server_url).map_err(|e| e.to_string())?;
    let started = Instant::now();
    loop {
        match conn.batch_execute(&format!("CREATE DATABASE \"{name}\"")) {
            Ok(()) => return Ok(()),
            Err(e) => {
                let message = e.to_string();
                if message.contains("is being accessed by other users")
                    && started.elapsed() < CREATE_RETRY_FOR
                {
                    thread::sleep(Duration::from_millis(50));
                    continue;
                }
                return Err(message);
            }
        }
    }
}

/// The PostgreSQL server URL used for tests (its maintenance database), found once per
/// process and the same for every later call.
///
/// The first that works of: the environment variable `SWITCHBOARD_TEST_PG_URL`
/// ([`PG_URL_ENV`]); `postgres://postgres@127.0.0.1:5432/postgres` ([`DEFAULT_PG_URL`]);
/// a throwaway cluster started with `initdb` and `pg_ctl` (see the crate documentation).
/// Finding it may take a few seconds when a cluster has to be started.
///
/// # Panics
///
/// If `SWITCHBOARD_TEST_PG_URL` is set but cannot be connected to, or if it is unset and
/// no server can be found or started. The message says how to provide one. Every call
/// panics again with the same message, so each test needing PostgreSQL fails.
#[track_caller]
pub fn postgres_server_url() -> &'static str {
    static SERVER: OnceLock<Result<String, String>> = OnceLock::new();
    match SERVER.get_or_init(find_server) {
        Ok(url) => url,
        Err(message) => panic!("{message}"),
    }
}

/// Finds a server as [`postgres_server_url`] documents, or says why none could be had.
fn find_server() -> Result<String, String> {
    if let Some(url) = std::env::var_os(PG_URL_ENV) {
        let Some(url) = url.to_str() else {
            return Err(format!(
                "switchboard-testkit: {PG_URL_ENV} is not valid UTF-8"
            ));
        };
        return match PgConnection::establish(url) {
            Ok(_) => Ok(url.to_owned()),
            Err(e) => Err(format!(
                "switchboard-testkit: cannot connect to the PostgreSQL server in {PG_URL_ENV} ({}): {}",
                redact(url),
                e.to_string().trim_end()
            )),
        };
    }
    let default_error = match probe(DEFAULT_PG_URL) {
        Ok(()) => return Ok(DEFAULT_PG_URL.to_owned()),
        Err(e) => e,
    };
    match throwaway_server() {
        Ok(url) => Ok(url),
        Err(cluster_error) => Err(format!(
            "switchboard-testkit: no PostgreSQL server for tests.\n\
             - {PG_URL_ENV} is not set;\n\
             - {DEFAULT_PG_URL} could not be connected to: {};\n\
             - a throwaway cluster could not be started: {cluster_error}.\n\
             Set {PG_URL_ENV} to the URL of a server's maintenance database as a user that may \
             create databases (e.g. postgres://postgres:secret@127.0.0.1:5432/postgres), run \
             PostgreSQL on 127.0.0.1:5432 with trust authentication for user postgres, or \
             install PostgreSQL's server programs (initdb, pg_ctl).",
            default_error.trim_end()
        )),
    }
}

/// Connects to `url` once, giving up after [`PROBE_CONNECT_TIMEOUT_SECS`].
fn probe(url: &str) -> Result<(), String> {
    let separator = if url.contains('?') { '&' } else { '?' };
    let url = format!("{url}{separator}connect_timeout={PROBE_CONNECT_TIMEOUT_SECS}");
    PgConnection::establish(&url)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// `url` with its database (the URL's path) replaced by `database`; the query is kept.
fn with_database(url: &str, database: &str) -> String {
    let authority_start = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[authority_start..];
    let authority_end = authority_start + rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let after_path = url[authority_end..]
        .find(['?', '#'])
        .map_or(url.len(), |i| authority_end + i);
    format!("{}/{database}{}", &url[..authority_end], &url[after_path..])
}

/// `url` with the password of its user information, if any, replaced by `***`.
fn redact(url: &str) -> String {
    let authority_start = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[authority_start..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    if let Some(at) = authority.rfind('@')
        && let Some(colon) = authority[..at].find(':')
    {
        let password_start = authority_start + colon + 1;
        let password_end = authority_start + at;
        return format!("{}***{}", &url[..password_start], &url[password_end..]);
    }
    url.to_owned()
}

/// A throwaway cluster: one left running by an earlier test process, or a new one.
///
/// A lock file in the system temporary directory keeps concurrent test processes (as
/// cargo-nextest runs them) from starting one cluster each.
fn throwaway_server() -> Result<String, String> {
    let lock_path = std::env::temp_dir().join(format!("{CLUSTER_DIR_PREFIX}lock"));
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("cannot open the lock file {}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
    if let Some(url) = running_cluster(&std::env::temp_dir(), CLUSTER_DIR_PREFIX) {
        return Ok(url);
    }
    start_cluster(CLUSTER_DIR_PREFIX).map(|cluster| cluster.url)
}

/// The URL of a running throwaway cluster whose data directory is `<prefix><port>` in
/// `parent`, if one answers.
fn running_cluster(parent: &Path, prefix: &str) -> Option<String> {
    let entries = fs::read_dir(parent).ok()?;
    entries.flatten().find_map(|entry| {
        let name = entry.file_name();
        let port: u16 = name.to_str()?.strip_prefix(prefix)?.parse().ok()?;
        if !entry.path().join("postmaster.pid").exists() {
            return None;
        }
        let url = cluster_url(port);
        probe(&url).ok().map(|()| url)
    })
}

/// The maintenance URL of a throwaway cluster on `port`.
fn cluster_url(port: u16) -> String {
    format!("postgres://postgres@127.0.0.1:{port}/postgres")
}

/// A throwaway cluster started by [`start_cluster`].
#[derive(Debug)]
struct Cluster {
    /// Its maintenance URL.
    url: String,
    /// Its data directory, which also holds its Unix socket and its log `server.log`.
    dir: PathBuf,
    /// The `pg_ctl` that started it.
    pg_ctl: PathBuf,
    /// Whether its programs run as user `postgres` through `runuser`.
    as_postgres: bool,
}

impl Cluster {
    /// Stops the server at once and removes its data directory. Only the self-test stops
    /// a cluster: the ones tests use are left running for later test processes.
    #[cfg_attr(not(test), expect(dead_code))]
    fn stop(self) -> Result<(), String> {
        let mut stop = pg_command(&self.pg_ctl, self.as_postgres);
        stop.arg("-D")
            .arg(&self.dir)
            .args(["-m", "immediate", "-w", "stop"]);
        run(stop, "pg_ctl stop")?;
        fs::remove_dir_all(&self.dir)
            .map_err(|e| format!("cannot remove {}: {e}", self.dir.display()))
    }
}

/// Starts a new cluster with `initdb` and `pg_ctl` on a free port of 127.0.0.1, with
/// its data directory `<prefix><port>` in the system temporary directory, trust
/// authentication for user `postgres`, and `fsync` off.
fn start_cluster(prefix: &str) -> Result<Cluster, String> {
    let bin = find_postgres_bin()
        .ok_or("initdb and pg_ctl were found neither on PATH nor in /usr/lib/postgresql/*/bin")?;
    let (initdb, pg_ctl) = (bin.join("initdb"), bin.join("pg_ctl"));
    let port = free_port()?;
    let temp = std::env::temp_dir();
    let dir = temp.join(format!("{prefix}{port}"));
    match fs::remove_dir_all(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot remove the stale {}: {e}", dir.display())),
    }
    fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))
        .map_err(|e| format!("cannot restrict {}: {e}", dir.display()))?;

    // initdb refuses to run as root: run the server's programs as user postgres instead.
    let as_postgres = effective_uid_is_root();
    if as_postgres {
        let mut chown = Command::new("chown");
        chown.arg("postgres:").arg(&dir);
        run(chown, "chown postgres:")?;
    }

    let mut init = pg_command(&initdb, as_postgres);
    init.arg("-D").arg(&dir).args([
        "-U",
        "postgres",
        "--auth=trust",
        "-E",
        "UTF8",
        "--locale=C",
        "--no-sync",
    ]);
    run(init, "initdb")?;

    let options = format!(
        "-c listen_addresses=127.0.0.1 -p {port} -k {} -c fsync=off",
        dir.display()
    );
    let mut start = pg_command(&pg_ctl, as_postgres);
    start
        .arg("-D")
        .arg(&dir)
        .arg("-o")
        .arg(options)
        .arg("-l")
        .arg(dir.join("server.log"))
        .args(["-w", "start"]);
    if let Err(e) = run(start, "pg_ctl start") {
        let log = fs::read_to_string(dir.join("server.log")).unwrap_or_default();
        return Err(format!("{e}; server log:\n{log}"));
    }

    let url = cluster_url(port);
    probe(&url).map_err(|e| format!("the cluster in {} does not answer: {e}", dir.display()))?;
    Ok(Cluster {
        url,
        dir,
        pg_ctl,
        as_postgres,
    })
}

/// A command running `program` directly, or as user `postgres` through `runuser`, from
/// the system temporary directory (user `postgres` may not be able to enter the current
/// one).
fn pg_command(program: &Path, as_postgres: bool) -> Command {
    let mut command = if as_postgres {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    };
    command
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null());
    command
}

/// Runs `command` to completion, turning a failure into a message naming it as `what`.
fn run(mut command: Command, what: &str) -> Result<(), String> {
    match command.output() {
        Ok(Output { status, .. }) if status.success() => Ok(()),
        Ok(Output {
            status,
            stdout,
            stderr,
        }) => Err(format!(
            "{what} failed ({status}): {}{}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr).trim_end()
        )),
        Err(e) => Err(format!("cannot run {what}: {e}")),
    }
}

/// A directory holding both `initdb` and `pg_ctl`: the first on `PATH`, else the newest
/// of `/usr/lib/postgresql/<version>/bin`.
fn find_postgres_bin() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect())
        .unwrap_or_default();
    let mut versioned: Vec<(Vec<u32>, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry
                .file_name()
                .to_str()?
                .split('.')
                .map(str::parse)
                .collect::<Result<Vec<u32>, _>>()
                .ok()?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    versioned.sort_by(|a, b| b.0.cmp(&a.0));
    candidates.extend(versioned.into_iter().map(|(_, dir)| dir));
    candidates
        .into_iter()
        .find(|dir| is_executable(&dir.join("initdb")) && is_executable(&dir.join("pg_ctl")))
}

/// Whether `path` is a file with an execute bit set.
fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A TCP port of 127.0.0.1 that nothing listened on a moment ago.
fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| format!("cannot find a free port: {e}"))
}

/// Whether this process runs with effective user id 0, read from `/proc/self/status`
/// (its `Uid:` line lists real, effective, saved and filesystem ids), else from `id -u`.
fn effective_uid_is_root() -> bool {
    let from_proc = fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1))
                .map(|euid| euid == "0")
        });
    from_proc.unwrap_or_else(|| {
        Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
    })
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
    fn database_replaces_the_path_and_keeps_the_query() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/postgres", "sb_test_x"),
            "postgres://postgres@127.0.0.1:5432/sb_test_x"
        );
        assert_eq!(
            with_database("postgres://u:p@h:1/db?sslmode=disable", "x"),
            "postgres://u:p@h:1/x?sslmode=disable"
        );
        assert_eq!(with_database("postgresql://h", "x"), "postgresql://h/x");
        assert_eq!(with_database("postgres://h?a=b", "x"), "postgres://h/x?a=b");
    }

    #[test]
    fn redact_hides_only_the_password() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact("postgres://u@h:5432/db"), "postgres://u@h:5432/db");
        assert_eq!(redact("postgres://h:5432/db"), "postgres://h:5432/db");
    }

    #[test]
    fn backend_names() {
        assert_eq!(Backend::ALL.map(Backend::name), ["sqlite", "postgres"]);
        assert_eq!(Backend::Postgres.to_string(), "postgres");
    }

    /// Exercises step 3 of the search on its own: a new cluster starts, answers, is found
    /// again by the scan for running clusters, and stops.
    #[test]
    fn throwaway_cluster_starts_and_answers() {
        let prefix = "switchboard-testkit-selftest-pg-";
        let cluster = start_cluster(prefix).unwrap_or_else(|e| panic!("{e}"));
        let found = running_cluster(&std::env::temp_dir(), prefix);
        let mut conn = PgConnection::establish(&cluster.url).unwrap();
        conn.batch_execute("SELECT 1").unwrap();
        drop(conn);
        cluster.stop().unwrap();
        // Another selftest cluster left running by a crashed run may be found first.
        assert!(found.is_some(), "the running cluster was not found");
    }
}
