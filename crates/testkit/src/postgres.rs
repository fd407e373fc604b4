//! The PostgreSQL server of the tests (crate documentation, "Where the PostgreSQL server comes
//! from"): the one named by the environment, the default local one, or a throwaway cluster
//! started with `initdb` and `pg_ctl`.

use std::fs::{self, File};
use std::io;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use diesel::{Connection, PgConnection};

/// The environment variable that names the PostgreSQL server for tests: a connection URL
/// such as `postgres://user:password@host:5432/postgres`, whose database is the
/// maintenance database the test databases are created from and dropped through.
pub const PG_URL_ENV: &str = "SWITCHBOARD_TEST_PG_URL";

/// The PostgreSQL server tried when [`PG_URL_ENV`] is not set: user `postgres` with
/// trust authentication on `127.0.0.1`, port 5432, maintenance database `postgres`.
pub const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The prefix of the data directory of a throwaway cluster, in the system temporary
/// directory; the port number follows it.
const CLUSTER_DIR_PREFIX: &str = "switchboard-testkit-pg-";

/// How long a connection attempt to a server that might not be there may take, in seconds.
const PROBE_CONNECT_TIMEOUT_SECS: u32 = 5;

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
        return match establish(url) {
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
    establish(&url).map(drop).map_err(|e| e.to_string())
}

/// Opens one connection to `url`, OpenSSL initialized first without its exit-time cleanup: a
/// test binary that exits while a pool's worker thread is inside libpq's TLS code would
/// otherwise crash with SIGSEGV (`switchboard_storage::connection::establish_postgres` says
/// why). Every connection of this crate is opened here, and tests open theirs through this
/// crate first.
pub(crate) fn establish(url: &str) -> diesel::ConnectionResult<PgConnection> {
    openssl_sys::init();
    PgConnection::establish(url)
}

/// `url` with the password of its user information, if any, replaced by `***`.
pub(crate) fn redact(url: &str) -> String {
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
    start_cluster(CLUSTER_DIR_PREFIX, &Listen::loopback()).map(|cluster| cluster.url)
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
        let url = cluster_url(LOOPBACK, port);
        probe(&url).ok().map(|()| url)
    })
}

/// The address throwaway clusters listen on unless told otherwise.
const LOOPBACK: &str = "127.0.0.1";

/// The maintenance URL of a throwaway cluster on `address` and `port`.
fn cluster_url(address: &str, port: u16) -> String {
    format!("postgres://postgres@{address}:{port}/postgres")
}

/// Where a throwaway cluster listens, and the network it trusts beyond its own address.
#[derive(Debug, Clone)]
struct Listen {
    /// The IPv4 address it listens on (and trusts, as `<address>/32`).
    address: String,
    /// Another IPv4 network (`10.88.0.0/15`) whose clients it trusts as any user.
    trusted: Option<String>,
}

impl Listen {
    fn loopback() -> Listen {
        Listen {
            address: LOOPBACK.to_owned(),
            trusted: None,
        }
    }
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
    /// Where it listens.
    listen: Listen,
}

impl Cluster {
    /// Stops the server at once and removes its data directory. The shared clusters tests
    /// use are left running for later test processes; [`OwnedCluster`]s are stopped.
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

/// A PostgreSQL cluster of one test's own (`initdb` and `pg_ctl` on a free port of 127.0.0.1,
/// run as user `postgres` through `runuser` when the test runs as root), for tests that stop
/// and restart the server under load; never the shared server of the other tests. Stopped and
/// removed on drop.
#[derive(Debug)]
pub struct OwnedCluster {
    cluster: Option<Cluster>,
    port: u16,
}

impl OwnedCluster {
    /// Creates and starts the cluster.
    ///
    /// # Errors
    /// No `initdb`/`pg_ctl`, or they failed (the message says which, with the server log).
    pub fn start() -> Result<OwnedCluster, String> {
        Self::start_with(&Listen::loopback())
    }

    /// Creates and starts the cluster listening on the IPv4 `address` instead of 127.0.0.1,
    /// trusting (no password, any user) clients from `address` and from the network
    /// `trusted` (CIDR, e.g. `10.88.0.0/15`): for a server that pods of a test cluster reach.
    ///
    /// # Errors
    /// As [`OwnedCluster::start`], and an address nothing may listen on.
    pub fn start_on(address: &str, trusted: &str) -> Result<OwnedCluster, String> {
        Self::start_with(&Listen {
            address: address.to_owned(),
            trusted: Some(trusted.to_owned()),
        })
    }

    fn start_with(listen: &Listen) -> Result<OwnedCluster, String> {
        let cluster = start_cluster("switchboard-owned-pg-", listen)?;
        let port = cluster
            .url
            .rsplit_once(':')
            .and_then(|(_, rest)| rest.split('/').next()?.parse().ok())
            .ok_or("no port in the cluster's URL")?;
        Ok(OwnedCluster {
            cluster: Some(cluster),
            port,
        })
    }

    /// Its maintenance database's URL (`postgres://postgres@ADDRESS:PORT/postgres`).
    pub fn url(&self) -> &str {
        &self.cluster().url
    }

