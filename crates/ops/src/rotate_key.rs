//! `switchboard secrets rotate-key` (API.md, "Rotating the installation key"): a new
//! installation key replaces the current one, every sealed value of the database re-sealed
//! with it in one transaction, then the key file replaced atomically.
//!
//! Order, so that no step loses the key that opens the database: the new key is written to
//! `<key file>.new` (0600, synced) first; the transaction runs; on failure `.new` is removed
//! and nothing changed; on success the current key is kept as `<key file>.old`, `.new` is
//! renamed over the key file and the directory synced. Interrupted after the commit, the key
//! that opens the database is `<key file>.new` (the command says so, and refuses to run again
//! while it exists).
//!
//! A server keeps its key in memory and would seal new values with the old one, so the
//! command refuses while a server is connected to a PostgreSQL database (its listening
//! connection shows in `pg_stat_activity`); SQLite cannot tell, and the operator stops the
//! server first. The new key file carries the installation's key id, and the installation's
//! record (its id, labelled on containers and pods) is kept, with the new key's fingerprint set
//! in the transaction that re-seals: a server still holding the old key refuses to start. A key
//! file the record does not name is refused before anything changes.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use switchboard_domain::Switchboard;
use switchboard_domain::identity::sealing::Sealer;

use crate::{Database, domain, secret_key};

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Runs the rotation (module text) of the database of `db` and the key file `path`. Returns
/// the command's report: the values re-sealed, the key file, the previous key's file, the key id.
///
/// # Errors
/// A key file missing or refused, a server connected, an interrupted earlier rotation, a
/// sealed value the current key does not open (nothing changed), storage, or the file system.
pub fn rotate_key(db: &Database, path: &Path) -> Result<Value> {
    let old = secret_key::load(path)?;
    let old_text = fs::read_to_string(path)
        .with_context(|| format!("reading the secret key file {}", path.display()))?;
    let new_path = sibling(path, ".new");
    if new_path.exists() {
        bail!(
            "{} exists: an earlier rotation was interrupted. If the server does not open its secrets with {}, the key in {} is the one: move it over the key file; otherwise remove it, then run the command again",
            new_path.display(),
            path.display(),
            new_path.display()
        );
    }
    let (store, _) = db.open(Some(2), false)?;
    let servers = store
        .servers_listening()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if servers > 0 {
        bail!(
            "{servers} switchboard server(s) are connected to this database: stop every server before rotating the key (a running server keeps the current key and would seal new values with it)"
        );
    }
    let store = Arc::new(store);
    let services = Switchboard::new(store.clone());
    crate::installation::require_key(
        &services,
        &old,
        path,
        "Rotate with the installation's key file (--secret-key-file)",
    )?;
    let key = Sealer::generate_key();
    let key_id = old.key_id().to_owned();
    let new = Sealer::new(&key).with_key_id(key_id.clone());
    secret_key::write_new(&new_path, &secret_key::file_text(&key, Some(&key_id)))?;
    let resealed = match services.rotate_installation_key(&old, &new) {
        Ok(n) => n,
        Err(e) => {
            let _ = fs::remove_file(&new_path);
            return Err(domain(e)
                .context("nothing changed: the database and the key file are as they were"));
        }
    };
    let old_path = sibling(path, ".old");
    let _ = fs::remove_file(&old_path);
    if let Err(e) = secret_key::write_new(&old_path, &old_text) {
        eprintln!("warning: the previous key was not kept: {e:#}");
    }
    fs::rename(&new_path, path).with_context(|| {
        format!(
            "the database is sealed with the new key, which is in {}: move it over {}",
            new_path.display(),
            path.display()
        )
    })?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .with_context(|| format!("syncing {}", dir.display()))?;
    }
    Ok(json!({
        "resealed": resealed,
        "key_file": path,
        "old_key_file": old_path,
        "key_id": key_id,
    }))
}
