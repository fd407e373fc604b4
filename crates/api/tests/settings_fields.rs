//! The table of settings fields (docs/settings-fields.md; issue 36) against the OpenAPI
//! document: every field a settings, profile, organization-defaults or start body accepts has
//! a row saying what it does (Applied, Refused, Client, or Ignored with its reason), and no row
//! names a field the body no longer has. A new field accepted by one of these bodies fails
//! here until the table says what it does.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// The bodies the table must cover: its section headings (`METHOD path`).
const SECTIONS: [&str; 9] = [
    "POST /api/v1/settings",
    "POST /api/v1/settings/profiles/{name}",
    "POST /api/agent-profiles/{name}",
    "PATCH /api/organizations/{org_id}/settings",
    "POST /api/organizations/{org_id}/profiles/{name}",
    "POST /api/organizations/app",
    "POST /api/v1/app-conversations",
    "POST /api/v1/sandboxes",
    "POST /api/organizations/{org_id}/provider-connections",
];

/// What a row may say the field does.
const STATUSES: [&str; 4] = ["Applied", "Refused", "Client", "Ignored"];

/// One row: its section (`METHOD path`), the `###` subsection it is in (nested keys; empty
/// for the body's own fields), the field and the Switchboard cell.
struct Row {
    section: String,
    nested: String,
    field: String,
    switchboard: String,
}

fn table() -> Vec<Row> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/settings-fields.md");
    let text = std::fs::read_to_string(path).unwrap();
    let mut rows = Vec::new();
    let mut section = String::new();
    let mut nested = String::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            section = h.split('`').nth(1).unwrap_or_default().to_owned();
            nested.clear();
        } else if let Some(h) = line.strip_prefix("### ") {
            h.clone_into(&mut nested);
        } else if line.starts_with("| ")
            && !line.starts_with("| Field")
            && !line.starts_with("| ---")
        {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            assert_eq!(cells.len(), 3, "a row of three cells: {line}");
            rows.push(Row {
                section: section.clone(),
                nested: nested.clone(),
                field: cells[0].trim_matches('`').to_owned(),
                switchboard: cells[2].to_owned(),
            });
        }
    }
    rows
}

/// The property names of `schema`, through `$ref`, `allOf`, `anyOf` and `oneOf`.
fn properties(doc: &Value, schema: &Value, out: &mut BTreeSet<String>) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap();
        return properties(doc, &doc["components"]["schemas"][name], out);
    }
    for k in ["allOf", "anyOf", "oneOf"] {
        for s in schema
            .get(k)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            properties(doc, s, out);
        }
    }
    if let Some(p) = schema.get("properties").and_then(Value::as_object) {
        out.extend(p.keys().cloned());
    }
}

/// The fields of the JSON request body of `METHOD path` in the OpenAPI document.
fn body_fields(doc: &Value, section: &str) -> BTreeSet<String> {
    let (method, path) = section.split_once(' ').unwrap();
    let op = &doc["paths"][path][method.to_lowercase()];
    let schema = &op["requestBody"]["content"]["application/json"]["schema"];
    assert!(
        !schema.is_null(),
        "{section}: no JSON request body in the document"
    );
    let mut out = BTreeSet::new();
    properties(doc, schema, &mut out);
    assert!(!out.is_empty(), "{section}: no fields");
    out
}

#[test]
fn every_accepted_field_says_what_it_does() {
    let doc: Value = serde_json::from_str(switchboard_api::openapi::document_json()).unwrap();
    let rows = table();
    let mut by_section: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for row in &rows {
        assert!(
            SECTIONS.contains(&row.section.as_str()),
            "a section the test does not know: {}",
            row.section
        );
        let (status, why) = row
            .switchboard
            .split_once(": ")
            .unwrap_or((row.switchboard.as_str(), ""));
        assert!(
            STATUSES.contains(&status),
            "{} {}: says {:?}, not one of {STATUSES:?}",
            row.section,
            row.field,
            row.switchboard
        );
        assert!(
            why.len() >= 8,
            "{} {}: {status} without saying what or why",
            row.section,
            row.field
        );
        if row.nested.is_empty() {
            assert!(
                by_section
                    .entry(row.section.as_str())
                    .or_default()
                    .insert(row.field.as_str()),
                "{} {}: two rows",
                row.section,
                row.field
            );
        }
    }
    for section in SECTIONS {
        let accepted = body_fields(&doc, section);
        let listed = by_section.get(section).cloned().unwrap_or_default();
        let missing: Vec<&String> = accepted
            .iter()
            .filter(|f| !listed.contains(f.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "{section}: accepted but not in docs/settings-fields.md: {missing:?}"
        );
        let stale: Vec<&&str> = listed.iter().filter(|f| !accepted.contains(**f)).collect();
        assert!(
            stale.is_empty(),
            "{section}: in docs/settings-fields.md but not accepted: {stale:?}"
        );
    }
}

#[test]
fn nested_rows_name_their_keys_once() {
    let rows = table();
    let mut seen = BTreeSet::new();
    for row in rows.iter().filter(|r| !r.nested.is_empty()) {
        assert!(
            seen.insert((row.nested.clone(), row.field.clone())),
            "{} {}: two rows",
            row.nested,
            row.field
        );
    }
    assert!(
        seen.iter().any(|(_, f)| f == "llm.model")
            && seen.iter().any(|(_, f)| f == "confirmation_mode"),
        "the nested keys of the member's settings are listed"
    );
}
