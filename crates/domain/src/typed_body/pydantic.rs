//! JSON Schema failures worded as pydantic's 422 entries (API.md, Conventions): each
//! validator error's keyword and instance location become pydantic's `type`, `loc`, `msg`,
//! `input` and `ctx`, with the builders of [`crate::validation`] where one exists.
//!
//! | keyword | entry |
//! |---|---|
//! | `required` | `missing` at the absent field, `input` the object |
//! | `additionalProperties: false` | `extra_forbidden` at each unexpected key |
//! | `type` | `model_type` (an object of a named schema, named by its `title` or else its component name; the body's own name at the root), `dict_type`, `string_type`, `bool_type`, `int_type`, `float_type`, `list_type` |
//! | `minLength` / `maxLength` | `string_too_short` / `string_too_long` |
//! | `pattern` | `string_pattern_mismatch`; `uuid_parsing` under `format: uuid` |
//! | `enum` | `enum`; `literal_error` for a one-value `enum` or one marked [`LITERAL_KEYWORD`] (pydantic's `Literal[…]`); `null` in the set is not listed |
//! | `minimum` / `maximum` / `exclusiveMinimum` / `exclusiveMaximum` | `greater_than_equal` / `less_than_equal` / `greater_than` / `less_than` |
//! | `minItems` / `maxItems` | `too_short` / `too_long` |
//! | `propertyNames` | the key's own entry, at the key |
//! | `anyOf` / `oneOf` | the entries of the alternative with the fewest (not counting one that only wants `null`) |
//! | anything else | `value_error` with the validator's words |
//!
//! Under a schema marked [`VALUE_ERROR_KEYWORD`], every failure is instead one `value_error`
//! at that schema's value (a NUL keeping its own entry where [`NUL_APART_KEYWORD`] says so).

use std::collections::HashMap;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::LocationSegment;
use jsonschema::{JsonType, ValidationError as SchemaError};
use serde_json::{Value, json};
use switchboard_model::{ErrorType, LocItem, ValidationError};

use super::document::{field_rank, nearest_marked, node_at};
use crate::identity::redaction::MASK;
use crate::validation::{
    NO_NUL_PATTERN, bool_type, dict_type, float_type, list_type, missing, model_type, not_one_of,
    string_pattern_mismatch, string_too_short, string_type, uuid_parsing, value_error,
};

