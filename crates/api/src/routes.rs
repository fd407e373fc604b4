//! The route table: each handler module registers its routes and their OpenAPI paths in one
//! declaration (its `configure`), collected here in the document's order, so the routes the
//! app serves and the paths the document lists are the same by construction. After them, a
//! known path with a method it does not serve answers 405 with `Allow`, and anything else 404,
//! both as FastAPI answers.

use actix_web::dev::{ServiceFactory, ServiceRequest};
use actix_web::http::header;
use actix_web::{App, HttpRequest, HttpResponse, web};
use utoipa::openapi::PathItem;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::dto::ErrorDetail;
use crate::web_client::WebClient;
use crate::{
    agent_profiles, app_conversations, events, health, keys, live, llm_catalog, llm_profiles,
    llm_relay, members, org_defaults, org_profiles, org_settings, organizations, sandbox_secrets,
    sandbox_specs, sandboxes, server_details, service_keys, sign_in, skills, user_secrets,
    user_settings, users, webhooks,
};

/// Registers every route and its OpenAPI path, module by module.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    health::configure(cfg);
    server_details::configure(cfg);
    org_settings::configure(cfg);
    keys::configure(cfg);
    service_keys::configure(cfg);
    users::configure(cfg);
    organizations::configure(cfg);
    members::configure(cfg);
    org_defaults::configure(cfg);
    org_profiles::configure(cfg);
    user_settings::configure(cfg);
    llm_profiles::configure(cfg);
    llm_catalog::configure(cfg);
    skills::configure(cfg);
    llm_relay::configure(cfg);
    agent_profiles::configure(cfg);
    user_secrets::configure(cfg);
    events::configure(cfg);
    webhooks::configure(cfg);
    sandbox_specs::configure(cfg);
    sandboxes::configure(cfg);
    sandbox_secrets::configure(cfg);
    app_conversations::start::configure(cfg);
    app_conversations::start_tasks::configure(cfg);
    app_conversations::configure(cfg);
    app_conversations::workspace::configure(cfg);
    app_conversations::export::configure(cfg);
    app_conversations::pending_messages::configure(cfg);
    live::sockets::configure(cfg);
    sign_in::configure(cfg);
}

/// The methods a documented path serves, as an `Allow` header value (`GET, POST`).
pub(crate) fn allowed_methods(item: &PathItem) -> String {
    [
        ("GET", &item.get),
        ("PUT", &item.put),
        ("POST", &item.post),
        ("DELETE", &item.delete),
        ("OPTIONS", &item.options),
        ("HEAD", &item.head),
        ("PATCH", &item.patch),
        ("TRACE", &item.trace),
    ]
    .into_iter()
    .filter(|(_, op)| op.is_some())
    .map(|(m, _)| m)
    .collect::<Vec<_>>()
    .join(", ")
}

/// Adds, after the routes, a 405 for each of `paths` (the routes' patterns, with the methods
/// each serves) with any other method, and the 404 for everything else.
pub(crate) fn fallbacks<T>(
    mut app: App<T>,
    paths: impl IntoIterator<Item = (String, String)>,
) -> App<T>
where
    T: ServiceFactory<ServiceRequest, Config = (), Error = actix_web::Error, InitError = ()>,
{
    for (path, allow) in paths {
        app = app.service(
            web::resource(path).to(move || std::future::ready(method_not_allowed(&allow))),
        );
    }
    app.default_service(web::to(not_found))
}

/// A known path with a method it does not serve: 405 `{"detail": "Method Not Allowed"}` with
/// `Allow` naming the methods it serves (RFC 9110 §15.5.6).
pub fn method_not_allowed(allow: &str) -> HttpResponse {
    HttpResponse::MethodNotAllowed()
        .insert_header((header::ALLOW, allow))
        .json(ErrorDetail {
            detail: "Method Not Allowed".into(),
        })
}

/// Unknown routes: the browser client's files when Switchboard serves one
/// ([`crate::web_client`]), else 404 `{"detail": "Not Found"}`, as FastAPI answers.
pub async fn not_found(req: HttpRequest) -> HttpResponse {
    if let Some(client) = req.app_data::<web::Data<WebClient>>()
        && let Some(answer) = client.answer(&req).await
    {
        return answer;
    }
    HttpResponse::NotFound().json(ErrorDetail {
        detail: "Not Found".into(),
    })
}
