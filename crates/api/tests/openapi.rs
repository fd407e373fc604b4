//! The OpenAPI document (a snapshot, and checked against the routes the app serves), and the
//! operational routes: `/health`, `/ready`, `/metrics`, request ids, unknown paths.

use crate::common;

use std::collections::BTreeSet;

use common::{SETTINGS, TestApp, detail, spawn_app, status_json};
use reqwest::Method;
use serde_json::{Value, json};
use switchboard_testkit::Backend;

/// Routes that need no key and so declare no 401/422.
/// Issue 34's sign-in routes (and those under them): for browsers and devices, not keys.
const SIGN_IN: [&str; 6] = [
    "/login",
    "/logout",
    "/account",
    "/device",
    "/oauth/device/authorize",
    "/oauth/device/token",
];

const OPERATIONAL: [&str; 8] = [
    "/health",
    "/ready",
    "/metrics",
    "/openapi.json",
    "/alive",
    "/server_info",
    "/api/v1/web-client/config",
    "/api/service/health",
];
/// The sandbox proxy's path (issue 22): any method, any body, the service's answers.
const PROXY: &str = "/sandboxes/{sandbox_id}/{service}/{path}";

async fn fetch_document(app: &TestApp) -> Value {
    let resp = app.get("/openapi.json", None).await;
    assert_eq!(resp.status().as_u16(), 200, "{}", app.backend);
    assert_eq!(
        resp.headers().get("content-type").unwrap(),
        "application/json",
        "{}",
        app.backend
    );
    let text = resp.text().await.unwrap();
    assert_eq!(
        text,
        switchboard_api::openapi::document_json(),
        "{}: served as generated",
        app.backend
    );
    serde_json::from_str(&text).unwrap()
}

async fn document_snapshot(backend: Backend) {
    let app = spawn_app(backend).await;
    let doc = fetch_document(&app).await;
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    assert_eq!(doc["info"]["version"], "0.0.1");
    insta::assert_json_snapshot!("document", doc);
    app.stop().await;
}

fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            out.push((method.clone(), path.clone(), op.clone()));
        }
    }
    out
}

fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("$ref", Value::String(r)) => out.push(r.clone()),
                    _ => refs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