/// The entries for `errors` (what the validator found in `body`, judged against `document`,
/// the schema of the body named `model`), in field order. Never empty.
pub(super) fn entries(
    model: &str,
    document: &Value,
    body: &Value,
    errors: &[SchemaError<'_>],
) -> Vec<ValidationError> {
    let cx = Cx { model, document };
    let mut out: Vec<ValidationError> = Vec::new();
    for e in errors {
        let path = steps(e);
        cx.entry(e, &path, &mut out);
    }
    if out.is_empty() {
        out.push(value_error(
            vec![LocItem::from("body")],
            "the body does not match its schema",
            body,
        ));
    }
    let mut out: Vec<ValidationError> = out
        .into_iter()
        .map(|entry| as_value_error(document, body, entry))
        .collect();
    out.sort_by_cached_key(|entry| match entry.loc.get(1) {
        Some(LocItem::Key(k)) => field_rank(document, k),
        _ => 0,
    });
    one_per_location(out)
}

/// The keyword that makes every failure at or under a schema one `value_error` at it, worded
/// by the keyword's text (a rule pydantic words as a validator's `ValueError`). A type entry
/// at the annotated value itself, or a missing field there, keeps its own wording.
pub(super) const VALUE_ERROR_KEYWORD: &str = "x-value-error";

/// As [`VALUE_ERROR_KEYWORD`], keeping a NUL's own entry: a pattern refusing a string that
/// holds a NUL, at or under the schema, is worded `string_pattern_mismatch` against
/// [`NO_NUL_PATTERN`] at that string (API.md, NUL characters). One keyword rather than a
/// second beside `x-value-error`: utoipa keeps a schema's extensions in a hash map, so two
/// would be written in no fixed order.
pub(super) const NUL_APART_KEYWORD: &str = "x-value-error-nul-apart";

/// The keyword that marks an `enum` as pydantic's `Literal[…]` (its failures worded
/// `literal_error`) rather than an `Enum` (worded `enum`): `"x-literal": true`.
pub(super) const LITERAL_KEYWORD: &str = "x-literal";

/// `entry` as the `value_error` of its nearest schema marked [`VALUE_ERROR_KEYWORD`], if any.
fn as_value_error(document: &Value, body: &Value, entry: ValidationError) -> ValidationError {
    let path = &entry.loc[1..];
    let Some((n, marked, keyword)) = [VALUE_ERROR_KEYWORD, NUL_APART_KEYWORD]
        .into_iter()
        .filter_map(|k| nearest_marked(document, path, k).map(|(n, s)| (n, s, k)))
        .max_by_key(|(n, ..)| *n)
    else {
        return entry;
    };
    // The marked schema's own `type` keeps its entry (a union's members' types do not).
    let typed = marked.get("type").is_some();
    let own =
        n == path.len() && ((typed && is_type(&entry)) || entry.error_type == ErrorType::Missing);
    if own {
        return entry;
    }
    if keyword == NUL_APART_KEYWORD
        && entry.error_type == ErrorType::StringPatternMismatch
        && let Some(Value::String(s)) = entry.input.as_deref()
        && s.contains('\0')
    {
        return string_pattern_mismatch(entry.loc.clone(), NO_NUL_PATTERN, s);
    }
    let text = marked[keyword].as_str().unwrap_or_default();
    let mut input = body;
    for step in &path[..n] {
        input = match step {
            LocItem::Key(k) => &input[k.as_str()],
            LocItem::Index(i) => &input[*i],
        };
    }
    value_error(entry.loc[..=n].to_vec(), text, input)
}

/// One entry per location, as pydantic stops at a value's first failure: a type entry where
/// there is one (a value of the wrong type breaks its other keywords too), else a NUL's own
/// entry where there is one (API.md, NUL characters: a NUL is reported as such whatever else
/// the string breaks), else the first.
/// Linear in the entries (a body of many unknown keys makes as many).
fn one_per_location(entries: Vec<ValidationError>) -> Vec<ValidationError> {
    let mut out: Vec<ValidationError> = Vec::with_capacity(entries.len());
    let mut at: HashMap<Vec<LocItem>, usize> = HashMap::with_capacity(entries.len());
    for entry in entries {
        match at.get(&entry.loc) {
            Some(&i) if is_type(&entry) && !is_type(&out[i]) => out[i] = entry,
            Some(&i) if is_nul(&entry) && !is_type(&out[i]) && !is_nul(&out[i]) => {
                out[i] = entry;
            }
            Some(_) => {}
            None => {
                at.insert(entry.loc.clone(), out.len());
                out.push(entry);
            }
        }
    }
    out
}

/// A NUL's own entry: `string_pattern_mismatch` against [`NO_NUL_PATTERN`].
fn is_nul(e: &ValidationError) -> bool {
    e.error_type == ErrorType::StringPatternMismatch
        && e.ctx
            .as_ref()
            .and_then(|c| c.get("pattern"))
            .and_then(Value::as_str)
            == Some(NO_NUL_PATTERN)
}

fn is_type(e: &ValidationError) -> bool {
    e.error_type.as_str().ends_with("_type")
}

/// The error's instance location, as a `loc` after its `body`.
fn steps(e: &SchemaError<'_>) -> Vec<LocItem> {
    e.instance_path()
        .into_iter()
        .map(|s| match s {
            LocationSegment::Property(p) => LocItem::Key(p.into_owned()),
            LocationSegment::Index(i) => LocItem::Index(i),
        })
        .collect()
}

struct Cx<'a> {
    model: &'a str,
    document: &'a Value,
}

