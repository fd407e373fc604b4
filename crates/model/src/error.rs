//! Parse errors shaped like pydantic's, so an HTTP layer can turn one into a FastAPI-style
//! 422 entry (`{"type", "loc", "msg", "input", "ctx"}`) without parsing anything again.

use std::fmt;

use serde::Serialize;

/// One element of an error location: an object key or an array index.
///
/// Serializes as a JSON string or integer, as in FastAPI's `loc` arrays.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum LocItem {
    /// An object key (a field name, or a key of a free-form map).
    Key(String),
    /// A zero-based array index.
    Index(usize),
}

impl fmt::Display for LocItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LocItem::Key(k) => f.write_str(k),
            LocItem::Index(i) => write!(f, "{i}"),
        }
    }
}

impl From<&str> for LocItem {
    fn from(value: &str) -> Self {
        LocItem::Key(value.to_owned())
    }
}

impl From<usize> for LocItem {
    fn from(value: usize) -> Self {
        LocItem::Index(value)
    }
}

/// The kind of a validation failure, named as pydantic names it (`ErrorType::as_str`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorType {
    /// The input is not valid JSON (`json_invalid`).
    JsonInvalid,
    /// A required field is absent (`missing`).
    Missing,
    /// A key not allowed on a model that forbids unknown keys (`extra_forbidden`).
    ExtraForbidden,
    /// Expected an object for a model (`model_type`).
    ModelType,
    /// Expected an object for a free-form mapping (`dict_type`).
    DictType,
    /// Expected an array (`list_type`).
    ListType,
    /// Expected an array for a set (`set_type`).
    SetType,
    /// Expected an array of fixed length (`tuple_type`).
    TupleType,
    /// Expected a string (`string_type`).
    StringType,
    /// A string shorter than its minimum length (`string_too_short`).
    StringTooShort,
    /// Expected `true` or `false` (`bool_type`).
    BoolType,
    /// Expected an integer (`int_type`).
    IntType,
    /// A number with a fractional part where an integer is expected (`int_from_float`).
    IntFromFloat,
    /// An integer outside the 64-bit range (`int_parsing_size`).
    IntParsingSize,
    /// Expected a number (`float_type`).
    FloatType,
    /// A string outside a `Literal[...]` set (`literal_error`).
    LiteralError,
    /// A value outside an `Enum` (`enum`).
    Enum,
    /// A number below its lower bound (`greater_than_equal`).
    GreaterThanEqual,
    /// A number above its upper bound (`less_than_equal`).
    LessThanEqual,
    /// A string that is not an ISO-8601 date-time (`datetime_from_date_parsing`).
    DatetimeFromDateParsing,
    /// A rule of a custom validator (`value_error`), e.g. an unknown `kind`.
    ValueError,
    /// A string that is not a UUID (`uuid_parsing`; used by the HTTP layer).
    UuidParsing,
    /// A string that is not an integer (`int_parsing`; query parameters).
    IntParsing,
    /// A number not above its exclusive lower bound (`greater_than`).
    GreaterThan,
    /// A string that does not match its pattern (`string_pattern_mismatch`; used by the HTTP
    /// layer, e.g. a NUL where a column cannot hold one).
    StringPatternMismatch,
    /// A string longer than its `max_length`.
    StringTooLong,
    /// A number not below its exclusive upper bound.
    LessThan,
    /// A list with fewer items than its `min_length`.
    TooShort,
    /// A list with more items than its `max_length`.
    TooLong,
}

