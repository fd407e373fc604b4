//! Each user's own LLM, settings and secrets (issue 21), through the real binary on both
//! backends with the stand-in agent server: the settings, profiles and secrets routes and
//! their validation; the 401/403/404/409 matrix (another member, another organization, a
//! revoked key, the session key of another sandbox); the sandbox's reads of its owner's
//! secrets; `users/me?expose_secrets=true`; no value set in any other answer, in the server's
//! log, or in the database's dump (sealed at rest); and what a conversation start takes (the
//! LLM by precedence, MCP, confirmation, the user's secrets) as the agent server received it.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const LLM_KEY: &str = "sk-user-Hq7Zp3Lw9Xv2Nc5Rt8Kd";
const PROFILE_KEY: &str = "sk-profile-Jm4Ys6Bf1Qa8Wz3Ue7Gh";
const SECRET_VALUE: &str = "secret-value-Tn5Vc2Lp9Rk7Xm3Qs";
const GITHUB_TOKEN: &str = "ghp_Gh8Zr2Mv6Nq4Kx9Lp3Wt7Ys1";
const SEARCH_KEY: &str = "tvly-Sk3Jd8Pq1Wm6Zr4Nx";
const MCP_KEY: &str = "mcp-key-Aq9Ze4Rt7Yu2Io5Pl";
const OPERATOR_KEY: &str = "sk-operator-Bv6Cx1Zn8Lk3Jh";
/// Every value set: none may appear anywhere but the two documented answers.
const VALUES: [&str; 6] = [
    LLM_KEY,
    PROFILE_KEY,
    SECRET_VALUE,
    GITHUB_TOKEN,
    SEARCH_KEY,
    MCP_KEY,
];

/// A server with the stand-in agent server as its sandbox spec, and three callers: the
/// bootstrapped owner, a member of the same organization, and the owner of another one.
struct Rig {
    db: TestDatabase,
    _data: TempDir,
    server: Server,
    owner: String,
    member: String,
    outsider: String,
    org: String,
    other_org: String,
    /// Every answer body read (documented exceptions left out).
    seen: std::cell::RefCell<Vec<String>>,
}

