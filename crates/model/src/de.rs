//! Typed conversion from the borrowed tree ([`Json`]) with pydantic-style errors.
//!
//! Strictness (SCHEMA.md §5 and `accepted_edge_cases.jsonl`): the SDK runs pydantic in lax
//! mode; Switchboard is strict where lax mode coerces across JSON types. A string is never a
//! boolean or a number (`"true"`, `"0"` are rejected), a number is never a string. What JSON
//! itself cannot distinguish is accepted: an integral float (`2.0`) is an integer, an integer
//! is a float. These are the only deliberate differences from the SDK's reader.

use std::borrow::Cow;

use indexmap::IndexMap;

use crate::error::{ErrorType, LocItem, ValidationError};
use crate::json::Json;

/// Result of a conversion.
pub(crate) type Res<T> = Result<T, Box<ValidationError>>;

/// Builders for boxed errors (the boxed error keeps `Result`s small on the happy path).
pub(crate) trait ErrExt {
    fn with_input(self, input: serde_json::Value) -> Self;
    fn with_ctx(self, ctx: serde_json::Value) -> Self;
}

impl ErrExt for Box<ValidationError> {
    fn with_input(mut self, input: serde_json::Value) -> Self {
        self.input = Some(Box::new(input));
        self
    }

    fn with_ctx(mut self, ctx: serde_json::Value) -> Self {
        self.ctx = Some(Box::new(ctx));
        self
    }
}

/// A location being parsed, as a chain of borrowed frames: free on the happy path, turned
/// into a `Vec<LocItem>` only when an error is built.
#[derive(Clone, Copy)]
pub(crate) enum Loc<'p> {
    Root,
    Key(&'p Loc<'p>, &'p str),
    Index(&'p Loc<'p>, usize),
}

impl Loc<'_> {
    pub(crate) fn to_vec(self) -> Vec<LocItem> {
        let mut out = Vec::new();
        let mut cur = self;
        loop {
            match cur {
                Loc::Root => break,
                Loc::Key(parent, k) => {
                    out.push(LocItem::Key(k.to_owned()));
                    cur = *parent;
                }
                Loc::Index(parent, i) => {
                    out.push(LocItem::Index(i));
                    cur = *parent;
                }
            }
        }
        out.reverse();
        out
    }

    pub(crate) fn err(&self, t: ErrorType, msg: impl Into<String>) -> Box<ValidationError> {
        Box::new(ValidationError::new(t, self.to_vec(), msg))
    }

    /// An error about `input` at this location.
    pub(crate) fn err_at(
        &self,
        t: ErrorType,
        msg: impl Into<String>,
        input: &Json<'_>,
    ) -> Box<ValidationError> {
        self.err(t, msg).with_input(input.to_value())
    }
}

/// Conversion of one JSON value into a typed value.
pub(crate) trait FromJson: Sized {
    fn from_json(v: Json<'_>, loc: &Loc<'_>) -> Res<Self>;
}

impl FromJson for String {
    fn from_json(v: Json<'_>, loc: &Loc<'_>) -> Res<Self> {
        match v {
            Json::Str(s) => Ok(s.into_owned()),
            other => Err(loc.err_at(
                ErrorType::StringType,
                "Input should be a valid string",
                &other,
            )),
        }
    }
}

impl FromJson for bool {
    fn from_json(v: Json<'_>, loc: &Loc<'_>) -> Res<Self> {
        match v {
            Json::Bool(b) => Ok(b),
            other => Err(loc.err_at(
                ErrorType::BoolType,
                "Input should be a valid boolean",
                &other,
            )),
        }
    }
}

impl FromJson for i64 {
    fn from_json(v: Json<'_>, loc: &Loc<'_>) -> Res<Self> {
        match &v {
            Json::Number(n) => {
                if let Some(i) = n.as_i64() {
                    return Ok(i);
                }
                if n.is_u64() {
                    return Err(loc.err_at(
                        ErrorType::IntParsingSize,
                        "Unable to parse input string as an integer, exceeded maximum size",
                        &v,
                    ));
                }
                let f = n.as_f64().unwrap_or(f64::NAN);
                // Only an integral float strictly inside the 64-bit range: an integer literal
                // just below i64::MIN rounds to -2^63 as a float and is refused like one above
                // i64::MAX, so the accepted integers are exactly i64's.
                if f.fract() == 0.0 && f > -9.223_372_036_854_776e18 && f < 9.223_372_036_854_776e18
                {
                    // An integral float is an integer in JSON terms (pydantic agrees).
                    Ok(f as i64)
                } else if f.fract() == 0.0 {
                    Err(loc.err_at(
                        ErrorType::IntParsingSize,
                        "Unable to parse input string as an integer, exceeded maximum size",
                        &v,
                    ))
                } else {
                    Err(loc.err_at(
                        ErrorType::IntFromFloat,
                        "Input should be a valid integer, got a number with a fractional part",
                        &v,
                    ))
                }
            }
            _ => Err(loc.err_at(ErrorType::IntType, "Input should be a valid integer", &v)),
        }
    }
}

