//! The one table from failures to HTTP statuses and bodies (API.md, Conventions): 422 bodies
//! are FastAPI-shaped (`{"detail": [entry, …]}`), everything else is `{"detail": "message"}`;
//! 500 leaks nothing and is logged with the request id.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use serde_json::json;
use switchboard_domain::{DomainError, StorageError};
use switchboard_model::ValidationError;

/// A request failure.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A domain refusal.
    #[error(transparent)]
    Domain(#[from] DomainError),
    /// Malformed input: 422 with these entries (locations start with `body`, `query`, `path`
    /// or `header`).
    #[error("validation failed: {0:?}")]
    Validation(Vec<ValidationError>),
    /// The body is larger than the route allows.
    #[error("Request body too large (limit {limit} bytes)")]
    PayloadTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// Reading the request failed (client went away, broken chunking).
    #[error("Could not read the request body: {0}")]
    BadBody(String),
    /// The body did not arrive within the read timeout or above the minimum rate (API.md,
    /// Request bodies): 408, and the connection is closed.
    #[error("Request body not received in time")]
    BodyTimeout,
    /// No room among the body bytes in flight came within the read timeout (API.md, Request
    /// bodies): 503 with `Retry-After`.
    #[error("Too many request bodies in flight, retry later")]
    BodiesInFlight,
    /// The client address or credential is over its request rate (API.md, Reliability and
    /// security): 429 with `Retry-After`.
    #[error("Too many requests, retry later")]
    RateLimited {
        /// Seconds until a request would be admitted (at least 1).
        retry_after_secs: u64,
    },
    /// A sandbox's service could not be reached through the proxy, or broke off (API.md,
    /// Sandbox proxy): 502.
    #[error("The sandbox's service did not answer")]
    UpstreamUnreachable,
    /// Every socket the open-files budget gives the sandbox proxy is in use (API.md, Sandbox
    /// proxy): 503 with `Retry-After`; the API itself goes on.
    #[error("Too many connections to sandboxes, retry later")]
    ProxySocketsExhausted,
    /// The caller already holds `--max-sockets-per-member` proxied websockets (issue 33):
    /// 503 with `Retry-After`, others go on.
    #[error("Too many connections to sandboxes for this member, retry later")]
    MemberSocketsExhausted,
    /// The sandbox's organization already holds `--max-sockets-per-org` proxied websockets
    /// (issue 33): 503 with `Retry-After`, other organizations go on.
    #[error("Too many connections to sandboxes for this organization, retry later")]
    OrgSocketsExhausted,
    /// A sandbox's service did not answer within the proxy's read timeout: 504.
    #[error("The sandbox's service did not answer in time")]
    UpstreamTimeout,
    /// Something that should not happen; logged, never shown.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<ValidationError> for ApiError {
    fn from(e: ValidationError) -> Self {
        ApiError::Validation(vec![e])
    }
}

impl From<Vec<ValidationError>> for ApiError {
    fn from(e: Vec<ValidationError>) -> Self {
        ApiError::Validation(e)
    }
}

impl From<actix_web::error::BlockingError> for ApiError {
    fn from(e: actix_web::error::BlockingError) -> Self {
        ApiError::Internal(format!("blocking task failed: {e}"))
    }
}