fn rig(backend: Backend) -> Rig {
    let db = TestDatabase::new(backend);
    let data = TempDir::new();
    let specs = data.path().join("specs.json");
    std::fs::write(
        &specs,
        json!([{"id": "standin", "command": [python(), switchboard_testkit::standin_agent_server()]}])
            .to_string(),
    )
    .unwrap();
    let (data_dir, specs) = (
        data.path().display().to_string(),
        specs.display().to_string(),
    );
    let server = Server::spawn_with(
        db.url(),
        ServeOptions {
            args: vec![
                "--data-dir",
                &data_dir,
                "--sandbox-specs",
                &specs,
                "--llm-model",
                "openai/operator-model",
                "--llm-base-url",
                "http://127.0.0.1:9/v1",
                // The SDK's OpenHandsCloudWorkspace needs its agent server at a host's root.
                "--sandbox-host-pattern",
                "{id}-{service}.sandboxes.test",
            ],
            env: vec![
                ("SWITCHBOARD_LOG", "debug,switchboard=trace"),
                ("LLM_API_KEY", OPERATOR_KEY),
            ],
        },
    );
    let owner = server.bootstrap_key();
    let org = server.bootstrapped.as_ref().unwrap()["org_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let url = db.url().to_owned();
    let member_id = str_of(
        &cli_json(&url, &["users", "create", "--email", "member@example.com"]),
        "user_id",
    )
    .to_owned();
    cli_json(
        &url,
        &[
            "members",
            "add",
            "--org-id",
            &org,
            "--user-id",
            &member_id,
            "--role",
            "member",
        ],
    );
    let member = str_of(
        &cli_json(
            &url,
            &["keys", "create", "--user-id", &member_id, "--org-id", &org],
        ),
        "api_key",
    )
    .to_owned();
    let other = cli_json(
        &url,
        &[
            "bootstrap",
            "--org-name",
            "other",
            "--email",
            "outsider@example.com",
        ],
    );
    let other_org = str_of(&other, "org_id").to_owned();
    let outsider = str_of(&other, "api_key").to_owned();
    Rig {
        db,
        _data: data,
        server,
        owner,
        member,
        outsider,
        org,
        other_org,
        seen: Default::default(),
    }
}

impl Rig {
    /// `method path` with `key` (and `body`): status and JSON body, the text recorded.
    fn call(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut r = client().request(
            reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
            self.server.url(path),
        );
        if let Some(k) = key {
            r = r.header("X-Access-Token", k);
        }
        if let Some(b) = body {
            r = r.json(&b);
        }
        let resp = r.send().unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().unwrap();
        self.seen.borrow_mut().push(text.clone());
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    fn get(&self, path: &str, key: &str) -> (u16, Value) {
        self.call("GET", path, Some(key), None)
    }

    fn post(&self, path: &str, key: &str, body: Value) -> (u16, Value) {
        self.call("POST", path, Some(key), Some(body))
    }

    /// A running sandbox of `key`'s: its id, session key and agent server URL.
    fn sandbox(&self, key: &str) -> (String, String, String) {
        let (code, s) = self.call("POST", "/api/v1/sandboxes", Some(key), None);
        assert_eq!(code, 200, "{s}");
        let id = s["id"].as_str().unwrap().to_owned();
        let info = wait_sandbox_status(&self.server, key, &id, "RUNNING");
        (
            id,
            info["session_api_key"].as_str().unwrap().to_owned(),
            info["exposed_urls"][0]["url"].as_str().unwrap().to_owned(),
        )
    }

    /// `GET path` with a session key (and an API key): status and text, not recorded (the
    /// documented exceptions).
    fn with_session(&self, path: &str, session: Option<&str>, key: Option<&str>) -> (u16, String) {
        let mut r = client().get(self.server.url(path));
        if let Some(s) = session {
            r = r.header("X-Session-API-Key", s);
        }
        if let Some(k) = key {
            r = r.header("Authorization", format!("Bearer {k}"));
        }
        let resp = r.send().unwrap();
        (resp.status().as_u16(), resp.text().unwrap())
    }
}

fn detail(v: &Value) -> &str {
    v["detail"].as_str().unwrap_or_default()
}

fn settings_profiles_and_validation(r: &Rig, backend: Backend) {
    // Defaults before anything is stored.
    let (code, s) = r.get("/api/v1/settings", &r.owner);
    assert_eq!(code, 200, "{backend}: {s}");
    assert_eq!(s["llm_api_key_set"], false);
    assert_eq!(s["conversation_settings"]["max_iterations"], 500);
    assert_eq!(s["sandbox_grouping_strategy"], "NO_GROUPING");
    let (code, body) = r.post(
        "/api/v1/settings",
        &r.owner,
        json!({
            "agent_settings_diff": {"llm": {"model": "openai/user-model", "api_key": LLM_KEY,
                                             "base_url": "http://127.0.0.1:8/v1"},
                                    "mcp_config": {"sse_servers": [{"url": "http://127.0.0.1:7/sse", "api_key": MCP_KEY}]}},
            "conversation_settings_diff": {"confirmation_mode": true},
            "language": "fr", "search_api_key": SEARCH_KEY, "llm_api_key_set": false,
        }),
    );
    assert_eq!(
        (code, &body),
        (200, &json!({"message": "Settings stored"})),
        "{backend}"
    );
    let (_, s) = r.get("/api/v1/settings", &r.owner);
    assert_eq!(
        s["agent_settings"]["llm"]["model"], "openai/user-model",
        "{s}"
    );
    assert_eq!(s["agent_settings"]["llm"]["api_key"], Value::Null);
    assert_eq!(
        s["agent_settings"]["mcp_config"]["sse_servers"][0]["api_key"],
        Value::Null
    );
    assert_eq!(
        s["agent_settings"]["mcp_config"]["sse_servers"][0]["url"],
        "http://127.0.0.1:7/sse"
    );
    assert_eq!(
        (&s["llm_api_key_set"], &s["search_api_key_set"]),
        (&json!(true), &json!(true))
    );
    assert_eq!(s["conversation_settings"]["confirmation_mode"], true);
    assert_eq!(s["language"], "fr");
    // A diff: null unsets one key, the rest stays.
    r.post(
        "/api/v1/settings",
        &r.owner,
        json!({"agent_settings_diff": {"llm": {"base_url": null}}, "language": null}),
    );
    let (_, s) = r.get("/api/v1/settings", &r.owner);
    assert_eq!(s["agent_settings"]["llm"]["base_url"], Value::Null, "{s}");
    assert_eq!(s["agent_settings"]["llm"]["model"], "openai/user-model");
    assert_eq!(
        (&s["llm_api_key_set"], &s["language"]),
        (&json!(true), &Value::Null)
    );
    r.post(
        "/api/v1/settings",
        &r.owner,
        json!({"agent_settings_diff": {"llm": {"base_url": "http://127.0.0.1:8/v1"}}}),
    );
    // Validation: nothing stored.
    for (body, at) in [
        (
            json!({"agent_settings": {}}),
            json!(["body", "agent_settings"]),
        ),
        (
            json!({"agent_settings_diff": {"llm": {"base_url": "file:///x"}}}),
            json!(["body", "agent_settings_diff", "llm", "base_url"]),
        ),
        (
            json!({"conversation_settings_diff": {"max_iterations": 0}}),
            json!(["body", "conversation_settings_diff", "max_iterations"]),
        ),
        (
            json!({"sandbox_grouping_strategy": "SOMETIMES"}),
            json!(["body", "sandbox_grouping_strategy"]),
        ),
        (json!([1]), json!(["body"])),
    ] {
        let (code, e) = r.post("/api/v1/settings", &r.owner, body.clone());
        assert_eq!(
            (code, &e["detail"][0]["loc"]),
            (422, &at),
            "{backend}: {body}: {e}"
        );
    }
    let (_, after) = r.get("/api/v1/settings", &r.owner);
    assert_eq!(
        after["agent_settings"],
        s["agent_settings"].clone().tap_base_url(),
        "{backend}"
    );
    for path in [
        "/api/v1/settings/agent-schema",
        "/api/v1/settings/conversation-schema",
    ] {
        let (code, schema) = r.get(path, &r.member);
        assert_eq!(
            (code, schema["type"].as_str()),
            (200, Some("object")),
            "{path}"
        );
    }
    // Another member sees their own (none), not the owner's.
    let (_, theirs) = r.get("/api/v1/settings", &r.member);
    assert_eq!(theirs["llm_api_key_set"], false, "{backend}");
    assert_eq!(theirs["agent_settings"]["llm"]["model"], Value::Null);

    // Profiles.
    let (code, p) = r.post(
        "/api/v1/settings/profiles/fast",
        &r.owner,
        json!({"llm": {"model": "openai/profile-model", "api_key": PROFILE_KEY}}),
    );
    assert_eq!((code, &p["name"]), (201, &json!("fast")), "{backend}: {p}");
    let (code, _) = r.call(
        "POST",
        "/api/v1/settings/profiles/snapshot",
        Some(&r.owner),
        None,
    );
    assert_eq!(
        code, 201,
        "{backend}: a save without a body snapshots the settings"
    );
    let (_, list) = r.get("/api/v1/settings/profiles", &r.owner);
    assert_eq!(list["profiles"].as_array().unwrap().len(), 2, "{list}");
    assert_eq!(
        list["profiles"][0],
        json!({"name": "fast", "model": "openai/profile-model", "base_url": null, "api_key_set": true})
    );
    assert_eq!(list["profiles"][1]["model"], "openai/user-model");
    let (code, one) = r.get("/api/v1/settings/profiles/fast", &r.owner);
    assert_eq!(
        (code, &one["config"]["api_key"], &one["api_key_set"]),
        (200, &Value::Null, &json!(true))
    );
    let (code, a) = r.post(
        "/api/v1/settings/profiles/fast/activate",
        &r.owner,
        json!({}),
    );
    assert_eq!(
        (code, &a["model"]),
        (200, &json!("openai/profile-model")),
        "{a}"
    );
    let (_, s) = r.get("/api/v1/settings", &r.owner);
    assert_eq!(
        (
            &s["llm_profiles"]["active"],
            &s["agent_settings"]["llm"]["model"]
        ),
        (&json!("fast"), &json!("openai/profile-model"))
    );
    let (code, e) = r.post(
        "/api/v1/settings/profiles/fast/rename",
        &r.owner,
        json!({"new_name": "snapshot"}),
    );
    assert_eq!(code, 409, "{backend}: {e}");
    let (code, _) = r.post(
        "/api/v1/settings/profiles/fast/rename",
        &r.owner,
        json!({"new_name": "quick"}),
    );
    assert_eq!(code, 200);
    let (_, list) = r.get("/api/v1/settings/profiles", &r.owner);
    assert_eq!(list["active_profile"], "quick", "{list}");
    for (method, path, status) in [
        ("GET", "/api/v1/settings/profiles/fast", 404),
        ("POST", "/api/v1/settings/profiles/fast/activate", 404),
        ("GET", "/api/v1/settings/profiles/bad%20name", 422),
        ("DELETE", "/api/v1/settings/profiles/nothing", 200),
    ] {
        let (code, e) = r.call(method, path, Some(&r.owner), None);
        assert_eq!(code, status, "{backend}: {method} {path}: {e}");
    }
    let (code, e) = r.post(
        "/api/v1/settings/profiles/quick/rename",
        &r.owner,
        json!({"new_name": "a/b"}),
    );
    assert_eq!(
        (code, &e["detail"][0]["loc"]),
        (422, &json!(["body", "new_name"]))
    );
    // Another member's profiles are not the owner's.
    let (code, _) = r.get("/api/v1/settings/profiles/quick", &r.member);
    assert_eq!(code, 404);
}

/// Sorts of `Value` helpers for the assertions above.
trait Tap {
    fn tap_base_url(self) -> Value;
}

impl Tap for Value {
    /// The value with `llm.base_url` as the last accepted change set it.
    fn tap_base_url(mut self) -> Value {
        self["llm"]["base_url"] = json!("http://127.0.0.1:8/v1");
        self
    }
}

fn secrets_and_provider_tokens(r: &Rig, backend: Backend) {
    for name in ["API_TOKEN", "DB_PASSWORD", "OTHER"] {
        let (code, b) = r.post(
            "/api/v1/secrets",
            &r.owner,
            json!({"name": name, "value": SECRET_VALUE, "description": format!("the {name}")}),
        );
        assert_eq!(
            (code, &b),
            (201, &json!({"message": "Secret created successfully"})),
            "{backend}"
        );
    }
    let (code, page) = r.get("/api/v1/secrets/search?limit=2", &r.owner);
    assert_eq!(code, 200);
    let names: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["API_TOKEN", "DB_PASSWORD"], "{page}");
    assert_eq!(
        page["items"][0],
        json!({"name": "API_TOKEN", "description": "the API_TOKEN"})
    );
    let next = page["next_page_id"].as_str().unwrap();
    let (_, page) = r.get(
        &format!("/api/v1/secrets/search?limit=2&page_id={next}"),
        &r.owner,
    );
    assert_eq!(
        (page["items"][0]["name"].as_str(), &page["next_page_id"]),
        (Some("OTHER"), &Value::Null)
    );
    let (_, page) = r.get("/api/v1/secrets/search?name__contains=PASS", &r.owner);
    assert_eq!(page["items"].as_array().unwrap().len(), 1, "{page}");
    for (path, at) in [
        ("/api/v1/secrets/search?limit=0", "limit"),
        ("/api/v1/secrets/search?page_id=nope", "page_id"),
    ] {
        let (code, e) = r.get(path, &r.owner);
        assert_eq!(
            (code, &e["detail"][0]["loc"]),
            (422, &json!(["query", at])),
            "{path}"
        );
    }
    let (code, _) = r.call(
        "PUT",
        "/api/v1/secrets/OTHER",
        Some(&r.owner),
        Some(json!({"name": "RENAMED", "description": null})),
    );
    assert_eq!(code, 200);
    let (code, e) = r.call(
        "PUT",
        "/api/v1/secrets/RENAMED",
        Some(&r.owner),
        Some(json!({"name": "API_TOKEN"})),
    );
    assert_eq!(code, 400, "{backend}: {e}");
    let (code, _) = r.call(
        "PUT",
        "/api/v1/secrets/MISSING",
        Some(&r.owner),
        Some(json!({"name": "X"})),
    );
    assert_eq!(code, 404);
    let (code, _) = r.call("DELETE", "/api/v1/secrets/RENAMED", Some(&r.owner), None);
    assert_eq!(code, 200);
    let (code, _) = r.call("DELETE", "/api/v1/secrets/RENAMED", Some(&r.owner), None);
    assert_eq!(code, 404);
    for body in [
        json!({"name": "a/b", "value": "v"}),
        json!({"name": "A"}),
        json!({"name": "A", "value": ""}),
    ] {
        let (code, e) = r.post("/api/v1/secrets", &r.owner, body.clone());
        assert_eq!(code, 422, "{backend}: {body}: {e}");
    }
    // Another member does not see or reach the owner's.
    let (_, theirs) = r.get("/api/v1/secrets/search", &r.member);
    assert_eq!(theirs["items"], json!([]), "{backend}");
    let (code, _) = r.call("DELETE", "/api/v1/secrets/API_TOKEN", Some(&r.member), None);
    assert_eq!(code, 404);
    // Git provider tokens.
    let (code, b) = r.post(
        "/api/v1/secrets/git-providers",
        &r.owner,
        json!({"provider_tokens": {
        "github": {"token": GITHUB_TOKEN}, "gitlab": {"token": "", "host": "gitlab.example.com"}}}),
    );
    assert_eq!(
        (code, &b["message"]),
        (200, &json!("Git providers stored")),
        "{b}"
    );
    let (_, s) = r.get("/api/v1/settings", &r.owner);
    assert_eq!(
        s["provider_tokens_set"],
        json!({"github": null, "gitlab": "gitlab.example.com"}),
        "{backend}"
    );
    let (code, e) = r.post(
        "/api/v1/secrets/git-providers",
        &r.owner,
        json!({"provider_tokens": {"svn": {}}}),
    );
    assert_eq!((code, &e["detail"][0]["type"]), (422, &json!("enum")));
    // A second store without the GitHub token keeps it.
    r.post(
        "/api/v1/secrets/git-providers",
        &r.owner,
        json!({"provider_tokens": {"github": {"host": null}}}),
    );
    let (_, s) = r.get("/api/v1/settings", &r.owner);
    assert_eq!(s["provider_tokens_set"], json!({"github": null}));
}

fn auth_matrix(r: &Rig, backend: Backend) {
    let routes = [
        ("GET", "/api/v1/settings"),
        ("POST", "/api/v1/settings"),
        ("GET", "/api/v1/settings/profiles"),
        ("GET", "/api/v1/settings/profiles/quick"),
        ("POST", "/api/v1/settings/profiles/quick/activate"),
        ("GET", "/api/v1/secrets/search"),
        ("POST", "/api/v1/secrets"),
        ("DELETE", "/api/v1/secrets/API_TOKEN"),
        ("POST", "/api/v1/secrets/git-providers"),
        ("GET", "/api/keys/current"),
        ("GET", "/api/organizations"),
    ];
    let revoked = str_of(
        &cli_json(
            r.db.url(),
            &[
                "keys",
                "create",
                "--user-id",
                &user_of(r, &r.owner),
                "--org-id",
                &r.org,
            ],
        ),
        "api_key",
    )
    .to_owned();
    let (_, current) = r.get("/api/keys/current", &revoked);
    cli_json(
        r.db.url(),
        &["keys", "revoke", "--id", current["id"].as_str().unwrap()],
    );
    // The CLI's revocation reaches the server within the key cache's time to live (1 s,
    // API.md "API keys: lookups from a per-replica cache").
    let revoked_at = std::time::Instant::now();
    while r.get("/api/keys/current", &revoked).0 != 401 {
        assert!(revoked_at.elapsed() < std::time::Duration::from_millis(1500));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for (method, path) in routes {
        let body = (method == "POST").then(|| json!({}));
        let (code, _) = r.call(method, path, None, body.clone());
        assert_eq!(code, 401, "{backend}: no key: {method} {path}");
        let (code, e) = r.call(method, path, Some(&revoked), body.clone());
        assert_eq!(
            (code, detail(&e)),
            (401, "API key revoked"),
            "{backend}: {method} {path}"
        );
        // Another organization's member naming this organization.
        let resp = client()
            .request(
                reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
                r.server.url(path),
            )
            .header("X-Access-Token", &r.outsider)
            .header("X-Org-Id", &r.org)
            .json(&body.unwrap_or(Value::Null))
            .send()
            .unwrap();
        assert_eq!(
            resp.status().as_u16(),
            403,
            "{backend}: outsider: {method} {path}"
        );
    }
    // Organizations.
    let (code, orgs) = r.get("/api/organizations", &r.owner);
    assert_eq!(
        (code, &orgs["current_org_id"]),
        (200, &json!(r.org)),
        "{orgs}"
    );
    assert_eq!(orgs["items"][0]["role"], "owner");
    let (code, me) = r.get(&format!("/api/organizations/{}/me", r.org), &r.member);
    assert_eq!(
        (code, &me["role"], &me["llm_api_key"]),
        (200, &json!("member"), &Value::Null),
        "{me}"
    );
    let (_, me) = r.get(&format!("/api/organizations/{}/me", r.org), &r.owner);
    assert_eq!(me["llm_api_key"], "**********");
    let (code, _) = r.get(&format!("/api/organizations/{}/me", r.other_org), &r.owner);
    assert_eq!(code, 404, "{backend}: not a member");
    let (code, k) = r.get("/api/keys/current", &r.member);
    assert_eq!(
        (code, &k["org_id"], &k["bound_org_id"]),
        (200, &json!(r.org), &json!(r.org)),
        "{k}"
    );
}

fn user_of(r: &Rig, key: &str) -> String {
    r.get("/api/v1/users/me", key).1["user_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn sandbox_reads(r: &Rig, backend: Backend) -> (String, String, String) {
    let (mine, my_key, my_url) = r.sandbox(&r.owner);
    let (theirs, their_key, _) = r.sandbox(&r.member);
    let list = format!("/api/v1/sandboxes/{mine}/settings/secrets");
    let (code, text) = r.with_session(&list, Some(&my_key), None);
    assert_eq!(code, 200, "{backend}: {text}");
    let names: Value = serde_json::from_str(&text).unwrap();
    let names: Vec<&str> = names["secrets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["API_TOKEN", "DB_PASSWORD", "github_token"],
        "{backend}"
    );
    assert!(!text.contains(SECRET_VALUE));
    let (code, value) = r.with_session(&format!("{list}/API_TOKEN"), Some(&my_key), None);
    assert_eq!((code, value.as_str()), (200, SECRET_VALUE), "{backend}");
    let (code, value) = r.with_session(&format!("{list}/github_token"), Some(&my_key), None);
    assert_eq!((code, value.as_str()), (200, GITHUB_TOKEN));
    for (session, path, status) in [
        (None, format!("{list}/API_TOKEN"), 401),
        (Some("sbs_nope"), format!("{list}/API_TOKEN"), 401),
        (Some(their_key.as_str()), format!("{list}/API_TOKEN"), 403),
        (Some(their_key.as_str()), list.clone(), 403),
        (Some(my_key.as_str()), format!("{list}/NOPE"), 404),
        (
            Some(my_key.as_str()),
            format!("/api/v1/sandboxes/{theirs}/settings/secrets"),
            403,
        ),
    ] {
        let (code, text) = r.with_session(&path, session, None);
        assert_eq!(code, status, "{backend}: {path}: {text}");
        assert!(!text.contains(SECRET_VALUE));
        r.seen.borrow_mut().push(text);
    }
    // The member's sandbox lists the member's secrets: none.
    let (_, text) = r.with_session(
        &format!("/api/v1/sandboxes/{theirs}/settings/secrets"),
        Some(&their_key),
        None,
    );
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"secrets": []})
    );

    // users/me: the UserInfo fields, no key; with expose_secrets, the owner's own LLM only for
    // their API key with their running sandbox's session key.
    let (code, me) = r.get("/api/v1/users/me", &r.owner);
    assert_eq!(code, 200);
    assert_eq!(
        (&me["id"], &me["llm_api_key_set"]),
        (&me["user_id"], &json!(true)),
        "{me}"
    );
    assert!(me.get("llm_api_key").is_none(), "{me}");
    let exposed = "/api/v1/users/me?expose_secrets=true";
    for (session, key, status) in [
        (None, Some(r.owner.as_str()), 401),
        (Some(their_key.as_str()), Some(r.owner.as_str()), 403),
        (Some(my_key.as_str()), Some(r.member.as_str()), 403),
        (Some(my_key.as_str()), None, 401),
    ] {
        let (code, text) = r.with_session(exposed, session, key);
        assert_eq!(code, status, "{backend}: {text}");
        r.seen.borrow_mut().push(text);
    }
    let (code, text) = r.with_session(
        "/api/v1/users/me?expose_secrets=maybe",
        None,
        Some(&r.owner),
    );
    assert_eq!(code, 422, "{text}");
    let (code, text) = r.with_session(exposed, Some(&my_key), Some(&r.owner));
    assert_eq!(code, 200, "{backend}: {text}");
    let me: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (&me["llm_model"], &me["llm_api_key"]),
        (&json!("openai/profile-model"), &json!(PROFILE_KEY)),
        "{backend}: the active profile"
    );
    assert_eq!(me["mcp_config"]["sse_servers"][0]["api_key"], MCP_KEY);
    assert_eq!(
        me["llm_profiles"]["profiles"]["quick"]["api_key"],
        PROFILE_KEY
    );
    (mine, my_key, my_url)
}

