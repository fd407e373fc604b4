//! The database an operator names: `--database-url`, else the content of
//! `--database-url-file`, else the SQLite file `switchboard.sqlite` in `--data-dir`
//! (docs/configuration.md); opened with pending migrations applied.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use switchboard_storage::{BackendKind, DatabaseUrl, DieselStore, PoolConfig};

/// Where the database and the data directory are, as the flags name them.
#[derive(Clone, Debug)]
pub struct Database {
    /// `--database-url`: `postgres://…` or `sqlite://PATH`.
    pub url: Option<String>,
    /// `--database-url-file`: a file holding the URL (surrounding whitespace ignored).
    pub url_file: Option<PathBuf>,
    /// `--data-dir`: the default SQLite database's folder, the key file's and the replica id's.
    pub data_dir: PathBuf,
}

impl Database {
    /// The database URL: [`Database::url`], else the content of [`Database::url_file`], else
    /// the SQLite file `switchboard.sqlite` in the data directory (created if missing), as
    /// an absolute `sqlite://` URL.
    ///
    /// # Errors
    /// The URL file cannot be read or is empty, or the data directory cannot be created.
    pub fn url(&self) -> Result<String> {
        if let Some(u) = &self.url {
            return Ok(u.clone());
        }
        if let Some(path) = &self.url_file {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the database URL file {}", path.display()))?;
            let url = text.trim();
            anyhow::ensure!(
                !url.is_empty(),
                "the database URL file {} is empty",
                path.display()
            );
            return Ok(url.to_owned());
        }
        std::fs::create_dir_all(&self.data_dir)
            .with_context(|| format!("creating {}", self.data_dir.display()))?;
        let path = self.data_dir.join("switchboard.sqlite");
        let abs = std::path::absolute(&path).unwrap_or(path);
        Ok(format!("sqlite://{}", abs.display()))
    }

    /// The files of this database no sandbox may see besides the data directory: the URL
    /// file, and a SQLite database named by URL elsewhere (with its journal files).
    pub fn files_to_hide(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self.url_file.iter().cloned().collect();
        if let Some(path) = self
            .url
            .as_deref()
            .and_then(|u| u.strip_prefix("sqlite://"))
        {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                out.push(PathBuf::from(format!("{path}{suffix}")));
            }
        }
        out
    }

    /// The installation key file: `secret_key_file` (`--secret-key-file`), else `secret.key`
    /// in the data directory made absolute (the process runtime hides it from sandboxes by
    /// path).
    pub fn key_file(&self, secret_key_file: Option<&Path>) -> PathBuf {
        let data_dir =
            std::path::absolute(&self.data_dir).unwrap_or_else(|_| self.data_dir.clone());
        secret_key_file.map_or_else(|| data_dir.join("secret.key"), Path::to_path_buf)
    }

    /// Opens the store, applying pending migrations (their versions are returned).
    /// `pool_size` overrides the pool's size (at least 1); `server` turns SQLite's automatic
    /// WAL checkpoints off, for a long-running process whose supervisor checkpoints instead.
    ///
    /// # Errors
    /// As [`Database::url`], or the database cannot be opened or migrated.
    pub fn open(&self, pool_size: Option<u32>, server: bool) -> Result<(DieselStore, Vec<String>)> {
        let url = self.url()?;
        let kind = DatabaseUrl::parse(&url)
            .map(|u| u.kind())
            .unwrap_or(BackendKind::Sqlite);
        let defaults = PoolConfig::default_for(kind);
        let config = PoolConfig {
            max_size: pool_size.map_or(defaults.max_size, |n| n.max(1)),
            min_idle: pool_size.map_or(defaults.min_idle, |n| n.max(1)),
            manual_checkpoints: server,
            ..defaults
        };
        DieselStore::open(&url, Some(config)).with_context(|| "opening the database")
    }

    /// The domain's services over this database, opened (migrated) with a pool of 2, as an
    /// operator command uses it.
    ///
    /// # Errors
    /// As [`Database::open`].
    pub fn services(&self) -> Result<switchboard_domain::Switchboard> {
        let (store, _) = self.open(Some(2), false)?;
        Ok(switchboard_domain::Switchboard::new(std::sync::Arc::new(
            store,
        )))
    }

    /// Opens the store as a server does (`serve`): first warns when `--database-url` holds a
    /// password on the command line ([`Database::warn_if_password_on_command_line`]), then
    /// opens it with a pool of `pool_size` (default: the backend's) and SQLite's automatic
    /// checkpoints off (the server's supervisor checkpoints), the migrations it applied logged.
    /// Returns the store and the database's URL.
    ///
    /// # Errors
    /// As [`Database::open`].
    pub fn open_for_server(&self, pool_size: Option<u32>) -> Result<(DieselStore, String)> {
        self.warn_if_password_on_command_line();
        let (store, applied) = self.open(pool_size, true)?;
        if !applied.is_empty() {
            tracing::info!(migrations = ?applied, "applied migrations");
        }
        Ok((store, self.url()?))
    }

    /// Warns when `--database-url` was given on the command line with a password: every
    /// local user can read a process's command line (`/proc/<pid>/cmdline`, `ps`).
    pub fn warn_if_password_on_command_line(&self) {
        let url = self.url.as_deref();
        let on_command_line = std::env::args_os().any(|a| {
            a.to_str()
                .is_some_and(|a| a == "--database-url" || a.starts_with("--database-url="))
        });
        if on_command_line && url.is_some_and(has_password) {
            tracing::warn!(
                "--database-url holds a password, and every local user can read Switchboard's \
                 command line (ps, /proc/<pid>/cmdline): give the URL in SWITCHBOARD_DATABASE_URL \
                 instead (for a service, from a file only Switchboard's user can read, e.g. \
                 systemd's EnvironmentFile=)"
            );
        }
    }
}

/// Whether a database URL carries a password (`scheme://user:password@…` or `password=`).
fn has_password(url: &str) -> bool {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = after_scheme.split(['/', '?']).next().unwrap_or("");
    let userinfo_password = authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.split_once(':').is_some_and(|(_, p)| !p.is_empty()));
    userinfo_password || url.contains("password=")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_database_urls_are_seen() {
        for (url, has) in [
            ("postgres://sb:hunter2@db:5432/sb", true),
            ("postgres://sb@db/sb?password=x", true),
            ("postgres://sb@db:5432/sb", false),
            ("postgres://db:5432/sb", false),
            ("sqlite:///var/lib/sb/db.sqlite", false),
        ] {
            assert_eq!(has_password(url), has, "{url}");
        }
    }
}
