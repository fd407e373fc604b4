//! `switchboard backup` and `switchboard migrate --status` (docs/operations.md).
//!
//! A backup is a directory (mode 0700) of three files: the database (`database.sqlite3`, an
//! online copy made with SQLite's `VACUUM INTO` while servers keep writing; or
//! `database.pgdump`, `pg_dump --format=custom`), the installation key (`secret.key`, mode
//! 0600, as the key file holds it) and `manifest.json` ([`Manifest`]). The key is checked
//! against the database's installation record first: a backup whose key does not open its
//! secrets would be useless. What the data directory holds besides is not included: the
//! replica id (a restored server is a new replica), process sandboxes' workspaces (live state
//! of running agents, under `sandboxes/`), logs. `switchboard restore` reads it
//! ([`crate::restore`]). Each operation returns the JSON object the command prints.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use switchboard_domain::Switchboard;
use switchboard_storage::migrations::migration_status;
use switchboard_storage::{BackendKind, DatabaseUrl};
use time::OffsetDateTime;

use crate::Database;

/// The backup format this binary writes and reads.
pub const FORMAT: u32 = 1;
/// The manifest's file name.
pub const MANIFEST: &str = "manifest.json";
/// The key's file name in a backup.
pub const KEY_FILE: &str = "secret.key";
/// The SQLite database's file name in a backup.
pub const SQLITE_FILE: &str = "database.sqlite3";
/// The PostgreSQL dump's file name in a backup.
pub const PG_DUMP_FILE: &str = "database.pgdump";

/// `manifest.json`: what the backup holds and of what.
#[derive(Debug, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: u32,
    /// The release that wrote it (`switchboard --version`).
    pub release: String,
    /// `sqlite` or `postgres`.
    pub backend: String,
    /// The database's schema version (its latest migration) at the backup.
    pub schema_version: String,
    /// The installation's id.
    pub installation_id: String,
    /// The fingerprint of the key in [`KEY_FILE`].
    pub key_fingerprint: String,
    /// When the backup was taken (RFC 3339, UTC).
    pub created_at: String,
    /// The database's file in the backup ([`SQLITE_FILE`] or [`PG_DUMP_FILE`]).
    pub database: String,
    /// The key's file in the backup ([`KEY_FILE`]).
    pub key_file: String,
}

/// The backend's name in a manifest.
pub fn backend_name(kind: BackendKind) -> &'static str {
    match kind {
        BackendKind::Sqlite => "sqlite",
        BackendKind::Postgres => "postgres",
    }
}

/// `migrate --status`: the database's and this binary's schema versions, the pending
/// migrations and the unknown ones, applying nothing.
///
/// # Errors
/// The database cannot be opened or its bookkeeping read.
pub fn migrate_status(db: &Database) -> Result<Value> {
    let url = DatabaseUrl::parse(&db.url()?)?;
    let mut conn = url.connect().context("opening the database")?;
    let status = migration_status(&mut conn)?;
    let state = if !status.unknown.is_empty() {
        "newer than this binary: it refuses to open the database"
    } else if !status.pending.is_empty() {
        "migrations pending: `switchboard migrate` (or `serve`) applies them"
    } else {
        "up to date"
    };
    Ok(json!({
        "backend": backend_name(status.backend),
        "release": env!("CARGO_PKG_VERSION"),
        "database_version": status.database_version(),
        "binary_version": status.binary_version(),
        "applied": status.applied.len(),
        "pending": status.pending,
        "unknown": status.unknown,
        "state": state,
    }))
}

/// A program given by flag, else on `PATH`, else the newest of PostgreSQL's versioned
/// directories (Debian's layout).
pub fn postgres_program(given: Option<&Path>, name: &str) -> Result<PathBuf> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    let on_path = std::env::var_os("PATH").into_iter().flat_map(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .collect::<Vec<_>>()
    });
    let mut versioned: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            Some((v, e.path().join("bin").join(name)))
        })
        .collect();
    versioned.sort();
    on_path
        .chain(versioned.into_iter().rev().map(|(_, p)| p))
        .find(|p| p.is_file())
        .with_context(|| {
            format!("{name} not found on PATH or under /usr/lib/postgresql: install PostgreSQL's client programs (Debian: postgresql-client), or name it with --{name}", name = name.replace('_', "-"))
        })
}

