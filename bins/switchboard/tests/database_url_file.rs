//! `--database-url-file` (env `SWITCHBOARD_DATABASE_URL_FILE`): the database URL read from a
//! file, as compose secrets and systemd credentials hand it over, on SQLite and PostgreSQL.

use crate::common;

use common::{TempDir, command, expect_error, expect_json, output, str_of};
use switchboard_testkit::{Backend, TestDatabase};

#[test]
fn the_url_from_a_file_opens_that_database() {
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        let dir = TempDir::new();
        let file = dir.path().join("database_url");
        // Surrounding whitespace (an editor's newline) is ignored.
        std::fs::write(&file, format!("  {}\n\n", db.url())).unwrap();

        let mut cmd = command(dir.path());
        cmd.arg("--database-url-file").arg(&file).arg("bootstrap");
        let made = expect_json(&output(cmd));

        // The same database through the plain flag: the key bootstrap issued is there.
        let mut cmd = command(dir.path());
        cmd.args(["--database-url", db.url(), "keys", "list", "--user-id"])
            .arg(str_of(&made, "user_id"));
        let listed = expect_json(&output(cmd));
        assert_eq!(
            listed["items"].as_array().map(Vec::len),
            Some(1),
            "{backend}: {listed:?}"
        );

        // The variable works as the flag does.
        let mut cmd = command(dir.path());
        cmd.env("SWITCHBOARD_DATABASE_URL_FILE", &file)
            .args(["migrate"]);
        let migrated = expect_json(&output(cmd));
        assert_eq!(migrated["applied"], serde_json::json!([]), "{backend}");
        // Nothing was made in the data directory: the URL named the database.
        assert!(
            !dir.path()
                .join("switchboard-data/switchboard.sqlite")
                .exists(),
            "{backend}: the default SQLite database was used"
        );
    }
}

#[test]
fn an_empty_missing_or_doubled_url_is_refused_with_its_reason() {
    let dir = TempDir::new();
    let empty = dir.path().join("empty");
    std::fs::write(&empty, " \n").unwrap();
    let mut cmd = command(dir.path());
    cmd.arg("--database-url-file").arg(&empty).arg("migrate");
    let err = expect_error(&output(cmd));
    assert!(
        err.contains("the database URL file") && err.contains("is empty"),
        "{err}"
    );

    let missing = dir.path().join("missing");
    let mut cmd = command(dir.path());
    cmd.arg("--database-url-file").arg(&missing).arg("migrate");
    let err = expect_error(&output(cmd));
    assert!(
        err.contains("reading the database URL file") && err.contains("missing"),
        "{err}"
    );

    let mut cmd = command(dir.path());
    cmd.arg("--database-url-file").arg(&empty).args([
        "--database-url",
        "sqlite:///nowhere.sqlite",
        "migrate",
    ]);
    let err = expect_error(&output(cmd));
    assert!(err.contains("cannot be used with"), "{err}");
}
