//! The bodies of the requests that change an app conversation (reference app-server §5.2),
//! read with pydantic's rules: the PATCH ([`parse_patch`]) and send-message
//! ([`parse_message`]; also the websocket's `send` frame). The start request's rules are
//! [`super::start_request`]'s.

use serde_json::Value;
use switchboard_model::{ErrorType, LocItem, ValidationError};

use super::app::{AppConversationPatch, GIT_PROVIDERS, SendMessage};
use crate::validation::{
    bool_type, field, list_type, loc, missing, model_type, not_one_of, refuse_nul, string_type,
    value_error,
};

/// Reads a PATCH body (strict: an object of the patchable fields only; `null` clears a field).
///
/// # Errors
/// 422 entries at `["body", …]`: not an object, an unknown field (`extra_forbidden`), a value
/// of the wrong type, a `git_provider` OpenHands does not name, a NUL in a text.
pub fn parse_patch(body: &Value) -> Result<AppConversationPatch, Vec<ValidationError>> {
    let root = loc(["body"]);
    let obj = body.as_object().ok_or_else(|| {
        vec![model_type(
            root.clone(),
            "AppConversationUpdateRequest",
            body,
        )]
    })?;
    let mut errors = Vec::new();
    let mut patch = AppConversationPatch::default();
    for (k, v) in obj {
        let at = field(&root, k);
        let text = |errors: &mut Vec<ValidationError>| match v {
            Value::Null => Some(None),
            Value::String(s) => match refuse_nul(|| at.clone(), s) {
                Ok(()) => Some(Some(s.clone())),
                Err(e) => {
                    errors.push(e);
                    None
                }
            },
            other => {
                errors.push(string_type(at.clone(), other));
                None
            }
        };
        match k.as_str() {
            "title" => patch.title = text(&mut errors),
            "selected_repository" => patch.selected_repository = text(&mut errors),
            "selected_branch" => patch.selected_branch = text(&mut errors),
            "git_provider" => match v {
                Value::Null => patch.git_provider = Some(None),
                Value::String(s) if GIT_PROVIDERS.contains(&s.as_str()) => {
                    patch.git_provider = Some(Some(s.clone()));
                }
                other => errors.push(not_one_of(ErrorType::Enum, at, &GIT_PROVIDERS, other)),
            },
            "public" => match v {
                Value::Null => patch.public = Some(None),
                Value::Bool(b) => patch.public = Some(Some(*b)),
                other => errors.push(bool_type(at, other)),
            },
            _ => errors.push(
                ValidationError::new(
                    ErrorType::ExtraForbidden,
                    at,
                    "Extra inputs are not permitted",
                )
                .with_input(v.clone()),
            ),
        }
    }
    if errors.is_empty() {
        Ok(patch)
    } else {
        Err(errors)
    }
}

/// Reads a send-message body: `{"role": "user", "content": [item, …], "run": bool}` (strict;
/// `role` may be left out; `run` defaults to `true`, as OpenHands' app server sends it;
/// `content` holds at least one `{"type":"text","text":…}` or
/// `{"type":"image","image_urls":[…]}`).
///
/// # Errors
/// 422 entries at `["body", …]`.
pub fn parse_message(body: &Value) -> Result<SendMessage, Vec<ValidationError>> {
    let root = loc(["body"]);
    let obj = body
        .as_object()
        .ok_or_else(|| vec![model_type(root.clone(), "SendMessageRequest", body)])?;
    let mut errors = Vec::new();
    for (k, v) in obj {
        if !["role", "content", "run"].contains(&k.as_str()) {
            errors.push(
                ValidationError::new(
                    ErrorType::ExtraForbidden,
                    field(&root, k),
                    "Extra inputs are not permitted",
                )
                .with_input(v.clone()),
            );
        }
    }
    match obj.get("role") {
        None => {}
        Some(Value::String(r)) if r == "user" => {}
        Some(other) => errors.push(not_one_of(
            ErrorType::LiteralError,
            field(&root, "role"),
            &["user"],
            other,
        )),
    }
    let run = match obj.get("run") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            errors.push(bool_type(field(&root, "run"), other));
            true
        }
    };
    let content = match obj.get("content") {
        Some(Value::Array(a)) if a.is_empty() => {
            errors.push(
                ValidationError::new(
                    ErrorType::ValueError,
                    field(&root, "content"),
                    "List should have at least 1 item after validation, not 0",
                )
                .with_input(Value::Array(Vec::new())),
            );
            Vec::new()
        }
        Some(Value::Array(a)) => a.clone(),
        Some(other) => {
            errors.push(list_type(field(&root, "content"), other));
            Vec::new()
        }
        None => {
            errors.push(missing(field(&root, "content"), body.clone()));
            Vec::new()
        }
    };
    for (i, part) in content.iter().enumerate() {
        let mut at = field(&root, "content");
        at.push(LocItem::Index(i));
        let ok = match part.get("type").and_then(Value::as_str) {
            Some("text") => part.get("text").is_some_and(Value::is_string),
            Some("image") => part.get("image_urls").is_some_and(Value::is_array),
            _ => false,
        };
        if !ok {
            errors.push(value_error(
                at,
                "expected {\"type\":\"text\",\"text\":str} or {\"type\":\"image\",\"image_urls\":[str]}",
                part,
            ));
        }
    }
    if errors.is_empty() {
        Ok(SendMessage { content, run })
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn types(e: Vec<ValidationError>) -> Vec<&'static str> {
        e.iter().map(|x| x.error_type.as_str()).collect()
    }

    #[test]
    fn patch_bodies() {
        let p =
            parse_patch(&json!({"title": "t", "public": null, "git_provider": "gitlab"})).unwrap();
        assert_eq!(p.title, Some(Some("t".into())));
        assert_eq!(p.public, Some(None));
        assert_eq!(p.git_provider, Some(Some("gitlab".into())));
        assert_eq!(p.selected_branch, None);
        assert_eq!(
            types(
                parse_patch(
                    &json!({"nope": 1, "public": "yes", "git_provider": "svn", "title": 3})
                )
                .unwrap_err()
            ),
            ["extra_forbidden", "bool_type", "enum", "string_type"]
        );
        assert!(parse_patch(&json!([])).is_err());
    }

    #[test]
    fn message_bodies() {
        let m =
            parse_message(&json!({"role": "user", "content": [{"type": "text", "text": "hi"}]}))
                .unwrap();
        assert!(m.run);
        assert_eq!(
            types(
                parse_message(&json!({"role": "agent", "content": [], "run": 1, "x": 0}))
                    .unwrap_err()
            ),
            [
                "extra_forbidden",
                "literal_error",
                "bool_type",
                "value_error"
            ]
        );
        assert_eq!(types(parse_message(&json!({})).unwrap_err()), ["missing"]);
        assert_eq!(
            types(parse_message(&json!({"content": [{"type": "text"}]})).unwrap_err()),
            ["value_error"]
        );
    }
}
