//! The shared parameters of the document, and the request bodies not yet declared as typed
//! bodies (`switchboard_domain::typed_body`, whose schemas the document derives), written as
//! JSON Schema with every rule their parsers enforce that JSON Schema can state (issue 7 §4), so
//! that a request valid by the document is accepted and one invalid by it is refused.

use serde_json::{Map, Value, json};
pub use switchboard_domain::validation::NO_NUL_PATTERN;

pub use switchboard_domain::UUID_PATTERN;
pub use switchboard_domain::time_input::DATE_TIME_PATTERN;

/// The `X-Org-Id` header: a UUID, optional, never null.
fn org_header_schema() -> Value {
    json!({"type": "string", "format": "uuid"})
}

/// Gives every `X-Org-Id` parameter its UUID schema and every UUID in a path or a query its
/// [`UUID_PATTERN`].
pub fn apply(doc: &mut Value) {
    for item in doc["paths"]
        .as_object_mut()
        .into_iter()
        .flat_map(|p| p.values_mut())
    {
        for op in item
            .as_object_mut()
            .into_iter()
            .flat_map(|o| o.values_mut())
        {
            let params = op.get_mut("parameters").and_then(Value::as_array_mut);
            for p in params.into_iter().flatten() {
                if p["name"] == "X-Org-Id" {
                    p["schema"] = org_header_schema();
                } else if p["in"] == "path" || p["in"] == "query" {
                    pattern_uuids(&mut p["schema"]);
                }
            }
        }
    }
}

/// Gives every `format: uuid` string in `schema` (nested in `anyOf`, `oneOf` or `items`)
/// [`UUID_PATTERN`]. The `X-Org-Id` header keeps `format` alone: its value is trimmed before it
/// is parsed, so the header takes more than the pattern says.
fn pattern_uuids(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if object.get("format").and_then(Value::as_str) == Some("uuid") {
        object
            .entry("pattern")
            .or_insert_with(|| Value::from(UUID_PATTERN));
    }
    for key in ["anyOf", "oneOf"] {
        for member in object
            .get_mut(key)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            pattern_uuids(member);
        }
    }
    if let Some(items) = object.get_mut("items") {
        pattern_uuids(items);
    }
}

/// Sorts a component map by name, as utoipa writes it.
pub(super) fn sort(map: &mut Map<String, Value>) {
    let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    map.extend(entries);
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_domain::identity::api_keys::KEY_NAME_PATTERN;
    use switchboard_domain::validation::NO_NUL_PATTERN;

    fn matches(pattern: &str, s: &str) -> bool {
        regex::Regex::new(pattern).unwrap().is_match(s)
    }

    /// The documented patterns say exactly what the server's rules say, on samples of every
    /// kind (the server's rules are the source).
    #[test]
    fn patterns_agree_with_the_rules() {
        for (s, ok) in [
            ("k", true),
            (" k ", true),
            (" ", false),
            ("\u{3000}\t", false),
            ("\u{1c}", true),
            ("k\u{0}", false),
            ("\u{feff}", true),
        ] {
            assert_eq!(matches(KEY_NAME_PATTERN, s), ok, "name {s:?}");
            let parsed = switchboard_domain::identity::api_keys::ApiKeyCreate::named(s);
            assert_eq!(parsed.is_ok(), ok, "name {s:?}");
        }
        for s in [
            "2026-11-23T10:00:00",
            "1999-01-28T23:59:59.123456Z",
            "2999-12-01T00:00:00-13:59",
        ] {
            assert!(matches(DATE_TIME_PATTERN, s), "{s}");
            assert!(
                switchboard_domain::time_input::parse_datetime(s).is_some(),
                "{s}"
            );
        }
        assert!(matches(NO_NUL_PATTERN, "ab") && !matches(NO_NUL_PATTERN, "a\u{0}"));
        for s in [
            "0ab2e2bb-c820-4933-8b28-222c9733efa0",
            "0AB2E2BB-C820-4933-8B28-222C9733EFA0",
            "0ab2e2bbc82049338b28222c9733efa0",
            "None",
            "",
            "{0ab2e2bb-c820-4933-8b28-222c9733efa0}",
            "urn:uuid:0ab2e2bb-c820-4933-8b28-222c9733efa0",
            "0ab2e2bb-c82049338b28-222c9733efa0",
            "0ab2e2bbc-820-4933-8b28-222c9733efa0",
            "0ab2e2bb-c820-4933-8b28-222c9733efa0\n",
            "0ab2e2bb-c820-4933-8b28-222c9733efg0",
        ] {
            assert_eq!(
                matches(UUID_PATTERN, s),
                switchboard_domain::parse_uuid(s).is_some(),
                "uuid {s:?}"
            );
        }
    }

    /// Every UUID a path or a query takes carries the pattern (a path id copied from a `null`
    /// is `None`, which `format` alone lets pass for valid).
    #[test]
    fn path_and_query_uuids_have_the_pattern() {
        let doc = crate::openapi::document();
        let mut seen = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                for p in op["parameters"].as_array().into_iter().flatten() {
                    let text = p["schema"].to_string();
                    if p["in"] != "header" && text.contains(r#""format":"uuid""#) {
                        assert!(
                            text.contains(UUID_PATTERN),
                            "{method} {path} {}: {text}",
                            p["name"]
                        );
                        seen += 1;
                    }
                }
            }
        }
        assert!(seen >= 10, "only {seen} UUID parameters");
    }
}
