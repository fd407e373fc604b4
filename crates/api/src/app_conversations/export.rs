//! `GET /api/v1/app-conversations/{id}/download` (issue 22; OpenHands' "Export
//! Conversation"): the conversation's trajectory as a zip, laid out as OpenHands' app server
//! writes it: `meta.json` (the conversation, pretty JSON) and one `event_{i:06}_{event id}.json`
//! per stored event in order (each pretty JSON), all at the archive's root. The events are
//! Switchboard's own store, read a page at a time and written to the client as they are read:
//! the archive is never held whole, and its sandbox need not run.

use actix_web::web::Bytes;
use actix_web::{HttpResponse, get, web};
use futures_util::{Stream, StreamExt};
use serde_json::Value;
use switchboard_domain::{ConversationId, DomainError};
use time::OffsetDateTime;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{AppConversationOut, ErrorDetail};
use crate::error::{ApiError, ApiResult};
use crate::extract::{Caller, conversation_id};
use crate::responses::ApiKeyErrors;
use crate::zip::ZipStream;

/// How many events one blocking call reads and compresses.
const EXPORT_PAGE: u32 = 200;

/// Registers the route of this module and its OpenAPI path.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(download);
}

/// The conversation's trajectory as a zip (`application/zip`, streamed): `meta.json` and
/// every stored event, in order. The sandbox may be in any state.
#[utoipa::path(tag = "App conversations",
    params(
        ("conversation_id" = uuid::Uuid, Path, description = "Conversation id (dashed or 32 hex)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "The zip archive", content_type = "application/zip", body = Vec<u8>),
        (status = 404, description = "Unknown, another organization's, or another member's seen by a member", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[get("/api/v1/app-conversations/{conversation_id}/download")]
pub async fn download(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let raw = path.into_inner();
    let conversation = caller
        .run(state.clone(), move |s, ctx| {
            let id = conversation_id(&raw)?;
            s.services
                .app_conversations()
                .get(&ctx, &[id])?
                .pop()
                .flatten()
                .ok_or(ApiError::Domain(DomainError::ConversationNotFound))
        })
        .await?;
    let id = conversation.info.id;
    let mut meta = AppConversationOut::present(conversation, state.proxy.public());
    // The archive is a file that travels: no key in it.
    meta.session_api_key = None;
    let meta = serde_json::to_vec_pretty(&meta).map_err(|e| ApiError::Internal(e.to_string()))?;
    let mut zip = ZipStream::new(OffsetDateTime::now_utc());
    let head = zip
        .add("meta.json", &meta)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let export = Export {
        state,
        id,
        zip,
        after: -1,
        index: 0,
    };
    let head = futures_util::stream::iter([Ok::<Bytes, actix_web::Error>(Bytes::from(head))]);
    Ok(HttpResponse::Ok()
        .content_type("application/zip")
        .insert_header((
            "Content-Disposition",
            format!("attachment; filename=\"conversation_{}.zip\"", id.0),
        ))
        .streaming(head.chain(events(export))))
}

/// An export under way.
struct Export {
    state: web::Data<AppState>,
    id: ConversationId,
    zip: ZipStream,
    /// The position of the last event written (`-1`: none yet).
    after: i64,
    /// How many events were written.
    index: u64,
}

/// The events' entries, a page per item, then the central directory. A failure ends the
/// stream with an error (the connection is aborted: the client never takes a cut archive for
/// a whole one).
fn events(export: Export) -> impl Stream<Item = Result<Bytes, actix_web::Error>> {
    futures_util::stream::unfold(Some(export), |export| async move {
        let export = export?;
        let state = export.state.clone();
        match state.blocking(move || next_page(export)).await {
            Ok((bytes, export)) => Some((Ok(Bytes::from(bytes)), export)),
            Err(e) => {
                tracing::warn!(error = %e, "exporting a conversation failed");
                Some((Err(e.into()), None))
            }
        }
    })
}

/// The entries of the next page of events; at the end, the central directory too (and no
/// export left).
fn next_page(mut e: Export) -> Result<(Vec<u8>, Option<Export>), ApiError> {
    let events = e
        .state
        .services
        .events()
        .events_after(e.id, e.after, None, EXPORT_PAGE)?;
    let last = events.len() < EXPORT_PAGE as usize;
    let mut out = Vec::new();
    for event in events {
        let value: Value =
            serde_json::from_str(&event.payload).map_err(|x| ApiError::Internal(x.to_string()))?;
        let event_id = value.get("id").and_then(Value::as_str).unwrap_or("unknown");
        let name = format!("event_{:06}_{}.json", e.index, file_safe(event_id));
        let text =
            serde_json::to_vec_pretty(&value).map_err(|x| ApiError::Internal(x.to_string()))?;
        out.extend(
            e.zip
                .add(&name, &text)
                .map_err(|x| ApiError::Internal(x.to_string()))?,
        );
        e.after = event.position;
        e.index += 1;
    }
    if last {
        out.extend(e.zip.finish());
        Ok((out, None))
    } else {
        Ok((out, Some(e)))
    }
}

/// An event id as part of a file name: `/`, `\` and control characters become `_` (ids are
/// UUIDs or ULIDs, but an agent server chooses them).
fn file_safe(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c == '/' || c == '\\' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}
