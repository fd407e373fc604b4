//! Starting app conversations (issue 10; reference app-server §5.2, §5.3): `POST
//! /api/v1/app-conversations` answers the first start task (`WORKING`) at once and runs the
//! pipeline on a thread of its own; `POST …/stream-start` streams the task's snapshots as a
//! JSON array until `READY` or `ERROR`. The tasks are read through `start_tasks.rs`.

use actix_web::web::Bytes;
use actix_web::{HttpResponse, post, web};
use switchboard_domain::app_conversations::start_tasks::StartTask;
use switchboard_domain::identity::OrgContext;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{AppConversationStartTask, ErrorDetail};
use crate::error::{ApiError, ApiResult};
use crate::extract::{Caller, RawBody, parse_json_body};
use crate::responses::ApiKeyErrors;

/// Registers the start routes and their OpenAPI paths (before the start-task reads, as the
/// document lists them).
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(start_conversation).service(stream_start);
}

/// Reads the body, checks it and writes the `WORKING` task (on the blocking pool).
async fn begin(
    state: &web::Data<AppState>,
    caller: Caller,
    body: RawBody,
) -> Result<(OrgContext, StartTask), ApiError> {
    let ctx = caller.authenticate(state).await?;
    let body = body.read().await?;
    let s = state.clone();
    let c = ctx.clone();
    let task = state
        .blocking(move || {
            let json = parse_json_body(body.bytes())?;
            Ok(s.services.conversation_start().begin(&c, &json)?)
        })
        .await?;
    Ok((ctx, task))
}

/// Runs the pipeline of `task` on a thread of its own (it blocks on the sandbox, the clone,
/// the setup script and the agent server for up to minutes); `on_step` sees each snapshot.
fn spawn_pipeline(
    state: &web::Data<AppState>,
    ctx: OrgContext,
    task: StartTask,
    on_step: Option<tokio::sync::mpsc::UnboundedSender<StartTask>>,
) {
    let services = state.services.clone();
    let id = task.id;
    let spawned = std::thread::Builder::new()
        .name("conversation-start".into())
        .spawn(move || {
            let step = |t: &StartTask| {
                if let Some(tx) = &on_step {
                    let _ = tx.send(t.clone());
                }
            };
            services.conversation_start().run(&ctx, task, &step);
        });
    if let Err(e) = spawned {
        // The task stays WORKING until the next start of the server closes it.
        tracing::error!(task = %id, error = %e, "no thread for a conversation start");
    }
}

const START_DOC: &str = "OpenHands' AppConversationStartRequest, read strictly: an unknown field or a value of the wrong shape is a 422. Switchboard also takes `sandbox_spec_id`, `max_iterations` and `tags`.";

/// Starts a conversation: answers its start task, `WORKING`, at once; the pipeline
/// (`WAITING_FOR_SANDBOX`, `PREPARING_REPOSITORY`, `RUNNING_SETUP_SCRIPT`,
/// `STARTING_CONVERSATION`, `READY` or `ERROR`) goes on in the background: poll
/// `GET /api/v1/app-conversations/start-tasks?ids=…`.
#[utoipa::path(tag = "App conversations",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    request_body(content = Object, description = START_DOC),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = AppConversationStartTask),
        (status = 400, description = "A suggested_task with an initial_message, or an unknown parent conversation", body = ErrorDetail),
        (status = 409, description = "The conversation_id of a conversation the caller sees (one it does not see is taken as unknown: the start gets a fresh id)", body = ErrorDetail),
        (status = 503, description = "This server runs no sandboxes", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[post("/api/v1/app-conversations")]
pub async fn start_conversation(
    state: web::Data<AppState>,
    caller: Caller,
    body: RawBody,
) -> ApiResult<web::Json<AppConversationStartTask>> {
    let (ctx, task) = begin(&state, caller, body).await?;
    let answer = AppConversationStartTask::from(&task);
    spawn_pipeline(&state, ctx, task, None);
    Ok(web::Json(answer))
}

/// Starts a conversation and streams its start task as a JSON array (`[`, the `WORKING`
/// task, then `,` and a snapshot after each step, `]` after `READY` or `ERROR`), as OpenHands
/// does. Errors before the task exists are ordinary answers.
#[utoipa::path(tag = "App conversations",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    request_body(content = Object, description = START_DOC),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "A JSON array of task snapshots, streamed", body = Vec<AppConversationStartTask>),
        (status = 400, description = "As POST /api/v1/app-conversations", body = ErrorDetail),
        (status = 409, description = "As POST /api/v1/app-conversations", body = ErrorDetail),
        (status = 503, description = "This server runs no sandboxes", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[post("/api/v1/app-conversations/stream-start")]
pub async fn stream_start(
    state: web::Data<AppState>,
    caller: Caller,
    body: RawBody,
) -> ApiResult<HttpResponse> {
    let (ctx, task) = begin(&state, caller, body).await?;
    let first = serde_json::to_string(&AppConversationStartTask::from(&task))
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<StartTask>();
    spawn_pipeline(&state, ctx, task, Some(tx));
    let head = futures_util::stream::iter([Ok::<Bytes, actix_web::Error>(Bytes::from(format!(
        "[\n{first}"
    )))]);
    let rest = futures_util::stream::unfold(Some(rx), |rx| async move {
        let mut rx = rx?;
        match rx.recv().await {
            Some(t) => {
                let text = serde_json::to_string(&AppConversationStartTask::from(&t))
                    .unwrap_or_else(|_| "null".into());
                let done = t.status.is_final();
                let mut chunk = format!(",\n{text}");
                if done {
                    chunk.push_str("\n]");
                }
                Some((Ok(Bytes::from(chunk)), (!done).then_some(rx)))
            }
            // The pipeline ended without a final snapshot (its thread died): close the array.
            None => Some((Ok(Bytes::from_static(b"\n]")), None)),
        }
    });
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .streaming(futures_util::StreamExt::chain(head, rest)))
}