impl FromJson for f64 {
    fn from_json(v: Json<'_>, loc: &Loc<'_>) -> Res<Self> {
        match &v {
            Json::Number(n) => Ok(n.as_f64().unwrap_or(f64::NAN)),
            _ => Err(loc.err_at(ErrorType::FloatType, "Input should be a valid number", &v)),
        }
    }
}

/// `T | None`: `null` is `None`.
impl<T: FromJson> FromJson for Option<T> {
    fn from_json(v: Json<'_>, loc: &Loc<'_>) -> Res<Self> {
        match v {
            Json::Null => Ok(None),
            other => T::from_json(other, loc).map(Some),
        }
    }
}

impl<T: FromJson> FromJson for Vec<T> {
    fn from_json(v: Json<'_>, loc: &Loc<'_>) -> Res<Self> {
        match v {
            Json::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    out.push(T::from_json(item, &Loc::Index(loc, i))?);
                }
                Ok(out)
            }
            other => Err(loc.err_at(ErrorType::ListType, "Input should be a valid list", &other)),
        }
    }
}

/// A fixed pair, e.g. `ReadFileObservation.lines_shown` (`tuple[int, int]`).
impl<A: FromJson, B: FromJson> FromJson for (A, B) {
    fn from_json(v: Json<'_>, loc: &Loc<'_>) -> Res<Self> {
        match v {
            Json::Array(items) if items.len() == 2 => {
                let mut it = items.into_iter();
                let a = A::from_json(it.next().unwrap_or(Json::Null), &Loc::Index(loc, 0))?;
                let b = B::from_json(it.next().unwrap_or(Json::Null), &Loc::Index(loc, 1))?;
                Ok((a, b))
            }
            other => Err(loc.err_at(
                ErrorType::TupleType,
                "Input should be a valid tuple of 2 items",
                &other,
            )),
        }
    }
}

/// Free-form JSON (`Any`): kept as received, key order included.
impl FromJson for serde_json::Value {
    fn from_json(v: Json<'_>, _loc: &Loc<'_>) -> Res<Self> {
        Ok(v.into_value())
    }
}

/// A free-form object (`dict[str, Any]`).
impl FromJson for serde_json::Map<String, serde_json::Value> {
    fn from_json(v: Json<'_>, loc: &Loc<'_>) -> Res<Self> {
        match v {
            Json::Object(pairs) => Ok(crate::json::into_map(pairs)),
            other => Err(loc.err_at(
                ErrorType::DictType,
                "Input should be a valid dictionary",
                &other,
            )),
        }
    }
}

/// A typed mapping (`dict[str, T]`), in input order; a repeated key keeps its first position
/// and its last value, as Python's `dict` does.
impl<T: FromJson> FromJson for IndexMap<String, T> {
    fn from_json(v: Json<'_>, loc: &Loc<'_>) -> Res<Self> {
        match v {
            Json::Object(pairs) => {
                let mut out = IndexMap::with_capacity(pairs.len());
                for (k, v) in pairs {
                    let value = T::from_json(v, &Loc::Key(loc, &k))?;
                    out.insert(k.into_owned(), value);
                }
                Ok(out)
            }
            other => Err(loc.err_at(
                ErrorType::DictType,
                "Input should be a valid dictionary",
                &other,
            )),
        }
    }
}

/// Object pairs of a model, as parsed.
pub(crate) type Pairs<'a> = Vec<(Cow<'a, str>, Json<'a>)>;

/// Takes the pairs of an object, or fails with `model_type` naming `model`.
pub(crate) fn expect_object<'a>(v: Json<'a>, loc: &Loc<'_>, model: &str) -> Res<Pairs<'a>> {
    match v {
        Json::Object(pairs) => Ok(pairs),
        other => Err(loc.err_at(
            ErrorType::ModelType,
            format!("Input should be a valid dictionary or instance of {model}"),
            &other,
        )),
    }
}

/// The `missing` error for a required field.
pub(crate) fn missing(loc: &Loc<'_>, field: &str) -> Box<ValidationError> {
    Loc::Key(loc, field).err(ErrorType::Missing, "Field required")
}

