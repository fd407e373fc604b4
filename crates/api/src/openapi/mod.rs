//! The OpenAPI 3.1 document: the info, security schemes and schemas declared here, and the
//! paths collected from the route table ([`crate::routes::configure`]), each generated from
//! its handler's annotations (utoipa); then the request bodies and shared parameters with every
//! rule JSON Schema can state ([`requests`]) and the events of the webhook batches ([`events`],
//! the agent SDK's schema adjusted to this server). Its `info.version` is the API version
//! `0.0.1` (spec §9), not the crates' version.

pub mod events;
pub(crate) mod params;
pub mod requests;

use std::sync::LazyLock;

use actix_web::App;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_actix_web::AppExt;

use crate::dto;
use crate::routes;

pub use crate::server_details::API_VERSION;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "APIKeyHeader",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-Access-Token"))),
        );
        components.add_security_scheme(
            "BearerAuth",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("sb_…")
                    .build(),
            ),
        );
        components.add_security_scheme(
            "SessionKeyHeader",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-Session-API-Key"))),
        );
        components.add_security_scheme(
            "ServiceKeyHeader",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-Service-API-Key"))),
        );
        openapi.info.version = API_VERSION.to_owned();
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Switchboard", description = "Control plane for software-agent conversations, compatible with the OpenHands V1 app server API."),
    components(schemas(
        dto::ErrorDetail, dto::HTTPValidationError, dto::ValidationErrorEntry,
        dto::OrgAppSettingsResponse, dto::MarketplaceRegistration,
        dto::ApiKeyCreated, dto::ApiKeyResponse, dto::ApiKeyList, dto::ApiKeyRevoked,
        dto::MeResponse, dto::Status,
        dto::AppConversationOut, dto::AppConversationPage, dto::SendMessageResponse,
        dto::ConversationWorkspace, dto::SkillResponse, dto::SkillsResponse,
        dto::HookDefinitionResponse, dto::HookMatcherResponse, dto::HookEventResponse,
        dto::GetHooksResponse, dto::PendingMessageResponse,
        dto::SandboxInfo, dto::SandboxPage, dto::ExposedUrl, dto::SandboxStatusName,
        dto::SandboxSpecInfo, dto::SandboxSpecInfoPage, dto::StartSandboxRequest, dto::Success,
        crate::server_details::ServerInfo, crate::server_details::WebClientConfig,
        switchboard_domain::typed_body::fields::JsonValueWithoutNul,
    )),
    modifiers(&SecuritySchemes),
)]
struct ApiDoc;

/// The document, as served.
pub fn document() -> serde_json::Value {
    let generated = App::new()
        .into_utoipa_app()
        .openapi(ApiDoc::openapi())
        .configure(routes::configure)
        .split_for_parts()
        .1;
    let mut doc = serde_json::to_value(generated).expect("the document serializes");
    requests::apply(&mut doc);
    events::apply(&mut doc);
    crate::sandbox_proxy::document(&mut doc);
    doc
}

static JSON: LazyLock<String> =
    LazyLock::new(|| serde_json::to_string_pretty(&document()).expect("the document serializes"));

/// The document as pretty JSON (built once).
pub fn document_json() -> &'static str {
    &JSON
}

/// Every route served, as `(method, path pattern)` in lowercase method names, read from the
/// OpenAPI document (which lists exactly the routes [`routes::configure`] registers).
pub fn route_table() -> Vec<(String, String)> {
    let doc: serde_json::Value =
        serde_json::from_str(document_json()).expect("the document is JSON");
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        for method in item.as_object().into_iter().flatten().map(|(m, _)| m) {
            out.push((method.clone(), path.clone()));
        }
    }
    out
}
