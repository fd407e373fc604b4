//! The app ([`create_app`]): the route table, the fallbacks and the middleware around them,
//! over an [`AppState`].

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::middleware::from_fn;
use actix_web::{App, web};
use utoipa_actix_web::AppExt;

use crate::state::AppState;
use crate::{cors, health, llm_relay, metrics, openapi, rate_limit, routes, sandbox_proxy};

/// The app: every route of the route table ([`routes::configure`]), 405 (with `Allow`) and 404
/// answers in FastAPI's shape, and the middleware (request id and metrics, CORS, rate limits,
/// host-based sandbox routing). Besides the [`AppState`], each component a middleware or an
/// extractor reads alone is registered by itself (the metrics, the CORS origins, the rate
/// limits, the body gate), as is the OpenAPI document `/openapi.json` serves, so none of them
/// depends on the state that holds it.
pub fn create_app(
    state: web::Data<AppState>,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let components = App::new()
        .app_data(web::Data::new(state.metrics.clone()))
        .app_data(web::Data::from(state.cors.clone()))
        .app_data(web::Data::from(state.bodies.clone()))
        .app_data(web::Data::new(health::OpenApiDocument(
            openapi::document_json(),
        )));
    let components = match state.rate_limits.clone() {
        Some(limits) => components.app_data(web::Data::from(limits)),
        None => components,
    };
    let components = match state.web_client.clone() {
        Some(client) => components.app_data(web::Data::from(client)),
        None => components,
    };
    let (app, doc) = components
        .into_utoipa_app()
        .app_data(state)
        .configure(routes::configure)
        .split_for_parts();
    let paths = doc
        .paths
        .paths
        .iter()
        .map(|(path, item)| (path.clone(), routes::allowed_methods(item)));
    routes::fallbacks(llm_relay::register(sandbox_proxy::register(app)), paths)
        .wrap(from_fn(sandbox_proxy::route_by_host))
        .wrap(from_fn(rate_limit::limit))
        .wrap(from_fn(cors::cors))
        .wrap(from_fn(metrics::observe))
}
