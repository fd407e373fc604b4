//! Kind-discriminated unions: `Action`, `Observation` (SCHEMA.md §2) and their run-time kinds.

use serde::Serialize;

use crate::de::{ErrExt, Pairs, Res};
use crate::error::ErrorType;
use crate::json::Json;

/// Suffixes and prefixes of the Action subclasses the SDK creates at run time (SCHEMA.md §2):
/// `ClientAction_<tool>` for client tools, `<Action>WithRisk` and `<Action>WithSummary` from
/// its schema helpers.
const DYNAMIC_PREFIXES: &[&str] = &["ClientAction_"];
const DYNAMIC_SUFFIXES: &[&str] = &["WithRisk", "WithSummary"];

/// Whether `kind` has the form of a class the SDK generates at run time, and may therefore be
/// kept as an opaque object although this crate does not know it.
///
/// The rule: a Python identifier that starts with `ClientAction_` or ends with `WithRisk` or
/// `WithSummary` (with something before the suffix). Any other unknown kind is rejected, as the
/// SDK rejects it (`invalid/ActionEvent.jsonl`: `ShellAction`, `terminalaction`, an Observation
/// kind used as an Action). The SDK 1.58.2 generates no Observation classes at run time; the
/// same rule is applied to observations so that one rule covers both families.
pub fn is_dynamic_kind(kind: &str) -> bool {
    let mut chars = kind.chars();
    let ident = matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric());
    ident
        && (DYNAMIC_PREFIXES
            .iter()
            .any(|p| kind.len() > p.len() && kind.starts_with(p))
            || DYNAMIC_SUFFIXES
                .iter()
                .any(|s| kind.len() > s.len() && kind.ends_with(s)))
}

/// An action or observation of a kind generated at run time ([`is_dynamic_kind`]), kept as
/// the JSON object received (key order included) and written back unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct OpaqueModel {
    kind: String,
    fields: serde_json::Map<String, serde_json::Value>,
}

impl OpaqueModel {
    /// The object's `kind`.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The whole object as received, `kind` included.
    pub fn fields(&self) -> &serde_json::Map<String, serde_json::Value> {
        &self.fields
    }

    /// Wraps an object whose `kind` satisfies [`is_dynamic_kind`]; `None` otherwise.
    pub fn new(fields: serde_json::Map<String, serde_json::Value>) -> Option<Self> {
        let kind = fields.get("kind")?.as_str()?.to_owned();
        is_dynamic_kind(&kind).then_some(OpaqueModel { kind, fields })
    }

    pub(crate) fn from_pairs(kind: &str, pairs: Pairs<'_>) -> Self {
        OpaqueModel {
            kind: kind.to_owned(),
            fields: crate::json::into_map(pairs),
        }
    }
}

impl Serialize for OpaqueModel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.fields.serialize(s)
    }
}

/// Finds the `kind` of an object: the last `kind` key, as a string. A missing or `null` kind
/// reads as `""`, a number or boolean as Python's `str()` of it; arrays and objects have no
/// kind. `Err` carries the text to put in the "Unknown kind" message.
pub(crate) fn find_kind<'p>(pairs: &'p Pairs<'_>) -> Result<&'p str, String> {
    match pairs
        .iter()
        .rev()
        .find(|(k, _)| k == "kind")
        .map(|(_, v)| v)
    {
        Some(Json::Str(s)) => Ok(s),
        None | Some(Json::Null) => Err(String::new()),
        Some(Json::Bool(b)) => Err(if *b { "True" } else { "False" }.to_owned()),
        Some(Json::Number(n)) => Err(n.to_string()),
        Some(other) => Err(other.to_value().to_string()),
    }
}

/// The `value_error` for an unknown kind, worded as the SDK words it.
pub(crate) fn unknown_kind(
    loc: &crate::de::Loc<'_>,
    kind: &str,
    family: &str,
    expected: &[&str],
) -> Box<crate::error::ValidationError> {
    let list: Vec<String> = expected.iter().map(|k| format!("'{k}'")).collect();
    loc.err(
        ErrorType::ValueError,
        format!(
            "Value error, Unknown kind '{kind}' for {family}; Expected one of: [{}]",
            list.join(", ")
        ),
    )
    .with_input(serde_json::Value::String(kind.to_owned()))
}

