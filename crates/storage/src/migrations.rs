//! Migrations (`migrations/sqlite`, `migrations/postgres`, embedded at build time): applied,
//! reverted, and the database's schema against this binary's (docs/operations.md, "Upgrades"):
//! which are applied, which are pending, and which the database has that this binary does not
//! know (a newer binary applied them). A binary older than its database's schema refuses to
//! open it ([`refuse_unknown`], called before migrations run), naming both versions: it would
//! otherwise read and write tables whose shape it does not know.

use diesel::backend::Backend;
use diesel::migration::{MigrationSource, MigrationVersion};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

use crate::connection::{BackendKind, DbConnection, DbError};

/// SQLite migrations, embedded at build time.
pub const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");
/// PostgreSQL migrations, embedded at build time.
pub const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");

fn migration_err(e: Box<dyn std::error::Error + Send + Sync>) -> DbError {
    DbError::Migration(e.to_string())
}

/// Applies pending migrations; returns the versions applied. A database with migrations this
/// binary does not know is refused first.
///
/// # Errors
/// [`DbError::SchemaNewer`], [`DbError::Migration`].
pub fn run_migrations(conn: &mut DbConnection) -> Result<Vec<String>, DbError> {
    refuse_unknown(conn)?;
    let applied = match conn {
        DbConnection::Postgres(c) => c
            .run_pending_migrations(POSTGRES_MIGRATIONS)
            .map_err(migration_err)?,
        DbConnection::Sqlite(c) => c
            .run_pending_migrations(SQLITE_MIGRATIONS)
            .map_err(migration_err)?,
    };
    Ok(applied.into_iter().map(|v| v.to_string()).collect())
}

/// Reverts every applied migration (tests and operators only).
///
/// # Errors
/// [`DbError::Migration`].
pub fn revert_all_migrations(conn: &mut DbConnection) -> Result<Vec<String>, DbError> {
    let reverted = match conn {
        DbConnection::Postgres(c) => c
            .revert_all_migrations(POSTGRES_MIGRATIONS)
            .map_err(migration_err)?,
        DbConnection::Sqlite(c) => c
            .revert_all_migrations(SQLITE_MIGRATIONS)
            .map_err(migration_err)?,
    };
    Ok(reverted.into_iter().map(|v| v.to_string()).collect())
}

/// Whether migrations are pending.
///
/// # Errors
/// [`DbError::Migration`].
pub fn has_pending_migrations(conn: &mut DbConnection) -> Result<bool, DbError> {
    match conn {
        DbConnection::Postgres(c) => c
            .has_pending_migration(POSTGRES_MIGRATIONS)
            .map_err(migration_err),
        DbConnection::Sqlite(c) => c
            .has_pending_migration(SQLITE_MIGRATIONS)
            .map_err(migration_err),
    }
}

/// The migrations of a database and of this binary, by version (`2026-12-06-000009`, the
/// folder name's date and number, sorted ascending).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationStatus {
    /// The database's backend.
    pub backend: BackendKind,
    /// Applied to the database and known to this binary.
    pub applied: Vec<String>,
    /// Known to this binary, not applied yet (`migrate` or `serve` applies them).
    pub pending: Vec<String>,
    /// Applied to the database, unknown to this binary: a newer binary's. Non-empty means this
    /// binary must not open the database.
    pub unknown: Vec<String>,
}

impl MigrationStatus {
    /// The latest version applied to the database (known or not), if any.
    pub fn database_version(&self) -> Option<&str> {
        self.applied
            .iter()
            .chain(&self.unknown)
            .map(String::as_str)
            .max()
    }

    /// The latest version this binary knows.
    pub fn binary_version(&self) -> Option<&str> {
        self.applied
            .iter()
            .chain(&self.pending)
            .map(String::as_str)
            .max()
    }
}

