//! `switchboard backup` while a server runs and a sandbox lives; `restore` into a new database
//! of the same backend; the copy serves the data back under a new installation id and never
//! adopts or stops the original's sandbox; what restore refuses; `--replaces-original`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

use crate::common::{
    ServeOptions, Server, TempDir, cli, cli_json, client, expect_error, sandbox_agent, send_json,
    standin_specs_file, str_of, wait_sandbox_status,
};
use crate::operations::replicas::fingerprint;

fn serve(url: &str, data: &Path, specs: &str) -> Server {
    let dir = data.display().to_string();
    Server::spawn_with(
        url,
        ServeOptions {
            args: vec!["--data-dir", &dir, "--sandbox-specs", specs],
            env: vec![],
        },
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn alive(pid: u64) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

fn restore(url: &str, from: &Path, data: &Path, extra: &[&str]) -> crate::common::CliOutput {
    let (from, data) = (from.display().to_string(), data.display().to_string());
    let mut args = vec!["restore", from.as_str(), "--data-dir", data.as_str()];
    args.extend_from_slice(extra);
    cli(url, &args)
}

pub fn backup_and_restore(backend: Backend) {
    let db = TestDatabase::new(backend);
    let url = db.url();
    let data = TempDir::new();
    let specs = standin_specs_file(data.path());
    let original = serve(url, data.path(), &specs);
    let key = original.bootstrap_key();
    let (code, body) = send_json(
        client()
            .post(original.url("/api/v1/secrets"))
            .header("X-Access-Token", &key)
            .json(&json!({"name": "DB_PASSWORD", "value": "hunter2", "description": "kept"})),
    );
    assert!(code < 300, "{backend}: {code} {body}");
    let (code, body) = send_json(
        client()
            .post(original.url("/api/v1/sandboxes"))
            .header("X-Access-Token", &key),
    );
    assert_eq!(code, 200, "{body}");
    let sandbox = str_of(body.as_object().unwrap(), "id").to_owned();
    wait_sandbox_status(&original, &key, &sandbox, "RUNNING");
    let (pid, _) = sandbox_agent(&sandbox).expect("the sandbox's agent server");

    // The backup, taken while the server runs.
    let backups = TempDir::new();
    let dest = backups.path().join("nightly");
    let data_arg = data.path().display().to_string();
    let made = cli_json(
        url,
        &[
            "backup",
            &dest.display().to_string(),
            "--data-dir",
            &data_arg,
        ],
    );
    let database = match backend {
        Backend::Sqlite => "database.sqlite3",
        Backend::Postgres => "database.pgdump",
    };
    assert_eq!(mode(&dest), 0o700);
    for f in ["manifest.json", "secret.key", database] {
        assert!(dest.join(f).is_file(), "{backend}: no {f}");
    }
    assert_eq!(mode(&dest.join("secret.key")), 0o600);
    assert!(made["database_bytes"].as_u64().unwrap() > 0, "{made:?}");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dest.join("manifest.json")).unwrap()).unwrap();
    let original_id = manifest["installation_id"].as_str().unwrap().to_owned();
    assert_eq!(manifest["database"], json!(database));
    assert_eq!(
        manifest["key_fingerprint"],
        json!(fingerprint(&data.path().join("secret.key")))
    );
    assert!(original_id.starts_with("sb-"), "{manifest}");
    // A backup goes only into a new or empty directory.
    let e = expect_error(&cli(
        url,
        &[
            "backup",
            &dest.display().to_string(),
            "--data-dir",
            &data_arg,
        ],
    ));
    assert!(e.contains("not empty"), "{e}");

    refusals(url, &dest, backend);

    // The copy: a new database, a new data directory.
    let copy_db = TestDatabase::new(backend);
    let copy_data = TempDir::new();
    let done = {
        let out = restore(copy_db.url(), &dest, copy_data.path(), &[]);
        crate::common::expect_json(&out)
    };
    assert_eq!(done["restored_from"], json!(original_id), "{done:?}");
    let copy_id = str_of(&done, "installation_id").to_owned();
    assert_ne!(copy_id, original_id);
    assert_eq!(done["sandboxes_detached"], json!(1), "{done:?}");
    assert_eq!(
        std::fs::read(copy_data.path().join("secret.key")).unwrap(),
        std::fs::read(data.path().join("secret.key")).unwrap()
    );

    // It serves the data back; the original's sandbox is MISSING there, and still running,
    // untouched, under the original.
    let copy_specs = standin_specs_file(copy_data.path());
    let copy = serve(copy_db.url(), copy_data.path(), &copy_specs);
    let listed = client()
        .get(copy.url("/api/v1/secrets/search"))
        .header("X-Access-Token", &key)
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(listed.contains("DB_PASSWORD"), "{backend}: {listed}");
    let missing = wait_sandbox_status(&copy, &key, &sandbox, "MISSING");
    assert!(
        missing["status_message"]
            .as_str()
            .is_some_and(|m| m.contains(&original_id) && m.contains("restored from a backup")),
        "{backend}: {missing}"
    );
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        alive(pid),
        "{backend}: the copy stopped the original's sandbox"
    );
    assert_eq!(sandbox_agent(&sandbox).map(|(p, _)| p), Some(pid));
    wait_sandbox_status(&original, &key, &sandbox, "RUNNING");
    drop(copy);

    // Every sealed value opens with the restored key (rotation opens each one).
    let rotated = cli_json(
        copy_db.url(),
        &[
            "secrets",
            "rotate-key",
            "--secret-key-file",
            &copy_data.path().join("secret.key").display().to_string(),
        ],
    );
    assert!(rotated["resealed"].as_u64().unwrap() >= 2, "{rotated:?}");

    // A copy that replaces the original keeps its id and its sandbox records.
    let twin_db = TestDatabase::new(backend);
    let twin_data = TempDir::new();
    let twin = crate::common::expect_json(&restore(
        twin_db.url(),
        &dest,
        twin_data.path(),
        &["--replaces-original"],
    ));
    assert_eq!(twin["installation_id"], json!(original_id), "{twin:?}");
    assert_eq!(twin["sandboxes_detached"], json!(0));
    drop(original);
}

/// What restore refuses, before it writes anything.
fn refusals(original_url: &str, dest: &Path, backend: Backend) {
    let data = TempDir::new();
    // Into the original's (non-empty) database.
    let e = expect_error(&restore(original_url, dest, data.path(), &[]));
    assert!(
        e.contains("not empty") || e.contains("exists"),
        "{backend}: {e}"
    );
    // Over a key file holding another key.
    let other = TestDatabase::new(backend);
    std::fs::write(data.path().join("secret.key"), "cd".repeat(32)).unwrap();
    std::fs::set_permissions(
        data.path().join("secret.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let e = expect_error(&restore(other.url(), dest, data.path(), &[]));
    assert!(e.contains("holds another key"), "{backend}: {e}");
    // Into another backend.
    let wrong = TestDatabase::new(match backend {
        Backend::Sqlite => Backend::Postgres,
        Backend::Postgres => Backend::Sqlite,
    });
    let e = expect_error(&restore(wrong.url(), dest, TempDir::new().path(), &[]));
    assert!(e.contains("restore into the same backend"), "{e}");
    // Not a backup.
    let e = expect_error(&restore(other.url(), data.path(), data.path(), &[]));
    assert!(e.contains("written by `switchboard backup`"), "{e}");
}
