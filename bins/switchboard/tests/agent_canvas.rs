//! OpenHands' browser client, Agent Canvas (npm `@openhands/agent-canvas` 1.20.0), against
//! Switchboard alone (issue 25), in a real headless Chromium: the real server serves the
//! client's `build/` at `/` (`--web-client`) and runs the real agent server as its sandboxes
//! (a warm one ready) with the fake LLM; `scripts/agent-canvas/walk.py` (playwright from PyPI
//! driving Debian's `chromium`) then walks the client — the list loads with the backend
//! connected, "say hello" sent from the home page opens a conversation that shows the agent's
//! reply and finishes, a reload keeps it, the settings, LLM, secrets and profiles pages load —
//! and records every request the page made with its status (docs/API.md, The browser walk).
//! The server's operator provides the LLM (`--llm-*`): on SQLite the member still saves a key
//! of their own from the LLM page first; on PostgreSQL they enter none and start at once, on
//! the operator's LLM that their settings show (issue 31).
//!
//! Where the OpenID provider of the sign-in tests can run (`scripts/oidc-provider/setup.sh`),
//! the server signs people in through it (issue 34) and the walk uses a key that a member,
//! signed in through the provider's forms, made on the account page; elsewhere the owner's
//! bootstrap key.
//!
//! Needs what `scripts/agent-canvas/setup.sh` installs (chromium, the playwright venv, the
//! client package) and the real agent server (`scripts/e2e.sh`); without one of them it says
//! which and passes. The requests table is written to `$AGENT_CANVAS_REQUESTS` (default:
//! the system's temporary directory), one file per backend.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;
use switchboard_testkit::{Backend, TestDatabase};

/// Paths the client asks for that are not Switchboard's to answer: OpenHands' automation
/// service (a separate product Switchboard does not provide).
const NOT_SWITCHBOARDS: &[&str] = &["^/api/automation/"];

fn env_path(name: &str, default: &str) -> PathBuf {
    std::env::var_os(name).map_or_else(|| PathBuf::from(default), PathBuf::from)
}

/// What the walk needs, or why it cannot run here.
struct Prerequisites {
    chromium: PathBuf,
    python: PathBuf,
    build: PathBuf,
    agent_server: Option<PathBuf>,
}

fn prerequisites() -> Result<Prerequisites, String> {
    let chromium = env_path("CHROMIUM", "/usr/bin/chromium");
    // scripts/agent-canvas/setup.sh's defaults: under ${TMPDIR:-/tmp}.
    let temp = std::env::temp_dir();
    let venv = std::env::var_os("CANVAS_VENV")
        .map_or_else(|| temp.join("agent-canvas-venv"), PathBuf::from);
    let build = std::env::var_os("CANVAS_DIR")
        .map_or_else(|| temp.join("agent-canvas"), PathBuf::from)
        .join("package/build");
    let python = venv.join("bin/python");
    if !chromium.is_file() {
        return Err(format!(
            "no chromium at {} (Debian's package; scripts/agent-canvas/setup.sh installs it)",
            chromium.display()
        ));
    }
    let has_playwright = Command::new(&python)
        .args(["-c", "import playwright"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_playwright {
        return Err(format!(
            "no playwright venv at {} (scripts/agent-canvas/setup.sh makes it)",
            venv.display()
        ));
    }
    if !build.join("index.html").is_file() {
        return Err(format!(
            "no Agent Canvas build at {} (scripts/agent-canvas/setup.sh fetches the package)",
            build.display()
        ));
    }
    Ok(Prerequisites {
        chromium,
        python,
        build,
        agent_server: switchboard_testkit::real_agent_server(),
    })
}

/// One spec, `agent`, running the real agent server with the tests' environment.
fn real_agent_specs(data: &Path, agent_server: &Path) -> String {
    let env: serde_json::Map<String, serde_json::Value> =
        switchboard_testkit::REAL_AGENT_SERVER_ENV
            .iter()
            .map(|(k, v)| ((*k).to_owned(), serde_json::json!(v)))
            .collect();
    let specs = data.join("specs.json");
    std::fs::write(
        &specs,
        serde_json::json!([{"id": "agent", "command": [agent_server.display().to_string()],
            "initial_env": env}])
        .to_string(),
    )
    .unwrap();
    specs.display().to_string()
}

#[test]
fn agent_canvas_walks_through_switchboard() {
    let p = match prerequisites() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("agent canvas walk skipped: {why}");
            return;
        }
    };
    for backend in [Backend::Sqlite, Backend::Postgres] {
        walk(&p, backend);
    }
}

