//! Operating an installation, through the real binary on both backends: replicas must share
//! the installation's key (`replicas.rs`: one without it, or with another, refuses to start
//! saying what to do; `secrets rotate-key` counts the servers connected; a binary older than
//! its database's schema refuses it, naming both versions; `migrate --status`), and backups
//! (`backup.rs`: `switchboard backup` while a server runs and a sandbox lives, `restore` into a
//! new database that serves everything back, the copy a new installation that never adopts
//! or stops the original's sandbox, and what restore refuses).

mod backup;
mod replicas;

use switchboard_testkit::Backend;

#[test]
fn replicas_share_the_installation_key_sqlite() {
    replicas::replicas(Backend::Sqlite);
}

#[test]
fn replicas_share_the_installation_key_postgres() {
    replicas::replicas(Backend::Postgres);
}

#[test]
fn a_binary_older_than_the_schema_refuses_it_sqlite() {
    replicas::older_binary(Backend::Sqlite);
}

#[test]
fn a_binary_older_than_the_schema_refuses_it_postgres() {
    replicas::older_binary(Backend::Postgres);
}

#[test]
fn backup_and_restore_sqlite() {
    backup::backup_and_restore(Backend::Sqlite);
}

#[test]
fn backup_and_restore_postgres() {
    backup::backup_and_restore(Backend::Postgres);
}
