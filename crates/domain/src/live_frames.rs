//! Frames a live subscriber sends over its websocket (API.md, Live delivery: client frames),
//! read without any web framework so that they can be tested and fuzzed on their own.
//!
//! A text frame is one of: `{"type":"auth","session_api_key":"<API key>"}` (the first-frame
//! authentication of the agent server's protocol), a `Message` (`{"role": …, "content": …}`,
//! other fields ignored: checked further by send-message's own rules), or anything else,
//! which is answered with an error frame and leaves the socket open.

use serde_json::Value;

/// What a client's text frame is.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientFrame {
    /// `{"type":"auth"}` with the key it carries (`None`: no string `session_api_key`).
    Auth(Option<String>),
    /// A `Message`: the frame's JSON object, which has `role` and `content`.
    Message(Value),
    /// Not one of those: the error frame's detail.
    Invalid(&'static str),
}

/// The detail of an error frame for text that is not JSON.
pub const NOT_JSON: &str = "the frame is not JSON";
/// The detail of an error frame for JSON that is neither `auth` nor a `Message`.
pub const NOT_A_MESSAGE: &str = "expected a Message ({\"role\": …, \"content\": […]})";

impl ClientFrame {
    /// Reads a text frame. Never fails: what is not understood is [`ClientFrame::Invalid`].
    pub fn read(text: &str) -> ClientFrame {
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            return ClientFrame::Invalid(NOT_JSON);
        };
        if v.get("type").and_then(Value::as_str) == Some("auth") {
            let key = v
                .get("session_api_key")
                .and_then(Value::as_str)
                .map(str::to_owned);
            return ClientFrame::Auth(key);
        }
        if v.get("role").is_some() && v.get("content").is_some() {
            return ClientFrame::Message(v);
        }
        ClientFrame::Invalid(NOT_A_MESSAGE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_kind_of_frame() {
        assert_eq!(
            ClientFrame::read(r#"{"type":"auth","session_api_key":"sb_x"}"#),
            ClientFrame::Auth(Some("sb_x".into()))
        );
        assert_eq!(
            ClientFrame::read(r#"{"type":"auth","session_api_key":3}"#),
            ClientFrame::Auth(None)
        );
        assert!(matches!(
            ClientFrame::read(r#"{"role":"user","content":[],"extra":1}"#),
            ClientFrame::Message(_)
        ));
        assert_eq!(ClientFrame::read("{"), ClientFrame::Invalid(NOT_JSON));
        assert_eq!(
            ClientFrame::read(r#"{"role":"user"}"#),
            ClientFrame::Invalid(NOT_A_MESSAGE)
        );
        assert_eq!(
            ClientFrame::read("[1]"),
            ClientFrame::Invalid(NOT_A_MESSAGE)
        );
    }
}
