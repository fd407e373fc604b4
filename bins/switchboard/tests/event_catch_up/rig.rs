//! The rig of the catch-up tests: Switchboard serving the real agent server as its sandbox
//! spec with the fake LLM of `scripts/e2e/fake_llm.py`, restartable on the same port (its
//! sandboxes' webhooks name it), and the agent server's own view of a conversation.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::*;

/// How long a start may take (the real agent server starts in 11-22 s alone, longer when
/// several start at once on two cores).
pub const START_WITHIN: Duration = Duration::from_secs(240);

/// The server's log filter: info, and the debug lines naming the events the stream path and
/// the pull path stored.
pub const STORED_BY_LOG: &str = "info,switchboard_domain::services::event_streaming=debug,\
     switchboard_domain::services::event_catch_up=debug";

/// A child process killed (with its process group) on drop.
pub struct Child9(pub Child);

impl Drop for Child9 {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The fake LLM on a free loopback port, every request it gets appended to `log` (JSON
/// Lines: its path, model and `Authorization` header among them); its `/v1` base URL.
pub fn fake_llm(log: &Path) -> (Child9, String) {
    let port = free_port();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/e2e/fake_llm.py");
    let child = Command::new(python())
        .arg(script)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .arg("--log")
        .arg(log)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting the fake LLM");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the fake LLM did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    give_sandboxes_host_port(port);
    (Child9(child), format!("http://127.0.0.1:{port}/v1"))
}

/// A port free now on loopback.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Switchboard with the real agent server as its only spec, restartable on one port.
pub struct Rig {
    pub db: String,
    /// `--webhook-url` when the sandboxes' webhooks must reach nothing (only the pull path
    /// then stores their events; clients still reach the sandboxes through Switchboard).
    pub webhook_url: Option<String>,
    /// Whether the stream path runs (else `--no-event-streams`).
    pub streams: bool,
    pub bind: String,
    pub data_dir: String,
    pub specs: String,
    pub llm_base: String,
    /// The fake LLM's request log (JSON Lines; read by the switch_profile test).
    #[allow(dead_code)]
    pub llm_log: std::path::PathBuf,
    pub key: String,
    pub server: Server,
    /// Sandboxes outlive a killed server: their processes end with the test.
    pub _end: EndProcessesUnder,
    pub _llm: Child9,
    pub _data: TempDir,
}

impl Rig {
    /// Serves `db` with the real agent server at `agent`; with `webhooks_lost`, the
    /// sandboxes' webhooks go to a port where nothing listens (`--webhook-url`); without
    /// `streams`, the stream path is off (`--no-event-streams`).
    pub fn start(db: &str, agent: &Path, webhooks_lost: bool, streams: bool) -> Rig {
        let data = TempDir::new();
        let data_dir = data.path().display().to_string();
        let llm_log = data.path().join("llm-requests.jsonl");
        let (llm, llm_base) = fake_llm(&llm_log);
        let env: serde_json::Map<String, Value> = switchboard_testkit::REAL_AGENT_SERVER_ENV
            .iter()
            // The fast path is Switchboard's to set (issue 19): the spec leaves it out, and a
            // spec asking for batches of 5 and 30 s is overridden.
            .filter(|(k, _)| !k.starts_with("OH_WEBHOOKS_0_"))
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .chain([
                ("OH_WEBHOOKS_0_EVENT_BUFFER_SIZE".to_owned(), json!("5")),
                ("OH_WEBHOOKS_0_FLUSH_DELAY".to_owned(), json!("30")),
            ])
            .collect();
        let specs = data.path().join("specs.json");
        std::fs::write(
            &specs,
            json!([{"id": "agent", "command": [agent.display().to_string()], "initial_env": env}])
                .to_string(),
        )
        .unwrap();
        let bind = format!("127.0.0.1:{}", free_port());
        let specs = specs.display().to_string();
        let webhook_url = webhooks_lost.then(|| format!("http://127.0.0.1:{}", free_port()));
        let server = serve(
            db,
            &bind,
            &data_dir,
            &specs,
            &llm_base,
            webhook_url.as_deref(),
            streams,
        );
        Rig {
            db: db.to_owned(),
            webhook_url,
            streams,
            bind,
            data_dir,
            specs,
            llm_base,
            llm_log,
            key: server.bootstrap_key(),
            server,
            _end: EndProcessesUnder(data.path().to_path_buf()),
            _llm: llm,
            _data: data,
        }
    }

    /// A new `serve` of the rig (same port, database and data directory).
    pub fn serve(&self) -> Server {
        serve(
            &self.db,
            &self.bind,
            &self.data_dir,
            &self.specs,
            &self.llm_base,
            self.webhook_url.as_deref(),
            self.streams,
        )
    }

    /// The fake LLM's chat completions, oldest first: `(model, Authorization header, the
    /// request's messages as JSON text)` (read by the tests that share this rig).
    #[allow(dead_code)]
    pub fn completions(&self) -> Vec<(String, String, String)> {
        std::fs::read_to_string(&self.llm_log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|r| {
                r["path"]
                    .as_str()
                    .is_some_and(|p| p.ends_with("/chat/completions"))
            })
            .map(|r| {
                (
                    r["body"]["model"].as_str().unwrap_or("").to_owned(),
                    r["auth"].as_str().unwrap_or("").to_owned(),
                    r["body"]["messages"].to_string(),
                )
            })
            .collect()
    }

    /// Gives the rig's owner their own LLM key (the operator's model, base URL and key as
    /// their settings): their conversations' LLM calls then go from the sandbox to the fake
    /// LLM directly, not through Switchboard's LLM pass-through, so runs go on while the
    /// server is stopped or its connections are reset (the event catch-up tests).
    pub fn use_own_llm(&self) {
        let (status, body) = send_json(
            client()
                .post(self.server.url("/api/v1/settings"))
                .header("X-Access-Token", &self.key)
                .json(&json!({"agent_settings_diff": {"llm": {
                    "model": "openai/fake-model", "base_url": self.llm_base, "api_key": "fake-key"}}})),
        );
        assert_eq!(status, 200, "{body}");
    }

    /// A new member (role `member`) of the rig's organization, made with the CLI: the
    /// organization's id, the member's user id and an API key of theirs (sdk_member_llm,
    /// llm_relay).
    #[allow(dead_code)]
    pub fn add_member(&self, email: &str) -> (String, String, String) {
        let org = self.get("/api/v1/users/me")["org_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let user = cli_json(&self.db, &["users", "create", "--email", email]);
        let user = str_of(&user, "user_id").to_owned();
        let add = ["members", "add", "--org-id", &org, "--user-id", &user];
        cli_json(&self.db, &[&add[..], &["--role", "member"]].concat());
        let key = cli_json(
            &self.db,
            &["keys", "create", "--user-id", &user, "--org-id", &org],
        );
        let key = str_of(&key, "api_key").to_owned();
        (org, user, key)
    }

    /// `GET path` with the rig's key, asserting 200: the body.
    pub fn get(&self, path: &str) -> Value {
        let (status, body) = send_json(
            client()
                .get(self.server.url(path))
                .header("X-Access-Token", &self.key),
        );
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    /// Starts a conversation through Switchboard's start pipeline (a new sandbox of the real
    /// agent server); its id and its agent server, once the start task is `READY`.
    pub fn start_conversation(&self, message: &str) -> (String, Agent) {
        let (status, task) = send_json(
            client()
                .post(self.server.url("/api/v1/app-conversations"))
                .header("X-Access-Token", &self.key)
                .json(&json!({"initial_message": {"role": "user",
                    "content": [{"type": "text", "text": message}]}})),
        );
        assert!(status == 200 || status == 201, "{task}");
        let id = task["id"].as_str().unwrap().to_owned();
        let deadline = Instant::now() + START_WITHIN;
        loop {
            let t = self.get(&format!("/api/v1/app-conversations/start-tasks?ids={id}"))[0].clone();
            match t["status"].as_str() {
                Some("READY") => {
                    let conversation = t["app_conversation_id"].as_str().unwrap().to_owned();
                    let sandbox = t["sandbox_id"].as_str().unwrap().to_owned();
                    return (conversation, self.agent(&sandbox));
                }
                Some("ERROR") => panic!("the start failed: {t}"),
                _ => {}
            }
            assert!(
                Instant::now() < deadline,
                "the start is still {}; stderr:\n{}",
                t["status"],
                self.server.stderr_lines().join("\n")
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The agent server of sandbox `id` (it must be `RUNNING`).
    pub fn agent(&self, sandbox: &str) -> Agent {
        let s = wait_sandbox_status(&self.server, &self.key, sandbox, "RUNNING");
        Agent {
            sandbox: sandbox.to_owned(),
            // The agent server itself (the tests talk to it while Switchboard is down).
            url: direct_agent_url(s["exposed_urls"][0]["url"].as_str().unwrap()),
            key: s["session_api_key"].as_str().unwrap().to_owned(),
        }
    }

    /// `POST /api/v1/sandboxes/{id}/{action}` (pause, resume) answered 200.
    pub fn sandbox_action(&self, sandbox: &str, action: &str) {
        let res = client()
            .post(
                self.server
                    .url(&format!("/api/v1/sandboxes/{sandbox}/{action}")),
            )
            .header("X-Access-Token", &self.key)
            .send()
            .unwrap();
        assert_eq!(res.status().as_u16(), 200, "{action}: {:?}", res.text());
    }

    /// `DELETE /api/v1/sandboxes/{id}`, which must answer at once.
    pub fn delete_sandbox(&self, sandbox: &str) {
        let began = Instant::now();
        let res = client()
            .delete(self.server.url(&format!("/api/v1/sandboxes/{sandbox}")))
            .header("X-Access-Token", &self.key)
            .send()
            .unwrap();
        assert_eq!(res.status().as_u16(), 200, "delete: {:?}", res.text());
        assert!(
            began.elapsed() < Duration::from_secs(2),
            "the delete took {:?}",
            began.elapsed()
        );
    }

    /// Every event Switchboard stored for the conversation, in search order (oldest first).
    pub fn stored(&self, conversation: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let mut page: Option<String> = None;
        loop {
            let mut path = format!("/api/v1/conversation/{conversation}/events/search?limit=100");
            if let Some(p) = &page {
                path.push_str(&format!("&page_id={p}"));
            }
            let body = self.get(&path);
            out.extend(body["items"].as_array().unwrap().iter().cloned());
            match body["next_page_id"].as_str() {
                Some(p) => page = Some(p.to_owned()),
                None => return out,
            }
        }
    }

    /// Waits up to `within` until Switchboard holds the events `expected` (the agent
    /// server's ids, in its order) once, in that order, and after them only events the agent
    /// server persisted later (`full_state` snapshots, which only the webhooks carry, left
    /// aside); no event is stored twice.
    #[track_caller]
    pub fn assert_holds(&self, conversation: &str, expected: &[String], within: Duration) {
        self.wait_holds(conversation, within, || expected.to_vec(), false);
    }

    /// As [`Rig::assert_holds`], with exactly what the agent server holds now.
    #[track_caller]
    pub fn assert_mirrors(&self, conversation: &str, agent: &Agent, within: Duration) {
        self.wait_holds(conversation, within, || agent.event_ids(conversation), true);
    }

    #[track_caller]
    fn wait_holds(
        &self,
        conversation: &str,
        within: Duration,
        expected: impl Fn() -> Vec<String>,
        exact: bool,
    ) {
        let deadline = Instant::now() + within;
        loop {
            let expected = expected();
            let stored = self.stored(conversation);
            let ids: Vec<String> = stored
                .iter()
                .filter(|e| e["key"] != "full_state")
                .map(|e| e["id"].as_str().unwrap().to_owned())
                .collect();
            let all: Vec<&str> = stored.iter().map(|e| e["id"].as_str().unwrap()).collect();
            let unique: std::collections::HashSet<&&str> = all.iter().collect();
            assert_eq!(unique.len(), all.len(), "an event is stored twice: {all:?}");
            if ids.starts_with(&expected) && (!exact || ids.len() == expected.len()) {
                return;
            }
            if Instant::now() >= deadline {
                let missing: Vec<&String> = expected.iter().filter(|e| !ids.contains(e)).collect();
                panic!(
                    "Switchboard does not hold the agent server's events after {within:?}: \
                     missing {missing:?}; stored {ids:?}; expected {expected:?}; stderr:\n{}",
                    self.server.stderr_lines().join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// `switchboard serve` on `bind` with the rig's flags.
fn serve(
    db: &str,
    bind: &str,
    data_dir: &str,
    specs: &str,
    llm_base: &str,
    webhook_url: Option<&str>,
    streams: bool,
) -> Server {
    let mut args = vec![
        "--data-dir",
        data_dir,
        "--sandbox-specs",
        specs,
        "--sandbox-start-timeout",
        "240",
        "--llm-model",
        "openai/fake-model",
        "--llm-base-url",
        llm_base,
        "--sandbox-host-pattern",
        "{id}-{service}.sandboxes.test",
        // No disk reserve: the SQLite file is on a 64 MiB tmpfs that this test fills to take
        // the database away (its subject is the disk itself filling, as disk_full.rs's).
        "--min-free-disk",
        "0",
    ];
    let proxy_url = format!("http://{bind}");
    if let Some(url) = webhook_url {
        // The webhooks go nowhere; the LLM pass-through is still Switchboard.
        args.extend(["--webhook-url", url, "--llm-proxy-url", &proxy_url]);
    }
    if !streams {
        args.push("--no-event-streams");
    }
    Server::spawn_bound(
        &[],
        bind,
        db,
        ServeOptions {
            args,
            // Which path stored each event: the ids in the stream and pull paths' debug lines.
            env: vec![
                ("LLM_API_KEY", "fake-key"),
                ("SWITCHBOARD_LOG", STORED_BY_LOG),
            ],
        },
    )
}

/// One sandbox's agent server, reached directly with its session key.
#[derive(Clone)]
pub struct Agent {
    pub sandbox: String,
    pub url: String,
    pub key: String,
}

impl Agent {
    fn conversation_url(&self, conversation: &str) -> String {
        format!(
            "{}/api/conversations/{}",
            self.url,
            conversation.replace('-', "")
        )
    }

    /// The agent server's own `ConversationInfo` of the conversation (read by the tests that
    /// share this rig: conversation_kept, budget, agent_profile_fields).
    #[allow(dead_code)]
    pub fn info(&self, conversation: &str) -> Value {
        let (status, body) = send_json(
            client()
                .get(self.conversation_url(conversation))
                .header("X-Session-API-Key", &self.key),
        );
        assert_eq!(status, 200, "{body}");
        body
    }

    /// The agent server's own event ids of the conversation, in the order Switchboard answers
    /// them: by timestamp (a stable sort of the agent server's order). The two differ where the
    /// agent server appends an event stamped before one it appended earlier: the
    /// `SecurityAnalysisEvent` of OpenHands' LLM security analyzer comes after the `stats`
    /// update of its action's LLM call but is stamped before it.
    pub fn event_ids(&self, conversation: &str) -> Vec<String> {
        answer_order(self.events(conversation))
    }

    /// The agent server's own events of the conversation, oldest first.
    pub fn events(&self, conversation: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let mut page: Option<String> = None;
        loop {
            let mut url = format!(
                "{}/events/search?limit=100",
                self.conversation_url(conversation)
            );
            if let Some(p) = &page {
                url.push_str(&format!("&page_id={p}"));
            }
            let (status, body) =
                send_json(client().get(url).header("X-Session-API-Key", &self.key));
            assert_eq!(status, 200, "{body}");
            out.extend(body["items"].as_array().unwrap().iter().cloned());
            match body["next_page_id"].as_str() {
                Some(p) => page = Some(p.to_owned()),
                None => return out,
            }
        }
    }

    /// Sends a user message that runs the agent.
    pub fn send(&self, conversation: &str, text: &str) {
        let res = client()
            .post(format!("{}/events", self.conversation_url(conversation)))
            .header("X-Session-API-Key", &self.key)
            .json(
                &json!({"role": "user", "content": [{"type": "text", "text": text}], "run": true}),
            )
            .send()
            .unwrap();
        assert!(res.status().is_success(), "send: {:?}", res.text());
    }

    /// Waits until the conversation's runs have finished `runs` times (its
    /// `execution_status: finished` updates); its event ids then, in the order Switchboard
    /// answers them.
    #[track_caller]
    pub fn wait_finished(&self, conversation: &str, runs: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let events = self.events(conversation);
            let finished = events
                .iter()
                .filter(|e| e["key"] == "execution_status" && e["value"] == "finished")
                .count();
            if finished >= runs {
                return answer_order(events);
            }
            assert!(
                Instant::now() < deadline,
                "run {runs} did not finish: {events:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The ids of the agent server's `events` in the order Switchboard answers them (see
/// [`Agent::event_ids`]): by timestamp, ties in the agent server's order.
fn answer_order(mut events: Vec<Value>) -> Vec<String> {
    events.sort_by(|a, b| {
        let t = |e: &Value| e["timestamp"].as_str().unwrap_or_default().to_owned();
        t(a).cmp(&t(b))
    });
    events
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}
