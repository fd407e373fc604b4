//! The `model!` macro: one declaration per SDK model gives the struct, its strict reader and
//! its writer, so field order, defaults and strictness are stated once, beside the docs.
//!
//! ```text
//! model! {
//!     /// docs
//!     pub struct Name {
//!         extra: forbid | ignore,          // SCHEMA.md §5: unknown keys rejected or dropped
//!         kind: "Name",                    // optional: written last, as the SDK does
//!         deprecated: ["old_key"],         // optional: keys silently dropped on input
//!         fields: {
//!             /// docs
//!             field ["wire"]?: Type = mode [check]? (via parser_fn)?,
//!         }
//!     }
//! }
//! ```
//!
//! Modes (SCHEMA.md §1 and §5):
//! - `req`: required; absent is `missing`.
//! - `req_nullable`: required but nullable (`Option<T>`); always written, as `null` if need be.
//! - `opt`: `Option<T>`; absent or `null` is `None`; left out when `None` (exclude_none).
//! - `default(expr)`: absent is `expr`; `null` is a type error; always written.
//! - `or_null(expr)`: absent or `null` is `expr` (may use fields declared before); always written.
//!
//! Fields are read in declaration order, so the first error reported is the first field's,
//! as pydantic orders its errors.

macro_rules! model {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            extra: $extra:ident,
            $(kind: $kind:literal,)?
            $(deprecated: [$($dep:literal),* $(,)?],)?
            fields: {
                $(
                    $(#[$fmeta:meta])*
                    $field:ident $([$wire:literal])? : $ty:ty = $mode:ident $(($default:expr))? $([$check:expr])? $(via $via:path)?
                ),* $(,)?
            }
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $name {
            $(
                /// The `kind` discriminator of this model, written as its last key.
                pub const KIND: &'static str = $kind;
            )?

            /// Reads the model from the pairs of a JSON object. Keys the model does not know
            /// are offered to `other` first (which returns the value back when it does not
            /// take it); what remains is rejected or dropped by the model's extra policy.
            #[allow(unused_mut, unused_variables, clippy::redundant_closure_call)]
            pub(crate) fn from_pairs<'a>(
                pairs: $crate::de::Pairs<'a>,
                loc: &$crate::de::Loc<'_>,
                mut other: impl FnMut(&str, $crate::json::Json<'a>) -> $crate::de::Res<Option<$crate::json::Json<'a>>>,
            ) -> $crate::de::Res<Self> {
                $( let mut $field: Option<$crate::json::Json<'a>> = None; )*
                // pydantic reports field errors before unknown keys: keep the first unknown
                // key and report it after the fields are read.
                let mut unknown: Option<(std::borrow::Cow<'a, str>, $crate::json::Json<'a>)> = None;
                for (key, value) in pairs {
                    match &*key {
                        $( $crate::macros::model!(@wire $field $($wire)?) => $field = Some(value), )*
                        $($( $dep => {} )*)?
                        _ => {
                            if let Some(value) = other(&key, value)? {
                                if unknown.is_none() {
                                    unknown = Some((key, value));
                                }
                            }
                        }
                    }
                }
                $(
                    let $field: $ty = $crate::macros::model!(
                        @finish $mode $(($default))?, $field, loc,
                        $crate::macros::model!(@wire $field $($wire)?),
                        $crate::macros::model!(@parser $ty $(, $via)?),
                        [$($check)?]
                    );
                )*
                if let Some((key, value)) = unknown {
                    $crate::macros::model!(@extra $extra, loc, &key, value);
                }
                Ok(Self { $($field),* })
            }

            /// Writes the fields (not `kind`) into an open JSON object, in declaration order.
            #[allow(unused_variables)]
            pub(crate) fn serialize_fields<M: serde::ser::SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
                $(
                    $crate::macros::model!(
                        @ser $mode, map, $crate::macros::model!(@wire $field $($wire)?), &self.$field
                    );
                )*
                Ok(())
            }
        }

        impl $crate::de::FromJson for $name {
            fn from_json(v: $crate::json::Json<'_>, loc: &$crate::de::Loc<'_>) -> $crate::de::Res<Self> {
                let pairs = $crate::de::expect_object(v, loc, stringify!($name))?;
                #[allow(unused_variables)]
                let offer = |key: &str, value| {
                    $( if key == "kind" { let _ = $kind; return Ok(None); } )?
                    Ok(Some(value))
                };
                Self::from_pairs(pairs, loc, offer)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut map = s.serialize_map(None)?;
                self.serialize_fields(&mut map)?;
                $( map.serialize_entry("kind", $kind)?; )?
                map.end()
            }
        }
    };

    (@parser $ty:ty) => { <$ty as $crate::de::FromJson>::from_json };
    (@parser $ty:ty, $via:path) => { $via };

    (@wire $field:ident) => { stringify!($field) };
    (@wire $field:ident $wire:literal) => { $wire };

    (@extra forbid, $loc:expr, $key:expr, $value:expr) => {
        return Err($crate::de::extra_forbidden($loc, $key, &$value));
    };
    (@extra ignore, $loc:expr, $key:expr, $value:expr) => {{
        let _ = $value;
    }};

    (@finish req, $raw:ident, $loc:expr, $wire:expr, $parse:expr, [$($check:expr)?]) => {{
        let value = match $raw {
            Some(v) => ($parse)(v, &$crate::de::Loc::Key($loc, $wire))?,
            None => return Err($crate::de::missing($loc, $wire)),
        };
        $( ($check)(&value, &$crate::de::Loc::Key($loc, $wire))?; )?
        value
    }};
    (@finish req_nullable, $raw:ident, $loc:expr, $wire:expr, $parse:expr, [$($check:expr)?]) => {
        $crate::macros::model!(@finish req, $raw, $loc, $wire, $parse, [$($check)?])
    };
    (@finish opt, $raw:ident, $loc:expr, $wire:expr, $parse:expr, [$($check:expr)?]) => {{
        let value = match $raw {
            Some(v) => ($parse)(v, &$crate::de::Loc::Key($loc, $wire))?,
            None => None,
        };
        $( ($check)(&value, &$crate::de::Loc::Key($loc, $wire))?; )?
        value
    }};
    (@finish default ($default:expr), $raw:ident, $loc:expr, $wire:expr, $parse:expr, [$($check:expr)?]) => {{
        let value = match $raw {
            Some(v) => ($parse)(v, &$crate::de::Loc::Key($loc, $wire))?,
            None => $default,
        };
        $( ($check)(&value, &$crate::de::Loc::Key($loc, $wire))?; )?
        value
    }};
    (@finish or_null ($default:expr), $raw:ident, $loc:expr, $wire:expr, $parse:expr, [$($check:expr)?]) => {
        match $raw {
            Some(v) if !v.is_null() => {
                ($parse)(v, &$crate::de::Loc::Key($loc, $wire))?
            }
            _ => $default,
        }
    };

    (@ser req, $map:ident, $wire:expr, $value:expr) => { $map.serialize_entry($wire, $value)?; };
    (@ser req_nullable, $map:ident, $wire:expr, $value:expr) => { $map.serialize_entry($wire, $value)?; };
    (@ser default, $map:ident, $wire:expr, $value:expr) => { $map.serialize_entry($wire, $value)?; };
    (@ser or_null, $map:ident, $wire:expr, $value:expr) => { $map.serialize_entry($wire, $value)?; };
    (@ser opt, $map:ident, $wire:expr, $value:expr) => {
        if let Some(v) = $value {
            $map.serialize_entry($wire, v)?;
        }
    };
}

pub(crate) use model;
