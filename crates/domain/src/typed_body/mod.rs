//! One declaration per request body (issue 37): a body is a Rust type deriving `serde`'s
//! `Deserialize` and `utoipa`'s `ToSchema`, whose attributes carry its rules (required and
//! optional fields, defaults, patterns, lengths, ranges, enums, `deny_unknown_fields`). From
//! that one declaration:
//!
//! - the OpenAPI document takes the schema (`request_body = Type` in the route's annotation);
//! - [`parse`] judges a body against the same schema with a JSON Schema validator
//!   (`jsonschema`, compiled once per type) and maps each failure to the 422 entry pydantic
//!   would give (`pydantic.rs`: `type`, `loc`, `msg`, `input`, `ctx`), then deserializes;
//! - rules JSON Schema cannot state (a length in bytes, a rule across fields) go in
//!   [`RequestBody::check`], reported with the builders of [`crate::validation`].
//!
//! Adding a field is a one-place change: the field and its attributes on the type.
//! Shared field shapes whose pattern is a constant of the domain (a profile name, a secret
//! name, NUL-free text) are [`fields`]' schema builders, named by `#[schema(schema_with = …)]`.
//! A value whose document states only a subset of what the body takes (a date-time:
//! [`fields::date_time`]) is marked [`ACCEPTS_MORE_KEYWORD`]: the validator keeps only its type
//! there, and the type's [`RequestBody::check`] reads it.
//! A property marked `writeOnly` (`#[schema(write_only)]`, e.g. a secret's value) is never
//! echoed: its `input` reads `**********` in every entry. A schema marked
//! `x-documentation-only` ([`fields::documentation_only`]) is the document's only: the
//! validator takes any value there, and deserialization and [`RequestBody::check`] judge it (a
//! free-form part whose rules a check words as the API always has).

mod document;
pub mod fields;
mod pydantic;

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{LazyLock, RwLock};

use serde::de::DeserializeOwned;
use serde_json::Value;
use switchboard_model::{LocItem, ValidationError};
use utoipa::ToSchema;

use crate::validation::{loc, value_error};

pub use document::{ACCEPTS_MORE_KEYWORD, schema_document};

/// A request body read through [`parse`].
pub trait RequestBody: DeserializeOwned + ToSchema + 'static {
    /// Rules the schema cannot state, judged after it passed and the body deserialized.
    ///
    /// # Errors
    /// The 422 entries of the rules broken (default: none).
    fn check(&self) -> Result<(), Vec<ValidationError>> {
        Ok(())
    }
}

/// One type's compiled schema: the validator and the document it was built from (read again
/// only to word an error).
struct Compiled {
    validator: jsonschema::Validator,
    document: Value,
}

/// Every type's compiled schema, made on its first body (a few per type, never dropped).
static COMPILED: LazyLock<RwLock<HashMap<TypeId, &'static Compiled>>> =
    LazyLock::new(Default::default);

fn compiled<T: RequestBody>() -> &'static Compiled {
    let id = TypeId::of::<T>();
    if let Some(c) = COMPILED.read().expect("schema cache poisoned").get(&id) {
        return c;
    }
    // The field builders name `JsonValueWithoutNul` where the derive does not see it.
    let document = schema_document::<T>(vec![(
        fields::JsonValueWithoutNul::NAME.to_owned(),
        <fields::JsonValueWithoutNul as utoipa::PartialSchema>::schema(),
    )]);
    let validator = jsonschema::validator_for(&document::as_judged(&document))
        .unwrap_or_else(|e| panic!("the derived schema of {} does not compile: {e}", T::name()));
    let made: &'static Compiled = Box::leak(Box::new(Compiled {
        validator,
        document,
    }));
    let mut all = COMPILED.write().expect("schema cache poisoned");
    all.entry(id).or_insert(made)
}

/// Reads a body of type `T` from its JSON: judged against `T`'s derived schema, then
/// deserialized, then [`RequestBody::check`]ed.
///
/// # Errors
/// The 422 entries at `["body", …]`, in the order of `T`'s fields, as pydantic words them.
pub fn parse<T: RequestBody>(body: &Value) -> Result<T, Vec<ValidationError>> {
    let c = compiled::<T>();
    if !c.validator.is_valid(body) {
        let errors: Vec<_> = c.validator.iter_errors(body).collect();
        return Err(pydantic::entries(&T::name(), &c.document, body, &errors));
    }
    let value = T::deserialize(body).map_err(|e| {
        // The schema passed, so this is a type whose schema and `Deserialize` disagree.
        vec![value_error(loc(["body"]), &e.to_string(), body)]
    })?;
    value.check()?;
    Ok(value)
}

/// As [`parse`], for a value nested at `at` in a larger body (e.g. `["body",
/// "registered_marketplaces", 2]`): the entries' locations start with `at` instead of `body`.
///
/// # Errors
/// The entries [`parse`] gives, relocated.
pub fn parse_at<T: RequestBody>(value: &Value, at: &[LocItem]) -> Result<T, Vec<ValidationError>> {
    parse(value).map_err(|entries| {
        entries
            .into_iter()
            .map(|mut e| {
                e.loc.splice(..1, at.iter().cloned());
                e
            })
            .collect()
    })
}

/// As [`parse`], answering the first entry only (for callers that report one).
///
/// # Errors
/// The first entry [`parse`] gives.
pub fn parse_one<T: RequestBody>(body: &Value) -> Result<T, ValidationError> {
    parse(body).map_err(|mut e| e.swap_remove(0))
}

#[cfg(test)]
mod tests;