impl ErrorType {
    /// pydantic's name for this error type, e.g. `"extra_forbidden"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::JsonInvalid => "json_invalid",
            ErrorType::Missing => "missing",
            ErrorType::ExtraForbidden => "extra_forbidden",
            ErrorType::ModelType => "model_type",
            ErrorType::DictType => "dict_type",
            ErrorType::ListType => "list_type",
            ErrorType::SetType => "set_type",
            ErrorType::TupleType => "tuple_type",
            ErrorType::StringType => "string_type",
            ErrorType::StringTooShort => "string_too_short",
            ErrorType::BoolType => "bool_type",
            ErrorType::IntType => "int_type",
            ErrorType::IntFromFloat => "int_from_float",
            ErrorType::IntParsingSize => "int_parsing_size",
            ErrorType::FloatType => "float_type",
            ErrorType::LiteralError => "literal_error",
            ErrorType::Enum => "enum",
            ErrorType::GreaterThanEqual => "greater_than_equal",
            ErrorType::LessThanEqual => "less_than_equal",
            ErrorType::DatetimeFromDateParsing => "datetime_from_date_parsing",
            ErrorType::ValueError => "value_error",
            ErrorType::UuidParsing => "uuid_parsing",
            ErrorType::IntParsing => "int_parsing",
            ErrorType::GreaterThan => "greater_than",
            ErrorType::StringPatternMismatch => "string_pattern_mismatch",
            ErrorType::StringTooLong => "string_too_long",
            ErrorType::LessThan => "less_than",
            ErrorType::TooShort => "too_short",
            ErrorType::TooLong => "too_long",
        }
    }
}

impl fmt::Display for ErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Why an event (or a nested model) was rejected.
///
/// Serializes as one FastAPI `ValidationError` entry: `{"type", "loc", "msg", "input", "ctx"}`
/// (`input` and `ctx` left out when absent). An HTTP layer prefixes `loc` with `"body"` (and
/// the batch index) before sending it.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("{error_type} at {}: {msg}", display_loc(.loc))]
pub struct ValidationError {
    /// The pydantic error type.
    #[serde(rename = "type")]
    pub error_type: ErrorType,
    /// Path from the event object to the offending value; empty for the event itself.
    /// Examples: `["action", "command"]`, `["tool_call", "arguments"]`, `["thought", 0, "text"]`.
    pub loc: Vec<LocItem>,
    /// Human-readable message, worded as pydantic words it (`"Field required"`).
    pub msg: String,
    /// The offending input value, when there is one (absent for `missing`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<Box<serde_json::Value>>,
    /// Extra context, e.g. `{"ge": 0}` or `{"expected": "'text'"}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ctx: Option<Box<serde_json::Value>>,
}

fn display_loc(loc: &[LocItem]) -> String {
    if loc.is_empty() {
        return "''".to_owned();
    }
    let parts: Vec<String> = loc.iter().map(ToString::to_string).collect();
    format!("'{}'", parts.join("."))
}

impl ValidationError {
    /// Builds an error; `loc` is given root-first.
    pub fn new(error_type: ErrorType, loc: Vec<LocItem>, msg: impl Into<String>) -> Self {
        ValidationError {
            error_type,
            loc,
            msg: msg.into(),
            input: None,
            ctx: None,
        }
    }

    /// Returns the error with `input` set.
    pub fn with_input(mut self, input: serde_json::Value) -> Self {
        self.input = Some(Box::new(input));
        self
    }

    /// Returns the error with `ctx` set.
    pub fn with_ctx(mut self, ctx: serde_json::Value) -> Self {
        self.ctx = Some(Box::new(ctx));
        self
    }

    /// Returns the error with `prefix` put in front of its location, e.g. `["body", 3]`.
    pub fn prefixed<I: IntoIterator<Item = LocItem>>(mut self, prefix: I) -> Self {
        let mut loc: Vec<LocItem> = prefix.into_iter().collect();
        loc.append(&mut self.loc);
        self.loc = loc;
        self
    }

    pub(crate) fn json_invalid(err: &serde_json::Error) -> Self {
        ValidationError::new(
            ErrorType::JsonInvalid,
            Vec::new(),
            format!("Invalid JSON: {err}"),
        )
        .with_ctx(serde_json::json!({ "error": err.to_string() }))
    }
}
