//! The operator commands of the real binary, on SQLite and PostgreSQL: each prints exactly
//! one JSON object on stdout and exits 0, or prints a message on stderr, nothing on stdout,
//! and exits non-zero.

use crate::common;

use common::{TempDir, cli, cli_error, cli_json, command, expect_json, output, str_of};
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const UNKNOWN_UUID: &str = "00000000-0000-4000-8000-000000000001";

#[test]
fn migrate_applies_once_then_nothing() {
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        let first = cli_json(db.url(), &["migrate"]);
        let applied = first["applied"].as_array().expect("applied is a list");
        assert!(!applied.is_empty(), "{backend}: {first:?}");
        assert!(applied.iter().all(Value::is_string), "{backend}: {first:?}");
        assert_eq!(first.len(), 1, "{backend}: {first:?}");
        let second = cli_json(db.url(), &["migrate"]);
        assert_eq!(Value::Object(second), json!({ "applied": [] }), "{backend}");
    }
}

#[test]
fn bootstrap_twice_keeps_org_and_user_and_issues_a_new_key() {
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        let first = cli_json(db.url(), &["bootstrap"]);
        let mut keys: Vec<&str> = first.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["api_key", "org_id", "user_id"], "{backend}");
        for k in ["org_id", "user_id"] {
            uuid_str(str_of(&first, k));
        }
        assert!(str_of(&first, "api_key").starts_with("sb_"), "{backend}");

        let second = cli_json(db.url(), &["bootstrap"]);
        assert_eq!(first["org_id"], second["org_id"], "{backend}");
        assert_eq!(first["user_id"], second["user_id"], "{backend}");
        assert_ne!(first["api_key"], second["api_key"], "{backend}");

        // Both keys are listed, without secrets.
        let list = cli_json(
            db.url(),
            &["keys", "list", "--user-id", str_of(&first, "user_id")],
        );
        let items = list["items"].as_array().unwrap();
        assert_eq!(items.len(), 2, "{backend}: {list:?}");
        let text = serde_json::to_string(&list).unwrap();
        for secret in [str_of(&first, "api_key"), str_of(&second, "api_key")] {
            assert!(
                !text.contains(secret),
                "{backend}: a secret is listed: {text}"
            );
        }

        // Another org name and e-mail make another org and owner.
        let other = cli_json(
            db.url(),
            &[
                "bootstrap",
                "--org-name",
                "acme",
                "--email",
                "root@acme.test",
            ],
        );
        assert_ne!(other["org_id"], first["org_id"], "{backend}");
        assert_ne!(other["user_id"], first["user_id"], "{backend}");
    }
}