/// Creates `dest` (0700), refusing a non-empty directory or a file.
fn create_dest(dest: &Path) -> Result<()> {
    if dest.exists() {
        let empty = fs::read_dir(dest)
            .with_context(|| format!("{} exists and is not a readable directory", dest.display()))?
            .next()
            .is_none();
        if !empty {
            bail!(
                "{} exists and is not empty: name a new directory",
                dest.display()
            );
        }
        return Ok(());
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dest)
        .with_context(|| format!("creating {}", dest.display()))
}

/// Writes `bytes` to a new file `path` with `mode`, synced.
pub fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    use std::io::Write;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .with_context(|| format!("writing {}", path.display()))
}

/// `switchboard backup DEST` (module text): the database of `db` and the installation key in
/// `key_file` written into the directory `dest`; `pg_dump` names the program for PostgreSQL
/// (default: found by [`postgres_program`]). Returns the command's report: the directory,
/// the backend, the database copy's bytes, the schema version and the installation id.
///
/// # Errors
/// `DEST` is not new or empty; the key file is missing or is not the installation's; the
/// database cannot be copied (pg_dump missing or failing: its message is shown); storage.
pub fn backup(
    db: &Database,
    dest: &Path,
    key_file: &Path,
    pg_dump: Option<&Path>,
) -> Result<Value> {
    let url = db.url()?;
    let kind = DatabaseUrl::parse(&url)?.kind();
    let (store, _) = db.open(Some(2), false)?;
    let store = Arc::new(store);
    if !key_file.exists() {
        bail!(
            "no installation key at {}: name the installation's key file with --secret-key-file (a database no server has served yet has none: start one first)",
            key_file.display()
        );
    }
    let sealer = crate::secret_key::load(key_file)?;
    let installation = crate::installation::require_key(
        &Switchboard::new(store.clone()),
        &sealer,
        key_file,
        "Back up with the installation's key file (--secret-key-file)",
    )?;
    let schema_version = {
        let mut conn = DatabaseUrl::parse(&url)?.connect()?;
        migration_status(&mut conn)?
            .database_version()
            .unwrap_or_default()
            .to_owned()
    };
    create_dest(dest)?;
    let database = match kind {
        BackendKind::Sqlite => {
            let path = dest.join(SQLITE_FILE);
            store
                .backup_sqlite_into(&path)
                .map_err(|e| anyhow::anyhow!("copying the database to {}: {e}", path.display()))?;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600))?;
            fs::File::open(&path).and_then(|f| f.sync_all())?;
            SQLITE_FILE
        }
        BackendKind::Postgres => {
            let pg_dump = postgres_program(pg_dump, "pg_dump")?;
            let path = dest.join(PG_DUMP_FILE);
            let out = Command::new(&pg_dump)
                .args(["--format=custom", "--no-owner", "--no-privileges", "--file"])
                .arg(&path)
                .arg(format!("--dbname={url}"))
                .output()
                .with_context(|| format!("running {}", pg_dump.display()))?;
            if !out.status.success() {
                bail!(
                    "{} failed ({}): {}",
                    pg_dump.display(),
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600))?;
            PG_DUMP_FILE
        }
    };
    let key_text = fs::read(key_file).with_context(|| format!("reading {}", key_file.display()))?;
    write_file(&dest.join(KEY_FILE), &key_text, 0o600)?;
    let manifest = Manifest {
        format: FORMAT,
        release: env!("CARGO_PKG_VERSION").to_owned(),
        backend: backend_name(kind).to_owned(),
        schema_version,
        installation_id: installation.id,
        key_fingerprint: sealer.fingerprint().to_owned(),
        created_at: OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
        database: database.to_owned(),
        key_file: KEY_FILE.to_owned(),
    };
    let text = serde_json::to_vec_pretty(&manifest)?;
    write_file(&dest.join(MANIFEST), &text, 0o600)?;
    fs::File::open(dest).and_then(|d| d.sync_all())?;
    let bytes = fs::metadata(dest.join(database)).map_or(0, |m| m.len());
    Ok(json!({
        "backup": dest,
        "backend": manifest.backend,
        "database_bytes": bytes,
        "schema_version": manifest.schema_version,
        "installation_id": manifest.installation_id,
    }))
}
