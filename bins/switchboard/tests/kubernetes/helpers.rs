//! Helpers of the Kubernetes tests: the cluster (its kubeconfig, `kubectl`, the host address
//! pods reach), the fake LLM and Switchboard listening there, and the API calls the tests make.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;

/// The host's address on the cluster network: the API server's, and where pods reach the host
/// (scripts/kube-cluster.sh).
pub const HOST: &str = "10.89.0.1";
/// The namespace scripts/kube-cluster.sh makes.
pub const NAMESPACE: &str = "switchboard-sandboxes";
/// The image imported into every node.
pub const IMAGE: &str = "switchboard/agent-server:local";
/// How long a sandbox may take to be `RUNNING` (pod scheduled, image started, agent server
/// answering) on a loaded two-core machine.
pub const RUNNING_WITHIN: Duration = Duration::from_secs(300);

/// The test cluster, with an installation id of this test's (its objects are removed when the
/// test ends).
pub struct Cluster {
    pub kubeconfig: PathBuf,
    pub installation: String,
}

impl Cluster {
    /// The cluster, or `None` (saying why) when there is none and none is required.
    pub fn new(test: &str) -> Option<Cluster> {
        let state = std::env::var_os("KUBE_STATE")
            .map(PathBuf::from)
            .unwrap_or_else(|| std::env::temp_dir().join("switchboard-kube"));
        let kubeconfig = std::env::var_os("SWITCHBOARD_TEST_KUBECONFIG")
            .map(PathBuf::from)
            .unwrap_or_else(|| state.join("admin.kubeconfig"));
        let usable = kubeconfig.is_file() && TcpListener::bind((HOST, 0)).is_ok();
        if !usable {
            let reason = "no test cluster (scripts/kube-cluster.sh up)";
            if std::env::var("SWITCHBOARD_REQUIRE_KUBE").is_ok_and(|v| v == "1") {
                panic!("{test}: {reason} (SWITCHBOARD_REQUIRE_KUBE=1)");
            }
            println!("skipped {test}: {reason}");
            return None;
        }
        let random = uuid::Uuid::new_v4().simple().to_string();
        Some(Cluster {
            kubeconfig,
            installation: format!("sbtest-e2e-{}-{}", std::process::id(), &random[..8]),
        })
    }

