//! The secrets routes and the provider tokens.

use serde_json::{Value, json};
use switchboard_testkit::Backend;

use crate::user_settings::rig::{GITHUB_TOKEN, Rig, SECRET_VALUE};

pub fn secrets_and_provider_tokens(r: &Rig, backend: Backend) {
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