/// Result of a handler.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// The status, and the `detail` message for non-422 errors.
    fn status_and_message(&self) -> (StatusCode, String) {
        use DomainError as D;
        match self {
            ApiError::Domain(d) => {
                let status = match d {
                    D::NotAuthenticated
                    | D::InvalidApiKey
                    | D::ApiKeyExpired
                    | D::ApiKeyRevoked
                    | D::UserDisabled
                    | D::SessionKeyRequired
                    | D::InvalidSessionKey
                    | D::SandboxNotRunning
                    | D::ServiceKeyRequired
                    | D::InvalidServiceKey => StatusCode::UNAUTHORIZED,
                    D::KeyNotAuthorizedForOrg
                    | D::NotAMember
                    | D::PermissionDenied(_)
                    | D::MissingPermission(_)
                    | D::SessionKeyMismatch
                    | D::Forbidden(_) => StatusCode::FORBIDDEN,
                    D::OrgNotFound
                    | D::UserNotFound
                    | D::ApiKeyNotFound
                    | D::ConversationNotFound
                    | D::SandboxNotFound
                    | D::NotFound(_) => StatusCode::NOT_FOUND,
                    D::TooManyIds { .. } | D::SandboxSpecNotFound(_) => StatusCode::BAD_REQUEST,
                    D::SandboxNotManaged
                    | D::SandboxNotRunnable(_)
                    | D::SandboxNotReachable(_)
                    | D::SandboxQuotaExceeded(_) => StatusCode::CONFLICT,
                    D::SandboxesDisabled | D::SecretsUnavailable | D::ServiceAuthNotConfigured => {
                        StatusCode::SERVICE_UNAVAILABLE
                    }
                    D::StaleSettings { .. } | D::AlreadyExists(_) => StatusCode::CONFLICT,
                    D::DuplicateMarketplaceNames(_) | D::BadStartRequest(_) | D::BadRequest(_) => {
                        StatusCode::BAD_REQUEST
                    }
                    D::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
                    D::Storage(StorageError::Unavailable(_)) => StatusCode::SERVICE_UNAVAILABLE,
                    D::Storage(_) | D::Runtime(_) => StatusCode::INTERNAL_SERVER_ERROR,
                    D::ConversationSandboxMissing => StatusCode::GONE,
                    D::ConversationSandboxUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
                    D::ConversationSandboxNotManaged => StatusCode::CONFLICT,
                    D::AgentServerFailed(_) | D::ListenerNotSandbox(_) => StatusCode::BAD_GATEWAY,
                    D::InsufficientStorage(_) => StatusCode::INSUFFICIENT_STORAGE,
                    D::Conflict(_) => StatusCode::CONFLICT,
                    D::TooManyPendingMessages | D::TooManyRequests(_) => {
                        StatusCode::TOO_MANY_REQUESTS
                    }
                };
                let message = match status {
                    StatusCode::INTERNAL_SERVER_ERROR => "Internal server error".to_owned(),
                    StatusCode::SERVICE_UNAVAILABLE
                        if !matches!(
                            d,
                            D::SandboxesDisabled
                                | D::SecretsUnavailable
                                | D::ServiceAuthNotConfigured
                                | D::ConversationSandboxUnavailable(_)
                        ) =>
                    {
                        "Service unavailable, retry later".to_owned()
                    }
                    _ => d.to_string(),
                };
                (status, message)
            }
            ApiError::Validation(_) => (StatusCode::UNPROCESSABLE_ENTITY, String::new()),
            ApiError::PayloadTooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, self.to_string()),
            ApiError::BadBody(_) => (StatusCode::BAD_REQUEST, self.to_string()),
            ApiError::BodyTimeout => (StatusCode::REQUEST_TIMEOUT, self.to_string()),
            ApiError::BodiesInFlight
            | ApiError::ProxySocketsExhausted
            | ApiError::MemberSocketsExhausted
            | ApiError::OrgSocketsExhausted => (StatusCode::SERVICE_UNAVAILABLE, self.to_string()),
            ApiError::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, self.to_string()),
            ApiError::UpstreamUnreachable => (StatusCode::BAD_GATEWAY, self.to_string()),
            ApiError::UpstreamTimeout => (StatusCode::GATEWAY_TIMEOUT, self.to_string()),
            ApiError::Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal server error".to_owned(),
            ),
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status_and_message().0
    }

    fn error_response(&self) -> HttpResponse {
        let (status, message) = self.status_and_message();
        if status.is_server_error() {
            // Inside the request's span: the log line carries the request id.
            tracing::error!(error = %self, "request failed");
        }
        let mut resp = HttpResponse::build(status);
        if status == StatusCode::UNAUTHORIZED {
            resp.insert_header((header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer")));
        }
        match self {
            // The rest of a body that came too slowly is not waited for.
            ApiError::BodyTimeout => {
                resp.force_close();
            }
            ApiError::BodiesInFlight
            | ApiError::ProxySocketsExhausted
            | ApiError::MemberSocketsExhausted
            | ApiError::OrgSocketsExhausted => {
                resp.insert_header((header::RETRY_AFTER, HeaderValue::from_static("1")));
            }
            ApiError::RateLimited { retry_after_secs } => {
                resp.insert_header((header::RETRY_AFTER, HeaderValue::from(*retry_after_secs)));
            }
            _ => {}
        }
        match self {
            ApiError::Validation(entries) => resp.json(json!({ "detail": entries })),
            ApiError::Domain(DomainError::Invalid(e)) => resp.json(json!({ "detail": [e] })),
            _ => resp.json(json!({ "detail": message })),
        }
    }
}

impl From<std::convert::Infallible> for ApiError {
    fn from(e: std::convert::Infallible) -> Self {
        match e {}
    }
}
