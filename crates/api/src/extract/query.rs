//! Query strings and path parameters, judged after authentication like every other input.

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use serde_json::Value;
use switchboard_domain::batch::Batch;
use switchboard_domain::cursor::Keyset;
use switchboard_domain::validation::uuid_parsing;
use switchboard_domain::{ConversationId, parse_uuid, validation};
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

    /// The values of `name` (`?name=…&name=…`), in order: at least one.
    ///
    /// # Errors
    /// 422 `missing` at `["query", name]` without any.
    pub fn ids(&self, name: &str) -> Result<Vec<String>, ApiError> {
        let raw = self.all(name);
        if raw.is_empty() {
            return Err(validation::missing(QueryPairs::loc(name), Value::Null).into());
        }
        Ok(raw)
    }

    /// The ids of a batch get of `batch`'s resource (`?name=…&name=…`), in order: at least one
    /// (422 `missing`), at most [`Batch::max`] (else its 400, judged before their form, as
    /// OpenHands does), each a UUID (422 `uuid_parsing` at `["query", name, i]` for every one
    /// that is not).
    ///
    /// # Errors
    /// [`ApiError::Validation`], or [`switchboard_domain::DomainError::TooManyIds`].
    pub fn batch_ids<T: std::str::FromStr>(
        &self,
        name: &str,
        batch: Batch,
    ) -> Result<Vec<T>, ApiError> {
        let raw = self.ids(name)?;
        batch.check(raw.len())?;
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

    /// Reads `page_id` (a cursor this service wrote for keyset `C`) and `limit` (1..=`max`,
    /// default `max`); every malformed value is a 422 entry, all reported together.
    ///
    /// # Errors
    /// [`ApiError::Validation`].
    pub fn paging<C: Keyset>(&self, max: u32) -> Result<(Option<C>, u32), ApiError> {
        self.paging_or(max, max)
    }

    /// As [`QueryPairs::paging`], `limit` defaulting to `default` (OpenHands' model and
    /// provider searches: 50 of at most 100).
    ///
    /// # Errors
    /// [`ApiError::Validation`].
    pub fn paging_or<C: Keyset>(
        &self,
        max: u32,
        default: u32,
    ) -> Result<(Option<C>, u32), ApiError> {
        let mut errors = Vec::new();
        let mut after = None;
        let mut limit = default;
        for (name, value) in &self.0 {
            let input = || Value::String(value.clone());
            let at = || QueryPairs::loc(name);
            match name.as_str() {
                "page_id" => match C::decode(value) {
                    Some(c) => after = Some(c),
                    None => errors.push(validation::value_error(
                        at(),
                        "page_id is not a cursor returned by this service",
                        &input(),
                    )),
                },
                "limit" => match value.trim().parse::<i64>() {
                    Ok(n) if n <= 0 => errors.push(validation::greater_than(at(), 0, &input())),
                    Ok(n) if n > i64::from(max) => {
                        errors.push(validation::less_than_equal(at(), max.into(), &input()));
                    }
                    Ok(n) => limit = n as u32,
                    Err(_) => errors.push(validation::int_parsing(at(), value)),
                },
                _ => {}
            }
        }
        if errors.is_empty() {
            Ok((after, limit))
        } else {
            Err(ApiError::Validation(errors))
        }
    }

    /// Boolean query parameter `name` as pydantic reads one (`true`/`1`/`yes`/`on`/`t`/`y`
    /// and their opposites, any case); the last value wins; `None` when absent.
    ///
    /// # Errors
    /// 422 `bool_type` at `["query", name]` for anything else.
    pub fn flag(&self, name: &str) -> Result<Option<bool>, ApiError> {
        let Some(value) = self.all(name).pop() else {
            return Ok(None);
        };
        match value.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" | "t" | "y" => Ok(Some(true)),
            "false" | "0" | "no" | "off" | "f" | "n" => Ok(Some(false)),
            _ => Err(switchboard_model::ValidationError::new(
                switchboard_model::ErrorType::BoolType,
                QueryPairs::loc(name),
                "Input should be a valid boolean, unable to interpret input",
            )
            .with_input(Value::String(value))
            .into()),
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

/// A conversation id from the path: 422 at `["path", "conversation_id"]` when not a UUID.
///
/// # Errors
/// [`ApiError::Validation`].
pub fn conversation_id(raw: &str) -> Result<ConversationId, ApiError> {
    path_uuid(raw, "conversation_id").map(ConversationId)
}

#[cfg(test)]
mod tests {
    use switchboard_domain::sandboxes::records::SandboxCursor;

    use super::*;

    #[test]
    fn paging_rules() {
        let q = QueryPairs::parse("limit=7");
        assert_eq!(q.paging::<SandboxCursor>(100).unwrap(), (None, 7));
        for (query, ty) in [
            ("limit=0", "greater_than"),
            ("limit=101", "less_than_equal"),
            ("limit=x", "int_parsing"),
            ("page_id=nope", "value_error"),
        ] {
            let Err(ApiError::Validation(e)) =
                QueryPairs::parse(query).paging::<SandboxCursor>(100)
            else {
                panic!("{query}")
            };
            assert_eq!(e[0].error_type.as_str(), ty, "{query}");
        }
    }
}
