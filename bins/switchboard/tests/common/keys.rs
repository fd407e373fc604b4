//! The installation key each database's servers share in these tests (a server holding
//! another key than the one sealing its database refuses to start: docs/operations.md).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::ServeOptions;

/// The installation key of each database URL the tests served, once a server made it: every
/// later server on the same database gets it (replicas and restarts share the installation's
/// key file, as operators must; a server holding another key refuses to start).
static KEYS: Mutex<Vec<(String, Vec<u8>)>> = Mutex::new(Vec::new());

/// The key file a server spawned in `cwd` with `options` will use (`None` when the test names
/// one itself), with the key of `url` put there first when a server made one before.
pub(super) fn shared_key_file(
    url: &str,
    cwd: &Path,
    options: &ServeOptions<'_>,
) -> Option<PathBuf> {
    let named = |flag: &str, var: &str| {
        options.args.iter().any(|a| a.starts_with(flag))
            || options.env.iter().any(|(k, _)| *k == var)
    };
    if named("--secret-key-file", "SWITCHBOARD_SECRET_KEY_FILE") {
        return None;
    }
    let data_dir = match options.args.iter().position(|a| *a == "--data-dir") {
        Some(i) => PathBuf::from(options.args.get(i + 1)?),
        None if named("--data-dir", "SWITCHBOARD_DATA_DIR") => return None,
        None => cwd.join("switchboard-data"),
    };
    let path = data_dir.join("secret.key");
    let known = KEYS
        .lock()
        .unwrap()
        .iter()
        .find(|(u, _)| u == url)
        .map(|(_, k)| k.clone());
    if let Some(key) = known
        && !path.exists()
    {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::create_dir_all(&data_dir).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, &key).unwrap();
    }
    Some(path)
}

/// Records the key a server on `url` started with, unless one is known.
pub(super) fn remember_key(url: &str, path: &Path) {
    let mut keys = KEYS.lock().unwrap();
    if keys.iter().any(|(u, _)| u == url) {
        return;
    }
    if let Ok(key) = std::fs::read(path) {
        keys.push((url.to_owned(), key));
    }
}
