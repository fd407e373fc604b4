//! Switchboard deployed by its own manifests (deploy/kubernetes, issue 32) on the test cluster
//! (`scripts/kube-cluster.sh up`): the image built by scripts/switchboard-image.sh from this
//! test's binary and imported into both nodes; the manifests applied through the test
//! cluster's overlay (tests/kube_deploy/: images never pulled, the API server at its own
//! address, pod IPs for the webhooks); PostgreSQL a throwaway cluster on the host's cluster
//! address (10.89.0.1), trusting the pods' network; the fake LLM there too. A conversation
//! started on one replica (reached from the host at its pod IP) runs to `finished` in a sandbox
//! pod of `switchboard-sandboxes` and is followed on the other; each replica proxies the
//! sandboxes of both (whichever launched them); both replicas are ready; the
//! sandbox's deletion through the API leaves nothing. The test removes what it made (the
//! namespace `switchboard`, its Role and RoleBinding, its sandbox objects, its PostgreSQL), not
//! the images. Without the cluster (or Docker, kubectl, ctr, PostgreSQL's programs) it says so
//! and passes; with `SWITCHBOARD_REQUIRE_KUBE=1` it fails instead.

use crate::common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::OwnedCluster;

/// The host's address on the cluster network: the API server's, and where pods reach the host.
const HOST: &str = "10.89.0.1";
/// The network pods are in (both nodes' pod ranges).
const POD_NETWORK: &str = "10.88.0.0/15";
/// Switchboard's namespace, as deploy/kubernetes/namespaces.yaml names it.
const NAMESPACE: &str = "switchboard";
/// The sandboxes' namespace (also scripts/kube-cluster.sh's; other tests use it too: only
/// this test's objects are removed from it).
const SANDBOXES: &str = "switchboard-sandboxes";
/// The image the manifests name.
const IMAGE: &str = "switchboard/switchboard:local";
/// The nodes whose containerd gets the image.
const NODES: [&str; 2] = ["node-a", "node-b"];
/// How long a rollout or a conversation may take on a loaded two-core machine.
const WITHIN: Duration = Duration::from_secs(300);

