//! The OpenAPI 3.1 document, generated from the handlers' annotations (utoipa). Its
//! `info.version` is the API version `0.0.1` (spec §9), not the crates' version.

use std::sync::LazyLock;

use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::dto;
use crate::events;
use crate::routes;

/// The API version of the document (spec §9).
pub const API_VERSION: &str = "0.0.1";

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
        openapi.info.version = API_VERSION.to_owned();
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Switchboard", description = "Control plane for software-agent conversations, compatible with the OpenHands V1 app server API."),
    paths(
        routes::health, routes::ready, routes::metrics, routes::openapi_json,
        routes::get_org_app_settings, routes::update_org_app_settings,
        routes::create_api_key, routes::list_api_keys, routes::revoke_api_key,
        routes::users_me,
        events::search_events, events::count_events, events::get_events,
        events::webhook_events, events::webhook_conversations,
    ),
    components(schemas(
        dto::ErrorDetail, dto::HTTPValidationError, dto::ValidationErrorEntry,
        dto::OrgAppSettingsResponse, dto::OrgAppSettingsUpdate, dto::MarketplaceRegistration, dto::MarketplaceRegistrationInput,
        dto::ApiKeyCreate, dto::ApiKeyCreated, dto::ApiKeyResponse, dto::ApiKeyList, dto::ApiKeyRevoked,
        dto::MeResponse, dto::Status,
    )),
    modifiers(&SecuritySchemes),
)]
struct ApiDoc;

/// The document.
pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

static JSON: LazyLock<String> = LazyLock::new(|| {
    document()
        .to_pretty_json()
        .expect("the document serializes")
});

/// The document as pretty JSON (built once).
pub fn document_json() -> &'static str {
    &JSON
}
