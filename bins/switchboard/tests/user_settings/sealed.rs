//! No value set appears in any answer but the documented ones, in the server's log, or in the
//! database's dump.

use switchboard_testkit::Backend;

use crate::user_settings::rig::{OPERATOR_KEY, Rig, VALUES};

pub fn every_value_stays_sealed(r: &Rig, backend: Backend) {
    let mut leaks = Vec::new();
    for text in r.seen.borrow().iter() {
        for v in VALUES {
            if text.contains(v) {
                leaks.push(format!("answer: {v}: {text}"));
            }
        }
    }
    let log = r.server.stderr_lines().join("\n");
    assert!(
        log.contains("a sandbox read its owner's secret"),
        "{backend}: reads are logged"
    );
    for v in VALUES.iter().chain([&OPERATOR_KEY]) {
        if let Some(line) = log.lines().find(|l| l.contains(v)) {
            leaks.push(format!("log: {v}: {line}"));
        }
    }
    let dump = match backend {
        Backend::Sqlite => {
            let path = r.db.url().trim_start_matches("sqlite://").to_owned();
            std::process::Command::new("sqlite3")
                .arg(path)
                .arg(".dump")
                .output()
                .unwrap()
        }
        Backend::Postgres => std::process::Command::new("pg_dump")
            .args(["--data-only", r.db.url()])
            .output()
            .unwrap(),
    };
    let dump = String::from_utf8_lossy(&dump.stdout).into_owned();
    assert!(
        dump.contains("user_settings") || dump.contains("user_secrets"),
        "{backend}: the dump ran"
    );
    for v in VALUES {
        if dump.contains(v) {
            leaks.push(format!("database: {v}"));
        }
    }
    assert!(leaks.is_empty(), "{backend}:\n{}", leaks.join("\n"));
}