/// The `extra_forbidden` error for an unknown key.
pub(crate) fn extra_forbidden(loc: &Loc<'_>, key: &str, value: &Json<'_>) -> Box<ValidationError> {
    Loc::Key(loc, key).err_at(
        ErrorType::ExtraForbidden,
        "Extra inputs are not permitted",
        value,
    )
}

/// Numbers a bound applies to.
pub(crate) trait Bounded {
    fn bounded_value(&self) -> Option<f64>;
}

impl Bounded for i64 {
    fn bounded_value(&self) -> Option<f64> {
        Some(*self as f64)
    }
}

impl Bounded for f64 {
    fn bounded_value(&self) -> Option<f64> {
        Some(*self)
    }
}

impl<T: Bounded> Bounded for Option<T> {
    fn bounded_value(&self) -> Option<f64> {
        self.as_ref().and_then(Bounded::bounded_value)
    }
}

fn bound_json(b: f64) -> serde_json::Value {
    if b.fract() == 0.0 {
        serde_json::Value::from(b as i64)
    } else {
        serde_json::Value::from(b)
    }
}

fn bound_text(b: f64) -> String {
    bound_json(b).to_string()
}

/// Checks `value >= min` (pydantic `ge`).
pub(crate) fn ge<T: Bounded>(min: f64) -> impl Fn(&T, &Loc<'_>) -> Res<()> {
    move |v, loc| match v.bounded_value() {
        Some(x) if x < min => Err(loc
            .err(
                ErrorType::GreaterThanEqual,
                format!(
                    "Input should be greater than or equal to {}",
                    bound_text(min)
                ),
            )
            .with_input(serde_json::Value::from(x))
            .with_ctx(serde_json::json!({ "ge": bound_json(min) }))),
        _ => Ok(()),
    }
}

/// Checks `min <= value <= max` (pydantic `ge` and `le`).
pub(crate) fn between<T: Bounded>(min: f64, max: f64) -> impl Fn(&T, &Loc<'_>) -> Res<()> {
    move |v, loc| {
        ge::<T>(min)(v, loc)?;
        match v.bounded_value() {
            Some(x) if x > max => Err(loc
                .err(
                    ErrorType::LessThanEqual,
                    format!("Input should be less than or equal to {}", bound_text(max)),
                )
                .with_input(serde_json::Value::from(x))
                .with_ctx(serde_json::json!({ "le": bound_json(max) }))),
            _ => Ok(()),
        }
    }
}

/// Checks that a string has at least `min` characters (pydantic `min_length`).
pub(crate) fn min_length(min: usize) -> impl Fn(&String, &Loc<'_>) -> Res<()> {
    move |v, loc| {
        if v.chars().count() < min {
            let unit = if min == 1 { "character" } else { "characters" };
            Err(loc
                .err(
                    ErrorType::StringTooShort,
                    format!("String should have at least {min} {unit}"),
                )
                .with_input(serde_json::Value::String(v.clone()))
                .with_ctx(serde_json::json!({ "min_length": min })))
        } else {
            Ok(())
        }
    }
}

/// Formats a list of allowed values as pydantic does: `'a', 'b' or 'c'`.
pub fn expected_list(values: &[&str]) -> String {
    match values {
        [] => String::new(),
        [one] => format!("'{one}'"),
        [init @ .., last] => {
            let head: Vec<String> = init.iter().map(|v| format!("'{v}'")).collect();
            format!("{} or '{last}'", head.join(", "))
        }
    }
}

/// Defines a string enumeration with pydantic's `literal_error` or `enum` errors.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident : $err:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every value, in the SDK's declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// The wire spelling of every value, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($wire),+];

            /// The wire spelling of this value.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire),+ }
            }

            /// Parses the exact (case-sensitive) wire spelling.
            pub fn from_name(s: &str) -> Option<Self> {
                match s { $($wire => Some($name::$variant),)+ _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
                $name::from_name(&s).ok_or_else(|| {
                    <D::Error as serde::de::Error>::unknown_variant(&s, $name::NAMES)
                })
            }
        }

        impl $crate::de::FromJson for $name {
            fn from_json(v: $crate::json::Json<'_>, loc: &$crate::de::Loc<'_>) -> $crate::de::Res<Self> {
                if let $crate::json::Json::Str(s) = &v {
                    if let Some(x) = $name::from_name(s) {
                        return Ok(x);
                    }
                }
                let expected = $crate::de::expected_list($name::NAMES);
                let err = loc.err_at(
                    $crate::error::ErrorType::$err,
                    format!("Input should be {expected}"),
                    &v,
                );
                Err($crate::de::ErrExt::with_ctx(err, serde_json::json!({ "expected": expected })))
            }
        }
    };
}

pub(crate) use string_enum;
