//! Sandboxes (issue 9; reference app-server §3): start, search, batch get, pause, resume and
//! delete, in OpenHands' shapes, with the visibility of design "Sandboxes" (another org's,
//! an unknown one, or another member's seen by a member: 404 `{"detail":"Not Found"}`).

use actix_web::{delete, get, post, web};
use serde_json::Value;
use switchboard_domain::OrgContext;
use switchboard_domain::batch::Batch;
use switchboard_domain::sandboxes::records::{
    MAX_SANDBOX_BATCH, MAX_SANDBOX_PAGE, Page, SandboxCursor, SandboxView,
};
use switchboard_domain::validation::{field, loc, model_type, string_type, uuid_parsing};
use switchboard_domain::{DomainError, SandboxId};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{ErrorDetail, SandboxInfo, SandboxPage, StartSandboxRequest, Success};
use crate::error::{ApiError, ApiResult};
use crate::extract::{Caller, QueryPairs, RawBody, parse_json_body, path_uuid};
use crate::openapi::params::PageLimit;
use crate::reads::{self, Reads};
use crate::responses::{ApiKeyErrors, SandboxErrors};

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(start_sandbox)
        .service(search_sandboxes)
        .service(get_sandboxes)
        .service(pause_sandbox)
        .service(resume_sandbox)
        .service(delete_sandbox);
}

/// Starts a sandbox from a spec: the query's `sandbox_spec_id` (as OpenHands clients send
/// it), else the body's, else the first spec. Answers at once: `STARTING` (the server drives
/// it to `RUNNING`), or `RUNNING` when a warm-pool sandbox was claimed. At the caller's or the
/// organization's sandbox quota, 409 naming which sandboxes to delete (issue 18, Quotas).
#[utoipa::path(tag = "Sandboxes",
    params(
        ("sandbox_spec_id" = Option<String>, Query, description = "The spec to run (default: the first)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    request_body(content = Option<StartSandboxRequest>, description = "Optional: {\"sandbox_spec_id\": …} (the query parameter wins)"),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = SandboxInfo),
        (status = 400, description = "Unknown sandbox spec (named in the detail)", body = ErrorDetail),
        (status = 409, description = "The caller (--max-sandboxes-per-user) or the organization (--max-sandboxes-per-org) holds as many sandboxes as allowed (STARTING, RUNNING or PAUSED); the detail names which to delete", body = ErrorDetail),
        (status = 503, description = "This server runs no sandboxes, or no room among the request bodies in flight in time", body = ErrorDetail),
        (status = 408, description = "The body did not arrive in time (read timeout or minimum rate)", body = ErrorDetail),
        (status = 413, description = "Body over 1 MiB", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[post("/api/v1/sandboxes")]
pub async fn start_sandbox(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
    body: RawBody,
) -> ApiResult<web::Json<SandboxInfo>> {
    let ctx = caller.authenticate(&state).await?;
    let body = body.read().await?;
    let s = state.clone();
    let view = state
        .blocking(move || {
            let from_query = query.all("sandbox_spec_id").into_iter().next();
            let from_body = spec_from_body(body.bytes())?;
            let spec = from_query.or(from_body);
            Ok(s.services
                .sandboxes()
                .start_sandbox(&ctx, spec.as_deref())?)
        })
        .await?;
    Ok(web::Json(SandboxInfo::present(view, state.proxy.public())))
}

/// The optional body of a start: empty, JSON `null` (the document's `oneOf [null, …]`, as
/// FastAPI reads an optional body), or an object whose `sandbox_spec_id` is a string or null
/// (other fields are ignored, as FastAPI does).
fn spec_from_body(bytes: &[u8]) -> Result<Option<String>, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let body = parse_json_body(bytes)?;
    if body.is_null() {
        return Ok(None);
    }
    let Value::Object(obj) = &body else {
        return Err(model_type(loc(["body"]), "StartSandboxRequest", &body).into());
    };
    match obj.get("sandbox_spec_id") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(string_type(field(&loc(["body"]), "sandbox_spec_id"), other).into()),
    }
}

/// Sandboxes, as [`reads`] reads them.
struct Sandboxes;

impl Reads for Sandboxes {
    type Scope = ();
    type Params = (Option<SandboxCursor>, u32);
    type Page = Page<SandboxView>;
    type Found = Vec<Option<SandboxView>>;

    fn scope(_path: &str) -> Result<(), ApiError> {
        Ok(())
    }

    fn params(query: &QueryPairs, _paging: bool) -> Result<Self::Params, ApiError> {
        query.paging::<SandboxCursor>(MAX_SANDBOX_PAGE)
    }

    fn search(
        s: &AppState,
        ctx: &OrgContext,
        (): (),
        (after, limit): Self::Params,
    ) -> Result<Self::Page, ApiError> {
        Ok(s.services.sandboxes().search_sandboxes(ctx, after, limit)?)
    }

    fn get(
        s: &AppState,
        ctx: &OrgContext,
        (): (),
        query: &QueryPairs,
    ) -> Result<Self::Found, ApiError> {
        let ids: Vec<SandboxId> = query.batch_ids("id", Batch::SANDBOXES)?;
        Ok(s.services.sandboxes().get_sandboxes(ctx, &ids)?)
    }
}

