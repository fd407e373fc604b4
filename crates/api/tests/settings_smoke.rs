//! Smoke: the harness serves the app on both backends.

use crate::common;

use common::{spawn_app, status_json};
use switchboard_testkit::Backend;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_settings_on_both_backends() {
    for backend in Backend::ALL {
        let app = spawn_app(backend).await;
        let (status, body) = status_json(
            app.get("/api/organizations/app", Some(&app.owner.key))
                .await,
        )
        .await;
        assert_eq!(status, 200, "{backend}: {body}");
        assert_eq!(body["enable_proactive_conversation_starters"], true);
        let (status, _) = status_json(app.get("/api/organizations/app", None).await).await;
        assert_eq!(status, 401);
        app.stop().await;
    }
}
