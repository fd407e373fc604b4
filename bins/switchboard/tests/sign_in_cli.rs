//! A new member signs in with no operator command (issue 34), against the real binary: the
//! server signs people in through a real OpenID provider (npm `oidc-provider`) with a rule
//! making the `engineering` group members; `openhands login --server-url` (openhands 1.16.0,
//! unchanged, an empty home: no key) runs the device flow while the member, signed in through
//! the provider's forms, approves its code on `/device`; the CLI stores the key it got and the
//! key is the member's. Then an admin removes the member through the API, and the CLI's key
//! is refused at once. On both backends. Without the CLI's venv (`scripts/e2e.sh prepare`),
//! Node or the provider's packages (`scripts/oidc-provider/setup.sh`) the test says so and
//! passes.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use serde_json::json;
use switchboard_testkit::oidc::{
    Browser, CLIENT_ID, CLIENT_SECRET, OidcProvider, hidden_value, unavailable,
};
use switchboard_testkit::{Backend, TestDatabase};

/// How long the CLI may take (its imports alone take 10 to 60 s, by load).
const CLI_LIMIT: Duration = Duration::from_secs(300);

#[test]
fn device_login_sqlite() {
    device_login(Backend::Sqlite);
}

#[test]
fn device_login_postgres() {
    device_login(Backend::Postgres);
}

/// The first `XXXX-XXXX` user code in a line of the CLI's output.
fn user_code_in(line: &str) -> Option<String> {
    const LETTERS: &str = "BCDFGHJKLMNPQRSTVWXZ";
    line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .find(|w| {
            w.len() == 9
                && w.as_bytes()[4] == b'-'
                && w.chars().filter(|c| *c != '-').all(|c| LETTERS.contains(c))
        })
        .map(str::to_owned)
}

fn device_login(backend: Backend) {
    let Some(cli) = switchboard_testkit::openhands_cli() else {
        eprintln!(
            "skipped: no OpenHands CLI venv on this machine (scripts/e2e.sh prepare makes it)"
        );
        return;
    };
    if let Some(why) = unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let db = TestDatabase::new(backend);
    let boot = cli_json(db.url(), &["bootstrap"]);
    let (org, owner_key) = (
        str_of(&boot, "org_id").to_owned(),
        str_of(&boot, "api_key").to_owned(),
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let callback = format!("{base}/login/callback");
    let provider = OidcProvider::start(&[&callback], 3600);
    let secrets = TempDir::new();
    let secret_file = secrets.path().join("oidc-client-secret");
    std::fs::write(&secret_file, CLIENT_SECRET).unwrap();
    let rule = format!("group:engineering={org}:member");
    let secret_path = secret_file.display().to_string();
    let server = Server::spawn_bound(
        &[],
        &format!("127.0.0.1:{port}"),
        db.url(),
        ServeOptions {
            args: vec![
                "--oidc-issuer",
                &provider.issuer,
                "--oidc-client-id",
                CLIENT_ID,
                "--oidc-client-secret-file",
                &secret_path,
                "--oidc-redirect-url",
                &callback,
                "--oidc-scopes",
                "email profile groups",
                "--oidc-member-rule",
                &rule,
            ],
            env: vec![],
        },
    );

    // `openhands login` with no key: the device flow. Its output names the code.
    let home = TempDir::new();
    let persistence = home.path().join(".openhands");
    let mut child = Command::new(&cli)
        .args(["login", "--server-url", &base])
        .env("HOME", home.path())
        .env("OPENHANDS_PERSISTENCE_DIR", &persistence)
        .env("BROWSER", "true")
        .env("NO_COLOR", "1")
        .env("COLUMNS", "200")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running openhands login");
    let (tx, rx) = mpsc::channel::<String>();
    for out in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
    }
    drop(tx);
    let mut printed = Vec::new();
    let code = loop {
        match rx.recv_timeout(CLI_LIMIT) {
            Ok(line) => {
                let code = user_code_in(&line);
                printed.push(line);
                if let Some(c) = code {
                    break c;
                }
            }
            Err(_) => {
                let _ = child.kill();
                panic!("{backend}: the CLI showed no code:\n{}", printed.join("\n"));
            }
        }
    };

    // The member signs in through the provider and approves the code.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let approved = rt.block_on(async {
        let browser = Browser::new();
        let start = format!("{base}/device?user_code={code}");
        let at_provider = browser
            .sign_in_at_provider(&start, "alice", "alice-password", &callback)
            .await;
        let back = at_provider
            .location
            .clone()
            .unwrap_or_else(|| panic!("{at_provider:?}"));
        let page = browser.follow(browser.get(&back).await, None).await;
        assert_eq!(page.status, 200, "{backend}: {page:?}");
        let csrf = hidden_value(&page.body, "csrf").expect("the page's token");
        browser
            .post_form(
                &format!("{base}/device"),
                &[
                    ("csrf", &csrf),
                    ("user_code", &code),
                    ("decision", "approve"),
                ],
            )
            .await
    });
    assert_eq!(approved.status, 200, "{backend}: {approved:?}");

    let status = wait_exit(&mut child, CLI_LIMIT);
    printed.extend(rx.try_iter());
    assert!(
        status.is_some_and(|s| s.success()),
        "{backend}: {status:?}\n{}",
        printed.join("\n")
    );
    let key_file = persistence.join("cloud/api_key.txt");
    let key = std::fs::read_to_string(&key_file)
        .unwrap_or_else(|e| {
            panic!(
                "{backend}: {}: {e}\n{}",
                key_file.display(),
                printed.join("\n")
            )
        })
        .trim()
        .to_owned();
    let (status, me) = send_json(
        client()
            .get(server.url("/api/v1/users/me"))
            .header("X-Access-Token", &key),
    );
    assert_eq!(
        (
            status,
            me["email"].clone(),
            me["org_id"].clone(),
            me["role"].clone()
        ),
        (200, json!("alice@example.com"), json!(org), json!("member")),
        "{backend}: {me}"
    );

    // An owner removes the new member through the API: the CLI's key stops acting at once.
    let (status, _) = send_json(
        client()
            .delete(server.url(&format!(
                "/api/organizations/{org}/members/{}",
                me["user_id"].as_str().unwrap()
            )))
            .header("X-Access-Token", &owner_key),
    );
    assert_eq!(status, 200, "{backend}");
    let (status, _) = send_json(
        client()
            .get(server.url("/api/v1/users/me"))
            .header("X-Access-Token", &key),
    );
    assert_eq!(status, 404, "{backend}: no organization left to act in");
    drop(provider);
}

/// Waits for `child` to exit, at most `limit`; kills it past that.
fn wait_exit(child: &mut std::process::Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    None
}