async fn document_matches_routes(backend: Backend) {
    let app = spawn_app(backend).await;
    let doc = fetch_document(&app).await;
    let ops = operations(&doc);
    let documented: BTreeSet<(String, String)> =
        ops.iter().map(|(m, p, _)| (m.clone(), p.clone())).collect();
    assert_eq!(documented.len(), ops.len());
    let routes = switchboard_api::openapi::route_table();
    let served: BTreeSet<(String, String)> = routes.iter().cloned().collect();
    assert_eq!(
        served.len(),
        routes.len(),
        "the route table lists a route twice"
    );
    assert_eq!(documented, served, "{backend}");
    for (method, path, op) in &ops {
        let responses = op["responses"].as_object().unwrap();
        let operational = OPERATIONAL.contains(&path.as_str());
        if path == PROXY {
            // The proxy: the session key or an API key; its own refusals documented.
            for status in ["200", "401", "404", "409", "413", "502", "504"] {
                assert!(responses.contains_key(status), "{method} {path}: {status}");
            }
            assert_eq!(
                op["security"],
                json!([{"SessionKeyHeader": []}, {"APIKeyHeader": []}, {"BearerAuth": []}]),
                "{method} {path}"
            );
            continue;
        }
        // Issue 34's sign-in pages and device flow: a browser's or a device's, no key; each
        // says what it answers without sign-in configured.
        if SIGN_IN
            .iter()
            .any(|p| path == p || path.starts_with(&format!("{p}/")))
        {
            assert!(
                ["200", "303"].iter().any(|s| responses.contains_key(*s)),
                "{method} {path}"
            );
            assert!(op.get("security").is_none(), "{method} {path}: no key");
            continue;
        }
        // A websocket: 101 or a refused handshake; errors after it are close codes.
        let socket = path.starts_with("/sockets/");
        if socket {
            for status in ["101", "400", "403"] {
                assert!(responses.contains_key(status), "{method} {path}: {status}");
            }
        } else {
            // Creations answer 201, as OpenHands' do (issue 21: secrets, profiles).
            assert!(
                responses.contains_key("200") || responses.contains_key("201"),
                "{method} {path}"
            );
        }
        for status in ["401", "422", "500"] {
            if socket {
                continue;
            }
            assert_eq!(
                responses.contains_key(status),
                !operational,
                "{method} {path}: {status}"
            );
        }
        // Authenticated operations say how: X-Access-Token or a bearer token; the agent-server
        // webhooks, the sandbox session key.
        // The sandbox-scoped secrets (issue 21) take the session key alone.
        let session_only =
            path.starts_with("/api/v1/webhooks/") || path.contains("/settings/secrets");
        if path.starts_with("/api/service/users/") {
            // Issue 31: a trusted service's routes take the service key alone.
            assert_eq!(
                op["security"],
                json!([{"ServiceKeyHeader": []}]),
                "{method} {path}"
            );
        } else if session_only {
            assert_eq!(
                op["security"],
                json!([{"SessionKeyHeader": []}]),
                "{method} {path}"
            );
        } else if !operational {
            assert_eq!(
                op["security"],
                json!([{"APIKeyHeader": []}, {"BearerAuth": []}]),
                "{method} {path}"
            );
            let params = op["parameters"].as_array().unwrap();
            assert!(
                params
                    .iter()
                    .any(|p| p["name"] == "X-Org-Id" && p["in"] == "header"),
                "{method} {path}"
            );
        }
    }
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(
        schemes["APIKeyHeader"],
        json!({"type": "apiKey", "in": "header", "name": "X-Access-Token"})
    );
    assert_eq!(schemes["BearerAuth"]["scheme"], "bearer");
    // Every reference resolves.
    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(!all.is_empty());
    for r in all {
        let name = r
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("{r}"));
        assert!(
            doc["components"]["schemas"].get(name).is_some(),
            "{backend}: {r} does not resolve"
        );
    }
    app.stop().await;
}