#[test]
fn users_members_and_keys() {
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        let url = db.url();
        let boot = cli_json(url, &["bootstrap"]);
        let org = str_of(&boot, "org_id");

        let user = cli_json(
            url,
            &[
                "users",
                "create",
                "--email",
                "bob@example.com",
                "--name",
                "Bob",
            ],
        );
        assert_eq!(user.len(), 1, "{backend}: {user:?}");
        let bob = str_of(&user, "user_id");
        uuid_str(bob);

        let member = cli_json(
            url,
            &[
                "members",
                "add",
                "--org-id",
                org,
                "--user-id",
                bob,
                "--role",
                "admin",
            ],
        );
        assert_eq!(
            Value::Object(member),
            json!({ "org_id": org, "user_id": bob, "role": "admin" }),
            "{backend}"
        );

        let bound = cli_json(
            url,
            &[
                "keys",
                "create",
                "--user-id",
                bob,
                "--org-id",
                org,
                "--name",
                "ci",
                "--expires-at",
                "2099-01-02T03:04:05Z",
            ],
        );
        let mut fields: Vec<&str> = bound.keys().map(String::as_str).collect();
        fields.sort_unstable();
        assert_eq!(
            fields,
            ["api_key", "expires_at", "id", "name", "org_id"],
            "{backend}"
        );
        assert!(str_of(&bound, "api_key").starts_with("sb_"), "{backend}");
        assert_eq!(bound["name"], "ci", "{backend}");
        assert_eq!(bound["org_id"], org, "{backend}");
        assert!(
            str_of(&bound, "expires_at").starts_with("2099-01-02T03:04:05"),
            "{backend}: {bound:?}"
        );

        let unbound = cli_json(url, &["keys", "create", "--user-id", bob]);
        assert_eq!(unbound["org_id"], Value::Null, "{backend}");
        assert_eq!(unbound["expires_at"], Value::Null, "{backend}");
        assert_eq!(unbound["name"], "cli", "{backend}");
        assert_ne!(unbound["id"], bound["id"], "{backend}");

        let list = cli_json(url, &["keys", "list", "--user-id", bob]);
        assert_eq!(list.len(), 1, "{backend}: {list:?}");
        let items = list["items"].as_array().unwrap();
        assert_eq!(items.len(), 2, "{backend}: {list:?}");
        let mut ids: Vec<&str> = items.iter().map(|i| i["id"].as_str().unwrap()).collect();
        ids.sort_unstable();
        let mut expected = vec![str_of(&bound, "id"), str_of(&unbound, "id")];
        expected.sort_unstable();
        assert_eq!(ids, expected, "{backend}");
        let text = serde_json::to_string(&list).unwrap();
        for secret in [str_of(&bound, "api_key"), str_of(&unbound, "api_key")] {
            assert!(
                !text.contains(secret),
                "{backend}: a secret is listed: {text}"
            );
        }
        for item in items {
            let obj = item.as_object().unwrap();
            for forbidden in ["api_key", "secret", "hash", "key_hash"] {
                assert!(!obj.contains_key(forbidden), "{backend}: {item}");
            }
            assert_eq!(item["revoked"], false, "{backend}: {item}");
        }

        let revoked = cli_json(url, &["keys", "revoke", "--id", str_of(&bound, "id")]);
        assert_eq!(
            Value::Object(revoked),
            json!({ "id": bound["id"], "revoked": true }),
            "{backend}"
        );
        let list = cli_json(url, &["keys", "list", "--user-id", bob]);
        for item in list["items"].as_array().unwrap() {
            assert_eq!(
                item["revoked"],
                item["id"] == bound["id"],
                "{backend}: {item}"
            );
        }
    }
}

#[test]
fn errors_go_to_stderr_with_nothing_on_stdout() {
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        let url = db.url();
        let boot = cli_json(url, &["bootstrap"]);
        let org = str_of(&boot, "org_id");
        let owner = str_of(&boot, "user_id");

        let e = cli_error(
            url,
            &[
                "members",
                "add",
                "--org-id",
                "nope",
                "--user-id",
                owner,
                "--role",
                "admin",
            ],
        );
        assert!(e.contains("UUID"), "{backend}: {e}");
        let e = cli_error(url, &["keys", "create", "--user-id", "not-a-uuid"]);
        assert!(e.contains("UUID"), "{backend}: {e}");
        let e = cli_error(url, &["keys", "revoke", "--id", "123"]);
        assert!(e.contains("UUID"), "{backend}: {e}");

        let e = cli_error(
            url,
            &[
                "members",
                "add",
                "--org-id",
                org,
                "--user-id",
                owner,
                "--role",
                "boss",
            ],
        );
        assert!(e.contains("role"), "{backend}: {e}");

        let e = cli_error(url, &["keys", "create", "--user-id", UNKNOWN_UUID]);
        assert!(e.to_lowercase().contains("user"), "{backend}: {e}");
        let e = cli_error(url, &["keys", "list", "--user-id", UNKNOWN_UUID]);
        assert!(e.to_lowercase().contains("user"), "{backend}: {e}");
        let e = cli_error(
            url,
            &[
                "members",
                "add",
                "--org-id",
                org,
                "--user-id",
                UNKNOWN_UUID,
                "--role",
                "member",
            ],
        );
        assert!(!e.is_empty(), "{backend}");
        let e = cli_error(url, &["keys", "revoke", "--id", UNKNOWN_UUID]);
        assert!(!e.is_empty(), "{backend}");

        cli_json(url, &["users", "create", "--email", "dup@example.com"]);
        let e = cli_error(url, &["users", "create", "--email", "dup@example.com"]);
        assert!(e.contains("dup@example.com"), "{backend}: {e}");
        let e = cli_error(url, &["users", "create", "--email", "no-at-sign"]);
        assert!(e.contains('@'), "{backend}: {e}");

        let e = cli_error(
            url,
            &[
                "keys",
                "create",
                "--user-id",
                owner,
                "--expires-at",
                "2000-01-01T00:00:00Z",
            ],
        );
        assert!(e.contains("past"), "{backend}: {e}");
        let e = cli_error(
            url,
            &[
                "keys",
                "create",
                "--user-id",
                owner,
                "--expires-at",
                "tomorrow",
            ],
        );
        assert!(e.contains("expires-at"), "{backend}: {e}");

        // A missing argument is a usage error, also on stderr only.
        let e = cli_error(url, &["users", "create"]);
        assert!(e.contains("--email"), "{backend}: {e}");

        // None of the failures issued a key: only the bootstrap key exists.
        let list = cli_json(url, &["keys", "list", "--user-id", owner]);
        assert_eq!(list["items"].as_array().unwrap().len(), 1, "{backend}");
    }
}

