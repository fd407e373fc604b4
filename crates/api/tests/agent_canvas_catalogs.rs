//! The model and provider catalogs and the skills search (issue 25) against the requests
//! OpenHands' browser client sends (fixtures/agent_canvas/catalog_requests.json, captured from
//! `@openhands/agent-canvas` 1.20.0), on both backends: its headers (`Authorization: Bearer`),
//! its query strings, its paging walks to the end, and what it reads from each answer; the
//! operator's restriction; the 422s of bad paging input.

use crate::common;

use common::{TestApp, spawn_app_on_with_state, status_json};
use reqwest::Method;
use serde_json::Value;
use std::collections::BTreeSet;
use switchboard_api::extract::BodyLimits;
use switchboard_domain::llm_catalog::LlmCatalog;
use switchboard_domain::skills::SkillLibrary;
use switchboard_testkit::Backend;

on_both_backends!(client_requests_walk_the_catalogs);
on_both_backends!(skills_are_global_and_the_callers);
on_both_backends!(the_operator_narrows_the_catalog);
on_both_backends!(bad_paging_input_is_422);

fn fixture() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/agent_canvas/catalog_requests.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The fixture's path of the request named `name`.
fn path_of(name: &str) -> String {
    fixture()["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no request {name:?} in the fixture"))["path"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// As the client sends it: `Authorization: Bearer <key>`.
async fn client_get(app: &TestApp, path: &str, key: &str) -> (u16, Value) {
    let r = app
        .client
        .request(Method::GET, format!("{}{}", app.base, path))
        .header("Authorization", format!("Bearer {key}"))
        .send()
        .await
        .unwrap();
    status_json(r).await
}

/// Follows `next_page_id` from `first` as the client does (the id put in for
/// `{next_page_id}` of `next`), at most 10 pages, failing on a repeated page id.
async fn walk(app: &TestApp, key: &str, first: &str, next: &str) -> Vec<Value> {
    let (status, mut page) = client_get(app, first, key).await;
    assert_eq!(status, 200, "{first}: {page}");
    let mut items = Vec::new();
    let mut seen = BTreeSet::new();
    for _ in 0..10 {
        items.extend(page["items"].as_array().unwrap().iter().cloned());
        let Some(id) = page["next_page_id"].as_str().map(str::to_owned) else {
            return items;
        };
        assert!(seen.insert(id.clone()), "repeated page id {id}");
        let path = next.replace("{next_page_id}", &id);
        let (status, p) = client_get(app, &path, key).await;
        assert_eq!(status, 200, "{path}: {p}");
        page = p;
    }
    panic!("more than 10 pages from {first}");
}

async fn client_requests_walk_the_catalogs(backend: Backend) {
    let app = common::spawn_app(backend).await;
    let key = app.member.key.clone();

    // OpenHands' own provider: not served here, an empty list (the client then has no free
    // models), not an error.
    let (status, page) = client_get(
        &app,
        &path_of("free models of OpenHands' own provider (first page)"),
        &key,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(page["items"], serde_json::json!([]));
    assert_eq!(page["next_page_id"], Value::Null);

    // One provider: every item is one of its models, with the fields the client reads.
    let (status, page) = client_get(&app, &path_of("a provider's models (first page)"), &key).await;
    assert_eq!(status, 200, "{page}");
    let items = page["items"].as_array().unwrap();
    assert!(!items.is_empty());
    for m in items {
        assert_eq!(m["provider"], "anthropic");
        assert!(m["name"].as_str().is_some_and(|n| !n.is_empty()));
        assert!(
            m["verified"].is_boolean() && m["free"] == false && m["default"] == false,
            "{m}"
        );
    }
    assert!(
        items
            .iter()
            .any(|m| m["name"] == "claude-sonnet-5" && m["verified"] == true)
    );

    // A provider with more than one page: the walk ends, in order, without repeats.
    let bedrock_first =
        path_of("a provider's models (next page)").replace("page_id={next_page_id}&", "");
    let models = walk(
        &app,
        &key,
        &bedrock_first,
        &path_of("a provider's models (next page)"),
    )
    .await;
    assert!(
        models.len() > 100,
        "bedrock's models span pages: {}",
        models.len()
    );
    let names: Vec<&str> = models.iter().map(|m| m["name"].as_str().unwrap()).collect();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "no model twice");
    assert!(models.iter().all(|m| m["provider"] == "bedrock"));

    // Providers: verified first, each once, every provider of the catalog.
    let providers = walk(
        &app,
        &key,
        &path_of("providers (first page)"),
        &path_of("providers (next page)"),
    )
    .await;
    let catalog = LlmCatalog::shipped(&[]);
    let all = catalog
        .search_providers(&Default::default(), None, usize::MAX)
        .items;
    assert_eq!(providers.len(), all.len());
    let first_unverified = providers
        .iter()
        .position(|p| p["verified"] == false)
        .unwrap();
    assert!(
        providers[..first_unverified]
            .iter()
            .all(|p| p["verified"] == true)
    );
    assert!(
        providers[first_unverified..]
            .iter()
            .all(|p| p["verified"] == false)
    );
    assert!(
        providers
            .iter()
            .any(|p| p["name"] == "anthropic" && p["verified"] == true)
    );

    // Searches: a case-insensitive substring, verified only.
    let (status, page) = client_get(
        &app,
        "/api/v1/config/models/search?query=SONNET&verified__eq=true&limit=100",
        &key,
    )
    .await;
    assert_eq!(status, 200);
    let items = page["items"].as_array().unwrap();
    assert!(!items.is_empty());
    assert!(items.iter().all(|m| {
        m["verified"] == true
            && m["name"]
                .as_str()
                .unwrap()
                .to_lowercase()
                .contains("sonnet")
    }));
    let (_, page) = client_get(&app, "/api/v1/config/providers/search?query=OPEN", &key).await;
    assert!(
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "openai")
    );
    // Default limit 50.
    let (_, page) = client_get(&app, "/api/v1/config/models/search", &key).await;
    assert_eq!(page["items"].as_array().unwrap().len(), 50);
    assert!(page["next_page_id"].is_string());
    app.stop().await;
}