/// Every route of the route table is served: none answers with the default 404.
async fn every_route_is_served(backend: Backend) {
    let app = spawn_app(backend).await;
    let default_404 = detail("Not Found");
    for (method, path) in switchboard_api::openapi::route_table() {
        if path == PROXY {
            // Told from the router's 404 by its 401 without credentials.
            let url = format!("/sandboxes/{}/agent_server/api/x", uuid::Uuid::new_v4());
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let (status, body) =
                status_json(app.req(method.clone(), &url, None).send().await.unwrap()).await;
            assert_eq!(
                (status, body),
                (401, detail("Not authenticated")),
                "{backend}: {method} {url}"
            );
            continue;
        }
        // A sandbox route is told from the router's 404 by its 422 for a malformed id.
        let sandbox_route = path.starts_with("/api/v1/sandboxes/{");
        // Issue 21's routes: what each answers the owner with an empty body.
        let personal = personal_route(&method, &path);
        let url = if let Some((url, _, _)) = &personal {
            url.clone()
        } else if sandbox_route {
            path.replace("{id}", "x").replace("{sandbox_id}", "x")
        } else {
            path.replace("{id}", &uuid::Uuid::new_v4().to_string())
                .replace("{conversation_id}", &uuid::Uuid::new_v4().to_string())
        } + match path.as_str() {
            p if p.ends_with("/events") || p == "/api/v1/sandbox-specs" => "?id=a",
            // The git routes require `path` (a 422 without it).
            p if p.contains("/git/") => "?path=.",
            "/api/v1/sandboxes" if method == "get" => "?id=0b9f3c4e7d2a4c1e9a8b5f6e7d8c9a0b",
            // A path value that is no UUID is an unknown sandbox (404): the query form's 422
            // tells this route from the router's 404.
            "/api/v1/sandboxes/{id}" => "?sandbox_id=x",
            "/api/v1/app-conversations/start-tasks" => "?ids=0b9f3c4e7d2a4c1e9a8b5f6e7d8c9a0b",
            "/api/v1/app-conversations" if method == "get" => {
                "?ids=0b9f3c4e7d2a4c1e9a8b5f6e7d8c9a0b"
            }
            _ => "",
        };
        let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let mut r = app.req(method.clone(), &url, Some(&app.owner.key));
        if method == Method::POST || method == Method::PATCH {
            let body = if path == "/api/keys" {
                json!({"name": "route check"})
            } else if path.ends_with("/send-message") || path.ends_with("/pending-messages") {
                json!({"content": [{"type": "text", "text": "route check"}]})
            } else if path.ends_with("/switch_profile") {
                json!({"profile_name": "route-check"})
            } else {
                json!({})
            };
            r = r.json(&body);
        }
        let resp = r.send().await.unwrap();
        assert!(
            resp.headers().contains_key("x-request-id"),
            "{backend}: {method} {url}"
        );
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        assert_ne!(body, default_404, "{backend}: {method} {url}");
        assert_ne!(status, 405, "{backend}: {method} {url}");
        if let Some((_, want, message)) = personal {
            assert_eq!(status, want, "{backend}: {method} {url}: {body}");
            if let Some(m) = message {
                assert_eq!(body, detail(m), "{backend}: {method} {url}");
            }
        } else if SIGN_IN
            .iter()
            .any(|p| path == *p || path.starts_with(&format!("{p}/")))
        {
            // This app signs nobody in: each says so (a page, or JSON for the device flow),
            // except forms, refused by their own extractor first (400).
            let says = body
                .to_string()
                .contains("Sign-in is not configured on this server");
            assert!(
                (status == 404 && says) || (status == 400 && method == Method::POST),
                "{backend}: {method} {url}: {status} {body}"
            );
        } else if path.starts_with("/sockets/") {
            // Without the upgrade headers: the handshake is refused.
            assert_eq!(status, 400, "{backend}: {method} {url}: {body}");
        } else if sandbox_route {
            let loc = if path.contains("{id}") {
                json!(["query", "sandbox_id"])
            } else {
                json!(["path", "sandbox_id"])
            };
            assert_eq!(
                (status, &body["detail"][0]["loc"]),
                (422, &loc),
                "{backend}: {method} {url}: {body}"
            );
        } else if method == Method::POST
            && matches!(
                path.as_str(),
                "/api/v1/sandboxes"
                    | "/api/v1/app-conversations"
                    | "/api/v1/app-conversations/stream-start"
            )
        {
            // The test app runs no sandboxes.
            assert_eq!(
                (status, body),
                (503, detail("Sandboxes are not enabled on this server")),
                "{backend}: {method} {url}"
            );
        } else if path.contains("{id}") {
            assert_eq!(
                (status, body),
                (404, detail("API key not found")),
                "{backend}: {method} {url}"
            );
        } else if path.starts_with("/api/v1/webhooks/") {
            // An API key is not a session key.
            assert_eq!(
                (status, body),
                (401, detail("X-Session-API-Key header is required")),
                "{backend}: {method} {url}"
            );
        } else if path.contains("{conversation_id}") {
            // A conversation nobody has: 404, not the router's.
            assert_eq!(
                (status, body),
                (404, detail("Conversation not found")),
                "{backend}: {method} {url}"
            );
        } else {
            assert_eq!(status, 200, "{backend}: {method} {url}: {body}");
        }
    }
    app.stop().await;
}

