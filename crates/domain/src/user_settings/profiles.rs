//! LLM profiles (issue 21; OpenHands' `/api/v1/settings/profiles`): named LLM configurations
//! of a user, at most [`MAX_PROFILES_PER_USER`], one of them active. Names match
//! [`PROFILE_NAME_PATTERN`]; a profile's key is sealed like the settings' own.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use switchboard_model::{LocItem, ValidationError};

use super::patch::check_llm_fields;
use super::refuse_nul_deep;
use crate::validation::{bool_type, field, loc, missing, model_type, string_pattern_mismatch};

/// The most profiles a user keeps in one organization; one more is a 409 (OpenHands'
/// `MAX_PROFILES_PER_USER`).
pub const MAX_PROFILES_PER_USER: usize = 50;

/// What a profile name must match (OpenHands: letters, digits, `.`, `_`, `-`; 1 to 64).
pub const PROFILE_NAME_PATTERN: &str = "^[A-Za-z0-9._-]{1,64}$";

/// A stored profile: its LLM configuration without the key, and the key sealed for
/// [`super::Binding::ProfileApiKey`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredProfile {
    /// Name ([`PROFILE_NAME_PATTERN`]).
    pub name: String,
    /// The LLM object without `api_key` (`model`, `base_url`, …).
    pub config: Map<String, Value>,
    /// The key, sealed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_sealed: Option<String>,
}

impl StoredProfile {
    /// `config.<key>` as text.
    pub fn config_str(&self, key: &str) -> Option<&str> {
        self.config.get(key)?.as_str().filter(|s| !s.is_empty())
    }
}

/// Whether `name` is a valid profile name.
pub fn is_profile_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// A profile name from `at` (`["path", "name"]` or `["body", "new_name"]`).
///
/// # Errors
/// `string_pattern_mismatch` with [`PROFILE_NAME_PATTERN`].
pub fn check_profile_name(name: &str, at: Vec<LocItem>) -> Result<(), ValidationError> {
    if is_profile_name(name) {
        Ok(())
    } else {
        Err(string_pattern_mismatch(at, PROFILE_NAME_PATTERN, name))
    }
}

/// `POST /api/v1/settings/profiles/{name}` (OpenHands' `SaveProfileRequest`). `Debug` shows
/// no key.
#[derive(Clone, PartialEq)]
pub struct SaveProfile {
    /// Keep the key (default true); false saves the profile without one.
    pub include_secrets: bool,
    /// The LLM to save (without `api_key`); `None`: the current settings' LLM.
    pub llm: Option<Map<String, Value>>,
    /// `llm.api_key`, when sent.
    pub api_key: Option<String>,
    /// Keep the stored profile's key whatever else is sent.
    pub preserve_existing_api_key: bool,
}

impl std::fmt::Debug for SaveProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaveProfile")
            .field("include_secrets", &self.include_secrets)
            .field("llm", &self.llm)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("preserve_existing_api_key", &self.preserve_existing_api_key)
            .finish()
    }
}

/// Reads a save-profile body: none or `null` means all defaults.
///
/// # Errors
/// A 422 entry: not an object, a flag that is not a boolean, an `llm` that is not an object,
/// its `model`/`base_url`/`api_key` not strings, a base URL not `http(s)://`, a NUL.
pub fn parse_save_profile(body: Option<&Value>) -> Result<SaveProfile, ValidationError> {
    let mut out = SaveProfile {
        include_secrets: true,
        llm: None,
        api_key: None,
        preserve_existing_api_key: false,
    };
    let root = loc(["body"]);
    let obj = match body {
        None | Some(Value::Null) => return Ok(out),
        Some(Value::Object(o)) => o,
        Some(other) => return Err(model_type(root, "SaveProfileRequest", other)),
    };
    refuse_nul_deep(&Value::Object(obj.clone()), &root)?;
    for (key, slot) in [
        ("include_secrets", &mut out.include_secrets),
        (
            "preserve_existing_api_key",
            &mut out.preserve_existing_api_key,
        ),
    ] {
        match obj.get(key) {
            None => {}
            Some(Value::Bool(b)) => *slot = *b,
            Some(other) => return Err(bool_type(field(&root, key), other)),
        }
    }
    match obj.get("llm") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            let at = field(&root, "llm");
            let mut m = m.clone();
            match m.remove("api_key") {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) if s.is_empty() => {}
                Some(Value::String(s)) => out.api_key = Some(s),
                Some(other) => {
                    return Err(crate::validation::string_type(
                        field(&at, "api_key"),
                        &other,
                    ));
                }
            }
            check_llm_fields(&mut m, &at)?;
            out.llm = Some(m);
        }
        Some(other) => return Err(model_type(field(&root, "llm"), "StrictLLM", other)),
    }
    Ok(out)
}

