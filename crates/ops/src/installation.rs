//! The installation key a server starts with, checked against the database's installation
//! record (docs/operations.md, "Replicas"): a replica whose key file holds another key than the
//! one sealing the database refuses to start, saying what to do, instead of sealing new values
//! no other replica opens; a replica without a key file is told to copy the installation's
//! instead of making a key of its own.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Result, bail};
use switchboard_domain::Switchboard;
use switchboard_domain::identity::installation::{Installation, KeyVerdict};
use switchboard_domain::identity::sealing::Sealer;
use switchboard_storage::DieselStore;

use crate::{domain, secret_key};

/// The key a server seals with and the installation it serves.
pub struct InstallationKey {
    /// The key.
    pub sealer: Sealer,
    /// Its file (absolute when the data directory was).
    pub key_file: PathBuf,
    /// The installation's record (its id labels the runtimes' containers and pods).
    pub installation: Installation,
}

/// The key in `key_file`, accepted only when the database's record names it; made (and
/// recorded) when neither the file nor a record exists.
///
/// # Errors
/// The database has a record and the file is missing, or holds another key (each message
/// names both keys' fingerprints, the installation and what to do); the key file is refused
/// ([`secret_key::load`]); storage.
pub fn open_key(store: &Arc<DieselStore>, key_file: &Path) -> Result<InstallationKey> {
    let services = Switchboard::new(store.clone());
    if let Some(record) = services.installation().map_err(domain)?
        && !key_file.exists()
    {
        bail!(
            "no installation key at {path}, but this database belongs to installation {id}, whose secrets are sealed with key {fp}. \
             Copy the key file from a server of this installation (its --secret-key-file, by default <data dir>/secret.key) to {path} \
             (mode 0600), or point --secret-key-file at it; a new key would seal secrets no other server opens",
            path = key_file.display(),
            id = record.id,
            fp = record.key_fingerprint,
        );
    }
    let sealer = secret_key::load_or_create(key_file)?;
    let installation = require_key(
        &services,
        &sealer,
        key_file,
        "Every server of an installation must use the same key file: copy it from a running server of this installation \
         (or from the backup) over the file, then start again. After `switchboard secrets rotate-key`, use the new key file \
         (the previous key is kept beside it as .old)",
    )?;
    Ok(InstallationKey {
        sealer,
        key_file: key_file.to_path_buf(),
        installation,
    })
}

/// The installation's record when the database's secrets are sealed with `sealer`'s key (the
/// record is made when missing), for a command or server about to use that key.
///
/// # Errors
/// The record names another key: the message names the file, both fingerprints and the
/// installation, then `advice`; storage.
pub fn require_key(
    services: &Switchboard,
    sealer: &Sealer,
    key_file: &Path,
    advice: &str,
) -> Result<Installation> {
    match services.check_installation_key(sealer).map_err(domain)? {
        KeyVerdict::Same(found) => Ok(found),
        KeyVerdict::First(made) => {
            tracing::info!(installation = %made.id, key = %made.key_fingerprint, "recorded this installation and its key in the database");
            Ok(made)
        }
        KeyVerdict::Other(found) => bail!(
            "{} holds key {}, but this database's secrets are sealed with key {} (installation {}). {advice}",
            key_file.display(),
            sealer.fingerprint(),
            found.key_fingerprint,
            found.id,
        ),
    }
}