#[test]
fn switchboard_deployed_by_its_manifests_runs_a_conversation() {
    let test = "switchboard_deployed_by_its_manifests_runs_a_conversation";
    let Some(cluster) = TestCluster::find(test) else {
        return;
    };
    let started = Instant::now();
    cluster.import_image();
    let pg = OwnedCluster::start_on(HOST, POD_NETWORK).expect("PostgreSQL on the cluster address");
    let (_llm, llm_base) = fake_llm_on(HOST);
    let installation = format!(
        "sbtest-deploy-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let deployed = cluster.deploy(pg.url(), &llm_base, &installation);

    // Both replicas rolled out, each at its pod IP; the database bootstrapped.
    let replicas = deployed.replicas();
    assert_eq!(replicas.len(), 2, "{replicas:?}");
    let key = deployed.bootstrap_key(&replicas);
    let (first, second) = (&replicas[0], &replicas[1]);

    // A conversation started on one replica runs in a pod the scheduler placed, and the
    // other replica follows it to `finished` (they share PostgreSQL).
    let (conversation, sandbox) =
        start_conversation(&first.url, &key, "run: echo deployed-pod", &deployed);
    let info = wait_finished(&second.url, &key, &conversation, &deployed);
    assert_eq!(info["sandbox_id"], sandbox.as_str(), "{info}");
    let events = event_texts(&first.url, &key, &conversation);
    assert!(events.contains("deployed-pod"), "{events}");
    let pod = deployed.sandbox_pod(&sandbox).expect("the sandbox's pod");
    assert_eq!(
        pod["metadata"]["labels"]["switchboard.io/installation"], installation,
        "{pod}"
    );
    let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
    assert!(node.starts_with("node-"), "{pod}");

    // Both replicas are ready (the database answers, migrations applied).
    for replica in &replicas {
        let res = client()
            .get(format!("{}/ready", replica.url))
            .send()
            .expect("GET /ready");
        assert_eq!(res.status().as_u16(), 200, "{} /ready", replica.name);
    }

    // Each replica proxies every sandbox, whichever replica launched it: the conversation's,
    // and one started on the second replica, both reached through both replicas.
    let (code, other) = send_json(
        client()
            .post(format!("{}/api/v1/sandboxes", second.url))
            .header("X-Access-Token", &key),
    );
    assert_eq!(code, 200, "{other}");
    let other = other["id"].as_str().unwrap().to_owned();
    for id in [&sandbox, &other] {
        for replica in &replicas {
            wait_until(
                &format!("{} proxies sandbox {id}", replica.name),
                WITHIN,
                || proxied_alive(&replica.url, &key, id),
            );
        }
    }
    let (code, body) = send_json(
        client()
            .delete(format!("{}/api/v1/sandboxes/{other}", first.url))
            .header("X-Access-Token", &key),
    );
    assert_eq!(code, 200, "{body}");

    // Deleting the sandbox through the API removes its pod, claim and secret (the Role's
    // delete verbs).
    let (code, body) = send_json(
        client()
            .delete(format!("{}/api/v1/sandboxes/{sandbox}", second.url))
            .header("X-Access-Token", &key),
    );
    assert_eq!(code, 200, "{body}");
    wait_until("the sandbox's objects are deleted", WITHIN, || {
        deployed.sandbox_objects().is_empty()
    });
    drop(deployed);
    println!(
        "{test}: deployed, ran a conversation and cleaned up in {} s",
        started.elapsed().as_secs()
    );
}

/// The test cluster (its kubeconfig and state directory).
struct TestCluster {
    kubeconfig: PathBuf,
    state: PathBuf,
}

impl TestCluster {
    /// The cluster, or `None` (saying why) when something this test needs is missing and
    /// `SWITCHBOARD_REQUIRE_KUBE=1` is not set.
    fn find(test: &str) -> Option<TestCluster> {
        let state = std::env::var_os("KUBE_STATE")
            .map(PathBuf::from)
            .unwrap_or_else(|| std::env::temp_dir().join("switchboard-kube"));
        let kubeconfig = std::env::var_os("SWITCHBOARD_TEST_KUBECONFIG")
            .map(PathBuf::from)
            .unwrap_or_else(|| state.join("admin.kubeconfig"));
        let runs = |program: &str, args: &[&str]| {
            Command::new(program)
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        let reason = if !kubeconfig.is_file() || TcpListener::bind((HOST, 0)).is_err() {
            Some("no test cluster (scripts/kube-cluster.sh up)".to_owned())
        } else if !runs("kubectl", &["version", "--client"]) {
            Some("no kubectl".to_owned())
        } else if !runs("docker", &["info"]) {
            Some("no Docker daemon (the image is built with docker)".to_owned())
        } else if !runs("ctr", &["--version"]) {
            Some("no ctr (the image is imported into the nodes with it)".to_owned())
        } else {
            NODES
                .iter()
                .find(|n| !containerd_socket(&state, n).exists())
                .map(|node| format!("no containerd socket of {node}"))
        };
        if let Some(reason) = reason {
            if std::env::var("SWITCHBOARD_REQUIRE_KUBE").is_ok_and(|v| v == "1") {
                panic!("{test}: {reason} (SWITCHBOARD_REQUIRE_KUBE=1)");
            }
            println!("skipped {test}: {reason}");
            return None;
        }
        Some(TestCluster { kubeconfig, state })
    }

    /// `kubectl args…`: stdout, or stderr as the error.
    fn kubectl(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// `kubectl args…`, which must succeed.
    #[track_caller]
    fn kubectl_ok(&self, args: &[&str]) -> String {
        self.kubectl(args)
            .unwrap_or_else(|e| panic!("kubectl {}: {e}", args.join(" ")))
    }

    /// Builds the image from this test's binary (scripts/switchboard-image.sh; skipped when
    /// the image already holds it) and imports it into each node's containerd.
    fn import_image(&self) {
        let script = repo().join("scripts/switchboard-image.sh");
        let out = Command::new("bash")
            .arg(&script)
            .arg(BIN)
            .output()
            .expect("running scripts/switchboard-image.sh");
        assert!(
            out.status.success(),
            "scripts/switchboard-image.sh failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for node in NODES {
            let socket = containerd_socket(&self.state, node);
            let import = format!(
                "docker save {IMAGE} | ctr -a '{}' -n k8s.io images import -",
                socket.display()
            );
            let out = Command::new("sh")
                .args(["-c", &import])
                .output()
                .expect("importing the image");
            assert!(
                out.status.success(),
                "importing {IMAGE} into {node}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    /// Applies the manifests through the test overlay, with the Secret (a new installation key,
    /// `database`) and the test's ConfigMap (the LLM, `installation`) made first, and waits for
    /// the rollout. A namespace left by an earlier run is removed first.
    fn deploy(&self, database: &str, llm_base: &str, installation: &str) -> Deployed<'_> {
        if self.kubectl(&["get", "namespace", NAMESPACE]).is_ok() {
            self.kubectl_ok(&["delete", "namespace", NAMESPACE, "--timeout=300s"]);
        }
        let deployed = Deployed {
            cluster: self,
            installation: installation.to_owned(),
        };
        let manifests = repo().join("deploy/kubernetes");
        let namespaces = manifests.join("namespaces.yaml");
        self.kubectl_ok(&["apply", "-f", &namespaces.display().to_string()]);
        let key = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let ns = ["-n", NAMESPACE];
        self.kubectl_ok(
            &[
                &ns[..],
                &[
                    "create",
                    "secret",
                    "generic",
                    "switchboard",
                    &format!("--from-literal=secret-key={key}"),
                    &format!("--from-literal=database-url={database}"),
                ],
            ]
            .concat(),
        );
        self.kubectl_ok(
            &[
                &ns[..],
                &[
                    "create",
                    "configmap",
                    "switchboard-test",
                    &format!("--from-literal=LLM_BASE_URL={llm_base}"),
                    "--from-literal=LLM_MODEL=openai/fake-model",
                    "--from-literal=LLM_API_KEY=sk-fake-deploy",
                    &format!("--from-literal=SWITCHBOARD_KUBE_INSTALLATION={installation}"),
                ],
            ]
            .concat(),
        );
        let overlay = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kube_deploy");
        self.kubectl_ok(&["apply", "-k", &overlay.display().to_string()]);
        let rollout = self.kubectl(&[
            "-n",
            NAMESPACE,
            "rollout",
            "status",
            "deployment/switchboard",
            &format!("--timeout={}s", WITHIN.as_secs()),
        ]);
        if let Err(e) = rollout {
            panic!(
                "the rollout did not finish: {e}\n{}",
                deployed.diagnostics()
            );
        }
        deployed
    }
}

/// What the test deployed; removed on drop.
struct Deployed<'a> {
    cluster: &'a TestCluster,
    installation: String,
}

/// A Switchboard pod: its name and its URL at the pod IP.
#[derive(Debug)]
struct Replica {
    name: String,
    url: String,
}

impl Deployed<'_> {
    /// The Deployment's pods, each with its pod IP.
    fn replicas(&self) -> Vec<Replica> {
        let text = self.cluster.kubectl_ok(&[
            "-n",
            NAMESPACE,
            "get",
            "pods",
            "-l",
            "app.kubernetes.io/name=switchboard",
            "-o",
            "json",
        ]);
        let pods: Value = serde_json::from_str(&text).unwrap();
        pods["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .map(|p| Replica {
                name: p["metadata"]["name"].as_str().unwrap().to_owned(),
                url: format!("http://{}:8080", p["status"]["podIP"].as_str().unwrap()),
            })
            .collect()
    }

    /// An API key of the `bootstrapped` lines in the replicas' logs. Each replica that finds
    /// the database empty when it starts prints one: two starting together on a new database
    /// may both do, for the same organization and user (each key works).
    fn bootstrap_key(&self, replicas: &[Replica]) -> String {
        let lines: Vec<Value> = replicas
            .iter()
            .flat_map(|r| {
                let logs = self.cluster.kubectl_ok(&["-n", NAMESPACE, "logs", &r.name]);
                logs.lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .filter(|v| v["event"] == "bootstrapped")
                    .collect::<Vec<_>>()
            })
            .collect();
        assert!(
            !lines.is_empty(),
            "a replica bootstraps the database\n{}",
            self.diagnostics()
        );
        for line in &lines {
            assert_eq!(line["org_id"], lines[0]["org_id"], "{lines:?}");
            assert_eq!(line["user_id"], lines[0]["user_id"], "{lines:?}");
        }
        lines[0]["api_key"].as_str().unwrap().to_owned()
    }

    /// The sandbox's pod in the sandboxes' namespace, if there is one.
    fn sandbox_pod(&self, sandbox: &str) -> Option<Value> {
        let id = uuid::Uuid::parse_str(sandbox).expect("a sandbox id");
        let name = format!("sb-{}", id.hyphenated());
        match self
            .cluster
            .kubectl(&["-n", SANDBOXES, "get", "pod", &name, "-o", "json"])
        {
            Ok(text) => Some(serde_json::from_str(&text).unwrap()),
            Err(e) if e.contains("NotFound") => None,
            Err(e) => panic!("kubectl get pod {name}: {e}"),
        }
    }

    /// This installation's pods, claims and secrets in the sandboxes' namespace.
    fn sandbox_objects(&self) -> String {
        let selector = format!("switchboard.io/installation={}", self.installation);
        self.cluster
            .kubectl(&[
                "-n",
                SANDBOXES,
                "get",
                "pods,pvc,secrets",
                "-l",
                &selector,
                "-o",
                "name",
            ])
            .unwrap_or_else(|e| format!("(kubectl failed: {e})"))
            .trim()
            .to_owned()
    }

    /// The pods, their description and their logs, for a failure's message.
    fn diagnostics(&self) -> String {
        let k = |args: &[&str]| {
            self.cluster
                .kubectl(args)
                .unwrap_or_else(|e| format!("(kubectl {}: {e})", args.join(" ")))
        };
        let mut text = k(&["-n", NAMESPACE, "get", "pods", "-o", "wide"]);
        text += &k(&["-n", NAMESPACE, "describe", "pods"]);
        for name in k(&["-n", NAMESPACE, "get", "pods", "-o", "name"]).lines() {
            text += &format!("--- logs of {name}\n");
            text += &k(&[
                "-n",
                NAMESPACE,
                "logs",
                name,
                "--all-containers",
                "--tail=60",
            ]);
        }
        text
    }
}

impl Drop for Deployed<'_> {
    fn drop(&mut self) {
        let c = self.cluster;
        let selector = format!("switchboard.io/installation={}", self.installation);
        let _ = c.kubectl(&[
            "-n",
            SANDBOXES,
            "delete",
            "pods,pvc,secrets",
            "-l",
            &selector,
            "--wait=false",
        ]);
        let _ = c.kubectl(&[
            "-n",
            SANDBOXES,
            "delete",
            "role,rolebinding",
            "switchboard-sandboxes",
            "--ignore-not-found",
        ]);
        let _ = c.kubectl(&[
            "delete",
            "namespace",
            NAMESPACE,
            "--ignore-not-found",
            "--timeout=180s",
        ]);
    }
}

/// The containerd socket of `node` (scripts/kube-cluster.sh).
fn containerd_socket(state: &Path, node: &str) -> PathBuf {
    state.join(format!("data/{node}/containerd/containerd.sock"))
}

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Starts a conversation with `message` on `base`; its id and its sandbox's, once the start
/// is `READY`.
fn start_conversation(
    base: &str,
    key: &str,
    message: &str,
    deployed: &Deployed<'_>,
) -> (String, String) {
    let (status, task) = send_json(
        client()
            .post(format!("{base}/api/v1/app-conversations"))
            .header("X-Access-Token", key)
            .json(&json!({"initial_message": {"role": "user",
                "content": [{"type": "text", "text": message}]}})),
    );
    assert!(status == 200 || status == 201, "{task}");
    let id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + WITHIN;
    loop {
        let (_, tasks) = send_json(
            client()
                .get(format!(
                    "{base}/api/v1/app-conversations/start-tasks?ids={id}"
                ))
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
            Some("ERROR") => panic!("the start failed: {t}\n{}", deployed.diagnostics()),
            _ => {}
        }
        assert!(
            Instant::now() < deadline,
            "the start is still {t}\n{}",
            deployed.diagnostics()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Waits until the conversation's `execution_status` on `base` is `finished`; the conversation.
fn wait_finished(base: &str, key: &str, id: &str, deployed: &Deployed<'_>) -> Value {
    let deadline = Instant::now() + WITHIN;
    loop {
        let (code, body) = send_json(
            client()
                .get(format!("{base}/api/v1/app-conversations?ids={id}"))
                .header("X-Access-Token", key),
        );
        assert_eq!(code, 200, "{body}");
        if body[0]["execution_status"] == "finished" {
            return body[0].clone();
        }
        assert!(
            Instant::now() < deadline,
            "the conversation is {}\n{}",
            body[0]["execution_status"],
            deployed.diagnostics()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Every stored event of the conversation, as one JSON text.
fn event_texts(base: &str, key: &str, conversation: &str) -> String {
    let (code, body) = send_json(
        client()
            .get(format!(
                "{base}/api/v1/conversation/{conversation}/events/search?limit=100"
            ))
            .header("X-Access-Token", key),
    );
    assert_eq!(code, 200, "{body}");
    body.to_string()
}

/// Polls `check` every 500 ms until it holds, failing after `limit` with `what`.
/// Whether `base` proxies `GET /alive` to sandbox `id`'s agent server (the path form, with the
/// sandbox's session key read through `base`).
fn proxied_alive(base: &str, key: &str, id: &str) -> bool {
    let (code, found) = send_json(
        client()
            .get(format!("{base}/api/v1/sandboxes?id={id}"))
            .header("X-Access-Token", key),
    );
    let Some(session) = found[0]["session_api_key"].as_str().filter(|_| code == 200) else {
        return false;
    };
    if found[0]["status"] != "RUNNING" {
        return false;
    }
    client()
        .get(format!("{base}/sandboxes/{id}/agent_server/alive"))
        .header("X-Session-API-Key", session)
        .send()
        .is_ok_and(|r| r.status().as_u16() == 200)
}

fn wait_until(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(500));
    }
}