impl Cx<'_> {
    fn loc(&self, path: &[LocItem]) -> Vec<LocItem> {
        let mut out = Vec::with_capacity(path.len() + 1);
        out.push(LocItem::from("body"));
        out.extend_from_slice(path);
        out
    }

    /// The value an entry shows: the instance, or [`MASK`] under a `writeOnly` property.
    fn input(&self, path: &[LocItem], instance: &Value) -> Value {
        let hidden = nearest_marked(self.document, path, "writeOnly")
            .is_some_and(|(_, schema)| schema["writeOnly"] == true);
        if hidden {
            Value::String(MASK.into())
        } else {
            instance.clone()
        }
    }

    /// The entries of one validator error: one, or one per key (unexpected keys), or those of
    /// an inner error (a key's own, a union's closest alternative's).
    fn entry(&self, e: &SchemaError<'_>, path: &[LocItem], out: &mut Vec<ValidationError>) {
        let instance: &Value = e.instance();
        let at = self.loc(path);
        match e.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected }
            | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
                for key in unexpected {
                    let mut l = at.clone();
                    l.push(LocItem::from(key.as_str()));
                    let mut p = path.to_vec();
                    p.push(LocItem::Key(key.clone()));
                    out.push(
                        ValidationError::new(
                            ErrorType::ExtraForbidden,
                            l,
                            "Extra inputs are not permitted",
                        )
                        .with_input(self.input(&p, &instance[key.as_str()])),
                    );
                }
            }
            ValidationErrorKind::PropertyNames { error } => {
                // The key itself broke the rule: its entry sits at the key.
                let key = error.instance().as_str().unwrap_or_default().to_owned();
                let mut p = path.to_vec();
                p.push(LocItem::Key(key.clone()));
                let mut inner = Vec::new();
                self.entry(error, &p, &mut inner);
                for mut entry in inner {
                    entry.loc = self.loc(&p);
                    entry.input = Some(Box::new(Value::String(key.clone())));
                    out.push(entry);
                }
            }
            ValidationErrorKind::AnyOf { context }
            | ValidationErrorKind::OneOfNotValid { context } => {
                // The alternative the value came closest to (a tagged item: the one its tag
                // names), as pydantic reports a discriminated union's.
                let branch = context
                    .iter()
                    .filter(|b| !b.iter().all(|e| only_null(e.kind())))
                    .min_by_key(|b| b.len())
                    .or_else(|| context.first());
                for e in branch.into_iter().flatten() {
                    self.entry(e, &steps(e), out);
                }
            }
            kind => {
                let input = self.input(path, instance);
                out.push(self.single(e, kind, path, at, input));
            }
        }
    }

    /// The one entry of a keyword judging a single value.
    fn single(
        &self,
        e: &SchemaError<'_>,
        kind: &ValidationErrorKind,
        path: &[LocItem],
        at: Vec<LocItem>,
        input: Value,
    ) -> ValidationError {
        match kind {
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                let mut l = at;
                l.push(LocItem::from(name));
                missing(l, input)
            }
            ValidationErrorKind::Type { kind } => self.type_entry(kind, path, at, &input),
            ValidationErrorKind::MinLength { limit } => match &input {
                Value::String(s) => string_too_short(at, *limit as usize, s),
                other => string_too_short(at, *limit as usize, &other.to_string()),
            },
            ValidationErrorKind::MaxLength { limit } => bounded(
                ErrorType::StringTooLong,
                at,
                &format!(
                    "String should have at most {limit} {}",
                    plural(*limit, "character")
                ),
                json!({ "max_length": limit }),
                input,
            ),
            ValidationErrorKind::Pattern { .. }
                if node_at(self.document, path).schema["format"] == "uuid" =>
            {
                uuid_parsing(at, input.as_str().unwrap_or_default())
            }
            ValidationErrorKind::Pattern { pattern } => bounded(
                ErrorType::StringPatternMismatch,
                at,
                &format!("String should match pattern '{pattern}'"),
                json!({ "pattern": pattern }),
                input,
            ),
            ValidationErrorKind::Enum { options } => {
                let literal = node_at(self.document, path).schema[LITERAL_KEYWORD] == true;
                enum_entry(options, literal, at, &input)
            }
            ValidationErrorKind::Minimum { limit } => number(
                ErrorType::GreaterThanEqual,
                "greater than or equal to",
                "ge",
                limit,
                at,
                input,
            ),
            ValidationErrorKind::Maximum { limit } => number(
                ErrorType::LessThanEqual,
                "less than or equal to",
                "le",
                limit,
                at,
                input,
            ),
            ValidationErrorKind::ExclusiveMinimum { limit } => number(
                ErrorType::GreaterThan,
                "greater than",
                "gt",
                limit,
                at,
                input,
            ),
            ValidationErrorKind::ExclusiveMaximum { limit } => {
                number(ErrorType::LessThan, "less than", "lt", limit, at, input)
            }
            ValidationErrorKind::MinItems { limit } => {
                items(ErrorType::TooShort, "at least", *limit, at, input)
            }
            ValidationErrorKind::MaxItems { limit } => {
                items(ErrorType::TooLong, "at most", *limit, at, input)
            }
            _ => value_error(at, &e.to_string(), &input),
        }
    }

    fn type_entry(
        &self,
        kind: &TypeKind,
        path: &[LocItem],
        at: Vec<LocItem>,
        input: &Value,
    ) -> ValidationError {
        let expected = match kind {
            TypeKind::Single(t) => *t,
            TypeKind::Multiple(set) => set
                .iter()
                .find(|t| *t != JsonType::Null)
                .unwrap_or(JsonType::Null),
        };
        match expected {
            JsonType::Object => {
                // A schema's `title` names the pydantic model where it differs from the
                // component's name (e.g. an input twin of an answer's schema).
                let node = node_at(self.document, path);
                let title = node.schema.get("title").and_then(Value::as_str);
                match (title, node.component) {
                    (Some(model), _) => model_type(at, model, input),
                    (None, _) if path.is_empty() => model_type(at, self.model, input),
                    (None, Some(name)) => model_type(at, name, input),
                    (None, None) => dict_type(at, input),
                }
            }
            JsonType::String => string_type(at, input),
            JsonType::Boolean => bool_type(at, input),
            JsonType::Number => float_type(at, input),
            JsonType::Integer => {
                ValidationError::new(ErrorType::IntType, at, "Input should be a valid integer")
                    .with_input(input.clone())
            }
            JsonType::Array => list_type(at, input),
            JsonType::Null => value_error(at, "the value must be null", input),
        }
    }
}

