//! Builders of field schemas for `#[schema(schema_with = …)]`, where a rule is a constant of
//! the domain (utoipa's attributes take only literal patterns) or a shape utoipa's attributes
//! cannot state; and the serde helpers typed bodies share. Each resource names its own fields
//! with these (e.g. `user_settings::profiles::profile_name_schema`), so this module depends on
//! no resource.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use utoipa::openapi::extensions::{Extensions, ExtensionsBuilder};
use utoipa::openapi::schema::{
    AnyOfBuilder, ArrayBuilder, Object, ObjectBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr};

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

/// Text without NUL, at least one character.
pub fn non_empty_text() -> Object {
    string()
        .min_length(Some(1))
        .pattern(Some(NO_NUL_PATTERN))
        .build()
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

/// `null` (a member of a union).
pub fn null() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::Null)
}

/// An integer from `minimum` to `i64::MAX`, or `null`.
pub fn nullable_integer_from(minimum: i64) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Integer, Type::Null]))
        .minimum(Some(minimum))
        .maximum(Some(i64::MAX))
}

/// One of `values` or `null`, as pydantic's `Optional[Literal[…]]`: any other value, of any
/// type, is worded `literal_error`.
pub fn literal_or_null(values: &[&str]) -> Object {
    let mut schema = one_of_or_null(values);
    schema.extensions = Some(
        ExtensionsBuilder::new()
            .add(super::pydantic::LITERAL_KEYWORD, true)
            .build(),
    );
    schema
}

/// No value at all (`enum: []`), every value worded as one `value_error` with `text`: a key a
/// body refuses whatever it holds (e.g. a legacy key, with what replaces it).
pub fn refused(text: &str) -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::AnyValue)
        .enum_values(Some(Vec::<serde_json::Value>::new()))
        .extensions(Some(value_error_words(text)))
        .build()
}

/// A JSON object of any keys and values but NUL (U+0000) in a key or a string
/// ([`JsonValueWithoutNul`]); the caller adds the properties it states.
pub fn free_form(description: &str) -> ObjectBuilder {
    free_form_object().description(Some(description))
}

/// [`free_form`] without a description.
pub fn free_form_object() -> ObjectBuilder {
    free_form_value(Ref::from_schema_name(JsonValueWithoutNul::NAME))
}

/// The schema of a body's flattened field holding the keys it does not declare (ignored, or
/// kept as sent): keys and values without NUL ([`free_form`]'s rule), judged by the body's
/// `RequestBody::check` ([`documentation_only`]). The derive makes the body the `allOf` of this
/// schema and its own.
pub fn others_without_nul() -> Schema {
    documentation_only(
        ObjectBuilder::new()
            .schema_type(SchemaType::AnyValue)
            .property_names(Some(nul_free_key()))
            .additional_properties(Some(Ref::from_schema_name(JsonValueWithoutNul::NAME))),
    )
}

/// The check of the keys [`others_without_nul`] documents (a body's `#[serde(flatten)]` map),
/// for the body's `RequestBody::check`: no NUL in a key or a string under them.
///
/// # Errors
/// `string_pattern_mismatch` at `["body", key, …]`, the first NUL found.
pub fn check_others(
    others: &serde_json::Map<String, serde_json::Value>,
) -> Result<(), Vec<switchboard_model::ValidationError>> {
    crate::validation::refuse_nul_in(others, &crate::validation::loc(["body"])).map_err(|e| vec![e])
}

/// `schema` marked `x-documentation-only`: the document states it, the validator takes any
/// value there (`typed_body::parse`), and the body's deserialization and `RequestBody::check`
/// judge the value, its type included. For a free-form part whose rules (and whose type's)
/// a check words as the API always has. (A schema whose `type` the validator should still
/// judge is marked with [`accepts_more`] instead.)
pub fn documentation_only(schema: impl Into<Schema>) -> Schema {
    let mut schema = schema.into();
    let extensions = match &mut schema {
        Schema::Object(s) => &mut s.extensions,
        Schema::Array(s) => &mut s.extensions,
        Schema::OneOf(s) => &mut s.extensions,
        Schema::AllOf(s) => &mut s.extensions,
        Schema::AnyOf(s) => &mut s.extensions,
        _ => unreachable!("utoipa has no other kind of schema"),
    };
    extensions.get_or_insert_with(Extensions::default).merge(
        ExtensionsBuilder::new()
            .add(super::document::DOCUMENTATION_ONLY_KEYWORD, true)
            .build(),
    );
    schema
}

/// Any JSON value with no NUL (U+0000) in a string or an object key: the component
/// `JsonValueWithoutNul`, which [`free_form`] objects and [`others_without_nul`] name for
/// their values (PostgreSQL's text cannot hold a NUL; API.md, NUL characters). The OpenAPI
/// document lists it among its components.
pub struct JsonValueWithoutNul;

