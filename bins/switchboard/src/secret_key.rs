//! The server's secret key (`--secret-key-file`, default `<data dir>/secret.key`): 32 random
//! bytes written as 64 hex characters, created with mode 0600 when missing, and refused when
//! its group or others may read or write it (design: Sandboxes, Secrets). It seals sandbox
//! session keys at rest; losing it makes the sealed keys of running sandboxes unreadable
//! (they keep running; their keys are no longer shown).

use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use anyhow::{Context, Result, bail};
use switchboard_domain::identity::sealing::{SECRET_KEY_BYTES, Sealer, from_hex};

/// Reads the key at `path`, or creates it (0600, parent directories as needed).
///
/// # Errors
/// The file is readable or writable by group or others, is not 64 hex characters, or cannot
/// be read or created; each message names the file.
pub fn load_or_create(path: &Path) -> Result<Sealer> {
    match fs::metadata(path) {
        Ok(meta) => {
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                bail!(
                    "refusing the secret key file {}: its mode is {mode:04o}, so group or others can access it; run `chmod 600 {}`",
                    path.display(),
                    path.display()
                );
            }
            let text = fs::read_to_string(path)
                .with_context(|| format!("reading the secret key file {}", path.display()))?;
            let bytes = from_hex(&text)
                .filter(|b| b.len() == SECRET_KEY_BYTES)
                .with_context(|| {
                    format!(
                        "the secret key file {} must hold {} hex characters",
                        path.display(),
                        SECRET_KEY_BYTES * 2
                    )
                })?;
            let mut key = [0u8; SECRET_KEY_BYTES];
            key.copy_from_slice(&bytes);
            Ok(Sealer::new(&key))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => create(path),
        Err(e) => Err(e).with_context(|| format!("reading the secret key file {}", path.display())),
    }
}

fn create(path: &Path) -> Result<Sealer> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let key = Sealer::generate_key();
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating the secret key file {}", path.display()))?;
    file.write_all(format!("{hex}\n").as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing the secret key file {}", path.display()))?;
    tracing::info!(path = %path.display(), "created the secret key file (keep it: it opens the sealed session keys)");
    Ok(Sealer::new(&key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_0600_read_back_and_refused_when_others_can_read_it() {
        let dir = std::env::temp_dir().join(format!("sb-secret-{}", std::process::id()));
        let path = dir.join("nested/secret.key");
        let _ = fs::remove_dir_all(&dir);
        let first = load_or_create(&path).unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let sealed = first.seal("k", "id");
        let again = load_or_create(&path).unwrap();
        assert_eq!(again.open(&sealed, "id").unwrap(), "k", "the same key");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let err = load_or_create(&path).unwrap_err().to_string();
        assert!(
            err.contains("mode is 0644") && err.contains("chmod 600"),
            "{err}"
        );
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        fs::write(&path, "nothex").unwrap();
        let err = load_or_create(&path).unwrap_err().to_string();
        assert!(err.contains("64 hex characters"), "{err}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
