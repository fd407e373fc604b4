//! The websocket client-frame reader (`switchboard_domain::live_frames::ClientFrame::read`) on
//! arbitrary text: never panics; an `auth` frame is JSON whose `type` is `"auth"` and carries
//! exactly its `session_api_key` string; a `Message` has `role` and `content`; reading is
//! deterministic (API.md, Live delivery: client frames).
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use switchboard_domain::live_frames::ClientFrame;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let frame = ClientFrame::read(text);
    let json: Option<Value> = serde_json::from_str(text).ok();
    match &frame {
        ClientFrame::Auth(key) => {
            let v = json.expect("an auth frame is JSON");
            assert_eq!(v["type"], "auth");
            assert_eq!(key.as_deref(), v["session_api_key"].as_str());
        }
        ClientFrame::Message(v) => {
            assert!(v.get("role").is_some() && v.get("content").is_some(), "{text:?}");
            assert_eq!(Some(v), json.as_ref());
        }
        ClientFrame::Invalid(_) => {}
    }
    assert_eq!(ClientFrame::read(text), frame);
});