fn versions<DB: Backend>(source: &EmbeddedMigrations) -> Result<Vec<String>, DbError>
where
    EmbeddedMigrations: MigrationSource<DB>,
{
    let known =
        MigrationSource::<DB>::migrations(source).map_err(|e| DbError::Migration(e.to_string()))?;
    Ok(known
        .iter()
        .map(|m| m.name().version().to_string())
        .collect())
}

/// The versions of this binary's migrations for `backend`, ascending.
///
/// # Errors
/// [`DbError::Migration`] when the embedded migrations cannot be listed.
pub fn known_versions(backend: BackendKind) -> Result<Vec<String>, DbError> {
    let mut known = match backend {
        BackendKind::Postgres => versions::<diesel::pg::Pg>(&POSTGRES_MIGRATIONS)?,
        BackendKind::Sqlite => versions::<diesel::sqlite::Sqlite>(&SQLITE_MIGRATIONS)?,
    };
    known.sort();
    Ok(known)
}

fn applied_versions<DB: Backend>(
    conn: &mut impl MigrationHarness<DB>,
) -> Result<Vec<String>, DbError> {
    let applied: Vec<MigrationVersion<'static>> = conn
        .applied_migrations()
        .map_err(|e| DbError::Migration(e.to_string()))?;
    Ok(applied.iter().map(ToString::to_string).collect())
}

/// The status of the database on `conn` (creating diesel's bookkeeping table on a database
/// that has none, as applying migrations would).
///
/// # Errors
/// [`DbError::Migration`] when the bookkeeping table cannot be read.
pub fn migration_status(conn: &mut DbConnection) -> Result<MigrationStatus, DbError> {
    let (backend, known, applied) = match conn {
        DbConnection::Postgres(c) => (
            BackendKind::Postgres,
            versions::<diesel::pg::Pg>(&POSTGRES_MIGRATIONS)?,
            applied_versions(c)?,
        ),
        DbConnection::Sqlite(c) => (
            BackendKind::Sqlite,
            versions::<diesel::sqlite::Sqlite>(&SQLITE_MIGRATIONS)?,
            applied_versions(c)?,
        ),
    };
    let mut status = MigrationStatus {
        backend,
        applied: applied
            .iter()
            .filter(|v| known.contains(v))
            .cloned()
            .collect(),
        pending: known
            .iter()
            .filter(|v| !applied.contains(v))
            .cloned()
            .collect(),
        unknown: applied
            .iter()
            .filter(|v| !known.contains(v))
            .cloned()
            .collect(),
    };
    status.applied.sort();
    status.pending.sort();
    status.unknown.sort();
    Ok(status)
}

/// Refuses a database whose schema is newer than this binary ([`DbError::SchemaNewer`]).
///
/// # Errors
/// [`DbError::SchemaNewer`], or reading the bookkeeping table failed.
pub fn refuse_unknown(conn: &mut DbConnection) -> Result<(), DbError> {
    let status = migration_status(conn)?;
    if status.unknown.is_empty() {
        return Ok(());
    }
    Err(DbError::SchemaNewer {
        database: status.database_version().unwrap_or_default().to_owned(),
        binary: status.binary_version().unwrap_or_default().to_owned(),
        binary_release: env!("CARGO_PKG_VERSION").to_owned(),
    })
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// How many tables the database on `conn` holds (PostgreSQL: its `public` schema; SQLite: its
/// main schema, SQLite's own tables aside): `switchboard restore` goes only into an empty one.
///
/// # Errors
/// [`DbError::Query`].
pub fn table_count(conn: &mut DbConnection) -> Result<i64, DbError> {
    use diesel::RunQueryDsl;
    let query = match conn {
        DbConnection::Postgres(_) => {
            "SELECT count(*) AS n FROM pg_tables WHERE schemaname = 'public'"
        }
        DbConnection::Sqlite(_) => {
            "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        }
    };
    let found: Count = diesel::sql_query(query).get_result(conn)?;
    Ok(found.n)
}