/// Starts a conversation in `sandbox` and waits for READY; the create body the stand-in got.
fn start(r: &Rig, key: &str, sandbox: &str, url: &str, extra: Value) -> Value {
    let mut body = json!({"sandbox_id": sandbox,
        "initial_message": {"role": "user", "content": [{"type": "text", "text": "hi"}], "run": false}});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let (code, task) = r.post("/api/v1/app-conversations", key, body);
    assert_eq!(code, 200, "{task}");
    let id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, t) = r.get(
            &format!("/api/v1/app-conversations/start-tasks?ids={id}"),
            key,
        );
        match t[0]["status"].as_str() {
            Some("READY") => break,
            Some("ERROR") => panic!("the start failed: {t}"),
            _ => {}
        }
        assert!(Instant::now() < deadline, "stuck: {t}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let creates: Value = client()
        .get(format!("{}/standin/creates", direct_agent_url(url)))
        .send()
        .unwrap()
        .json()
        .unwrap();
    creates.as_array().unwrap().last().unwrap().clone()
}

fn starts_take_the_users_settings(r: &Rig, backend: Backend, (mine, url): (&str, &str)) {
    // The active profile: its model and key; the user's secrets; MCP; confirmation.
    let c = start(
        r,
        &r.owner,
        mine,
        url,
        json!({"secrets": {"REQUEST_ONLY": "from-request"}}),
    );
    let llm = &c["agent"]["llm"];
    assert_eq!(
        (&llm["model"], &llm["api_key"]),
        (&json!("openai/profile-model"), &json!(PROFILE_KEY)),
        "{backend}: {c}"
    );
    assert_eq!(
        c["secrets"]["API_TOKEN"],
        json!({"kind": "StaticSecret", "value": SECRET_VALUE}),
        "{c}"
    );
    assert_eq!(c["secrets"]["github_token"]["value"], GITHUB_TOKEN);
    assert_eq!(c["secrets"]["REQUEST_ONLY"]["value"], "from-request");
    assert_eq!(
        c["agent"]["mcp_config"]["sse_servers"][0]["api_key"],
        MCP_KEY
    );
    assert_eq!(c["confirmation_policy"], json!({"kind": "AlwaysConfirm"}));
    // The request's model replaces the model, not the key.
    let c = start(
        r,
        &r.owner,
        mine,
        url,
        json!({"llm_model": "openai/request-model"}),
    );
    assert_eq!(
        (&c["agent"]["llm"]["model"], &c["agent"]["llm"]["api_key"]),
        (&json!("openai/request-model"), &json!(PROFILE_KEY))
    );
    // No active profile: the settings' LLM.
    r.post("/api/v1/settings", &r.owner, json!({"agent_settings_diff": {"llm": {"model": "openai/user-model", "api_key": LLM_KEY, "base_url": "http://127.0.0.1:8/v1"}}}));
    let c = start(r, &r.owner, mine, url, json!({}));
    let llm = &c["agent"]["llm"];
    assert_eq!(
        (&llm["model"], &llm["api_key"], &llm["base_url"]),
        (
            &json!("openai/user-model"),
            &json!(LLM_KEY),
            &json!("http://127.0.0.1:8/v1")
        ),
        "{backend}: {c}"
    );
    // A member with nothing set: the operator's LLM, none of the owner's secrets.
    let (theirs, _, their_url) = r.sandbox(&r.member);
    let c = start(r, &r.member, &theirs, &their_url, json!({}));
    let llm = &c["agent"]["llm"];
    assert_eq!(
        (&llm["model"], &llm["api_key"]),
        (&json!("openai/operator-model"), &json!(OPERATOR_KEY)),
        "{backend}: {c}"
    );
    assert!(
        c.get("secrets").is_none() && c.get("confirmation_policy").is_none(),
        "{backend}: {c}"
    );
    assert!(c["agent"].get("mcp_config").is_none());
}

