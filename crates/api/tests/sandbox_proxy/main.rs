//! The sandbox proxy (issue 22), on both backends, with real sandboxes (the stand-in agent
//! server as processes): who gets through and who is stopped before anything reaches the
//! sandbox, HTTP streamed both ways (a 100 MiB download with flat memory, chunked uploads),
//! a sandbox that stops answering, websockets relayed to 200 clients of one sandbox, a client
//! that stops reading while the others and the sandbox go on, heartbeats, close codes and
//! first-frame auth; the URLs the API shows under the public URL; and the workers a spec
//! exposes (`WORKER_1`, `WORKER_2`), a real HTTP server in the sandbox reached through the
//! proxy alone.

use crate::common;
mod access;
mod http;
mod limits;
mod urls;
mod websockets;
mod workers;
mod workspace;

use std::time::{Duration, Instant};

use common::sandboxes::{SandboxApp, SandboxOptions, spawn_sandbox_app};
use futures_util::{SinkExt, StreamExt};
use reqwest::Method;
use serde_json::{Value, json};
use switchboard_api::sandbox_proxy::ProxyConfig;
use switchboard_domain::sandboxes::services::ExposedService;
use switchboard_testkit::Backend;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use access::who_gets_through;
use http::http_streams_both_ways;
use limits::{proxied_sockets_per_member, proxied_sockets_per_org, sockets_and_slow_bodies};
use urls::{routes_by_host, urls_point_at_the_proxy};
use websockets::websockets_relay;
use workers::workers_through_the_proxy;
use workspace::starts_under_workspace_are_refused_without_one;

on_both_backends!(
    who_gets_through,
    http_streams_both_ways,
    websockets_relay,
    urls_point_at_the_proxy,
    routes_by_host,
    workers_through_the_proxy,
    sockets_and_slow_bodies,
    proxied_sockets_per_member,
    proxied_sockets_per_org,
    starts_under_workspace_are_refused_without_one
);

/// The proxy's limits in these tests: a small body limit and a short read timeout (a sandbox
/// that stops answering), a small per-client websocket queue (a client that stops reading).
fn proxy_config() -> ProxyConfig {
    ProxyConfig {
        max_body: 4 << 20,
        read_timeout: Duration::from_secs(3),
        ws_queue: 64,
        ws_auth_timeout: Duration::from_secs(2),
        ..ProxyConfig::default()
    }
}

async fn app(backend: Backend) -> SandboxApp {
    spawn_sandbox_app(
        backend,
        SandboxOptions {
            proxy: Some(proxy_config()),
            ..SandboxOptions::default()
        },
    )
    .await
}

/// A running sandbox of `key`'s: (id, session key, the URL shown for its agent server).
async fn running(app: &SandboxApp, key: &str) -> (String, String, String) {
    let started = app.start(key, None).await;
    let id = started["id"].as_str().unwrap().to_owned();
    let info = app.wait_status(key, &id, "RUNNING").await;
    (
        id,
        info["session_api_key"].as_str().unwrap().to_owned(),
        info["exposed_urls"][0]["url"].as_str().unwrap().to_owned(),
    )
}

/// The stand-in's own address (what Switchboard reaches), from the stored record.
fn direct(app: &SandboxApp, id: &str) -> String {
    app.record(id).unwrap().agent_server_url.unwrap()
}

/// How a request authenticates.
enum Cred<'a> {
    None,
    Bearer(&'a str),
    AccessToken(&'a str),
    Session(&'a str),
    SessionQuery(&'a str),
}

async fn send(method: Method, url: &str, cred: &Cred<'_>, body: Option<Value>) -> (u16, Value) {
    let client = reqwest::Client::new();
    let url = match cred {
        Cred::SessionQuery(k) => format!("{url}?session_api_key={k}&keep=1"),
        _ => url.to_owned(),
    };
    let mut r = client.request(method, &url);
    r = match cred {
        Cred::Bearer(k) => r.header("Authorization", format!("Bearer {k}")),
        Cred::AccessToken(k) => r.header("X-Access-Token", *k),
        Cred::Session(k) => r.header("X-Session-API-Key", *k),
        _ => r,
    };
    if let Some(b) = body {
        r = r.json(&b);
    }
    common::status_json(r.send().await.unwrap()).await
}
