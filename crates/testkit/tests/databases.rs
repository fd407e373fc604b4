//! Each `TestDatabase` is a real, separate, connectable database that is gone after drop.

use std::path::Path;
use std::thread;

use diesel::sql_types::{BigInt, Integer, Text};
use diesel::{Connection, PgConnection, QueryableByName, RunQueryDsl, SqliteConnection, sql_query};
use switchboard_testkit::{Backend, TestDatabase, postgres_server_url};

#[derive(QueryableByName)]
struct One {
    #[diesel(sql_type = Integer)]
    one: i32,
}

#[derive(QueryableByName)]
struct Name {
    #[diesel(sql_type = Text)]
    name: String,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// The database name at the end of a PostgreSQL URL.
fn database_name(url: &str) -> &str {
    url.rsplit('/').next().unwrap()
}

fn select_one_pg(url: &str) -> i32 {
    let mut conn = PgConnection::establish(url).unwrap();
    sql_query("SELECT 1 AS one")
        .get_result::<One>(&mut conn)
        .unwrap()
        .one
}

/// How many databases named `name` the server has, asked through its maintenance database.
fn databases_named(name: &str) -> i64 {
    let mut conn = PgConnection::establish(postgres_server_url()).unwrap();
    sql_query("SELECT count(*) AS n FROM pg_database WHERE datname = $1")
        .bind::<Text, _>(name)
        .get_result::<Count>(&mut conn)
        .unwrap()
        .n
}

#[test]
fn two_postgres_databases_made_in_parallel_are_distinct_and_connectable() {
    let threads: Vec<_> = (0..2)
        .map(|_| thread::spawn(TestDatabase::postgres))
        .collect();
    let dbs: Vec<TestDatabase> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_ne!(dbs[0].url(), dbs[1].url());
    for db in &dbs {
        assert_eq!(db.backend(), Backend::Postgres);
        assert!(db.url().starts_with("postgres://"), "{}", db.url());
        let name = database_name(db.url());
        assert!(name.starts_with("sb_test_"), "{name}");
        assert_eq!(name.len(), "sb_test_".len() + 32);
        assert_eq!(select_one_pg(db.url()), 1);
        let mut conn = PgConnection::establish(db.url()).unwrap();
        let current = sql_query("SELECT current_database() AS name")
            .get_result::<Name>(&mut conn)
            .unwrap();
        assert_eq!(current.name, name);
    }
}

#[test]
fn postgres_databases_are_empty_and_isolated() {
    let a = TestDatabase::postgres();
    let b = TestDatabase::postgres();
    let mut conn_a = PgConnection::establish(a.url()).unwrap();
    sql_query("CREATE TABLE t (x integer)")
        .execute(&mut conn_a)
        .unwrap();
    let mut conn_b = PgConnection::establish(b.url()).unwrap();
    let tables = sql_query(
        "SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = 'public'",
    )
    .get_result::<Count>(&mut conn_b)
    .unwrap();
    assert_eq!(tables.n, 0);
}

#[test]
fn postgres_database_is_gone_after_drop_even_with_a_connection_open() {
    let db = TestDatabase::postgres();
    let name = database_name(db.url()).to_owned();
    assert_eq!(databases_named(&name), 1);
    let conn = PgConnection::establish(db.url()).unwrap();
    drop(db);
    assert_eq!(databases_named(&name), 0);
    drop(conn);
}

#[test]
fn sqlite_file_is_made_on_first_connection_and_removed_on_drop() {
    let db = TestDatabase::sqlite();
    assert_eq!(db.backend(), Backend::Sqlite);
    let path = Path::new(db.url().strip_prefix("sqlite://").unwrap()).to_owned();
    assert!(path.is_absolute(), "{}", path.display());
    assert_eq!(path.file_name().unwrap(), "db.sqlite");
    let dir = path.parent().unwrap().to_owned();
    assert!(dir.is_dir());
    assert!(!path.exists(), "the file exists before any connection");

    let mut conn = SqliteConnection::establish(db.url()).unwrap();
    let one = sql_query("SELECT 1 AS one")
        .get_result::<One>(&mut conn)
        .unwrap();
    assert_eq!(one.one, 1);
    assert!(path.is_file(), "the first connection did not make the file");

    drop(conn);
    drop(db);
    assert!(!dir.exists(), "{} is left after drop", dir.display());
}

#[test]
fn two_sqlite_databases_are_separate_files() {
    let a = TestDatabase::sqlite();
    let b = TestDatabase::sqlite();
    assert_ne!(a.url(), b.url());
}

#[test]
fn every_backend_gives_a_connectable_database() {
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        assert_eq!(db.backend(), backend, "{}", backend.name());
        assert!(db.url().starts_with(&format!("{}://", backend.name())));
        let one = match backend {
            Backend::Sqlite => {
                let mut conn = SqliteConnection::establish(db.url()).unwrap();
                sql_query("SELECT 1 AS one")
                    .get_result::<One>(&mut conn)
                    .unwrap()
                    .one
            }
            Backend::Postgres => select_one_pg(db.url()),
        };
        assert_eq!(one, 1, "{}", backend.name());
    }
}
