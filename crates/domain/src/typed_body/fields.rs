//! Builders of field schemas for `#[schema(schema_with = …)]`, where a rule is a constant of
//! the domain (utoipa's attributes take only literal patterns) or a shape utoipa's attributes
//! cannot state; and the serde helpers typed bodies share. Each resource names its own fields
//! with these (e.g. `user_settings::profiles::profile_name_schema`), so this module depends on
//! no resource.

use serde::Deserialize;
use utoipa::openapi::extensions::{Extensions, ExtensionsBuilder};
use utoipa::openapi::schema::{AnyOfBuilder, Object, ObjectBuilder, Schema, SchemaType, Type};

use crate::validation::NO_NUL_PATTERN;

/// A string.
pub fn string() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String)
}

/// A string or `null`.
pub fn nullable_string() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::String, Type::Null]))
}

/// A string matching `pattern`.
pub fn text_matching(pattern: &str) -> Object {
    string().pattern(Some(pattern)).build()
}

/// Text without NUL, or `null`.
pub fn nullable_text() -> Object {
    nullable_string().pattern(Some(NO_NUL_PATTERN)).build()
}

/// `true`, `false` or `null`.
pub fn nullable_bool() -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Boolean, Type::Null]))
        .build()
}

/// One of `values`, or `null`: worded as an `Enum` (`enum`).
pub fn one_of_or_null(values: &[&str]) -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::AnyValue)
        .enum_values(Some(
            values
                .iter()
                .map(|v| serde_json::Value::from(*v))
                .chain([serde_json::Value::Null]),
        ))
        .build()
}

/// A string (or `null` when `nullable`) that is one of `values`, as pydantic's `Literal[…]`
/// of strings: another string is worded `literal_error` (the `x-literal` annotation, see
/// `typed_body::pydantic`), a value of another type `string_type`.
pub fn literal(values: &[&str], nullable: bool) -> Object {
    let null = nullable.then_some(serde_json::Value::Null);
    let builder = if nullable {
        nullable_string()
    } else {
        string()
    };
    builder
        .enum_values(Some(
            values
                .iter()
                .map(|v| serde_json::Value::from(*v))
                .chain(null),
        ))
        .extensions(Some(literal_mark()))
        .build()
}

/// The annotation that words an `enum`'s failures `literal_error` (pydantic's `Literal[…]`).
pub fn literal_mark() -> Extensions {
    ExtensionsBuilder::new()
        .add(super::pydantic::LITERAL_KEYWORD, true)
        .build()
}

/// `value` only: pydantic's `Literal["…"]` (a one-value `enum`, worded `literal_error`).
pub fn only(value: &str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(SchemaType::AnyValue)
        .enum_values(Some([value]))
}

/// The annotation that words every failure at or under a schema as one `value_error` with
/// `text` (see `typed_body::pydantic`: a rule pydantic reports as a validator's `ValueError`).
pub fn value_error_words(text: &str) -> Extensions {
    ExtensionsBuilder::new()
        .add(super::pydantic::VALUE_ERROR_KEYWORD, text)
        .build()
}

/// As [`value_error_words`], except that a pattern refusing a string with a NUL (at or under
/// the schema) keeps the entry API.md gives every NUL (NUL characters):
/// `string_pattern_mismatch` against [`NO_NUL_PATTERN`](crate::validation::NO_NUL_PATTERN)
/// at that string.
pub fn value_error_words_nul_apart(text: &str) -> Extensions {
    ExtensionsBuilder::new()
        .add(super::pydantic::VALUE_ERROR_KEYWORD, text)
        .add(super::pydantic::NUL_APART_KEYWORD, true)
        .build()
}

/// A date-time as [`crate::time_input::parse_datetime_value`] reads it, or `null`: the
/// document states a string matching `pattern` or Unix seconds in `[from, to)` (the subset a
/// generator can only make valid values of; `description` says what more is taken), and
/// marks it [`ACCEPTS_MORE_KEYWORD`](super::ACCEPTS_MORE_KEYWORD): the validator takes any
/// value there, the body's [`RequestBody::check`](super::RequestBody::check) reads it.
pub fn date_time(pattern: &str, from: i64, to: i64, description: &str) -> Schema {
    let any = AnyOfBuilder::new()
        .description(Some(description))
        .item(string().pattern(Some(pattern)))
        .item(
            ObjectBuilder::new()
                .schema_type(Type::Number)
                .minimum(Some(from))
                .exclusive_maximum(Some(to)),
        )
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .extensions(Some(accepts_more()))
        .build();
    Schema::AnyOf(any)
}

/// The annotation of a schema that states a subset of what the body takes there (see
/// [`ACCEPTS_MORE_KEYWORD`](super::ACCEPTS_MORE_KEYWORD)): the validator keeps only its
/// `type`, the body's `check` judges the rest.
pub fn accepts_more() -> Extensions {
    ExtensionsBuilder::new()
        .add(super::ACCEPTS_MORE_KEYWORD, true)
        .build()
}

/// `#[serde(default = …)]` for a flag that defaults to `true`.
pub fn yes() -> bool {
    true
}

/// `#[serde(deserialize_with = …)]` for a field that may be left out (`None`), `null`
/// (`Some(None)`) or a value (`Some(Some(v))`); with `#[serde(default)]`.
///
/// # Errors
/// The value's own.
pub fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}