    fn cluster(&self) -> &Cluster {
        self.cluster.as_ref().expect("cluster present until drop")
    }

    /// Stops the server at once (`pg_ctl stop -m immediate`: like a crash, recovery runs at
    /// the next start); the data directory stays.
    ///
    /// # Errors
    /// `pg_ctl` failed.
    pub fn kill(&self) -> Result<(), String> {
        let c = self.cluster();
        let mut stop = pg_command(&c.pg_ctl, c.as_postgres);
        stop.arg("-D")
            .arg(&c.dir)
            .args(["-m", "immediate", "-w", "stop"]);
        run(stop, "pg_ctl stop")
    }

    /// Starts the server again on the same port and data directory, waiting until it accepts
    /// connections.
    ///
    /// # Errors
    /// `pg_ctl` failed (the message has the server log).
    pub fn restart(&self) -> Result<(), String> {
        let c = self.cluster();
        let mut start = pg_command(&c.pg_ctl, c.as_postgres);
        start
            .arg("-D")
            .arg(&c.dir)
            .arg("-o")
            .arg(server_options(&c.listen.address, self.port, &c.dir))
            .arg("-l")
            .arg(c.dir.join("server.log"))
            .args(["-w", "start"]);
        run(start, "pg_ctl start").map_err(|e| {
            let log = fs::read_to_string(c.dir.join("server.log")).unwrap_or_default();
            format!("{e}; server log:\n{log}")
        })
    }
}

impl Drop for OwnedCluster {
    fn drop(&mut self) {
        if let Some(c) = self.cluster.take() {
            let dir = c.dir.clone();
            if c.stop().is_err() {
                let _ = fs::remove_dir_all(dir);
            }
        }
    }
}

/// The server options of a throwaway cluster on `address` and `port` with its socket in `dir`.
fn server_options(address: &str, port: u16, dir: &Path) -> String {
    format!(
        "-c listen_addresses={address} -p {port} -k {} -c fsync=off",
        dir.display()
    )
}

/// Starts a new cluster with `initdb` and `pg_ctl` on a free port of `listen`'s address, with
/// its data directory `<prefix><port>` in the system temporary directory, trust
/// authentication for user `postgres` (and any user from `listen`'s networks), and `fsync` off.
fn start_cluster(prefix: &str, listen: &Listen) -> Result<Cluster, String> {
    let bin = find_postgres_bin()
        .ok_or("initdb and pg_ctl were found neither on PATH nor in /usr/lib/postgresql/*/bin")?;
    let (initdb, pg_ctl) = (bin.join("initdb"), bin.join("pg_ctl"));
    let port = free_port(&listen.address)?;
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
    trust_networks(&dir, listen)?;

    let options = server_options(&listen.address, port, &dir);
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

    let url = cluster_url(&listen.address, port);
    probe(&url).map_err(|e| format!("the cluster in {} does not answer: {e}", dir.display()))?;
    Ok(Cluster {
        url,
        dir,
        pg_ctl,
        as_postgres,
        listen: listen.clone(),
    })
}

/// Adds `listen`'s address and trusted network to the cluster's `pg_hba.conf` (initdb's
/// trusts only loopback and the socket).
fn trust_networks(dir: &Path, listen: &Listen) -> Result<(), String> {
    if listen.address == LOOPBACK && listen.trusted.is_none() {
        return Ok(());
    }
    let mut lines = format!("host all all {}/32 trust\n", listen.address);
    if let Some(network) = &listen.trusted {
        lines.push_str(&format!("host all all {network} trust\n"));
    }
    let hba = dir.join("pg_hba.conf");
    fs::OpenOptions::new()
        .append(true)
        .open(&hba)
        .and_then(|mut f| io::Write::write_all(&mut f, lines.as_bytes()))
        .map_err(|e| format!("cannot extend {}: {e}", hba.display()))
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

/// A TCP port of `address` that nothing listened on a moment ago.
fn free_port(address: &str) -> Result<u16, String> {
    TcpListener::bind((address, 0))
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

#[cfg(test)]
mod tests {
    use diesel::connection::SimpleConnection;

    use super::*;

    #[test]
    fn redact_hides_only_the_password() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact("postgres://u@h:5432/db"), "postgres://u@h:5432/db");
        assert_eq!(redact("postgres://h:5432/db"), "postgres://h:5432/db");
    }

    /// Exercises step 3 of the search on its own: a new cluster starts, answers, is found
    /// again by the scan for running clusters, and stops.
    #[test]
    fn throwaway_cluster_starts_and_answers() {
        let prefix = "switchboard-testkit-selftest-pg-";
        let cluster = start_cluster(prefix, &Listen::loopback()).unwrap_or_else(|e| panic!("{e}"));
        let found = running_cluster(&std::env::temp_dir(), prefix);
        let mut conn = establish(&cluster.url).unwrap();
        conn.batch_execute("SELECT 1").unwrap();
        drop(conn);
        cluster.stop().unwrap();
        // Another selftest cluster left running by a crashed run may be found first.
        assert!(found.is_some(), "the running cluster was not found");
    }
}