/// Issue 21's routes with a path parameter or a body rule: the URL to call, the status the
/// owner gets with an empty JSON body (none for PUT and DELETE), and the detail when fixed.
fn personal_route(method: &str, path: &str) -> Option<(String, u16, Option<&'static str>)> {
    let url = path
        .replace("{name}", "route-check")
        .replace("{secret_id}", "ROUTE_CHECK")
        .replace("{sandbox_id}", &uuid::Uuid::new_v4().to_string())
        .replace("{secret_name}", "ROUTE_CHECK")
        .replace("{org_id}", &uuid::Uuid::new_v4().to_string())
        .replace("{user_id}", &uuid::Uuid::new_v4().to_string())
        .replace("{profile_id}", "route-check")
        .replace("{key_name}", "route-check");
    let (status, message) = match (method, path) {
        // Issue 31: this server has no service key.
        (_, p) if p.starts_with("/api/service/users/") => {
            (503, Some("Service authentication not configured"))
        }
        (_, p) if p.contains("/settings/secrets") => {
            (401, Some("X-Session-API-Key header is required"))
        }
        ("get", "/api/v1/settings/profiles/{name}")
        | ("post", "/api/v1/settings/profiles/{name}/activate") => {
            (404, Some("Profile 'route-check' not found"))
        }
        ("post", "/api/v1/settings/profiles/{name}") => (201, None),
        // Deleting a profile that is not there is not an error (OpenHands answers 200).
        ("delete", "/api/v1/settings/profiles/{name}") => (200, None),
        ("post", "/api/v1/settings/profiles/{name}/rename")
        | ("post", "/api/v1/secrets")
        | ("put", "/api/v1/secrets/{secret_id}") => (422, None),
        ("delete", "/api/v1/secrets/{secret_id}") => {
            (404, Some("Secret with ID ROUTE_CHECK not found"))
        }
        // Issue 25: agent profiles (an empty body is no profile), the organization's routes
        // (an organization nobody has).
        ("get", "/api/agent-profiles/{name}") => {
            (404, Some("Agent profile 'route-check' not found"))
        }
        ("post", "/api/agent-profiles/{profile_id}/activate") => {
            (404, Some("Agent profile with id 'route-check' not found"))
        }
        ("post", "/api/agent-profiles/{name}") | ("post", "/api/agent-profiles/{name}/rename") => {
            (422, None)
        }
        ("delete", "/api/agent-profiles/{name}") => (200, None),
        (_, p) if p.starts_with("/api/organizations/{org_id}/") => {
            (404, Some("Current organization not found"))
        }
        _ => return None,
    };
    Some((url, status, message))
}

async fn operational_routes(backend: Backend) {
    let app = spawn_app(backend).await;
    let (status, body) = status_json(app.get("/health", None).await).await;
    assert_eq!((status, body), (200, json!({"status": "ok"})), "{backend}");
    let (status, body) = status_json(app.get("/ready", None).await).await;
    assert_eq!(
        (status, body),
        (200, json!({"status": "ready"})),
        "{backend}"
    );
    for path in [
        "/nope",
        "/api/organizations/app/extra",
        "/api/keys/x/y",
        "/API/KEYS",
    ] {
        let (status, body) = status_json(app.get(path, Some(&app.owner.key)).await).await;
        assert_eq!(
            (status, body),
            (404, detail("Not Found")),
            "{backend}: {path}"
        );
    }
    // A known path with another method: 405, as FastAPI answers, before authentication, with
    // `Allow` naming the methods the path serves.
    let conv = format!("/api/v1/conversation/{}/events/count", uuid::Uuid::new_v4());
    for (method, path, allow) in [
        (reqwest::Method::PUT, SETTINGS, "GET, POST"),
        (reqwest::Method::DELETE, "/api/keys", "GET, POST"),
        (reqwest::Method::POST, "/health", "GET"),
        (
            reqwest::Method::from_bytes(b"TRACE").unwrap(),
            "/health",
            "GET",
        ),
        (reqwest::Method::GET, "/api/keys/x", "DELETE"),
        (reqwest::Method::POST, conv.as_str(), "GET"),
    ] {
        let resp = app
            .req(method.clone(), path, Some(&app.owner.key))
            .send()
            .await
            .unwrap();
        assert_eq!(
            resp.headers().get("allow").and_then(|v| v.to_str().ok()),
            Some(allow),
            "{backend}: {method} {path}"
        );
        let (status, body) = status_json(resp).await;
        assert_eq!(
            (status, body),
            (405, detail("Method Not Allowed")),
            "{backend}: {method} {path}"
        );
    }
    let (status, _) = status_json(app.get(SETTINGS, Some(&app.owner.key)).await).await;
    assert_eq!(status, 200);
    let (status, _) = status_json(app.get(SETTINGS, None).await).await;
    assert_eq!(status, 401);

    let resp = app.get("/metrics", None).await;
    assert_eq!(resp.status().as_u16(), 200, "{backend}");
    assert!(
        resp.headers()
            .get("content-type")
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("text/plain"),
        "{backend}"
    );
    let text = resp.text().await.unwrap();
    let counter = |status: &str| {
        text.lines().any(|l| {
            l.starts_with("http_requests_total{")
                && l.contains("method=\"GET\"")
                && l.contains("route=\"/api/organizations/app\"")
                && l.contains(&format!("status=\"{status}\""))
                && l.ends_with(" 1")
        })
    };
    assert!(counter("200"), "{backend}: {text}");
    assert!(counter("401"), "{backend}: {text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("http_request_duration_seconds_bucket{")
                && l.contains("route=\"/api/organizations/app\"")),
        "{backend}: {text}"
    );
    // Unknown paths do not become labels (one series per route pattern).
    assert!(!text.contains("/nope"), "{backend}: {text}");
    assert!(!text.contains("/api/keys/x/y"), "{backend}: {text}");
    app.stop().await;
}

