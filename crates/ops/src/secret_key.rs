//! The server's secret key (`--secret-key-file`, default `<data dir>/secret.key`): 32 random
//! bytes written as 64 hex characters, created with mode 0600 when missing, and refused when
//! its group or others may read or write it (design: Sandboxes, Secrets). It seals sandbox
//! session keys and every user and organization secret at rest; losing it makes them
//! unreadable (running sandboxes keep running; their keys are no longer shown).
//!
//! A key file written by `switchboard secrets rotate-key` has a second line,
//! `key-id <16 hex digits>`: the id of the installation's first key, kept so the installation's
//! name (the Docker runtime's default `sb-<key id>`) does not change with the key.

use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use anyhow::{Context, Result, bail};
use switchboard_domain::identity::sealing::{SECRET_KEY_BYTES, Sealer, from_hex};

/// The second line's prefix of a rotated key file.
const KEY_ID_PREFIX: &str = "key-id ";

/// Reads the key at `path`, or creates it (0600, parent directories as needed).
///
/// # Errors
/// The file is readable or writable by group or others, is not 64 hex characters (and an
/// optional `key-id` line), or cannot be read or created; each message names the file.
pub fn load_or_create(path: &Path) -> Result<Sealer> {
    match fs::metadata(path) {
        Ok(_) => load(path),
        Err(e) if e.kind() == ErrorKind::NotFound => create(path),
        Err(e) => Err(e).with_context(|| format!("reading the secret key file {}", path.display())),
    }
}

/// Reads the key at `path`, which must exist.
///
/// # Errors
/// As [`load_or_create`], and a missing file.
pub fn load(path: &Path) -> Result<Sealer> {
    let meta = fs::metadata(path)
        .with_context(|| format!("reading the secret key file {}", path.display()))?;
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
    parse(&text).with_context(|| {
        format!(
            "the secret key file {} must hold {} hex characters (and optionally a line `key-id` and 16 hex digits)",
            path.display(),
            SECRET_KEY_BYTES * 2
        )
    })
}

fn parse(text: &str) -> Option<Sealer> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let bytes = from_hex(lines.next()?).filter(|b| b.len() == SECRET_KEY_BYTES)?;
    let mut key = [0u8; SECRET_KEY_BYTES];
    key.copy_from_slice(&bytes);
    let sealer = Sealer::new(&key);
    match lines.next() {
        None => Some(sealer),
        Some(line) => {
            let id = line.strip_prefix(KEY_ID_PREFIX)?.trim();
            let valid = id.len() == 16
                && id
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
            (valid && lines.next().is_none()).then(|| sealer.with_key_id(id.to_owned()))
        }
    }
}

/// The text of a key file: the key's hex, and the `key-id` line when `key_id` is given.
pub fn file_text(key: &[u8; SECRET_KEY_BYTES], key_id: Option<&str>) -> String {
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    match key_id {
        Some(id) => format!("{hex}\n{KEY_ID_PREFIX}{id}\n"),
        None => format!("{hex}\n"),
    }
}

/// Writes `text` to a new file at `path` (refused if it exists), mode 0600, synced.
///
/// # Errors
/// The file exists or cannot be written.
pub fn write_new(path: &Path, text: &str) -> Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating the secret key file {}", path.display()))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing the secret key file {}", path.display()))
}

fn create(path: &Path) -> Result<Sealer> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let key = Sealer::generate_key();
    write_new(path, &file_text(&key, None))?;
    tracing::info!(path = %path.display(), "created the secret key file (keep it: it opens the sealed secrets)");
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

    #[test]
    fn a_rotated_file_keeps_the_first_key_id() {
        let key = [9u8; SECRET_KEY_BYTES];
        let plain = parse(&file_text(&key, None)).unwrap();
        assert_eq!(plain.key_id(), Sealer::new(&key).key_id());
        let rotated = parse(&file_text(&key, Some("0123456789abcdef"))).unwrap();
        assert_eq!(rotated.key_id(), "0123456789abcdef");
        let sealed = rotated.seal("v", "b");
        assert_eq!(plain.open(&sealed, "b").unwrap(), "v", "the same key");
        let hex = file_text(&key, None);
        for bad in [
            "key-id 0123",
            "key-id 0123456789ABCDEX",
            "other 0123456789abcdef",
        ] {
            assert!(parse(&format!("{hex}{bad}\n")).is_none(), "{bad}");
        }
        assert!(parse(&format!("{hex}key-id 0123456789abcdef\nmore\n")).is_none());
    }
}
