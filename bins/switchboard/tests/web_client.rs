//! `switchboard serve --web-client DIR` (issue 25): a browser client's built files at `/`
//! beside the API, over HTTP to the real server, on both backends (needs no browser; the
//! browser walk is agent_canvas.rs). And `--llm-model-allow` / `--skills-dir` from the flags to
//! the routes.

use crate::common;

use common::*;
use switchboard_testkit::{Backend, TestDatabase};

fn client_dir() -> TempDir {
    let dir = TempDir::new();
    std::fs::write(
        dir.path().join("index.html"),
        "<!doctype html><title>client</title>",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("assets")).unwrap();
    std::fs::write(dir.path().join("assets/app-1a2b.js"), "console.log(1)").unwrap();
    std::fs::write(dir.path().join("favicon.svg"), "<svg/>").unwrap();
    dir
}

fn get(server: &Server, path: &str) -> reqwest::blocking::Response {
    client().get(server.url(path)).send().unwrap()
}

fn header(r: &reqwest::blocking::Response, name: &str) -> String {
    r.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

fn serves_the_client_beside_the_api(backend: Backend) {
    let db = TestDatabase::new(backend);
    let dir = client_dir();
    let skills = TempDir::new();
    std::fs::create_dir_all(skills.path().join("global")).unwrap();
    std::fs::write(
        skills.path().join("global/git.md"),
        "---\nname: git\ntriggers: [git]\n---\n",
    )
    .unwrap();
    let web = dir.path().display().to_string();
    let skills_dir = skills.path().display().to_string();
    let server = Server::spawn_with(
        db.url(),
        ServeOptions {
            args: vec![
                "--web-client",
                &web,
                "--llm-model-allow",
                "anthropic/*,openai/gpt-5.6",
                "--skills-dir",
                &skills_dir,
            ],
            ..Default::default()
        },
    );
    let key = server.bootstrap_key();

    // The client's index at / and at its own routes; its files as they are.
    for path in [
        "/",
        "/conversations/0b8f2a4c-1d2e-4f5a-9b6c-7d8e9f0a1b2c",
        "/settings/llm",
    ] {
        let r = get(&server, path);
        assert_eq!(r.status().as_u16(), 200, "{backend} {path}");
        assert_eq!(header(&r, "content-type"), "text/html; charset=utf-8");
        assert_eq!(header(&r, "cache-control"), "no-cache");
        assert!(r.text().unwrap().contains("<title>client</title>"));
    }
    let r = get(&server, "/assets/app-1a2b.js");
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(header(&r, "content-type"), "text/javascript; charset=utf-8");
    assert!(header(&r, "cache-control").contains("immutable"));
    assert_eq!(r.text().unwrap(), "console.log(1)");
    assert_eq!(
        header(&get(&server, "/favicon.svg"), "content-type"),
        "image/svg+xml"
    );
    // A missing file and the API's unknown paths: the API's 404.
    for path in ["/assets/gone.js", "/api/v1/nothing", "/sockets/nothing"] {
        let r = get(&server, path);
        assert_eq!(r.status().as_u16(), 404, "{backend} {path}");
        assert_eq!(r.text().unwrap(), r#"{"detail":"Not Found"}"#, "{path}");
    }
    // Paths that climb out of the directory never reach a file outside it: at most the
    // client's index, as for any route of its own.
    for path in [
        "/../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/assets/..%2f..%2fetc/passwd",
    ] {
        let r = get(&server, path);
        let text = r.text().unwrap();
        assert!(!text.contains("root:"), "{backend} {path}: {text}");
        assert!(
            text.contains("<title>client</title>") || text == r#"{"detail":"Not Found"}"#,
            "{path}: {text}"
        );
    }
    // The API's own routes are untouched, and a write to the client's paths is not served.
    assert_eq!(get(&server, "/alive").text().unwrap(), r#"{"status":"ok"}"#);
    let r = client().post(server.url("/settings")).send().unwrap();
    assert_eq!(r.status().as_u16(), 404);

    // The flags reach the routes.
    let (code, page) = send_json(
        client()
            .get(server.url("/api/v1/config/providers/search"))
            .header("Authorization", format!("Bearer {key}")),
    );
    assert_eq!(code, 200);
    let names: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["anthropic", "openai"], "{backend}");
    let (code, page) = send_json(
        client()
            .get(server.url("/api/v1/skills/search"))
            .header("Authorization", format!("Bearer {key}")),
    );
    assert_eq!(code, 200);
    assert_eq!(
        page["items"],
        serde_json::json!([{"name": "git", "type": "knowledge", "source": "global", "triggers": ["git"]}])
    );
}

#[test]
fn serves_the_client_beside_the_api_sqlite() {
    serves_the_client_beside_the_api(Backend::Sqlite);
}

#[test]
fn serves_the_client_beside_the_api_postgres() {
    serves_the_client_beside_the_api(Backend::Postgres);
}

#[test]
fn bad_flags_are_refused_at_start() {
    let db = TestDatabase::new(Backend::Sqlite);
    let empty = TempDir::new();
    let serve = |extra: &[&str]| {
        let mut c = command(empty.path());
        c.args(["serve", "--bind", "127.0.0.1:0", "--database-url", db.url()])
            .args(extra);
        output(c)
    };
    let dir = empty.path().display().to_string();
    let err = expect_error(&serve(&["--web-client", &dir]));
    assert!(err.contains("has no index.html"), "{err}");
    let err = expect_error(&serve(&["--llm-model-allow", "gpt-5"]));
    assert!(err.contains("provider/name"), "{err}");
}
