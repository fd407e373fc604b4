//! This replica's id (issue 20): a UUID kept in `<data dir>/replica-id`, created at the first
//! start. It names the replica's claims on conversation starts, so a restart of the same
//! replica (same data directory) fails at once the starts its previous run left unfinished;
//! replicas sharing a database each have their own data directory, hence their own id.

use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use anyhow::{Context, Result};

/// The id in `<data_dir>/replica-id`, written there first when missing.
///
/// # Errors
/// The file cannot be read or written, or does not hold a UUID.
pub fn load_or_create(data_dir: &Path) -> Result<String> {
    let path = data_dir.join("replica-id");
    match fs::read_to_string(&path) {
        Ok(text) => {
            let id = text.trim();
            uuid::Uuid::parse_str(id)
                .with_context(|| format!("{} must hold a UUID", path.display()))?;
            Ok(id.to_owned())
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {
            fs::create_dir_all(data_dir)
                .with_context(|| format!("creating {}", data_dir.display()))?;
            let id = uuid::Uuid::new_v4().to_string();
            fs::write(&path, format!("{id}\n"))
                .with_context(|| format!("writing {}", path.display()))?;
            Ok(id)
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_created_once_and_kept() {
        let dir = std::env::temp_dir().join(format!("replica-{}", uuid::Uuid::new_v4()));
        let first = load_or_create(&dir).unwrap();
        assert_eq!(load_or_create(&dir).unwrap(), first);
        fs::write(dir.join("replica-id"), "not a uuid").unwrap();
        assert!(load_or_create(&dir).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }
}