fn every_value_stays_sealed(r: &Rig, backend: Backend) {
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

/// The SDK's `OpenHandsCloudWorkspace` (openhands-workspace 1.58.2, unchanged), when this
/// machine has its venv: `get_llm()` answers the owner's model and key, `get_secrets()` their
/// secrets (each `LookupSecret` resolving to its value), `get_mcp_config()` their MCP server.
fn sdk_reads_the_members_settings(r: &Rig, backend: Backend) {
    let Some(python) = switchboard_testkit::sdk_workspace_python() else {
        eprintln!(
            "no openhands-workspace venv on this machine (scripts/e2e.sh installs it): the SDK check is skipped"
        );
        return;
    };
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts/e2e/sdk_user_settings.py");
    // The sandboxes' hosts resolve through a private /etc/hosts (a mount namespace of the SDK's
    // own), written as each sandbox appears: the wildcard DNS record of a deployment.
    let hosts = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(hosts.path(), "127.0.0.1 localhost\n").unwrap();
    let child = std::process::Command::new("unshare")
        .args(["--mount", "--", "sh", "-c"])
        .arg(format!(
            "mount --bind '{}' /etc/hosts && exec \"$0\" \"$@\"",
            hosts.path().display()
        ))
        .arg(python)
        .arg(script)
        .args([&r.server.address, &r.owner])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let waiter = std::thread::spawn(move || child.wait_with_output().unwrap());
    let mut named = std::collections::HashSet::new();
    while !waiter.is_finished() {
        let (_, page) = r.get("/api/v1/sandboxes/search", &r.owner);
        for s in page["items"].as_array().into_iter().flatten() {
            let id = s["id"].as_str().unwrap().to_owned();
            if named.insert(id.clone()) {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(hosts.path())
                    .unwrap();
                writeln!(f, "127.0.0.1 {id}-agent-server.sandboxes.test").unwrap();
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let out = waiter.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{backend}: the SDK failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    assert_eq!(
        (&v["model"], &v["api_key"]),
        (&json!("openai/profile-model"), &json!(PROFILE_KEY)),
        "{backend}: {v}"
    );
    assert_eq!(v["secrets"]["API_TOKEN"], SECRET_VALUE, "{backend}: {v}");
    assert_eq!(v["secrets"]["github_token"], GITHUB_TOKEN);
    let mcp = v["mcp"].to_string();
    assert!(
        mcp.contains("http://127.0.0.1:7/sse") && mcp.contains(MCP_KEY),
        "{backend}: get_mcp_config: {mcp}"
    );
}

fn everything(backend: Backend) {
    let r = rig(backend);
    let _sandboxes = EndProcessesUnder(r._data.path().to_path_buf());
    settings_profiles_and_validation(&r, backend);
    secrets_and_provider_tokens(&r, backend);
    auth_matrix(&r, backend);
    let (mine, _, url) = sandbox_reads(&r, backend);
    sdk_reads_the_members_settings(&r, backend);
    starts_take_the_users_settings(&r, backend, (&mine, &url));
    every_value_stays_sealed(&r, backend);
}

#[test]
fn user_settings_sqlite() {
    everything(Backend::Sqlite);
}

#[test]
fn user_settings_postgres() {
    everything(Backend::Postgres);
}