async fn skills_are_global_and_the_callers(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_owned();
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let app = spawn_app_on_with_state(
        backend,
        BodyLimits::default(),
        listener,
        |s| s,
        |st| st.with_skills(SkillLibrary::new(Some(root))),
    )
    .await;
    let key = app.member.key.clone();
    let first = path_of("skills (first page)");
    // Nothing in the directory yet: an empty page.
    let (status, page) = client_get(&app, &first, &key).await;
    assert_eq!(
        (status, page),
        (200, serde_json::json!({"items": [], "next_page_id": null}))
    );

    let global = dir.path().join("global");
    std::fs::create_dir_all(global.join("nested")).unwrap();
    std::fs::write(
        global.join("docker.md"),
        "---\nname: docker\ntype: knowledge\ntriggers:\n- docker\n- container\n---\nUse docker.\n",
    )
    .unwrap();
    std::fs::write(
        global.join("nested/SKILL.md"),
        "---\nname: pdf-tools\ndescription: PDFs\n---\n",
    )
    .unwrap();
    std::fs::write(global.join("README.md"), "---\nname: not-a-skill\n---\n").unwrap();
    std::fs::write(global.join("plain.md"), "no front matter\n").unwrap();
    for i in 0..120 {
        std::fs::write(
            global.join(format!("bulk-{i:03}.md")),
            "---\ntype: task\n---\n",
        )
        .unwrap();
    }
    let mine = dir
        .path()
        .join("users")
        .join(app.member.user_id.to_string());
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(
        mine.join("mine.md"),
        "---\ntriggers: [deploy, 'ship it']\n---\n",
    )
    .unwrap();
    let theirs = dir.path().join("users").join(app.admin.user_id.to_string());
    std::fs::create_dir_all(&theirs).unwrap();
    std::fs::write(theirs.join("theirs.md"), "---\nname: admins-own\n---\n").unwrap();

    let skills = walk(&app, &key, &first, &path_of("skills (next page)")).await;
    assert_eq!(skills.len(), 123, "2 named, 120 bulk, the member's own");
    let names: Vec<&str> = skills.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert!(!names.contains(&"admins-own") && !names.contains(&"not-a-skill"));
    assert!(!names.contains(&"plain"));
    let docker = skills.iter().find(|s| s["name"] == "docker").unwrap();
    assert_eq!(
        docker,
        &serde_json::json!({"name": "docker", "type": "knowledge", "source": "global",
            "triggers": ["docker", "container"]})
    );
    assert_eq!(
        skills.last().unwrap(),
        &serde_json::json!({"name": "mine", "type": "knowledge", "source": "user",
            "triggers": ["deploy", "ship it"]})
    );
    assert!(
        skills
            .iter()
            .any(|s| s["name"] == "pdf-tools" && s["triggers"].is_null())
    );
    assert!(
        skills
            .iter()
            .any(|s| s["name"] == "bulk-007" && s["type"] == "task")
    );
    // The admin sees their own instead.
    let (_, page) = client_get(&app, &first, &app.admin.key).await;
    let (_, next) = client_get(
        &app,
        &path_of("skills (next page)")
            .replace("{next_page_id}", page["next_page_id"].as_str().unwrap()),
        &app.admin.key,
    )
    .await;
    assert_eq!(
        next["items"].as_array().unwrap().last().unwrap()["name"],
        "admins-own"
    );
    app.stop().await;
}

