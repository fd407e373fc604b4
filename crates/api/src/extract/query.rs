//! Query strings and path parameters, judged after authentication like every other input.

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use switchboard_domain::validation::uuid_parsing;
use switchboard_domain::{parse_uuid, validation};
use switchboard_model::LocItem;

use crate::error::ApiError;

/// The query string's `name=value` pairs, decoded, in order (repeated names kept); a query
/// string that cannot be decoded reads as empty.
pub struct QueryPairs(pub Vec<(String, String)>);

impl QueryPairs {
    /// Decodes a query string.
    pub fn parse(query: &str) -> QueryPairs {
        QueryPairs(serde_urlencoded::from_str(query).unwrap_or_default())
    }

    /// Every value of `name`, in order.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// The 422 location of query parameter `name`.
    pub fn loc(name: &str) -> Vec<LocItem> {
        validation::loc(["query", name])
    }
}

impl FromRequest for QueryPairs {
    type Error = ApiError;
    type Future = std::future::Ready<Result<QueryPairs, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(Ok(QueryPairs::parse(req.query_string())))
    }
}

/// Parses a UUID path parameter; 422 (`uuid_parsing`) at `["path", name]` otherwise.
///
/// # Errors
/// [`ApiError::Validation`].
pub fn path_uuid(value: &str, name: &str) -> Result<uuid::Uuid, ApiError> {
    parse_uuid(value).ok_or_else(|| uuid_parsing(validation::loc(["path", name]), value).into())
}
