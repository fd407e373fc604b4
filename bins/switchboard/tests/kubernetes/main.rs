//! The Kubernetes runtime through the real server (issue 32), against the test cluster
//! (`scripts/kube-cluster.sh up`) on both backends: a conversation runs to `finished` in a pod
//! the scheduler placed, reached only through Switchboard's address, every event stored; pause
//! and resume keep it; a Switchboard killed with SIGKILL and started again finds its pod
//! `RUNNING`; delete leaves no pod, claim or secret. Switchboard listens on the cluster's host
//! address (10.89.0.1), where pods post their webhooks and reach the fake LLM. Without the
//! cluster each test says so and passes; with `SWITCHBOARD_REQUIRE_KUBE=1` it fails instead.

use crate::common;
mod helpers;

use std::time::Duration;

use common::*;
use helpers::*;
use switchboard_testkit::{Backend, TestDatabase};

#[test]
fn a_conversation_runs_in_a_pod_through_switchboard_sqlite() {
    conversation_in_a_pod(Backend::Sqlite);
}

#[test]
fn a_conversation_runs_in_a_pod_through_switchboard_postgres() {
    conversation_in_a_pod(Backend::Postgres);
}

/// The warm pool on this runtime: a ready pod with no owner, claimed by a start that answers
/// `RUNNING` at once; the pool makes another.
#[test]
fn a_start_claims_a_warm_pod_postgres() {
    let Some(cluster) = Cluster::new("a_start_claims_a_warm_pod_postgres") else {
        return;
    };
    let db = TestDatabase::new(Backend::Postgres);
    let rig = cluster.serve(db.url());
    let server = rig.spawn_with(&["--warm-sandboxes", "1"]);
    let key = server.bootstrap_key();
    wait_warm(&server, Backend::Postgres);
    let warm_pods = cluster.sandbox_pods();
    assert_eq!(warm_pods.len(), 1, "{warm_pods:?}");
    let (code, s) = send_json(
        client()
            .post(server.url("/api/v1/sandboxes"))
            .header("X-Access-Token", &key),
    );
    assert_eq!(code, 200, "{s}");
    assert_eq!(
        s["status"], "RUNNING",
        "a claimed warm pod is running at once: {s}"
    );
    let id = s["id"].as_str().unwrap();
    assert!(
        cluster.pod(id).is_some(),
        "the claimed sandbox is the warm pod"
    );
    assert!(warm_pods[0].ends_with(&uuid::Uuid::parse_str(id).unwrap().hyphenated().to_string()));
    // The pool makes another.
    wait_until("a new warm pod", RUNNING_WITHIN, || {
        cluster.sandbox_pods().len() == 2
    });
    let url = s["exposed_urls"][0]["url"].as_str().unwrap();
    let session = s["session_api_key"].as_str().unwrap();
    assert!(proxied_alive(url, session));
}

/// The quota and member rules of the other runtimes hold on pods: beyond
/// `--max-sandboxes-per-user` a start is 409 and makes no pod; another member of the
/// organization neither sees nor pauses the owner's sandbox (404) and has a quota of their own.
#[test]
fn quotas_and_members_hold_on_pods_sqlite() {
    let Some(cluster) = Cluster::new("quotas_and_members_hold_on_pods_sqlite") else {
        return;
    };
    let db = TestDatabase::new(Backend::Sqlite);
    let rig = cluster.serve(db.url());
    let server = rig.spawn_with(&["--max-sandboxes-per-user", "1"]);
    let owner = server.bootstrap_key();
    let org = server.bootstrapped.as_ref().unwrap()["org_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let user = cli_json(
        db.url(),
        &["users", "create", "--email", "member@example.com"],
    );
    let member_id = str_of(&user, "user_id").to_owned();
    let role = ["--role", "member"];
    let add = ["members", "add", "--org-id", &org, "--user-id", &member_id];
    cli_json(db.url(), &[&add[..], &role[..]].concat());
    let keys = ["keys", "create", "--user-id", &member_id, "--org-id", &org];
    let member = str_of(&cli_json(db.url(), &keys), "api_key").to_owned();

    let start = |key: &str| {
        send_json(
            client()
                .post(server.url("/api/v1/sandboxes"))
                .header("X-Access-Token", key),
        )
    };
    let (code, first) = start(&owner);
    assert_eq!(code, 200, "{first}");
    let id = first["id"].as_str().unwrap().to_owned();
    let (code, refused) = start(&owner);
    assert_eq!(code, 409, "beyond the owner's quota: {refused}");
    let (code, seen) = send_json(
        client()
            .get(server.url(&format!("/api/v1/sandboxes?id={id}")))
            .header("X-Access-Token", &member),
    );
    assert_eq!(code, 200);
    assert!(seen[0].is_null(), "another member does not see it: {seen}");
    let (code, _) = send_json(
        client()
            .post(server.url(&format!("/api/v1/sandboxes/{id}/pause")))
            .header("X-Access-Token", &member),
    );
    assert_eq!(code, 404, "nor pauses it");
    let (code, own) = start(&member);
    assert_eq!(code, 200, "the member's own quota: {own}");
    wait_status_within(&server, &owner, &id, "RUNNING", RUNNING_WITHIN);
    let pods = cluster.sandbox_pods();
    assert_eq!(pods.len(), 2, "one pod per admitted start: {pods:?}");
    // The owner's pod names their organization and themselves.
    let labels = cluster.pod(&id).unwrap()["metadata"]["labels"].clone();
    let same = |label: &str, want: &str| {
        uuid::Uuid::parse_str(labels[label].as_str().unwrap_or_default()).ok()
            == uuid::Uuid::parse_str(want).ok()
    };
    assert!(same("switchboard.io/org-id", &org), "{labels}");
    let owner_id = server.bootstrapped.as_ref().unwrap()["user_id"]
        .as_str()
        .unwrap();
    assert!(same("switchboard.io/user-id", owner_id), "{labels}");
}