async fn the_operator_narrows_the_catalog(backend: Backend) {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let allow = [
        "anthropic/claude-sonnet-*".parse().unwrap(),
        "openai/gpt-5.6".parse().unwrap(),
    ];
    let app = spawn_app_on_with_state(
        backend,
        BodyLimits::default(),
        listener,
        |s| s,
        |st| st.with_llm_catalog(LlmCatalog::shipped(&allow)),
    )
    .await;
    let key = app.member.key.clone();
    let (_, page) = client_get(&app, "/api/v1/config/models/search?limit=100", &key).await;
    let items = page["items"].as_array().unwrap();
    assert!(
        items
            .iter()
            .any(|m| m["provider"] == "openai" && m["name"] == "gpt-5.6")
    );
    assert!(
        items
            .iter()
            .all(|m| m["provider"] == "openai" && m["name"] == "gpt-5.6"
                || m["provider"] == "anthropic"
                    && m["name"].as_str().unwrap().starts_with("claude-sonnet-"))
    );
    let (_, page) = client_get(&app, &path_of("providers (first page)"), &key).await;
    assert_eq!(
        page,
        serde_json::json!({"items": [{"name": "anthropic", "verified": true},
            {"name": "openai", "verified": true}], "next_page_id": null})
    );
    let (_, page) = client_get(
        &app,
        "/api/v1/config/models/search?provider__eq=bedrock",
        &key,
    )
    .await;
    assert_eq!(page["items"], serde_json::json!([]));
    app.stop().await;
}

async fn bad_paging_input_is_422(backend: Backend) {
    let app = common::spawn_app(backend).await;
    let key = app.member.key.clone();
    for path in [
        "/api/v1/config/models/search",
        "/api/v1/config/providers/search",
        "/api/v1/skills/search",
    ] {
        for (query, loc, kind) in [
            ("limit=0", "limit", "greater_than"),
            ("limit=101", "limit", "less_than_equal"),
            ("limit=ten", "limit", "int_parsing"),
            ("page_id=not-ours", "page_id", "value_error"),
        ] {
            let (status, body) = client_get(&app, &format!("{path}?{query}"), &key).await;
            assert_eq!(status, 422, "{path}?{query}: {body}");
            common::assert_one_error(&body, &serde_json::json!(["query", loc]), kind);
        }
        // Without a key: 401, before the query is judged.
        let r = app.get(&format!("{path}?limit=0"), None).await;
        assert_eq!(r.status().as_u16(), 401);
    }
    for path in [
        "/api/v1/config/models/search",
        "/api/v1/config/providers/search",
    ] {
        let (status, body) = client_get(&app, &format!("{path}?verified__eq=maybe"), &key).await;
        assert_eq!(status, 422);
        common::assert_one_error(
            &body,
            &serde_json::json!(["query", "verified__eq"]),
            "bool_type",
        );
    }
    // A skills cursor is not a catalog cursor, and the other way round.
    let (_, page) = client_get(&app, "/api/v1/config/models/search?limit=1", &key).await;
    let catalog_cursor = page["next_page_id"].as_str().unwrap().to_owned();
    let (status, _) = client_get(
        &app,
        &format!("/api/v1/skills/search?page_id={catalog_cursor}"),
        &key,
    )
    .await;
    assert_eq!(status, 422);
    app.stop().await;
}
