//! Starts that reach READY: the snapshots, the conversation row and its events, a second
//! start into the same sandbox, and a local repository cloned with its setup script run.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_domain::ConversationId;
use switchboard_domain::ports::ConversationStore;
use switchboard_testkit::Backend;

use crate::app_conversations_start::rig::{
    LLM_KEY, app, events_of, finished, git_repo, hello, start, stream_start,
};
use crate::common::sandboxes::SandboxOptions;

pub async fn start_to_ready(backend: Backend) {
    let app = app(backend, SandboxOptions::default()).await;
    let key = app.owner.key.clone();
    let chosen = ConversationId::new_random();
    let t = start(
        &app,
        &key,
        json!({"initial_message": hello("say hello"), "conversation_id": chosen.0.simple().to_string(),
               "secrets": {"GITHUB_TOKEN": "ghp_very_secret"}, "trigger": "openhands_api"}),
    )
    .await;
    assert_eq!(t["created_by_user_id"], app.owner.user_id.to_string());
    assert_eq!(t["app_conversation_id"], Value::Null);
    assert!(!t.to_string().contains("ghp_very_secret"), "{t}");
    assert_eq!(t["request"]["secrets"]["GITHUB_TOKEN"], "**********");
    let id = t["id"].as_str().unwrap().to_owned();
    let done = finished(&app, &key, &id).await;
    assert_eq!(done["status"], "READY", "{backend}: {done}");
    assert_eq!(
        done["app_conversation_id"],
        chosen.0.simple().to_string(),
        "{done}"
    );
    assert!(done["sandbox_id"].is_string(), "{done}");
    assert!(
        done["agent_server_url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:"),
        "{done}"
    );
    assert!(!done.to_string().contains(LLM_KEY));

    // The stand-in's webhooks land on the conversation the start created: 4 events, no more.
    let events = events_of(&app, &key, &chosen.to_string(), 4).await;
    assert_eq!(events.len(), 4, "{backend}: {events:?}");
    assert_eq!(events[0]["llm_message"]["content"][0]["text"], "say hello");
    let store = app.store.clone();
    let conv = tokio::task::spawn_blocking(move || store.conversation(chosen).unwrap().unwrap())
        .await
        .unwrap();
    assert_eq!(conv.owner_id, app.owner.user_id);
    assert_eq!(conv.sandbox_id.unwrap().to_string(), done["sandbox_id"]);
    assert_eq!(
        conv.title.as_deref(),
        Some(&format!("Conversation {}", &chosen.0.simple().to_string()[..5])[..])
    );
    // The stand-in reports the run finished.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let store = app.store.clone();
        let c = tokio::task::spawn_blocking(move || store.conversation(chosen).unwrap().unwrap())
            .await
            .unwrap();
        if c.execution_status.map(|s| s.as_str()) == Some("finished") {
            break;
        }
        assert!(Instant::now() < deadline, "{backend}: {c:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A second start into the same (running) sandbox reuses it.
    let sandbox = done["sandbox_id"].as_str().unwrap().to_owned();
    let snaps = stream_start(
        &app,
        &key,
        json!({"initial_message": hello("again"), "sandbox_id": sandbox}),
    )
    .await;
    let statuses: Vec<&str> = snaps
        .iter()
        .map(|s| s["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses.first(), Some(&"WORKING"), "{snaps:?}");
    assert_eq!(statuses.last(), Some(&"READY"), "{backend}: {snaps:?}");
    assert!(statuses.contains(&"STARTING_CONVERSATION"), "{statuses:?}");
    assert!(!statuses.contains(&"PREPARING_REPOSITORY"), "{statuses:?}");
    assert_eq!(snaps.last().unwrap()["sandbox_id"], sandbox.as_str());
    // It works in a folder of its own below the sandbox's project directory (issue 31).
    let joined = snaps.last().unwrap()["app_conversation_id"]
        .as_str()
        .unwrap()
        .replace('-', "");
    let handle = switchboard_domain::sandboxes::runtime::RuntimeHandle::from_json(
        app.record(&sandbox).unwrap().handle.as_deref().unwrap(),
    )
    .unwrap();
    let project = std::path::PathBuf::from(handle.project_dir.unwrap());
    assert_eq!(project, handle.working_dir.join("workspace/project"));
    assert!(project.join(&joined).is_dir(), "{backend}: {project:?}");
    assert!(!project.join(chosen.0.simple().to_string()).exists());
}

pub async fn repository_and_setup_script(backend: Backend) {
    let app = app(backend, SandboxOptions::default()).await;
    let key = app.owner.key.clone();
    let repo = tempfile::TempDir::new().unwrap();
    git_repo(repo.path(), "echo set-up > marker\n");
    for source in [
        repo.path().display().to_string(),
        format!("file://{}", repo.path().display()),
    ] {
        let snaps = stream_start(
            &app,
            &key,
            json!({"initial_message": hello("hi"), "selected_repository": source,
                   "selected_branch": "work", "git_provider": "github"}),
        )
        .await;
        let mut statuses: Vec<&str> = snaps
            .iter()
            .map(|s| s["status"].as_str().unwrap())
            .collect();
        statuses.dedup();
        assert_eq!(
            statuses,
            [
                "WORKING",
                "WAITING_FOR_SANDBOX",
                "PREPARING_REPOSITORY",
                "RUNNING_SETUP_SCRIPT",
                "STARTING_CONVERSATION",
                "READY"
            ],
            "{backend}: {snaps:?}"
        );
        let done = snaps.last().unwrap();
        let sandbox = done["sandbox_id"].as_str().unwrap();
        let conversation: ConversationId = done["app_conversation_id"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let record = app.record(sandbox).unwrap();
        let handle = switchboard_domain::sandboxes::runtime::RuntimeHandle::from_json(
            record.handle.as_deref().unwrap(),
        )
        .unwrap();
        // Unconfined (`--process-isolation none`): the project directory's host path, the
        // layout of `/workspace/project` under the sandbox's directory (issue 31).
        let workdir = handle.working_dir.join("workspace/project");
        assert_eq!(
            handle.project_dir.as_deref(),
            Some(workdir.to_str().unwrap()),
            "{backend}"
        );
        assert!(
            !workdir.join(conversation.0.simple().to_string()).exists(),
            "{backend}: the project directory itself, no folder per conversation"
        );
        assert_eq!(
            std::fs::read_to_string(workdir.join("README")).unwrap(),
            "work\n",
            "{backend}: the branch is checked out"
        );
        assert_eq!(
            std::fs::read_to_string(workdir.join("marker")).unwrap(),
            "set-up\n",
            "{backend}: setup.sh ran in the clone"
        );
    }
}