fn conversation_in_a_pod(backend: Backend) {
    let test = format!("conversation_in_a_pod_{backend:?}");
    let Some(cluster) = Cluster::new(&test) else {
        return;
    };
    let db = TestDatabase::new(backend);
    let rig = cluster.serve(db.url());
    let mut server = rig.spawn();
    let key = server.bootstrap_key();

    // A conversation: the start pipeline makes a pod, the agent runs its command and finishes
    // on the fake LLM, every event reaches Switchboard by the pod's webhooks.
    let (conversation, sandbox) = start_conversation(&server, &key, "run: echo from-the-pod");
    let info = wait_finished(&server, &key, &conversation);
    assert_eq!(info["sandbox_id"], sandbox.as_str());
    let events = event_texts(&server, &key, &conversation);
    assert!(events.contains("from-the-pod"), "{events}");
    let s = wait_sandbox_status(&server, &key, &sandbox, "RUNNING");
    let agent_url = s["exposed_urls"][0]["url"].as_str().unwrap().to_owned();
    assert!(
        agent_url.starts_with(&server.url("/")),
        "clients see only Switchboard's address: {agent_url}"
    );
    let session = s["session_api_key"].as_str().unwrap().to_owned();
    assert!(proxied_alive(&agent_url, &session));
    let pod = cluster.pod(&sandbox).expect("the sandbox's pod");
    let node = pod["spec"]["nodeName"].as_str().unwrap().to_owned();
    assert!(node.starts_with("node-"), "{node}");
    assert!(cluster.claim(&sandbox).is_some());

    // Pause: the pod goes, the claim stays; resume: a pod again, reached through the same
    // Switchboard URL, the conversation still there.
    post_ok(&server, &key, &format!("/api/v1/sandboxes/{sandbox}/pause"));
    wait_sandbox_status(&server, &key, &sandbox, "PAUSED");
    wait_until(
        "the paused pod is deleted",
        Duration::from_secs(120),
        || cluster.pod(&sandbox).is_none(),
    );
    assert!(
        cluster.claim(&sandbox).is_some(),
        "the claim outlives the pause"
    );
    post_ok(
        &server,
        &key,
        &format!("/api/v1/sandboxes/{sandbox}/resume"),
    );
    wait_status_within(&server, &key, &sandbox, "RUNNING", RUNNING_WITHIN);
    assert!(proxied_alive(&agent_url, &session));
    let app = get_conversation(&server, &key, &conversation);
    assert_eq!(app["execution_status"], "finished", "{app}");

    // kill -9 and a new serve on the same data: the pod is found again, RUNNING.
    server.kill9();
    let server = rig.spawn();
    std::thread::sleep(Duration::from_secs(3));
    let s = wait_sandbox_status(&server, &key, &sandbox, "RUNNING");
    assert_eq!(
        s["exposed_urls"][0]["url"].as_str(),
        Some(agent_url.as_str())
    );
    assert!(proxied_alive(&agent_url, &session));

    // Delete: no pod, claim or secret is left.
    let (code, body) = send_json(
        client()
            .delete(server.url(&format!("/api/v1/sandboxes/{sandbox}")))
            .header("X-Access-Token", &key),
    );
    assert_eq!(code, 200, "{body}");
    wait_until(
        "pod, claim and secret are deleted",
        Duration::from_secs(180),
        || cluster.nothing_left(),
    );
}
