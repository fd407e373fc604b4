//! A second replica on the same PostgreSQL database, and the LISTEN connections killed.

use std::sync::Arc;

use crate::common::TestApp;

/// A second replica on the same PostgreSQL database: its own store, hub and LISTEN task.
pub struct Replica {
    pub base: String,
    pub handle: actix_web::dev::ServerHandle,
    pub listener: tokio::task::JoinHandle<()>,
}

pub async fn spawn_replica(url: &str) -> Replica {
    use switchboard_api::{AppState, create_app};
    let u = url.to_owned();
    let store = Arc::new(
        tokio::task::spawn_blocking(move || switchboard_storage::DieselStore::open(&u, None))
            .await
            .unwrap()
            .unwrap()
            .0,
    );
    let services = switchboard_domain::Switchboard::new(store.clone());
    let state = actix_web::web::Data::new(AppState::new(services, None));
    store.observe_appends(state.live.hub());
    let listener = tokio::spawn(switchboard_storage::listen::listen_for_appends(
        url.to_owned(),
        state.live.hub(),
    ));
    let server = actix_web::HttpServer::new(move || create_app(state.clone()))
        .workers(1)
        .disable_signals()
        .bind(("127.0.0.1", 0))
        .unwrap();
    let addr = server.addrs()[0];
    let server = server.run();
    let handle = server.handle();
    tokio::spawn(server);
    Replica {
        base: format!("http://{addr}"),
        handle,
        listener,
    }
}

/// Kills every LISTEN connection on the test database.
pub async fn kill_listeners(app: &TestApp) {
    app.exec_sql(&format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '{}' AND datname = current_database()",
        switchboard_storage::listen::LISTENER_APPLICATION_NAME
    ))
    .await;
}
