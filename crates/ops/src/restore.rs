//! `switchboard restore FROM` (docs/operations.md, "Backup and restore"): a backup written by
//! `switchboard backup` ([`crate::backup`]) into an empty database of the same backend, and its
//! key into the key file; then the copy's migrations are brought to this binary's.
//!
//! Without `--replaces-original` the copy becomes an installation of its own: a new
//! installation id, and its sandbox records detached from what the original runs
//! ([`Switchboard::detach_restored_installation`]), so neither the copy's runtimes nor its
//! orphan sweeps ever adopt or stop the original's processes, containers or pods (a copy on the
//! original's host and Docker daemon included). With it, the copy keeps the id and takes the
//! original's sandboxes over: the original must be stopped for good.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use switchboard_domain::Switchboard;
use switchboard_storage::DatabaseUrl;
use switchboard_storage::migrations::{known_versions, table_count};

use crate::backup::{FORMAT, KEY_FILE, MANIFEST, Manifest, backend_name, write_file};
use crate::{Database, domain};

fn read_manifest(from: &Path) -> Result<Manifest> {
    let path = from.join(MANIFEST);
    let text = fs::read(&path).with_context(|| {
        format!(
            "reading {}: is {} a directory written by `switchboard backup`?",
            path.display(),
            from.display()
        )
    })?;
    let manifest: Manifest =
        serde_json::from_slice(&text).with_context(|| format!("reading {}", path.display()))?;
    if manifest.format != FORMAT {
        bail!(
            "{} is of backup format {}; this switchboard reads format {FORMAT}",
            path.display(),
            manifest.format
        );
    }
    Ok(manifest)
}

/// The backup's key, refused when `key_file` exists and holds another.
fn backup_key(from: &Path, key_file: &Path) -> Result<Vec<u8>> {
    let text = fs::read(from.join(KEY_FILE))
        .with_context(|| format!("reading {}", from.join(KEY_FILE).display()))?;
    if key_file.exists() && fs::read(key_file)? != text {
        bail!(
            "{} exists and holds another key than the backup's: move it away (or name another file with --secret-key-file)",
            key_file.display()
        );
    }
    Ok(text)
}

/// Puts the backup's key `text` at `key_file` unless it is there already.
fn place_key(text: &[u8], key_file: &Path) -> Result<()> {
    if key_file.exists() {
        return Ok(());
    }
    if let Some(dir) = key_file.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    write_file(key_file, text, 0o600)
}

/// Refuses a backup of a schema newer than this binary, and a PostgreSQL database that is
/// not empty, before anything is written (a SQLite target must not exist: checked before).
fn check_schema(manifest: &Manifest, url: &DatabaseUrl) -> Result<()> {
    if let DatabaseUrl::Postgres(_) = url {
        let mut conn = url.connect().context("opening the target database")?;
        let tables = table_count(&mut conn)?;
        if tables > 0 {
            bail!(
                "the target database is not empty ({tables} tables): restore into a new, empty database"
            );
        }
    }
    let known = known_versions(url.kind())?;
    let known = known.last().map_or("", String::as_str);
    if manifest.schema_version.as_str() > known {
        bail!(
            "the backup's schema is at version {}, newer than this switchboard {} knows (its latest: {known}): restore with release {} or newer",
            manifest.schema_version,
            env!("CARGO_PKG_VERSION"),
            manifest.release
        );
    }
    Ok(())
}

fn copy_database(
    manifest: &Manifest,
    from: &Path,
    url: &DatabaseUrl,
    pg_restore: Option<&Path>,
) -> Result<()> {
    let source = from.join(&manifest.database);
    match url {
        DatabaseUrl::Sqlite(path) => {
            for suffix in ["-wal", "-shm", "-journal"] {
                let mut side = path.as_os_str().to_owned();
                side.push(suffix);
                let _ = fs::remove_file(side);
            }
            let partial = path.with_extension("restoring");
            let _ = fs::remove_file(&partial);
            fs::copy(&source, &partial).with_context(|| {
                format!("copying {} to {}", source.display(), partial.display())
            })?;
            fs::File::open(&partial).and_then(|f| f.sync_all())?;
            fs::rename(&partial, path)
                .with_context(|| format!("moving {} to {}", partial.display(), path.display()))?;
        }
        DatabaseUrl::Postgres(pg) => {
            let pg_restore = crate::backup::postgres_program(pg_restore, "pg_restore")?;
            let out = Command::new(&pg_restore)
                .args([
                    "--no-owner",
                    "--no-privileges",
                    "--exit-on-error",
                    "--single-transaction",
                ])
                .arg(format!("--dbname={pg}"))
                .arg(&source)
                .output()
                .with_context(|| format!("running {}", pg_restore.display()))?;
            if !out.status.success() {
                bail!(
                    "{} failed ({}): {}",
                    pg_restore.display(),
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
        }
    }
    Ok(())
}

/// `switchboard restore FROM` (module text): the backup in `from` into the empty database of
/// `db`, its key into `key_file`; `replaces_original` keeps the original's installation id and
/// sandboxes; `pg_restore` names the program for PostgreSQL. Returns the command's report.
///
/// # Errors
/// Not a backup, another backend's, a schema newer than this binary, a target database that
/// is not empty (SQLite: a file that exists), a key file holding another key, pg_restore
/// missing or failing, storage.
pub fn restore(
    db: &Database,
    from: &Path,
    key_file: &Path,
    replaces_original: bool,
    pg_restore: Option<&Path>,
) -> Result<Value> {
    let manifest = read_manifest(from)?;
    let raw_url = db.url()?;
    let url = DatabaseUrl::parse(&raw_url)?;
    if backend_name(url.kind()) != manifest.backend {
        bail!(
            "the backup is of a {} database and the target is {}: restore into the same backend",
            manifest.backend,
            backend_name(url.kind())
        );
    }
    if let DatabaseUrl::Sqlite(path) = &url
        && path.exists()
    {
        bail!(
            "{} exists: restore into a new file (move the current one away first)",
            path.display()
        );
    }
    let key_text = backup_key(from, key_file)?;
    check_schema(&manifest, &url)?;
    copy_database(&manifest, from, &url, pg_restore)?;
    place_key(&key_text, key_file)?;
    let (store, applied) = db.open(Some(2), false)?;
    let store = Arc::new(store);
    let key = crate::installation::open_key(&store, key_file)?;
    let services = Switchboard::new(store);
    let (installation, detached) = if replaces_original {
        (key.installation, 0)
    } else {
        services.detach_restored_installation().map_err(domain)?
    };
    Ok(json!({
        "restored": from,
        "backend": manifest.backend,
        "migrations_applied": applied,
        "installation_id": installation.id,
        "restored_from": installation.restored_from,
        "replaces_original": replaces_original,
        "sandboxes_detached": detached,
    }))
}