/// Reads `POST …/profiles/{name}/rename` (`{"new_name": …}`).
///
/// # Errors
/// A 422 entry: not an object, `new_name` missing, not a string or not a profile name.
pub fn parse_rename(body: &Value) -> Result<String, ValidationError> {
    let root = loc(["body"]);
    let Some(obj) = body.as_object() else {
        return Err(model_type(root, "RenameProfileRequest", body));
    };
    let at = field(&root, "new_name");
    match obj.get("new_name") {
        None => Err(missing(at, body.clone())),
        Some(Value::String(s)) => {
            check_profile_name(s, at)?;
            Ok(s.clone())
        }
        Some(other) => Err(crate::validation::string_type(at, other)),
    }
}

/// Reads `POST /api/v1/app-conversations/{id}/switch_profile` (OpenHands'
/// `SwitchProfileRequest`: `{"profile_name": …}`, at least one character; other keys ignored).
///
/// # Errors
/// A 422 entry: not an object, `profile_name` missing, not a string, or empty.
pub fn parse_switch_profile(body: &Value) -> Result<String, ValidationError> {
    let root = loc(["body"]);
    let Some(obj) = body.as_object() else {
        return Err(model_type(root, "SwitchProfileRequest", body));
    };
    let at = field(&root, "profile_name");
    match obj.get("profile_name") {
        None => Err(missing(at, body.clone())),
        Some(Value::String(s)) if s.is_empty() => {
            Err(crate::validation::string_too_short(at, 1, s))
        }
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(crate::validation::string_type(at, other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names() {
        for ok in ["a", "gpt-4o.mini_2", &"x".repeat(64)] {
            assert!(is_profile_name(ok), "{ok}");
        }
        for bad in ["", "a/b", "a b", "..%2f", &"x".repeat(65), "é"] {
            assert!(!is_profile_name(bad), "{bad}");
        }
    }

    #[test]
    fn save_bodies() {
        let s = parse_save_profile(None).unwrap();
        assert!(s.include_secrets && s.llm.is_none());
        let s = parse_save_profile(Some(
            &json!({"llm": {"model": "m", "api_key": "sk-1"}, "include_secrets": false}),
        ))
        .unwrap();
        assert_eq!(s.api_key.as_deref(), Some("sk-1"));
        assert!(!s.include_secrets);
        assert_eq!(s.llm.unwrap().get("api_key"), None);
        assert!(parse_save_profile(Some(&json!({"llm": 3}))).is_err());
        assert!(parse_save_profile(Some(&json!({"include_secrets": "yes"}))).is_err());
        assert_eq!(parse_rename(&json!({"new_name": "b"})).unwrap(), "b");
        assert!(parse_rename(&json!({"new_name": "b/c"})).is_err());
        assert!(parse_rename(&json!({})).is_err());
        assert_eq!(
            parse_switch_profile(&json!({"profile_name": "p", "x": 1})).unwrap(),
            "p"
        );
        for bad in [
            json!({}),
            json!({"profile_name": ""}),
            json!({"profile_name": 3}),
            json!([]),
        ] {
            assert!(parse_switch_profile(&bad).is_err(), "{bad}");
        }
    }
}
