//! The one set of builders for 422 entries (API.md, Conventions: FastAPI's
//! `{"type", "loc", "msg", "input", "ctx"}`, worded as pydantic words them), used by the
//! domain's rules and by the API's extractors alike. Every entry carries its input; `ctx` is
//! set where pydantic sets it (`value_error`, bounds, choices, JSON and date-time errors).
//! Locations start with where the value came from: `body`, `query`, `path` or `header`.

use serde_json::{Value, json};
use switchboard_model::{ErrorType, LocItem, ValidationError, expected_list};

/// A location made of keys, e.g. `loc(["body", "name"])`.
pub fn loc<const N: usize>(keys: [&str; N]) -> Vec<LocItem> {
    keys.into_iter().map(LocItem::from).collect()
}

/// The location of field `key` of the value at `prefix`.
pub fn field(prefix: &[LocItem], key: &str) -> Vec<LocItem> {
    let mut out = prefix.to_vec();
    out.push(LocItem::from(key));
    out
}

/// `missing`: a required value is absent; `input` is the object it was looked for in
/// (`null` when there is none).
pub fn missing(loc: Vec<LocItem>, input: Value) -> ValidationError {
    ValidationError::new(ErrorType::Missing, loc, "Field required").with_input(input)
}

/// `string_type`: expected a string.
pub fn string_type(loc: Vec<LocItem>, input: &Value) -> ValidationError {
    ValidationError::new(ErrorType::StringType, loc, "Input should be a valid string")
        .with_input(input.clone())
}

/// `bool_type`: expected `true` or `false`.
pub fn bool_type(loc: Vec<LocItem>, input: &Value) -> ValidationError {
    ValidationError::new(ErrorType::BoolType, loc, "Input should be a valid boolean")
        .with_input(input.clone())
}

/// `float_type`: expected a number.
pub fn float_type(loc: Vec<LocItem>, input: &Value) -> ValidationError {
    ValidationError::new(ErrorType::FloatType, loc, "Input should be a valid number")
        .with_input(input.clone())
}

/// `list_type`: expected an array.
pub fn list_type(loc: Vec<LocItem>, input: &Value) -> ValidationError {
    ValidationError::new(ErrorType::ListType, loc, "Input should be a valid list")
        .with_input(input.clone())
}

/// `dict_type`: expected an object used as a map (issue 21: `provider_tokens`).
pub fn dict_type(loc: Vec<LocItem>, input: &Value) -> ValidationError {
    ValidationError::new(
        ErrorType::DictType,
        loc,
        "Input should be a valid dictionary",
    )
    .with_input(input.clone())
}

/// `model_type`: expected an object for the model named `model` (its schema name).
pub fn model_type(loc: Vec<LocItem>, model: &str, input: &Value) -> ValidationError {
    ValidationError::new(
        ErrorType::ModelType,
        loc,
        format!("Input should be a valid dictionary or instance of {model}"),
    )
    .with_input(input.clone())
}

/// `uuid_parsing`: a string that is not a UUID in an accepted form (dashed or 32 hex digits,
/// API.md, Conventions).
pub fn uuid_parsing(loc: Vec<LocItem>, input: &str) -> ValidationError {
    ValidationError::new(
        ErrorType::UuidParsing,
        loc,
        "Input should be a valid UUID, as 32 hexadecimal digits or in the dashed 8-4-4-4-12 form",
    )
    .with_input(Value::String(input.to_owned()))
}

/// `int_parsing`: a string that is not an integer.
pub fn int_parsing(loc: Vec<LocItem>, input: &str) -> ValidationError {
    ValidationError::new(
        ErrorType::IntParsing,
        loc,
        "Input should be a valid integer, unable to parse string as an integer",
    )
    .with_input(Value::String(input.to_owned()))
}

/// `value_error`: a custom rule broken; `msg` says which (`ctx.error`).
pub fn value_error(loc: Vec<LocItem>, msg: &str, input: &Value) -> ValidationError {
    ValidationError::new(ErrorType::ValueError, loc, format!("Value error, {msg}"))
        .with_input(input.clone())
        .with_ctx(json!({ "error": msg }))
}