    /// `kubectl args…` in the namespace: stdout, or stderr as the error.
    pub fn kubectl(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(["-n", NAMESPACE])
            .args(args)
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    fn object(&self, kind: &str, sandbox: &str) -> Option<Value> {
        let id = uuid::Uuid::parse_str(sandbox).expect("a sandbox id");
        let name = format!("sb-{}", id.hyphenated());
        match self.kubectl(&["get", kind, &name, "-o", "json"]) {
            Ok(text) => Some(serde_json::from_str(&text).unwrap()),
            Err(e) if e.contains("NotFound") => None,
            Err(e) => panic!("kubectl get {kind} {name}: {e}"),
        }
    }

    /// The sandbox's pod, if there is one.
    pub fn pod(&self, sandbox: &str) -> Option<Value> {
        self.object("pod", sandbox)
    }

    /// The sandbox's workspace claim, if there is one.
    pub fn claim(&self, sandbox: &str) -> Option<Value> {
        self.object("pvc", sandbox)
    }

    /// The names of this installation's pods.
    pub fn sandbox_pods(&self) -> Vec<String> {
        let selector = format!("switchboard.io/installation={}", self.installation);
        self.kubectl(&["get", "pods", "-l", &selector, "-o", "name"])
            .unwrap_or_default()
            .lines()
            .map(|l| l.trim_start_matches("pod/").to_owned())
            .collect()
    }

    /// Whether none of this installation's pods, claims and secrets is left.
    pub fn nothing_left(&self) -> bool {
        let selector = format!("switchboard.io/installation={}", self.installation);
        self.kubectl(&["get", "pods,pvc,secrets", "-l", &selector, "-o", "name"])
            .is_ok_and(|out| out.trim().is_empty())
    }

    /// A rig serving `db` on this cluster: the fake LLM and a fixed port on [`HOST`].
    pub fn serve(&self, db: &str) -> Rig<'_> {
        let data = TempDir::new();
        let (llm, llm_base) = fake_llm_on(HOST);
        let port = TcpListener::bind((HOST, 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        Rig {
            cluster: self,
            db: db.to_owned(),
            bind: format!("{HOST}:{port}"),
            llm_base,
            _llm: llm,
            data,
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let selector = format!("switchboard.io/installation={}", self.installation);
        let _ = self.kubectl(&[
            "delete",
            "pods,pvc,secrets",
            "-l",
            &selector,
            "--wait=false",
        ]);
    }
}

/// What a test's `serve` runs with; each [`Rig::spawn`] is a new `serve` on the same port,
/// database and data directory.
pub struct Rig<'a> {
    cluster: &'a Cluster,
    db: String,
    bind: String,
    llm_base: String,
    _llm: crate::common::Killed,
    data: TempDir,
}

impl Rig<'_> {
    /// `switchboard serve` with the Kubernetes runtime as the default.
    pub fn spawn(&self) -> Server {
        self.spawn_with(&[])
    }

    /// As [`Rig::spawn`], with `extra` arguments.
    pub fn spawn_with(&self, extra: &[&str]) -> Server {
        let data_dir = self.data.path().display().to_string();
        let kubeconfig = self.cluster.kubeconfig.display().to_string();
        let args = vec![
            "--data-dir",
            &data_dir,
            "--sandbox-runtime",
            "kubernetes",
            "--agent-server-image",
            IMAGE,
            "--kubeconfig",
            &kubeconfig,
            "--kube-installation",
            &self.cluster.installation,
            "--kube-image-pull-policy",
            "Never",
            "--kube-workspace-size",
            "1Gi",
            "--sandbox-start-timeout",
            "300",
            "--llm-model",
            "openai/fake-model",
            "--llm-base-url",
            &self.llm_base,
        ];
        let mut args = args;
        args.extend_from_slice(extra);
        Server::spawn_bound(
            &[],
            &self.bind,
            &self.db,
            ServeOptions {
                args,
                env: vec![("LLM_API_KEY", "sk-fake-kube")],
            },
        )
    }
}

/// Starts a conversation with `message`; its id and its sandbox's, once the start is `READY`.
pub fn start_conversation(server: &Server, key: &str, message: &str) -> (String, String) {
    let (status, task) = send_json(
        client()
            .post(server.url("/api/v1/app-conversations"))
            .header("X-Access-Token", key)
            .json(&serde_json::json!({"initial_message": {"role": "user",
                "content": [{"type": "text", "text": message}]}})),
    );
    assert!(status == 200 || status == 201, "{task}");
    let id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + RUNNING_WITHIN;
    loop {
        let (_, tasks) = send_json(
            client()
                .get(server.url(&format!("/api/v1/app-conversations/start-tasks?ids={id}")))
                .header("X-Access-Token", key),
        );
        let t = &tasks[0];
        match t["status"].as_str() {
            Some("READY") => {
                return (
                    t["app_conversation_id"].as_str().unwrap().to_owned(),
                    t["sandbox_id"].as_str().unwrap().to_owned(),
                );
            }
            Some("ERROR") => panic!(
                "the start failed: {t}; stderr:\n{}",
                server.stderr_lines().join("\n")
            ),
            _ => {}
        }
        assert!(
            Instant::now() < deadline,
            "the start is still {}; stderr:\n{}",
            t["status"],
            server.stderr_lines().join("\n")
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The app conversation as the batch get shows it.
pub fn get_conversation(server: &Server, key: &str, id: &str) -> Value {
    let (code, body) = send_json(
        client()
            .get(server.url(&format!("/api/v1/app-conversations?ids={id}")))
            .header("X-Access-Token", key),
    );
    assert_eq!(code, 200, "{body}");
    body[0].clone()
}

/// Waits until the conversation's `execution_status` is `finished`; the conversation.
pub fn wait_finished(server: &Server, key: &str, id: &str) -> Value {
    let deadline = Instant::now() + RUNNING_WITHIN;
    loop {
        let c = get_conversation(server, key, id);
        if c["execution_status"] == "finished" {
            return c;
        }
        assert!(
            Instant::now() < deadline,
            "the conversation is {}; stderr:\n{}",
            c["execution_status"],
            server.stderr_lines().join("\n")
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Every stored event of the conversation, as one JSON text.
pub fn event_texts(server: &Server, key: &str, conversation: &str) -> String {
    let (code, body) = send_json(
        client()
            .get(server.url(&format!(
                "/api/v1/conversation/{conversation}/events/search?limit=100"
            )))
            .header("X-Access-Token", key),
    );
    assert_eq!(code, 200, "{body}");
    body.to_string()
}

/// `POST path` answered 200.
pub fn post_ok(server: &Server, key: &str, path: &str) {
    let (code, body) = send_json(
        client()
            .post(server.url(path))
            .header("X-Access-Token", key),
    );
    assert_eq!(code, 200, "POST {path}: {body}");
}

/// Waits up to `limit` for the sandbox to show `status`.
pub fn wait_status_within(server: &Server, key: &str, id: &str, status: &str, limit: Duration) {
    wait_until(&format!("sandbox {id} {status}"), limit, || {
        let (_, body) = send_json(
            client()
                .get(server.url(&format!("/api/v1/sandboxes?id={id}")))
                .header("X-Access-Token", key),
        );
        body[0]["status"] == status
    });
}

/// `GET <agent server URL>/alive` through Switchboard's proxy, with the session key.
pub fn proxied_alive(agent_url: &str, session: &str) -> bool {
    client()
        .get(format!("{}/alive", agent_url.trim_end_matches('/')))
        .header("X-Session-API-Key", session)
        .send()
        .is_ok_and(|r| r.status().as_u16() == 200)
}

/// Polls `check` every 500 ms until it holds, failing after `limit` with `what`.
pub fn wait_until(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(500));
    }
}