#[test]
fn database_url_from_the_environment() {
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        let dir = TempDir::new();
        let mut cmd = command(dir.path());
        cmd.env("SWITCHBOARD_DATABASE_URL", db.url()).arg("migrate");
        let first = expect_json(&output(cmd));
        assert!(
            !first["applied"].as_array().unwrap().is_empty(),
            "{backend}: {first:?}"
        );
        // The same database, named with the flag, is up to date.
        let second = cli_json(db.url(), &["migrate"]);
        assert_eq!(Value::Object(second), json!({ "applied": [] }), "{backend}");
        // No SQLite file was made in the working directory.
        assert!(!dir.path().join("switchboard-data").exists(), "{backend}");

        // The flag wins over the environment.
        let other = TestDatabase::new(backend);
        let mut cmd = command(dir.path());
        cmd.env("SWITCHBOARD_DATABASE_URL", db.url()).args([
            "--database-url",
            other.url(),
            "migrate",
        ]);
        let third = expect_json(&output(cmd));
        assert!(
            !third["applied"].as_array().unwrap().is_empty(),
            "{backend}: {third:?}"
        );
    }
}

#[test]
fn data_dir_holds_the_default_sqlite_database() {
    let dir = TempDir::new();
    let data = dir.path().join("nested").join("data");
    let mut cmd = command(dir.path());
    cmd.arg("--data-dir").arg(&data).arg("migrate");
    let first = expect_json(&output(cmd));
    assert!(
        !first["applied"].as_array().unwrap().is_empty(),
        "{first:?}"
    );
    assert!(data.join("switchboard.sqlite").is_file());

    // The environment variable names the same folder.
    let mut cmd = command(dir.path());
    cmd.env("SWITCHBOARD_DATA_DIR", &data).arg("migrate");
    let second = expect_json(&output(cmd));
    assert_eq!(Value::Object(second), json!({ "applied": [] }));

    // Without any of them: ./switchboard-data/switchboard.sqlite.
    let mut cmd = command(dir.path());
    cmd.arg("bootstrap");
    let boot = expect_json(&output(cmd));
    assert!(str_of(&boot, "api_key").starts_with("sb_"));
    assert!(
        dir.path()
            .join("switchboard-data")
            .join("switchboard.sqlite")
            .is_file()
    );
}

#[test]
fn usage_errors_do_not_touch_the_database() {
    let dir = TempDir::new();
    let out = output({
        let mut c = command(dir.path());
        c.args(["members", "add", "--org-id", "x"]);
        c
    });
    common::expect_error(&out);
    assert!(!dir.path().join("switchboard-data").exists());
    // A bad value is caught before the database is opened, too.
    let out = cli(
        "sqlite:///nonexistent-dir/x.sqlite",
        &["keys", "list", "--user-id", "x"],
    );
    let e = common::expect_error(&out);
    assert!(e.contains("UUID"), "{e}");
}

#[track_caller]
fn uuid_str(s: &str) {
    assert!(
        s.len() == 36 && s.chars().filter(|c| *c == '-').count() == 4,
        "not a UUID: {s}"
    );
}
