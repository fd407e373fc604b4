//! What OpenHands' app server answers about itself, for its clients (issue 22, "Compatibility
//! with OpenHands' answers"; reference app-server OpenAPI 1.11.0): `GET /alive`,
//! `GET /server_info` and `GET /api/v1/web-client/config`. They need no key, as OpenHands'.

use actix_web::{get, web};
use serde::Serialize;
use serde_json::{Map, Value};
use switchboard_domain::time_input::format_rfc3339_micros;
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::Status;

/// The API version of the document and of `/server_info` (spec §9).
pub const API_VERSION: &str = "0.0.1";

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(alive)
        .service(server_info)
        .service(web_client_config);
}

/// Liveness as OpenHands' app server answers it: `{"status": "ok"}` while the process serves.
#[utoipa::path(tag = "Health", responses((status = 200, body = Status)))]
#[get("/alive")]
pub async fn alive() -> web::Json<Status> {
    web::Json(Status {
        status: "ok".into(),
        detail: None,
    })
}

/// `GET /server_info`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ServerInfo {
    /// `switchboard`.
    pub server: String,
    /// Switchboard's version.
    pub version: String,
    /// The API version (spec §9).
    pub api_version: String,
    /// Seconds since this server started.
    pub uptime: u64,
    /// Logical CPUs of the host.
    pub cpu_count: usize,
    /// Whether this server runs sandboxes (starts answer 503 otherwise).
    pub sandboxes_enabled: bool,
    /// Where clients reach this server (`--public-url`), if set; sandboxes' services are
    /// under `{public_url}/sandboxes/{id}/{service}`.
    pub public_url: Option<String>,
}

/// Server information (OpenHands answers runtime details of its process, without a schema):
/// version, uptime, CPUs, and whether sandboxes run here.
#[utoipa::path(tag = "Health", responses((status = 200, body = ServerInfo)))]
#[get("/server_info")]
pub async fn server_info(state: web::Data<AppState>) -> web::Json<ServerInfo> {
    web::Json(ServerInfo {
        server: "switchboard".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        api_version: API_VERSION.into(),
        uptime: state.started.elapsed().map_or(0, |d| d.as_secs()),
        cpu_count: std::thread::available_parallelism().map_or(1, usize::from),
        sandboxes_enabled: state.services.sandboxes().runs_sandboxes(),
        public_url: state.proxy.config().public_url.clone(),
    })
}

/// OpenHands' `WebClientConfig` (reference app-server OpenAPI 1.11.0): what applies to
/// Switchboard. App mode `saas` (users, organizations and API keys), no analytics, captcha,
/// maintenance window, Git providers or integrations configured; feature flags at OpenHands'
/// defaults with billing off and hidden, deployment `self_hosted`.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebClientConfig {
    /// `saas`.
    pub app_mode: String,
    /// Always `null`.
    pub posthog_client_key: Option<String>,
    /// OpenHands' `WebClientFeatureFlags`.
    #[schema(value_type = Object)]
    pub feature_flags: Map<String, Value>,
    /// Git providers configured: none.
    pub providers_configured: Vec<String>,
    /// Always `null`.
    #[schema(format = DateTime)]
    pub maintenance_start_time: Option<String>,
    /// Always `null`.
    pub auth_url: Option<String>,
    /// Always `null`.
    pub recaptcha_site_key: Option<String>,
    /// Always empty.
    pub faulty_models: Vec<String>,
    /// Always `null`.
    pub error_message: Option<String>,
    /// When this configuration took effect: the server's start (RFC 3339, UTC).
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// Always `null`.
    pub github_app_slug: Option<String>,
    /// `false`.
    pub gitlab_enabled: bool,
    /// Always empty.
    #[schema(value_type = Object)]
    pub provider_default_hosts: Map<String, Value>,
    /// `false`.
    pub slack_enabled: bool,
    /// `false`.
    pub email_enabled: bool,
    /// Always empty.
    #[schema(value_type = Vec<Object>)]
    pub acp_providers: Vec<Value>,
    /// Always `null`.
    pub jira_dc_oauth_host: Option<String>,
    /// `false`.
    pub jira_dc_service_account_managed: bool,
    /// Always `null`.
    pub jira_dc_service_account_email: Option<String>,
    /// Always `null`.
    pub jira_dc_service_account_config_error: Option<String>,
    /// `WebClientConfig`.
    pub kind: String,
}

/// The web client's configuration (no key needed, as OpenHands': clients read it first).
#[utoipa::path(tag = "Health", responses((status = 200, body = WebClientConfig)))]
#[get("/api/v1/web-client/config")]
pub async fn web_client_config(state: web::Data<AppState>) -> web::Json<WebClientConfig> {
    let flags = serde_json::json!({
        "enable_billing": false,
        "hide_llm_settings": false,
        "enable_jira": false,
        "enable_jira_dc": false,
        "enable_linear": false,
        "hide_users_page": false,
        "hide_billing_page": true,
        "hide_integrations_page": true,
        "hide_personal_workspaces": false,
        "allow_user_llm_configuration": true,
        "enable_acp": false,
        "deployment_mode": "self_hosted",
        "enable_onboarding": false,
        "enable_automations": false,
    });
    let started = time::OffsetDateTime::from(state.started);
    web::Json(WebClientConfig {
        app_mode: "saas".into(),
        posthog_client_key: None,
        feature_flags: flags.as_object().cloned().unwrap_or_default(),
        providers_configured: Vec::new(),
        maintenance_start_time: None,
        auth_url: None,
        recaptcha_site_key: None,
        faulty_models: Vec::new(),
        error_message: None,
        updated_at: format_rfc3339_micros(started),
        github_app_slug: None,
        gitlab_enabled: false,
        provider_default_hosts: Map::new(),
        slack_enabled: false,
        email_enabled: false,
        acp_providers: Vec::new(),
        jira_dc_oauth_host: None,
        jira_dc_service_account_managed: false,
        jira_dc_service_account_email: None,
        jira_dc_service_account_config_error: None,
        kind: "WebClientConfig".into(),
    })
}