/// Whether an alternative failed only for not being `null` (the `None` of an `Optional`).
fn only_null(kind: &ValidationErrorKind) -> bool {
    matches!(
        kind,
        ValidationErrorKind::Type {
            kind: TypeKind::Single(JsonType::Null)
        }
    )
}

fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        word.to_owned()
    } else {
        format!("{word}s")
    }
}

fn bounded(
    kind: ErrorType,
    at: Vec<LocItem>,
    msg: &str,
    ctx: Value,
    input: Value,
) -> ValidationError {
    ValidationError::new(kind, at, msg)
        .with_input(input)
        .with_ctx(ctx)
}

fn number(
    kind: ErrorType,
    words: &str,
    key: &str,
    limit: &Value,
    at: Vec<LocItem>,
    input: Value,
) -> ValidationError {
    bounded(
        kind,
        at,
        &format!("Input should be {words} {limit}"),
        json!({ key: limit }),
        input,
    )
}

fn items(
    kind: ErrorType,
    words: &str,
    limit: u64,
    at: Vec<LocItem>,
    input: Value,
) -> ValidationError {
    let actual = input.as_array().map_or(0, Vec::len);
    let key = if kind == ErrorType::TooShort {
        "min_length"
    } else {
        "max_length"
    };
    bounded(
        kind,
        at,
        &format!(
            "List should have {words} {limit} {} after validation, not {actual}",
            plural(limit, "item")
        ),
        json!({ "field_type": "List", key: limit, "actual_length": actual }),
        input,
    )
}

/// `enum`: pydantic's `Literal[…]` for one value or a `literal` set, an `Enum` for another
/// set (`null` not listed).
fn enum_entry(options: &Value, literal: bool, at: Vec<LocItem>, input: &Value) -> ValidationError {
    let allowed: Vec<String> = options
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| !o.is_null())
        .map(|o| o.as_str().map_or_else(|| o.to_string(), str::to_owned))
        .collect();
    let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
    let kind = if literal || allowed.len() == 1 {
        ErrorType::LiteralError
    } else {
        ErrorType::Enum
    };
    not_one_of(kind, at, &allowed, input)
}
