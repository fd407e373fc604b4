//! The memory floor of an idle websocket on this server's stack (docs/benchmarks.md, "Live
//! delivery"): actix-web and actix-ws with the same allocator as `switchboard serve`, and
//! nothing of Switchboard's. Each socket gets one `sync` frame and one task that answers
//! pings until the client leaves. `scripts/bench-live.sh` opens the same 10,000 idle sockets
//! against it as against the server, so the two RSS figures compare what the stack costs per
//! socket with what Switchboard adds.
//!
//! It serves the two routes the benchmark client uses: `POST /api/v1/webhooks/events/{id}`
//! (answers 200 and stores nothing) and `GET /sockets/session/{id}`. Prints
//! `{"address":"http://…"}` once listening. Not a test; never run in CI.
//!
//! Usage: `cargo run --release -p switchboard --example ws_floor [BIND]` (default
//! `127.0.0.1:0`).

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use actix_ws::Message;

#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

async fn webhook() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"success": true}))
}

async fn socket(req: HttpRequest, body: web::Payload) -> actix_web::Result<HttpResponse> {
    let (response, mut session, mut stream) = actix_ws::handle(&req, body)?;
    actix_web::rt::spawn(async move {
        let sync = r#"{"type":"sync","from_seq":1,"through_seq":0}"#;
        if session.text(sync).await.is_err() {
            return;
        }
        while let Some(Ok(message)) = stream.recv().await {
            let answered = match message {
                Message::Ping(bytes) => session.pong(&bytes).await.is_ok(),
                Message::Close(_) => false,
                _ => true,
            };
            if !answered {
                return;
            }
        }
    });
    Ok(response)
}

fn main() -> std::io::Result<()> {
    let bind = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned());
    actix_web::rt::System::new().block_on(async move {
        let server = HttpServer::new(|| {
            App::new()
                .route("/api/v1/webhooks/events/{id}", web::post().to(webhook))
                .route("/sockets/session/{id}", web::get().to(socket))
        })
        .workers(2)
        .bind(bind)?;
        println!(
            "{{\"address\":\"http://{}\"}}",
            server.addrs().first().expect("bound")
        );
        server.run().await
    })
}