/// The sandboxes the caller sees in the effective organization, newest first (members: the
/// ones they created; admins and owners: all). Statuses come from the last reconciliation:
/// no agent server is called.
#[utoipa::path(tag = "Sandboxes",
    params(
        ("page_id" = Option<String>, Query, description = "The `next_page_id` of the previous page (opaque; any other value is 422)"),
        ("limit" = inline(Option<PageLimit>), Query, description = format!("1..={MAX_SANDBOX_PAGE}, default {MAX_SANDBOX_PAGE}")),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = SandboxPage), ApiKeyErrors))]
#[get("/api/v1/sandboxes/search")]
pub async fn search_sandboxes(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<web::Json<SandboxPage>> {
    let page = reads::search::<Sandboxes>(state.clone(), caller, query, String::new()).await?;
    Ok(web::Json(SandboxPage::present(page, state.proxy.public())))
}

/// Sandboxes by id (`?id=…&id=…`, at most 100), in request order: `null` for an unknown one
/// or one the caller does not see.
#[utoipa::path(tag = "Sandboxes",
    params(
        ("id" = Vec<uuid::Uuid>, Query, max_items = 100, description = "Sandbox ids (repeat the parameter; at most 100)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = Vec<Option<SandboxInfo>>),
        (status = 400, description = format!("More than {MAX_SANDBOX_BATCH} ids"), body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[get("/api/v1/sandboxes")]
pub async fn get_sandboxes(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<web::Json<Vec<Option<SandboxInfo>>>> {
    let found = reads::get::<Sandboxes>(state.clone(), caller, query, String::new()).await?;
    Ok(web::Json(
        found
            .into_iter()
            .map(|v| v.map(|v| SandboxInfo::present(v, state.proxy.public())))
            .collect(),
    ))
}

/// Pauses a sandbox (SIGSTOP of its process group); pausing a paused one succeeds. Another
/// member's needs admin or owner (it is 404 to a member).
#[utoipa::path(tag = "Sandboxes",
    params(
        ("sandbox_id" = uuid::Uuid, Path, description = "Sandbox id (dashed or 32 hex)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = Success), SandboxErrors))]
#[post("/api/v1/sandboxes/{sandbox_id}/pause")]
pub async fn pause_sandbox(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
) -> ApiResult<web::Json<Success>> {
    let raw = path.into_inner();
    caller
        .run(state, move |s, ctx| {
            let id = SandboxId(path_uuid(&raw, "sandbox_id")?);
            Ok(s.services.sandboxes().pause_sandbox(&ctx, id)?)
        })
        .await?;
    Ok(web::Json(Success { success: true }))
}

/// Resumes a paused sandbox (SIGCONT): `STARTING` until its agent server answers, then
/// `RUNNING`. Beyond the owner's running limit, their least recently used sandbox is paused.
#[utoipa::path(tag = "Sandboxes",
    params(
        ("sandbox_id" = uuid::Uuid, Path, description = "Sandbox id (dashed or 32 hex)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = Success), SandboxErrors))]
#[post("/api/v1/sandboxes/{sandbox_id}/resume")]
pub async fn resume_sandbox(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
) -> ApiResult<web::Json<Success>> {
    let raw = path.into_inner();
    caller
        .run(state, move |s, ctx| {
            let id = SandboxId(path_uuid(&raw, "sandbox_id")?);
            Ok(s.services.sandboxes().resume_sandbox(&ctx, id)?)
        })
        .await?;
    Ok(web::Json(Success { success: true }))
}

/// Deletes a sandbox: it disappears from every read and its session key stops authenticating
/// at once; its process is stopped (SIGTERM, 10 s, SIGKILL) and its directory removed in the
/// background. Conversations and events stay. OpenHands clients call
/// `DELETE /api/v1/sandboxes/<anything>?sandbox_id=<id>` (reference app-server §3.2): when
/// `sandbox_id` is given, it names the sandbox and the path value is ignored; without it, a
/// path value that is not a UUID names no sandbox: 404, like an unknown one (the path is any
/// string in the document, since clients put anything there).
#[utoipa::path(tag = "Sandboxes",
    params(
        ("id" = String, Path, description = "Sandbox id (dashed or 32 hex; anything else is 404); ignored when sandbox_id is given"),
        ("sandbox_id" = Option<uuid::Uuid>, Query, description = "Sandbox id, OpenHands' form"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = Success), SandboxErrors))]
#[delete("/api/v1/sandboxes/{id}")]
pub async fn delete_sandbox(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
    query: QueryPairs,
) -> ApiResult<web::Json<Success>> {
    let raw = path.into_inner();
    caller
        .run(state, move |s, ctx| {
            let id = match query.all("sandbox_id").into_iter().next() {
                Some(q) => q
                    .parse::<SandboxId>()
                    .map_err(|_| uuid_parsing(QueryPairs::loc("sandbox_id"), &q))?,
                None => SandboxId(path_uuid(&raw, "id").map_err(|_| DomainError::SandboxNotFound)?),
            };
            Ok(s.services.sandboxes().delete_sandbox(&ctx, id)?)
        })
        .await?;
    Ok(web::Json(Success { success: true }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_bodies() {
        assert_eq!(spec_from_body(b"").unwrap(), None);
        assert_eq!(
            spec_from_body(br#"{"sandbox_spec_id":"a","x":1}"#).unwrap(),
            Some("a".into())
        );
        assert!(spec_from_body(b"[1]").is_err());
        assert!(spec_from_body(br#"{"sandbox_spec_id":3}"#).is_err());
    }
}
