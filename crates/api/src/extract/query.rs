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

    /// The ids of a batch get (`?name=…&name=…`), in order: at least one (422 `missing`), at
    /// most `max` (else `too_many(count)`, judged before their form, as OpenHands does), each a
    /// UUID (422 `uuid_parsing` at `["query", name, i]` for every one that is not).
    ///
    /// # Errors
    /// [`ApiError::Validation`], or `too_many`'s error.
    pub fn batch_ids<T: std::str::FromStr>(
        &self,
        name: &str,
        max: usize,
        too_many: impl FnOnce(usize) -> ApiError,
    ) -> Result<Vec<T>, ApiError> {
        let raw = self.all(name);
        if raw.is_empty() {
            return Err(validation::missing(QueryPairs::loc(name), serde_json::Value::Null).into());
        }
        if raw.len() > max {
            return Err(too_many(raw.len()));
        }
        let mut ids = Vec::with_capacity(raw.len());
        let mut errors = Vec::new();
        for (i, value) in raw.iter().enumerate() {
            match value.parse::<T>() {
                Ok(id) => ids.push(id),
                Err(_) => errors.push(uuid_parsing(
                    vec!["query".into(), name.into(), i.into()],
                    value,
                )),
            }
        }
        if errors.is_empty() {
            Ok(ids)
        } else {
            Err(ApiError::Validation(errors))
        }
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
