//! What OpenHands' clients expect of the app server besides the resources (issue 22,
//! "Compatibility with OpenHands' answers"), on both backends: `GET /alive`,
//! `GET /server_info`, `GET /api/v1/web-client/config` in OpenHands' shapes (every field its
//! `WebClientConfig` requires), and CORS for browser clients of the allowed origins only.

use crate::common;

use common::{TestApp, spawn_app_on_with_state, status_json};
use reqwest::Method;
use serde_json::{Value, json};
use switchboard_api::extract::BodyLimits;
use switchboard_testkit::Backend;

on_both_backends!(openhands_answers, cors_for_allowed_origins);

const ORIGIN: &str = "https://app.example.com";

async fn app(backend: Backend) -> TestApp {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    spawn_app_on_with_state(
        backend,
        BodyLimits::default(),
        listener,
        |s| s,
        |state| state.with_cors_origins(vec![format!("{ORIGIN}/")]),
    )
    .await
}

/// The `required` fields of a schema of OpenHands' app server document.
fn required(schema: &str) -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/reference/openhands-app-server-1.11.0.openapi.json"
    );
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc["components"]["schemas"][schema]["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

async fn openhands_answers(backend: Backend) {
    let app = app(backend).await;
    let (status, body) = status_json(app.get("/alive", None).await).await;
    assert_eq!((status, body), (200, json!({"status": "ok"})), "{backend}");

    let (status, info) = status_json(app.get("/server_info", None).await).await;
    assert_eq!(status, 200, "{backend}: {info}");
    assert_eq!(info["server"], "switchboard");
    assert_eq!(info["api_version"], "0.0.1");
    assert_eq!(
        info["sandboxes_enabled"], false,
        "{backend}: the test app runs none"
    );
    assert!(info["uptime"].as_u64().is_some() && info["cpu_count"].as_u64() >= Some(1));

    let (status, config) = status_json(app.get("/api/v1/web-client/config", None).await).await;
    assert_eq!(status, 200, "{backend}: {config}");
    for field in required("WebClientConfig") {
        assert!(
            config.get(&field).is_some(),
            "{backend}: {field} missing: {config}"
        );
    }
    assert_eq!(config["kind"], "WebClientConfig");
    assert_eq!(config["app_mode"], "saas");
    assert_eq!(config["providers_configured"], json!([]));
    assert_eq!(config["feature_flags"]["enable_billing"], false);
    assert_eq!(config["feature_flags"]["deployment_mode"], "self_hosted");
    assert!(config["updated_at"].as_str().unwrap().ends_with('Z'));
    app.stop().await;
}

async fn cors_for_allowed_origins(backend: Backend) {
    let app = app(backend).await;
    let preflight = |origin: &'static str, headers: &'static str| {
        app.req(Method::OPTIONS, "/api/v1/users/me", None)
            .header("Origin", origin)
            .header("Access-Control-Request-Method", "GET")
            .header("Access-Control-Request-Headers", headers)
            .send()
    };
    let res = preflight(
        ORIGIN,
        "authorization, content-type, x-org-id, x-session-api-key, x-openhands-client-version",
    )
    .await
    .unwrap();
    assert_eq!(res.status().as_u16(), 204, "{backend}");
    let h = res.headers();
    assert_eq!(h["access-control-allow-origin"], ORIGIN);
    assert!(
        h["access-control-allow-methods"]
            .to_str()
            .unwrap()
            .contains("DELETE")
    );
    assert!(
        h["access-control-allow-headers"]
            .to_str()
            .unwrap()
            .contains("x-openhands-client-version")
    );
    // A header outside the list: no permission.
    let res = preflight(ORIGIN, "x-evil").await.unwrap();
    assert!(res.headers().get("access-control-allow-origin").is_none());
    // Another origin: nothing allowed.
    let res = preflight("https://evil.example.com", "authorization")
        .await
        .unwrap();
    assert!(
        res.headers().get("access-control-allow-origin").is_none(),
        "{backend}"
    );
    // Actual requests: the allowed origin may read the answer, errors included.
    for (key, want) in [(Some(app.owner.key.clone()), 200), (None, 401)] {
        let res = app
            .req(Method::GET, "/api/v1/users/me", key.as_deref())
            .header("Origin", ORIGIN)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), want, "{backend}");
        assert_eq!(res.headers()["access-control-allow-origin"], ORIGIN);
        assert!(
            res.headers()["access-control-expose-headers"]
                .to_str()
                .unwrap()
                .contains("X-Request-Id")
        );
    }
    let res = app
        .req(Method::GET, "/api/v1/users/me", Some(&app.owner.key))
        .header("Origin", "https://evil.example.com")
        .send()
        .await
        .unwrap();
    assert!(res.headers().get("access-control-allow-origin").is_none());
    app.stop().await;
}
