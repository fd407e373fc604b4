//! The server of these tests (the stand-in agent server as its sandbox spec, the operator's
//! LLM), its three callers, the values they set, and the calls they make.

use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

use crate::common::{
    ServeOptions, Server, TempDir, add_member, cli_json, client, python, str_of,
    wait_sandbox_status,
};
use crate::user_settings::clone::{GITLAB_HOST, GitServer};

pub const LLM_KEY: &str = "sk-user-Hq7Zp3Lw9Xv2Nc5Rt8Kd";
pub const PROFILE_KEY: &str = "sk-profile-Jm4Ys6Bf1Qa8Wz3Ue7Gh";
pub const SECRET_VALUE: &str = "secret-value-Tn5Vc2Lp9Rk7Xm3Qs";
pub const GITHUB_TOKEN: &str = "ghp_Gh8Zr2Mv6Nq4Kx9Lp3Wt7Ys1";
pub const SEARCH_KEY: &str = "tvly-Sk3Jd8Pq1Wm6Zr4Nx";
pub const MCP_KEY: &str = "mcp-key-Aq9Ze4Rt7Yu2Io5Pl";
pub const OPERATOR_KEY: &str = "sk-operator-Bv6Cx1Zn8Lk3Jh";
pub const GITLAB_TOKEN: &str = "glpat-Fw3Rb8Tn1Yc6Vm9Kq";
pub const ORG_KEY: &str = "sk-org-Wd3Fy8Kq2Lz6Xc9Vb";
pub const ORG_MCP_KEY: &str = "mcp-org-Pn7Rt2Gh5Jk8Ls4";
/// An organization LLM profile's key and an LLM provider connection's key (issue 25).
pub const ORG_PROFILE_KEY: &str = "sk-orgprofile-Zt4Hw8Qm1Xc";
pub const CONNECTION_KEY: &str = "sk-connection-Kp2Vb7Nd5Sj";
pub const ORG_SEARCH_KEY: &str = "tvly-org-Qm6Ze1Xw9Cv3";
/// Every value set: none may appear anywhere but the two documented answers.
pub const VALUES: [&str; 12] = [
    ORG_PROFILE_KEY,
    CONNECTION_KEY,
    GITLAB_TOKEN,
    ORG_KEY,
    ORG_MCP_KEY,
    ORG_SEARCH_KEY,
    LLM_KEY,
    PROFILE_KEY,
    SECRET_VALUE,
    GITHUB_TOKEN,
    SEARCH_KEY,
    MCP_KEY,
];

/// A server with the stand-in agent server as its sandbox spec, and three callers: the
/// bootstrapped owner, a member of the same organization, and the owner of another one.
pub struct Rig {
    pub db: TestDatabase,
    pub _data: TempDir,
    pub server: Server,
    pub owner: String,
    pub member: String,
    pub outsider: String,
    pub org: String,
    pub other_org: String,
    /// Every answer body read (documented exceptions left out).
    pub seen: std::cell::RefCell<Vec<String>>,
    /// The git server the starts clone from (`--git-provider-url`).
    pub git: GitServer,
}

/// `switchboard serve` on `db_url` with `data` as its data directory (its `specs.json`, its
/// `secret.key`), listening on `bind`, with the operator's LLM and the providers' URLs at the
/// git server on `git_port`.
pub fn serve(db_url: &str, data: &std::path::Path, bind: &str, git_port: u16) -> Server {
    let specs = data.join("specs.json");
    let (data_dir, specs) = (data.display().to_string(), specs.display().to_string());
    // The git server is on the host's loopback: a port the sandboxes are given.
    crate::common::give_sandboxes_host_port(git_port);
    let github_url = format!("github=http://127.0.0.1:{git_port}");
    let gitlab_url = format!("{GITLAB_HOST}=http://127.0.0.1:{git_port}/");
    Server::spawn_bound(
        &[],
        bind,
        db_url,
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
                "--git-provider-url",
                &github_url,
                "--git-provider-url",
                &gitlab_url,
            ],
            env: vec![
                ("SWITCHBOARD_LOG", "debug,switchboard=trace"),
                ("LLM_API_KEY", OPERATOR_KEY),
            ],
        },
    )
}

pub fn rig(backend: Backend) -> Rig {
    let db = TestDatabase::new(backend);
    let data = TempDir::new();
    let specs = data.path().join("specs.json");
    std::fs::write(
        &specs,
        json!([{"id": "standin", "command": [python(), switchboard_testkit::standin_agent_server()]}])
            .to_string(),
    )
    .unwrap();
    let git = GitServer::start();
    let server = serve(db.url(), data.path(), "127.0.0.1:0", git.port);
    let owner = server.bootstrap_key();
    let org = server.bootstrapped.as_ref().unwrap()["org_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let url = db.url().to_owned();
    let (_, member) = add_member(&url, &org, "member@example.com", "member");
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
        git,
    }
}

impl Rig {
    /// `method path` with `key` (and `body`): status and JSON body, the text recorded.
    pub fn call(
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

    pub fn get(&self, path: &str, key: &str) -> (u16, Value) {
        self.call("GET", path, Some(key), None)
    }

    pub fn post(&self, path: &str, key: &str, body: Value) -> (u16, Value) {
        self.call("POST", path, Some(key), Some(body))
    }

    /// A running sandbox of `key`'s: its id, session key and agent server URL.
    pub fn sandbox(&self, key: &str) -> (String, String, String) {
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
    pub fn with_session(
        &self,
        path: &str,
        session: Option<&str>,
        key: Option<&str>,
    ) -> (u16, String) {
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

pub fn detail(v: &Value) -> &str {
    v["detail"].as_str().unwrap_or_default()
}