/// `datetime_from_date_parsing`: not a date-time (or date) in an accepted form; `reason`
/// says why (`ctx.error`).
pub fn datetime_parsing(loc: Vec<LocItem>, reason: &str, input: &Value) -> ValidationError {
    ValidationError::new(
        ErrorType::DatetimeFromDateParsing,
        loc,
        format!("Input should be a valid datetime or date, {reason}"),
    )
    .with_input(input.clone())
    .with_ctx(json!({ "error": reason }))
}

/// A value outside a fixed set: `kind` is [`ErrorType::LiteralError`] (a `Literal[...]`) or
/// [`ErrorType::Enum`]; `ctx.expected` lists the values as pydantic does (`'a', 'b' or 'c'`).
pub fn not_one_of(
    kind: ErrorType,
    loc: Vec<LocItem>,
    allowed: &[&str],
    input: &Value,
) -> ValidationError {
    let expected = expected_list(allowed);
    ValidationError::new(kind, loc, format!("Input should be {expected}"))
        .with_input(input.clone())
        .with_ctx(json!({ "expected": expected }))
}

/// `greater_than`: a number not above its exclusive lower bound `gt`.
pub fn greater_than(loc: Vec<LocItem>, gt: i64, input: &Value) -> ValidationError {
    ValidationError::new(
        ErrorType::GreaterThan,
        loc,
        format!("Input should be greater than {gt}"),
    )
    .with_input(input.clone())
    .with_ctx(json!({ "gt": gt }))
}

/// `string_too_short`: text shorter than `min_length` characters (pydantic's words).
pub fn string_too_short(loc: Vec<LocItem>, min_length: usize, input: &str) -> ValidationError {
    let unit = if min_length == 1 {
        "character"
    } else {
        "characters"
    };
    ValidationError::new(
        ErrorType::StringTooShort,
        loc,
        format!("String should have at least {min_length} {unit}"),
    )
    .with_input(Value::String(input.to_owned()))
    .with_ctx(json!({ "min_length": min_length }))
}

/// `less_than_equal`: a number above its upper bound `le`.
pub fn less_than_equal(loc: Vec<LocItem>, le: i64, input: &Value) -> ValidationError {
    ValidationError::new(
        ErrorType::LessThanEqual,
        loc,
        format!("Input should be less than or equal to {le}"),
    )
    .with_input(input.clone())
    .with_ctx(json!({ "le": le }))
}

/// The pattern of a string that holds no NUL (U+0000): what a text column can store
/// (PostgreSQL's `TEXT` cannot hold the NUL byte; API.md, NUL characters). Written as JSON
/// Schema and Python's `re` both read it.
pub const NO_NUL_PATTERN: &str = r"^[^\x00]*$";

/// `string_pattern_mismatch`: a string that does not match `pattern`.
pub fn string_pattern_mismatch(loc: Vec<LocItem>, pattern: &str, input: &str) -> ValidationError {
    ValidationError::new(
        ErrorType::StringPatternMismatch,
        loc,
        format!("String should match pattern '{pattern}'"),
    )
    .with_input(Value::String(input.to_owned()))
    .with_ctx(json!({ "pattern": pattern }))
}

/// Refuses a string with a NUL where it would be stored in a text column: a 422
/// `string_pattern_mismatch` (pattern [`NO_NUL_PATTERN`]) at `loc` (API.md, NUL characters).
///
/// # Errors
/// The entry above, when `value` holds a NUL.
pub fn refuse_nul(loc: impl FnOnce() -> Vec<LocItem>, value: &str) -> Result<(), ValidationError> {
    if value.contains('\0') {
        Err(string_pattern_mismatch(loc(), NO_NUL_PATTERN, value))
    } else {
        Ok(())
    }
}

/// Refuses a NUL in `map`'s keys and values at any depth, `map` being the object at `at` (e.g.
/// the keys a body does not declare). A 422 `string_pattern_mismatch` at the first NUL's
/// location (API.md, NUL characters).
///
/// # Errors
/// That entry, for the first NUL found.
pub fn refuse_nul_in(
    map: &serde_json::Map<String, Value>,
    at: &[LocItem],
) -> Result<(), ValidationError> {
    map.iter().try_for_each(|(k, v)| {
        let l = field(at, k);
        refuse_nul(|| l.clone(), k)?;
        refuse_nul_deep(v, &l)
    })
}

