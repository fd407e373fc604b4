//! [`TestDatabase`]: a fresh SQLite file or PostgreSQL database per test, removed on drop.

use std::thread;
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use tempfile::TempDir;

use crate::Backend;
use crate::postgres::{postgres_server_url, redact};

/// The prefix of every database name made by [`TestDatabase::postgres`]; the rest of the
/// name is 32 lowercase hexadecimal digits.
pub const PG_DATABASE_PREFIX: &str = "sb_test_";

/// The name of the SQLite database file in the temporary directory of a
/// [`TestDatabase::sqlite`].
pub const SQLITE_FILE_NAME: &str = "db.sqlite";

/// How long `CREATE DATABASE` is retried while its template is busy.
const CREATE_RETRY_FOR: Duration = Duration::from_secs(10);

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
            && let Ok(mut conn) = crate::postgres::establish(server_url)
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
    let mut conn = crate::postgres::establish(server_url).map_err(|e| e.to_string())?;
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
}
