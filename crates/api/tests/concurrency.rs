//! Concurrent writes of organization app settings (API.md: the version check and the write
//! are one conditional update, no lost update under any interleaving).

use crate::common;

use std::collections::HashSet;
use std::sync::Arc;

use common::{SETTINGS, TestApp, detail, instant, spawn_app, status_json};
use serde_json::{Value, json};
use switchboard_testkit::Backend;
use tokio::sync::Barrier;
use tokio::task::JoinSet;

/// A cheap handle for tasks: posts settings as one key.
#[derive(Clone)]
struct Poster {
    client: reqwest::Client,
    url: String,
    key: String,
}

impl Poster {
    fn new(app: &TestApp, key: &str) -> Self {
        Poster {
            client: app.client.clone(),
            url: format!("{}{}", app.base, SETTINGS),
            key: key.to_owned(),
        }
    }

    async fn post(&self, body: &Value) -> (u16, Value) {
        let r = self
            .client
            .post(&self.url)
            .header("X-Access-Token", &self.key)
            .json(body)
            .send()
            .await
            .unwrap();
        status_json(r).await
    }

    async fn get(&self) -> Value {
        let r = self
            .client
            .get(&self.url)
            .header("X-Access-Token", &self.key)
            .send()
            .await
            .unwrap();
        let (status, body) = status_json(r).await;
        assert_eq!(status, 200, "{body}");
        body
    }
}

/// 50 writers with the same version: one wins, 49 are told the version moved on, and the
/// stored settings are the winner's.
async fn one_winner(backend: Backend) {
    let app = spawn_app(backend).await;
    let version = app.settings().await["updated_at"].clone();
    let poster = Poster::new(&app, &app.owner.key);
    let start = Arc::new(Barrier::new(50));
    let mut tasks = JoinSet::new();
    for i in 0..50u32 {
        let (poster, start, version) = (poster.clone(), start.clone(), version.clone());
        tasks.spawn(async move {
            let body = json!({
                "max_budget_per_task": 1.5 + f64::from(i),
                "last_known_updated_at": version,
            });
            start.wait().await;
            (i, poster.post(&body).await)
        });
    }
    let results = tasks.join_all().await;
    let winners: Vec<&(u32, (u16, Value))> =
        results.iter().filter(|(_, (s, _))| *s == 200).collect();
    assert_eq!(winners.len(), 1, "{backend}: {results:?}");
    let (winner, (_, won)) = winners[0];
    assert_eq!(
        won["max_budget_per_task"],
        1.5 + f64::from(*winner),
        "{backend}"
    );
    let stale = detail(&format!(
        "Organization \"{}\" was modified by another request. Expected version: {}, actual version: {}. Please refresh and retry.",
        app.org,
        version.as_str().unwrap(),
        won["updated_at"].as_str().unwrap()
    ));
    for (i, (status, body)) in &results {
        if i != winner {
            assert_eq!((*status, body), (409, &stale), "{backend}: writer {i}");
        }
    }
    assert_eq!(&app.settings().await, won, "{backend}");
    app.stop().await;
}