impl JsonValueWithoutNul {
    /// The component's name.
    pub const NAME: &str = "JsonValueWithoutNul";
}

impl utoipa::PartialSchema for JsonValueWithoutNul {
    fn schema() -> RefOr<Schema> {
        let itself = || Ref::from_schema_name(Self::NAME);
        AnyOfBuilder::new()
            .description(Some(
                "Any JSON value with no NUL (U+0000) in a string or an object key.",
            ))
            .item(text_matching(NO_NUL_PATTERN))
            .item(ObjectBuilder::new().schema_type(SchemaType::from_iter([
                Type::Number,
                Type::Boolean,
                Type::Null,
            ])))
            .item(ArrayBuilder::new().items(itself()))
            .item(free_form_value(itself()))
            .into()
    }
}

/// An object key without NUL (`propertyNames`).
fn nul_free_key() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(SchemaType::AnyValue)
        .pattern(Some(NO_NUL_PATTERN))
}

/// An object of values `value`, keys without NUL (the last member of [`JsonValueWithoutNul`]).
fn free_form_value(value: Ref) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .property_names(Some(nul_free_key()))
        .additional_properties(Some(value))
}

impl utoipa::ToSchema for JsonValueWithoutNul {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed(Self::NAME)
    }
}

/// An integer as pydantic's lax mode takes one: a JSON integer, or a number without a
/// fraction (`3.0`), within `i64`'s range; it serializes as the integer (`3`). Its schema is
/// the field's (e.g. [`nullable_integer_from`]), which states the range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Whole(pub i64);

impl<'de> Deserialize<'de> for Whole {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
        let n = serde_json::Number::deserialize(d)?;
        n.as_i64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && (-LIMIT..LIMIT).contains(f))
                    .map(|f| f as i64)
            })
            .map(Whole)
            .ok_or_else(|| serde::de::Error::custom("not a whole number in i64's range"))
    }
}

/// The annotation that words every failure at or under a schema as one `value_error` with
/// `text` (see `typed_body::pydantic`: a rule pydantic reports as a validator's `ValueError`).
pub fn value_error_words(text: &str) -> Extensions {
    ExtensionsBuilder::new()
        .add(super::pydantic::VALUE_ERROR_KEYWORD, text)
        .build()
}

/// `#[serde(skip_serializing_if = …)]` for a field a body never serializes (where the
/// body's serialized form is a part of it, e.g. the settings' preferences). Not
/// `skip_serializing`: utoipa reads that as leaving the field out of the schema.
pub fn always<T>(_: &T) -> bool {
    true
}

/// As [`value_error_words`], except that a pattern refusing a string with a NUL (at or under
/// the schema) keeps the entry API.md gives every NUL (NUL characters):
/// `string_pattern_mismatch` against [`NO_NUL_PATTERN`]
/// at that string.
pub fn value_error_words_nul_apart(text: &str) -> Extensions {
    ExtensionsBuilder::new()
        .add(super::pydantic::NUL_APART_KEYWORD, text)
        .build()
}

/// A date-time as [`crate::time_input::parse_datetime_value`] reads it, or `null`: the
/// document states a string matching `pattern` or Unix seconds in `[from, to)` (the subset a
/// generator can only make valid values of; `description` says what more is taken), and
/// marks it [`ACCEPTS_MORE_KEYWORD`](super::ACCEPTS_MORE_KEYWORD): the validator takes any
/// value there (the schema states no `type`), the body's
/// [`RequestBody::check`](super::RequestBody::check) reads it.
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

/// `T`'s schema inline (not a reference to its component), titled `title` when given: the
/// title names the pydantic model of a `model_type` entry there (e.g. `LLM`, `StrictLLM`).
pub fn inline<T: utoipa::PartialSchema>(title: Option<&str>) -> Schema {
    let mut schema = match T::schema() {
        RefOr::T(s) => s,
        RefOr::Ref(_) => unreachable!("a derived schema is inline"),
    };
    if let Some(title) = title {
        match &mut schema {
            Schema::AllOf(s) => s.title = Some(title.to_owned()),
            Schema::Object(s) => s.title = Some(title.to_owned()),
            _ => unreachable!("a derived struct's schema is an object or an allOf"),
        }
    }
    schema
}

/// `T`'s schema inline, titled with its name, or `null`: a nested settings object of a body
/// (`null` for its defaults).
pub fn inline_or_null<T: utoipa::PartialSchema + utoipa::ToSchema>() -> Schema {
    AnyOfBuilder::new()
        .item(inline::<T>(Some(&T::name())))
        .item(null())
        .into()
}
