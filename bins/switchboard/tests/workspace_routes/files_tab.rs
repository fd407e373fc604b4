//! Agent Canvas's Files tab, replayed as the client sends it
//! (`crates/api/tests/fixtures/agent_canvas/files_tab.json`, from `@openhands/agent-canvas`
//! 1.20.0): the conversation read by id for its `workspace.working_dir`, then `…/files` with
//! that directory as `path` (form-encoded, `Authorization: Bearer`), the answer read as a list
//! of relative paths.

use serde_json::Value;

use super::common::*;
use super::rig::Rig;

/// The fixture's requests.
fn fixture() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../crates/api/tests/fixtures/agent_canvas/files_tab.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// `s` as `URLSearchParams` writes a value (`application/x-www-form-urlencoded`).
fn form_encoded(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                (b as char).to_string()
            }
            b' ' => "+".to_owned(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A GET as the client sends it.
fn client_get(rig: &Rig, key: &str, path: &str) -> (u16, Value) {
    send_json(
        client()
            .get(rig.server.url(path))
            .header("Authorization", format!("Bearer {key}")),
    )
}

/// Replays the Files tab for `conv` (dashed id), whose workspace is `ws`; answers the list.
pub fn replay(rig: &Rig, conv: &str, ws: &str) -> Vec<String> {
    let fixture = fixture();
    let requests = fixture["requests"].as_array().unwrap();
    let id = conv.replace('-', "");
    let (status, convs) = client_get(
        rig,
        &rig.key,
        &requests[0]["path"]
            .as_str()
            .unwrap()
            .replace("{conversation_id}", &id),
    );
    assert_eq!(status, 200, "{convs}");
    let working_dir = convs[0]["workspace"]["working_dir"]
        .as_str()
        .unwrap_or_else(|| panic!("no workspace.working_dir: {convs}"))
        .trim()
        .to_owned();
    assert_eq!(working_dir, ws);
    let files_path = requests[1]["path"]
        .as_str()
        .unwrap()
        .replace("{conversation_id}", &id)
        .replace("{working_dir}", &form_encoded(&working_dir));
    assert!(files_path.contains("?path=%2F"), "{files_path}");
    let (status, files) = client_get(rig, &rig.key, &files_path);
    assert_eq!(status, 200, "{files_path}: {files}");
    let files: Vec<String> = serde_json::from_value(files).expect("a list of strings");
    // The client's fallback, `/workspace/project`: the workspace itself since Switchboard's
    // starts work there (issue 31), so the same list.
    let fallback = fixture["fallback_path"]
        .as_str()
        .unwrap()
        .replace("{conversation_id}", &id);
    let (status, same) = client_get(rig, &rig.key, &fallback);
    assert_eq!(status, 200, "{fallback}: {same}");
    assert_eq!(same, serde_json::json!(files), "{fallback}");
    files
}