/// 25 writers of the budget and 25 writers of the marketplaces, unconditionally and at once:
/// every write lands, none resets the other field, versions are all different.
async fn writers_of_different_fields(backend: Backend) {
    let app = spawn_app(backend).await;
    let before = app.settings().await;
    let poster = Poster::new(&app, &app.owner.key);
    let start = Arc::new(Barrier::new(50));
    let mut tasks = JoinSet::new();
    let list_of = |i: u32| json!([{"name": format!("m{i}"), "source": format!("github:o/r{i}")}]);
    for i in 0..50u32 {
        let (poster, start) = (poster.clone(), start.clone());
        let body = if i % 2 == 0 {
            json!({"max_budget_per_task": 100.0 + f64::from(i)})
        } else {
            json!({"registered_marketplaces": list_of(i)})
        };
        tasks.spawn(async move {
            start.wait().await;
            (body.clone(), poster.post(&body).await)
        });
    }
    let results = tasks.join_all().await;
    let mut versions = HashSet::new();
    let mut latest: Option<&Value> = None;
    for (sent, (status, got)) in &results {
        assert_eq!(*status, 200, "{backend}: {sent}: {got}");
        // Each answer shows its own write.
        if let Some(budget) = sent.get("max_budget_per_task") {
            assert_eq!(&got["max_budget_per_task"], budget, "{backend}");
        }
        if let Some(list) = sent.get("registered_marketplaces") {
            assert_eq!(
                got["registered_marketplaces"][0]["name"], list[0]["name"],
                "{backend}"
            );
        }
        assert!(
            versions.insert(got["updated_at"].as_str().unwrap().to_owned()),
            "{backend}: two writes got the same version"
        );
        if latest.is_none_or(|l| instant(&got["updated_at"]) > instant(&l["updated_at"])) {
            latest = Some(got);
        }
    }
    let stored = app.settings().await;
    let budgets: Vec<f64> = (0..50u32)
        .filter(|i| i % 2 == 0)
        .map(|i| 100.0 + f64::from(i))
        .collect();
    let budget = stored["max_budget_per_task"].as_f64();
    assert!(
        budget.is_some_and(|b| budgets.contains(&b)),
        "{backend}: {stored}"
    );
    let name = stored["registered_marketplaces"][0]["name"]
        .as_str()
        .unwrap();
    let i: u32 = name.strip_prefix('m').unwrap().parse().unwrap();
    assert!(i % 2 == 1, "{backend}: {stored}");
    assert_eq!(
        stored["registered_marketplaces"],
        json!([{"name": name, "source": format!("github:o/r{i}"), "ref": null,
                "repo_path": null, "auto_load": false, "scope": "org"}]),
        "{backend}"
    );
    assert!(
        instant(&stored["updated_at"]) > instant(&before["updated_at"]),
        "{backend}"
    );
    // The last write's answer is what is stored: each answer is the row as written.
    assert_eq!(Some(&stored), latest, "{backend}");
    app.stop().await;
}

/// Read-modify-write with the version read, retried on 409, while other writers change
/// another field: a counter kept in `max_budget_per_task` loses no increment.
async fn no_lost_update(backend: Backend) {
    const COUNTERS: u32 = 20;
    const TOGGLERS: u32 = 5;
    let app = spawn_app(backend).await;
    let start = Arc::new(Barrier::new((COUNTERS + TOGGLERS) as usize));
    let mut counters = JoinSet::new();
    // Different keys and roles: every role may write the budget.
    let keys = [&app.owner.key, &app.admin.key, &app.member.key];
    for i in 0..COUNTERS {
        let poster = Poster::new(&app, keys[i as usize % keys.len()]);
        let start = start.clone();
        counters.spawn(async move {
            start.wait().await;
            let mut conflicts = 0u32;
            loop {
                let read = poster.get().await;
                let n = read["max_budget_per_task"].as_f64().unwrap_or(0.0);
                let (status, got) = poster
                    .post(&json!({
                        "max_budget_per_task": n + 1.0,
                        "last_known_updated_at": read["updated_at"],
                    }))
                    .await;
                match status {
                    200 => {
                        assert_eq!(got["max_budget_per_task"], n + 1.0);
                        return conflicts;
                    }
                    409 => conflicts += 1,
                    _ => panic!("{status}: {got}"),
                }
                assert!(conflicts < 1000, "no progress");
            }
        });
    }
    let mut togglers = JoinSet::new();
    for i in 0..TOGGLERS {
        let poster = Poster::new(&app, &app.owner.key);
        let start = start.clone();
        togglers.spawn(async move {
            start.wait().await;
            for j in 0..5 {
                let (status, got) = poster
                    .post(&json!({"enable_proactive_conversation_starters": (i + j) % 2 == 0}))
                    .await;
                assert_eq!(status, 200, "{got}");
            }
        });
    }
    let conflicts: u32 = counters.join_all().await.into_iter().sum();
    togglers.join_all().await;
    let stored = app.settings().await;
    assert_eq!(
        stored["max_budget_per_task"],
        f64::from(COUNTERS),
        "{backend}: {stored} after {conflicts} conflicts"
    );
    app.stop().await;
}

on_both_backends!(one_winner, writers_of_different_fields, no_lost_update);