/// Defines a kind-discriminated union over `model!` types plus an opaque run-time variant.
macro_rules! kind_union {
    (
        $(#[$meta:meta])*
        pub enum $name:ident ($family:literal, $model_name:literal) {
            $( $variant:ident ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub enum $name {
            $(
                #[doc = concat!("`", stringify!($variant), "`.")]
                $variant($variant),
            )*
            /// A kind the SDK generates at run time ([`crate::is_dynamic_kind`]), kept as received.
            Opaque($crate::union::OpaqueModel),
        }

        impl $name {
            /// Every statically known kind, in SCHEMA.md order.
            pub const KINDS: &'static [&'static str] = &[$(stringify!($variant)),*];

            /// Parses one object from JSON text.
            ///
            /// # Errors
            /// A [`ValidationError`](crate::ValidationError) as for events: `json_invalid`,
            /// `model_type`, `value_error` for an unknown kind, or the first invalid field.
            pub fn from_json_str(text: &str) -> Result<Self, crate::ValidationError> {
                let json = $crate::json::Json::parse(text)
                    .map_err(|e| crate::ValidationError::json_invalid(&e))?;
                <Self as $crate::de::FromJson>::from_json(json, &$crate::de::Loc::Root).map_err(|e| *e)
            }

            /// Parses one object from a `serde_json::Value`; errors as `from_json_str`.
            pub fn from_value(value: &serde_json::Value) -> Result<Self, crate::ValidationError> {
                <Self as $crate::de::FromJson>::from_json(
                    $crate::json::Json::from_value(value),
                    &$crate::de::Loc::Root,
                )
                .map_err(|e| *e)
            }

            /// The `kind` discriminator.
            pub fn kind(&self) -> &str {
                match self {
                    $( $name::$variant(_) => stringify!($variant), )*
                    $name::Opaque(o) => o.kind(),
                }
            }
        }

        impl $crate::de::FromJson for $name {
            fn from_json(v: $crate::json::Json<'_>, loc: &$crate::de::Loc<'_>) -> $crate::de::Res<Self> {
                let pairs = $crate::de::expect_object(v, loc, $model_name)?;
                let kind = match $crate::union::find_kind(&pairs) {
                    Ok(k) => k.to_owned(),
                    Err(shown) => {
                        return Err($crate::union::unknown_kind(loc, &shown, $family, Self::KINDS));
                    }
                };
                let skip_kind = |k: &str, v| if k == "kind" { Ok(None) } else { Ok(Some(v)) };
                match kind.as_str() {
                    $( stringify!($variant) => $variant::from_pairs(pairs, loc, skip_kind).map($name::$variant), )*
                    k if $crate::union::is_dynamic_kind(k) => {
                        Ok($name::Opaque($crate::union::OpaqueModel::from_pairs(k, pairs)))
                    }
                    k => Err($crate::union::unknown_kind(loc, k, $family, Self::KINDS)),
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( $name::$variant(x) => x.serialize(s), )*
                    $name::Opaque(o) => o.serialize(s),
                }
            }
        }
    };
}

pub(crate) use kind_union;

/// Validates a kind name given as a string (`ToolDefinition.action_type`): a known kind of
/// the family or a run-time kind.
pub(crate) fn check_kind_name(
    v: Json<'_>,
    loc: &crate::de::Loc<'_>,
    family: &str,
    known: &[&str],
) -> Res<String> {
    let s = <String as crate::de::FromJson>::from_json(v, loc)?;
    if known.contains(&s.as_str()) || is_dynamic_kind(&s) {
        Ok(s)
    } else {
        Err(unknown_kind(loc, &s, family, known))
    }
}

#[cfg(test)]
mod tests {
    use super::is_dynamic_kind;

    #[test]
    fn dynamic_kinds() {
        for k in [
            "ClientAction_lookup",
            "TerminalActionWithRisk",
            "FinishActionWithSummary",
        ] {
            assert!(is_dynamic_kind(k), "{k}");
        }
        for k in [
            "ShellAction",
            "",
            "ClientAction_",
            "WithRisk",
            "terminal action",
            "X-WithRisk",
            "9WithRisk",
        ] {
            assert!(!is_dynamic_kind(k), "{k}");
        }
    }
}
