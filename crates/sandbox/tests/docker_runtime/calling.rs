//! The runtime is called as the service will call it: from the blocking pool of an async
//! server (it blocks on a client runtime of its own), and dropped inside an async context.

use std::sync::Arc;

use switchboard_domain::sandboxes::runtime::{Observed, RuntimeHandle, SandboxRuntime};

use switchboard_sandbox::{DockerConfig, DockerRuntime};

use crate::common::Fixture;

#[test]
fn the_runtime_works_from_a_blocking_pool_and_drops_inside_async_code() {
    let Some(fx) = Fixture::new("the_runtime_works_from_a_blocking_pool") else {
        return;
    };
    // A runtime of its own (the fixture keeps its guard), to be dropped on an async worker.
    let installation = fx.installation.clone();
    let runtime = Arc::new(DockerRuntime::connect(DockerConfig::new(&installation)).unwrap());
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let unknown = RuntimeHandle {
        runtime: "docker".into(),
        agent_server_url: "http://127.0.0.1:9".into(),
        host_port: 9,
        sandbox_port: 8000,
        working_dir: "/".into(),
        project_dir: None,
        data: serde_json::json!({
            "container_id": "0".repeat(64),
            "container_name": "switchboard-sandbox-x",
            "volume": "switchboard-workspace-x",
            "installation": installation,
            "sandbox_id": "x",
        }),
        services: Vec::new(),
    };
    let (observed, listed) = server.block_on(async {
        let rt = Arc::clone(&runtime);
        tokio::task::spawn_blocking(move || (rt.observe(&unknown), rt.list_sandboxes()))
            .await
            .unwrap()
    });
    assert_eq!(observed, Observed::Gone, "no such container");
    assert_eq!(listed.unwrap(), Vec::new());
    // The last reference dropped on an async worker: no panic, no blocking shutdown.
    server.block_on(async move { drop(runtime) });
}
