//! A borrowed JSON tree: the first stage of parsing.
//!
//! `serde_json` tokenizes the input into this tree without copying strings that need no
//! unescaping and without hashing object keys (objects are vectors of pairs in input order).
//! The typed conversion in [`crate::de`] then consumes the tree, so every validation rule has
//! the whole object at hand regardless of key order (the SDK writes `kind` last).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// One JSON value borrowed from the input text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json<'a> {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    Str(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

impl<'a> Json<'a> {
    /// Parses `text` (one JSON document, surrounding whitespace allowed).
    pub(crate) fn parse(text: &'a str) -> Result<Json<'a>, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        let value = JsonSeed.deserialize(&mut de)?;
        de.end()?;
        Ok(value)
    }

    /// Reads any serde input into the tree.
    pub(crate) fn deserialize_from<D: Deserializer<'a>>(d: D) -> Result<Json<'a>, D::Error> {
        JsonSeed.deserialize(d)
    }

    /// Borrows a `serde_json::Value` as a tree.
    pub(crate) fn from_value(v: &'a serde_json::Value) -> Json<'a> {
        match v {
            serde_json::Value::Null => Json::Null,
            serde_json::Value::Bool(b) => Json::Bool(*b),
            serde_json::Value::Number(n) => Json::Number(n.clone()),
            serde_json::Value::String(s) => Json::Str(Cow::Borrowed(s)),
            serde_json::Value::Array(items) => {
                Json::Array(items.iter().map(Json::from_value).collect())
            }
            serde_json::Value::Object(map) => Json::Object(
                map.iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), Json::from_value(v)))
                    .collect(),
            ),
        }
    }

    /// Whether this is `null`.
    pub(crate) fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    /// Converts to an owned `serde_json::Value`, keeping key order (last duplicate wins, at
    /// the position of the first, as Python's `dict` does).
    pub(crate) fn into_value(self) -> serde_json::Value {
        match self {
            Json::Null => serde_json::Value::Null,
            Json::Bool(b) => serde_json::Value::Bool(b),
            Json::Number(n) => serde_json::Value::Number(n),
            Json::Str(s) => serde_json::Value::String(s.into_owned()),
            Json::Array(items) => {
                serde_json::Value::Array(items.into_iter().map(Json::into_value).collect())
            }
            Json::Object(pairs) => serde_json::Value::Object(into_map(pairs)),
        }
    }

    /// A copy of this value as `serde_json::Value`, for error reports.
    pub(crate) fn to_value(&self) -> serde_json::Value {
        self.clone().into_value()
    }
}

/// Converts object pairs to an ordered map.
pub(crate) fn into_map(
    pairs: Vec<(Cow<'_, str>, Json<'_>)>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut map = serde_json::Map::with_capacity(pairs.len());
    for (k, v) in pairs {
        map.insert(k.into_owned(), v.into_value());
    }
    map
}

struct JsonSeed;

impl<'de> DeserializeSeed<'de> for JsonSeed {
    type Value = Json<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        serde_json::Number::from_f64(v)
            .map(Json::Number)
            .ok_or_else(|| E::custom("non-finite number"))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Json::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Json::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Json::Str(Cow::Owned(v)))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Json::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(4));
        while let Some(item) = seq.next_element_seed(JsonSeed)? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(8));
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let value = map.next_value_seed(JsonSeed)?;
            pairs.push((key, value));
        }
        Ok(Json::Object(pairs))
    }
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrows_plain_strings_and_keeps_key_order() {
        let j = Json::parse(r#"{"b":"x","a":"y\n","b":1}"#).unwrap();
        let Json::Object(pairs) = j else { panic!() };
        assert!(matches!(pairs[0].1, Json::Str(Cow::Borrowed("x"))));
        assert!(matches!(pairs[1].1, Json::Str(Cow::Owned(_))));
        assert_eq!(
            pairs.iter().map(|p| &*p.0).collect::<Vec<_>>(),
            ["b", "a", "b"]
        );
    }

    #[test]
    fn rejects_trailing_garbage() {
        assert!(Json::parse("{} x").is_err());
        assert!(Json::parse(" {} \n").is_ok());
    }
}