async fn request_ids(backend: Backend) {
    let app = spawn_app(backend).await;
    let mut seen = BTreeSet::new();
    let requests = [
        app.req(Method::GET, "/health", None),
        app.req(Method::GET, "/ready", None),
        app.req(Method::GET, "/metrics", None),
        app.req(Method::GET, "/openapi.json", None),
        app.req(Method::GET, "/nope", None),
        app.req(Method::GET, SETTINGS, None),
        app.req(Method::GET, SETTINGS, Some(&app.owner.key)),
        app.req(Method::POST, SETTINGS, Some(&app.owner.key))
            .header("content-type", "application/json")
            .body("{oops"),
        app.req(Method::POST, SETTINGS, Some(&app.member.key))
            .json(&json!({"registered_marketplaces": []})),
        app.req(Method::POST, SETTINGS, Some(&app.owner.key))
            .header("content-type", "application/json")
            .body(vec![b' '; (1 << 20) + 1]),
        app.req(Method::DELETE, "/api/keys/abc", Some(&app.owner.key)),
    ];
    let mut statuses = Vec::new();
    for r in requests {
        let resp = r.send().await.unwrap();
        statuses.push(resp.status().as_u16());
        let id = resp
            .headers()
            .get("x-request-id")
            .unwrap_or_else(|| panic!("{backend}: no x-request-id on a {}", resp.status()))
            .to_str()
            .unwrap()
            .to_owned();
        assert!(!id.is_empty());
        assert!(seen.insert(id), "{backend}: request ids repeat");
    }
    assert_eq!(
        statuses,
        [200, 200, 200, 200, 404, 401, 200, 422, 403, 413, 422],
        "{backend}"
    );
    // A caller's own id is kept when it is a short token, replaced otherwise.
    let resp = app
        .req(Method::GET, "/health", None)
        .header("x-request-id", "trace-123_abc")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-request-id"], "trace-123_abc", "{backend}");
    for bad in ["has space".to_owned(), "x".repeat(65), "a/b".to_owned()] {
        let resp = app
            .req(Method::GET, "/health", None)
            .header("x-request-id", &bad)
            .send()
            .await
            .unwrap();
        let id = resp.headers()["x-request-id"].to_str().unwrap().to_owned();
        assert_ne!(id, bad, "{backend}");
        assert!(!id.is_empty());
    }
    app.stop().await;
}

on_both_backends!(
    document_snapshot,
    document_matches_routes,
    every_route_is_served,
    operational_routes,
    request_ids,
);
