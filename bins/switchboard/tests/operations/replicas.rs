//! Replicas and upgrades: the installation key shared or refused, the servers counted by
//! `secrets rotate-key`, and a schema newer than the binary refused by every command.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use switchboard_domain::identity::sealing::{Sealer, from_hex};
use switchboard_testkit::{Backend, TestDatabase};

use crate::common::{
    CliOutput, ServeOptions, Server, TempDir, cli, cli_json, command, expect_error, str_of,
};

/// Runs `serve` on `url` with data directory `data` and `args`, which must fail within 60 s;
/// returns what it printed on stderr.
pub fn refused_serve(url: &str, data: &Path, args: &[&str]) -> String {
    let cwd = TempDir::new();
    let mut cmd = command(cwd.path());
    cmd.args(["serve", "--bind", "127.0.0.1:0", "--database-url", url])
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("serve started on {url} with {args:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The fingerprint of the key in `path`.
pub fn fingerprint(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let bytes = from_hex(text.lines().next().unwrap()).unwrap();
    Sealer::new(&bytes.try_into().unwrap())
        .fingerprint()
        .to_owned()
}

fn write_key(path: &Path, key: &[u8]) {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .unwrap();
    std::io::Write::write_all(&mut f, key).unwrap();
}

fn serve(url: &str, data: &Path) -> Server {
    let dir = data.display().to_string();
    Server::spawn_with(
        url,
        ServeOptions {
            args: vec!["--data-dir", &dir],
            env: vec![],
        },
    )
}

/// Runs one SQL statement on the test database with the backend's own client.
pub fn sql(db: &TestDatabase, statement: &str) {
    let out = match db.backend() {
        Backend::Sqlite => Command::new("sqlite3")
            .arg(db.url().trim_start_matches("sqlite://"))
            .arg(statement)
            .output(),
        Backend::Postgres => Command::new("psql")
            .args([db.url(), "-v", "ON_ERROR_STOP=1", "-qc", statement])
            .output(),
    }
    .unwrap();
    assert!(out.status.success(), "{statement}: {out:?}");
}

pub fn replicas(backend: Backend) {
    let db = TestDatabase::new(backend);
    let url = db.url();
    let (a_dir, b_dir) = (TempDir::new(), TempDir::new());
    let a = serve(url, a_dir.path());
    let a_key = a_dir.path().join("secret.key");
    let theirs = fingerprint(&a_key);

    // A second replica with a data directory of its own and no key: refused, and no key made.
    let e = refused_serve(url, b_dir.path(), &[]);
    let b_key = b_dir.path().join("secret.key");
    assert!(
        e.contains("no installation key at")
            && e.contains(&theirs)
            && e.contains("Copy the key file"),
        "{backend}: {e}"
    );
    assert!(!b_key.exists(), "{backend}: a key was made");

    // With a key of its own: refused, naming both keys.
    write_key(&b_key, format!("{}\n", "ab".repeat(32)).as_bytes());
    let mine = fingerprint(&b_key);
    let e = refused_serve(url, b_dir.path(), &[]);
    assert!(
        e.contains(&format!("holds key {mine}"))
            && e.contains(&format!("sealed with key {theirs}"))
            && e.contains("copy it from a running server"),
        "{backend}: {e}"
    );

    // With the installation's key: it serves beside the first.
    std::fs::remove_file(&b_key).unwrap();
    std::fs::copy(&a_key, &b_key).unwrap();
    let b = serve(url, b_dir.path());
    for s in [&a, &b] {
        let r = crate::common::client()
            .get(s.url("/health"))
            .send()
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    if backend == Backend::Postgres {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let e = expect_error(&cli(
                url,
                &[
                    "secrets",
                    "rotate-key",
                    "--secret-key-file",
                    &a_key.display().to_string(),
                ],
            ));
            if e.contains("2 switchboard server(s) are connected") {
                break;
            }
            assert!(Instant::now() < deadline, "{e}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let status = cli_json(url, &["migrate", "--status"]);
    assert_eq!(str_of(&status, "state"), "up to date", "{status:?}");
    assert_eq!(status["database_version"], status["binary_version"]);
    assert_eq!(status["unknown"], json!([]));
    assert_eq!(status["pending"], json!([]));
    drop((a, b));
}

pub fn older_binary(backend: Backend) {
    let db = TestDatabase::new(backend);
    let url = db.url();
    let fresh = cli_json(url, &["migrate", "--status"]);
    assert_eq!(fresh["database_version"], json!(null), "{fresh:?}");
    assert!(!fresh["pending"].as_array().unwrap().is_empty());
    cli_json(url, &["migrate"]);
    let status = cli_json(url, &["migrate", "--status"]);
    let binary = str_of(&status, "binary_version").to_owned();
    let future = "99991231000001";
    sql(
        &db,
        &format!(
            "INSERT INTO __diesel_schema_migrations (version, run_on) VALUES ('{future}', CURRENT_TIMESTAMP)"
        ),
    );
    let status = cli_json(url, &["migrate", "--status"]);
    assert_eq!(status["unknown"], json!([future]), "{status:?}");
    assert_eq!(str_of(&status, "database_version"), future);
    assert!(str_of(&status, "state").starts_with("newer than this binary"));
    let check = |out: &CliOutput| {
        let e = expect_error(out);
        assert!(
            e.contains(&format!("schema is at version {future}"))
                && e.contains(&format!("its latest: {binary}"))
                && e.contains(env!("CARGO_PKG_VERSION")),
            "{backend}: {e}"
        );
    };
    check(&cli(url, &["migrate"]));
    check(&cli(
        url,
        &[
            "keys",
            "list",
            "--user-id",
            &uuid::Uuid::new_v4().to_string(),
        ],
    ));
    let data = TempDir::new();
    let e = refused_serve(url, data.path(), &[]);
    assert!(
        e.contains(&format!("schema is at version {future}")),
        "{backend}: {e}"
    );
    // Nothing was changed: without the newer release's row, everything opens again.
    sql(
        &db,
        &format!("DELETE FROM __diesel_schema_migrations WHERE version = '{future}'"),
    );
    let status = cli_json(url, &["migrate", "--status"]);
    assert_eq!(str_of(&status, "state"), "up to date");
}