fn walk(p: &Prerequisites, backend: Backend) {
    let db = TestDatabase::new(backend);
    let data = TempDir::new();
    let data_dir = data.path().display().to_string();
    let _end = EndProcessesUnder(data.path().to_path_buf());
    let (llm, llm_base) = fake_llm();
    let build = p.build.display().to_string();
    let mut args = vec![
        "--data-dir".to_owned(),
        data_dir,
        "--web-client".to_owned(),
        build,
        "--llm-model".to_owned(),
        "openai/fake-model".to_owned(),
        "--llm-base-url".to_owned(),
        llm_base.clone(),
    ];
    let start = p.agent_server.is_some();
    if let Some(agent_server) = &p.agent_server {
        let specs = real_agent_specs(data.path(), agent_server);
        args.extend(
            [
                "--sandbox-specs",
                &specs,
                "--sandbox-start-timeout",
                "360",
                "--warm-sandboxes",
                "1",
            ]
            .map(str::to_owned),
        );
    }
    // The organization and its owner first, so a sign-in rule can name the organization.
    let boot = cli_json(db.url(), &["bootstrap"]);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let callback = format!("http://127.0.0.1:{port}/login/callback");
    let provider = match switchboard_testkit::oidc::unavailable() {
        None => Some(switchboard_testkit::oidc::OidcProvider::start(
            &[&callback],
            3600,
        )),
        Some(why) => {
            eprintln!("{backend}: the walk uses the bootstrap key: {why}");
            None
        }
    };
    let secret = data.path().join("oidc-client-secret");
    if let Some(provider) = &provider {
        std::fs::write(&secret, switchboard_testkit::oidc::CLIENT_SECRET).unwrap();
        args.extend([
            "--oidc-issuer".to_owned(),
            provider.issuer.clone(),
            "--oidc-client-id".to_owned(),
            switchboard_testkit::oidc::CLIENT_ID.to_owned(),
            "--oidc-client-secret-file".to_owned(),
            secret.display().to_string(),
            "--oidc-redirect-url".to_owned(),
            callback.clone(),
            "--oidc-member-rule".to_owned(),
            format!("domain:example.com={}:owner", str_of(&boot, "org_id")),
        ]);
    }
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::spawn_bound(
        &[],
        &format!("127.0.0.1:{port}"),
        db.url(),
        ServeOptions {
            args: arg_refs,
            env: vec![("LLM_API_KEY", "fake-key")],
        },
    );
    let key = match &provider {
        Some(_) => key_from_the_account_page(&server.address, &callback),
        None => str_of(&boot, "api_key").to_owned(),
    };
    if start {
        wait_warm(&server, backend);
    }
    let out_dir = env_path(
        "AGENT_CANVAS_REQUESTS",
        &std::env::temp_dir().display().to_string(),
    );
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = out_dir.join(format!("agent-canvas-requests-{backend}.md"));
    let shots = data.path().join("screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/agent-canvas/walk.py");
    let mut walk = Command::new(&p.python);
    walk.arg(script)
        .args(["--base", &server.address, "--key", &key])
        .arg("--chromium")
        .arg(&p.chromium)
        .arg("--out")
        .arg(&out)
        .arg("--shots")
        .arg(&shots);
    for path in NOT_SWITCHBOARDS {
        walk.args(["--allow-missing", path]);
    }
    if start && backend == Backend::Sqlite {
        walk.args([
            "--llm-model",
            "openai/fake-model",
            "--llm-base-url",
            &llm_base,
        ]);
    } else if !start {
        eprintln!(
            "{backend}: the start step is left out: no real agent server (scripts/e2e.sh installs it)"
        );
        walk.arg("--skip-start");
    }
    let result = walk.output().expect("running walk.py");
    let stdout = String::from_utf8_lossy(&result.stdout);
    eprintln!("{backend}: walk.py:\n{stdout}\nrequests: {}", out.display());
    assert!(
        result.status.success(),
        "{backend}: the walk failed:\n{stdout}\n{}\nserver:\n{}",
        String::from_utf8_lossy(&result.stderr),
        server.stderr_lines().join("\n")
    );
    let table = std::fs::read_to_string(&out).unwrap();
    let mut expected = vec![
        "| GET | `/api/keys/current` | 200 |",
        "| GET | `/api/v1/app-conversations/search?limit=20&sort_order=UPDATED_AT_DESC` | 200 |",
        "| GET | `/api/v1/settings` | 200 |",
        "| GET | `/api/v1/config/providers/search` | 200 |",
        "| GET | `/api/v1/skills/search?limit=100` | 200 |",
        "| GET | `/api/agent-profiles` | 200 |",
    ];
    if start {
        // The start, and the live events through Switchboard's own address.
        expected.extend([
            "| POST | `/api/v1/app-conversations` | 200 |",
            "| WS | `/sandboxes/",
        ]);
    }
    for seen in expected {
        assert!(
            table.contains(seen),
            "{backend}: {seen} not in the requests:\n{table}"
        );
    }
    drop(llm);
}

/// A key a member made on the account page (issue 34): alice signs in through the provider's
/// forms (the rule makes her an owner) and creates one.
fn key_from_the_account_page(base: &str, callback: &str) -> String {
    use switchboard_testkit::oidc::{Browser, hidden_value};
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let browser = Browser::new();
        let start = format!("{base}/login?next=/account");
        let at = browser
            .sign_in_at_provider(&start, "alice", "alice-password", callback)
            .await;
        let back = at.location.clone().unwrap_or_else(|| panic!("{at:?}"));
        let page = browser.follow(browser.get(&back).await, None).await;
        assert_eq!(page.status, 200, "{page:?}");
        let csrf = hidden_value(&page.body, "csrf").expect("the page's token");
        let made = browser
            .post_form(
                &format!("{base}/account/keys"),
                &[("csrf", &csrf), ("name", "agent canvas")],
            )
            .await;
        made.body
            .split("id=\"new-key\">")
            .nth(1)
            .and_then(|r| r.split('<').next())
            .unwrap_or_else(|| panic!("no key on the page: {}", made.body))
            .to_owned()
    })
}