/// Refuses a NUL anywhere in `value` (keys and strings, at any depth): PostgreSQL's text and
/// JSON cannot hold it (API.md, NUL characters). A 422 `string_pattern_mismatch` at the
/// string's location.
///
/// # Errors
/// That entry, for the first NUL found.
pub fn refuse_nul_deep(value: &Value, at: &[LocItem]) -> Result<(), ValidationError> {
    match value {
        Value::String(s) => refuse_nul(|| at.to_vec(), s),
        Value::Array(items) => items.iter().enumerate().try_for_each(|(i, item)| {
            let mut l = at.to_vec();
            l.push(LocItem::Index(i));
            refuse_nul_deep(item, &l)
        }),
        Value::Object(map) => refuse_nul_in(map, at),
        _ => Ok(()),
    }
}

/// `value` for a text column that only mirrors a JSON document kept whole beside it (e.g. a
/// conversation's title next to its metadata): each NUL replaced by U+FFFD, the original
/// staying in the JSON (API.md, NUL characters).
pub fn nul_replaced(value: String) -> String {
    if value.contains('\0') {
        value.replace('\0', "\u{FFFD}")
    } else {
        value
    }
}

/// `json_invalid` at `["body", offset]`: the body is not JSON (or not UTF-8); `offset` counts
/// characters, as Python's `json` module reports it; `error` is the parser's message.
pub fn json_invalid(offset: usize, error: &str) -> ValidationError {
    ValidationError::new(
        ErrorType::JsonInvalid,
        vec![LocItem::from("body"), LocItem::Index(offset)],
        "JSON decode error",
    )
    .with_input(Value::Object(Default::default()))
    .with_ctx(json!({ "error": error }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_have_pydantic_shapes() {
        let e = value_error(loc(["body", "name"]), "too long", &json!("x"));
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"type": "value_error", "loc": ["body", "name"], "msg": "Value error, too long",
                   "input": "x", "ctx": {"error": "too long"}})
        );
        let e = not_one_of(
            ErrorType::Enum,
            loc(["query", "sort_order"]),
            &["TIMESTAMP", "TIMESTAMP_DESC"],
            &json!("x"),
        );
        assert_eq!(e.msg, "Input should be 'TIMESTAMP' or 'TIMESTAMP_DESC'");
        assert_eq!(
            e.ctx.as_deref(),
            Some(&json!({"expected": "'TIMESTAMP' or 'TIMESTAMP_DESC'"}))
        );
        assert_eq!(
            field(&loc(["body"]), "id"),
            [LocItem::from("body"), "id".into()]
        );
        let e = missing(loc(["query", "id"]), Value::Null);
        assert_eq!(e.input.as_deref(), Some(&Value::Null));
        let e = refuse_nul(|| loc(["body", "name"]), "a\0b").unwrap_err();
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"type": "string_pattern_mismatch", "loc": ["body", "name"],
                   "msg": "String should match pattern '^[^\\x00]*$'", "input": "a\u{0}b",
                   "ctx": {"pattern": "^[^\\x00]*$"}})
        );
        assert!(refuse_nul(|| loc(["body"]), "ab").is_ok());
        assert_eq!(nul_replaced("\0a\0".into()), "\u{FFFD}a\u{FFFD}");
        assert_eq!(
            less_than_equal(loc(["query", "limit"]), 100, &json!("101")).msg,
            "Input should be less than or equal to 100"
        );
    }

    #[test]
    fn nul_is_refused_at_any_depth() {
        let v = json!({"a": [{"b": "x\u{0}"}]});
        let e = refuse_nul_deep(&v, &[LocItem::from("body")]).unwrap_err();
        assert!(format!("{e:?}").contains("StringPatternMismatch"));
        assert!(refuse_nul_deep(&json!({"a": [1, "ok"]}), &[]).is_ok());
    }
}
