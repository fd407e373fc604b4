//! A process that exits while other threads are connecting to PostgreSQL exits cleanly.
//!
//! libpq negotiates TLS through OpenSSL, whose own `atexit` cleanup frees its global state
//! under threads still inside libpq; the process then dies with SIGSEGV instead of its exit
//! status (seen at the end of a test binary whose pools were still filling). Every connection
//! of the store goes through `connection::establish_postgres`, which initializes OpenSSL
//! without that cleanup. This test runs itself as a child process that keeps four threads
//! opening, using and closing connections through the store's path and exits in the middle of
//! it, twenty times, and asserts that each child exited with status 0. The server must offer
//! TLS for the test to reach OpenSSL (Debian's PostgreSQL does; the run says so otherwise).

use std::process::Command;
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::{QueryableByName, RunQueryDsl, sql_query};
use switchboard_storage::connection::{DatabaseUrl, DbConnection};
use switchboard_testkit::{Backend, TestDatabase};

/// Set in the child: the database URL to connect to.
const CHILD_URL: &str = "SWITCHBOARD_EXIT_TEST_URL";
/// Children run.
const RUNS: usize = 20;
/// Connecting threads in each child.
const THREADS: usize = 4;

#[derive(QueryableByName)]
struct Ssl {
    #[diesel(sql_type = diesel::sql_types::Bool)]
    ssl: bool,
}

/// The child: threads connect in a loop; the main thread exits while they do.
fn child(url: &str) -> ! {
    let url = DatabaseUrl::parse(url).expect("database URL");
    for _ in 0..THREADS {
        let url = url.clone();
        std::thread::spawn(move || {
            loop {
                if let Ok(mut conn) = url.connect() {
                    let _ = conn.batch_execute("SELECT 1");
                }
            }
        });
    }
    std::thread::sleep(Duration::from_millis(150));
    std::process::exit(0)
}

#[test]
fn exit_while_connecting() {
    if let Ok(url) = std::env::var(CHILD_URL) {
        child(&url);
    }
    let db = TestDatabase::new(Backend::Postgres);
    let mut conn = DatabaseUrl::parse(db.url()).unwrap().connect().unwrap();
    let DbConnection::Postgres(pg) = &mut conn else {
        panic!("a PostgreSQL connection");
    };
    let tls = sql_query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        .get_result::<Ssl>(pg)
        .map(|r| r.ssl)
        .unwrap_or(false);
    if !tls {
        eprintln!("the server does not offer TLS: OpenSSL is not exercised by this run");
    }
    drop(conn);
    let exe = std::env::current_exe().unwrap();
    for run in 0..RUNS {
        let out = Command::new(&exe)
            .args(["--exact", "exit_while_connecting", "--nocapture"])
            .env(CHILD_URL, db.url())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "run {run}: the child exited with {:?} (TLS in use: {tls}); stderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
