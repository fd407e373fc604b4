//! What a start task keeps out of sight (issue 24 items 1 and 2): the request's `secrets`,
//! and the request as sent when its echo had to be masked (a clone URL with credentials), are
//! sealed at rest on the task (`secrets_sealed`, XChaCha20-Poly1305 bound to the task id);
//! the task's `request` is the echo, with secret values replaced by `**********` and the
//! credentials of every URL in it masked. The start pipeline reads the sealed request; every
//! reader of the task sees the echo.

use serde_json::{Map, Value, json};

use crate::identity::redaction::mask_url_credentials;

/// The version tag of the sealed form; a sealed text without it is the earlier form, the
/// secrets map alone.
const VERSION: u64 = 2;

/// What is sealed on a start task.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SealedStart {
    /// The request's secrets, name → value.
    pub secrets: Map<String, Value>,
    /// The request as sent, when its echo differs from it (credentials masked).
    pub request: Option<Value>,
}

impl SealedStart {
    /// Whether there is anything to seal.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty() && self.request.is_none()
    }

    /// The text sealed: `{"v":2,"secrets":{…},"request":…}`.
    pub fn to_text(&self) -> String {
        json!({"v": VERSION, "secrets": self.secrets, "request": self.request}).to_string()
    }

    /// The sealed text read back (this form, or the earlier secrets map); `None` when it is
    /// neither.
    pub fn from_text(text: &str) -> Option<Self> {
        let Value::Object(mut map) = serde_json::from_str(text).ok()? else {
            return None;
        };
        // Secret values are strings: a number under "v" is this form's tag.
        if map.get("v").and_then(Value::as_u64) == Some(VERSION) {
            let secrets = match map.remove("secrets") {
                Some(Value::Object(s)) => s,
                _ => Map::new(),
            };
            let request = map.remove("request").filter(|r| !r.is_null());
            return Some(SealedStart { secrets, request });
        }
        Some(SealedStart {
            secrets: map,
            request: None,
        })
    }
}

/// `echo` with the credentials of every URL in its strings masked (`https://**********@host`);
/// `true` when anything was masked.
pub fn mask_credentials(echo: &mut Value) -> bool {
    match echo {
        Value::String(s) => {
            let masked = mask_url_credentials(s);
            let changed = masked != *s;
            *s = masked;
            changed
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, v| mask_credentials(v) | changed),
        Value::Object(map) => map
            .values_mut()
            .fold(false, |changed, v| mask_credentials(v) | changed),
        _ => false,
    }
}

/// The request's secrets as the agent server takes them (its `StartConversationRequest`:
/// name → `SecretSource`, reference `openhands-app-server-1.11.0.openapi.json`):
/// `{"NAME": {"kind": "StaticSecret", "value": "…"}}`.
pub fn secret_sources(secrets: &Map<String, Value>) -> Value {
    Value::Object(
        secrets
            .iter()
            .map(|(name, value)| {
                (
                    name.clone(),
                    json!({"kind": "StaticSecret", "value": value}),
                )
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sealed_text_reads_back_in_both_forms() {
        let mut secrets = Map::new();
        secrets.insert("GITHUB_TOKEN".into(), json!("ghp_x"));
        let sealed = SealedStart {
            secrets: secrets.clone(),
            request: Some(json!({"selected_repository": "https://u:p@h/r"})),
        };
        assert_eq!(SealedStart::from_text(&sealed.to_text()), Some(sealed));
        // The earlier form: the secrets map alone (a secret may be named "v").
        secrets.insert("v".into(), json!("2"));
        let old = Value::Object(secrets.clone()).to_string();
        assert_eq!(
            SealedStart::from_text(&old),
            Some(SealedStart {
                secrets,
                request: None
            })
        );
        assert_eq!(SealedStart::from_text("[]"), None);
    }

    #[test]
    fn credentials_are_masked_everywhere_in_an_echo() {
        let mut echo = json!({
            "selected_repository": "https://oauth2:tok@git.example/a/b.git",
            "plugins": [{"source": "ssh://deploy:pw@git.example/p.git"}],
            "selected_branch": "main",
        });
        assert!(mask_credentials(&mut echo));
        assert_eq!(
            echo,
            json!({
                "selected_repository": "https://**********@git.example/a/b.git",
                "plugins": [{"source": "ssh://**********@git.example/p.git"}],
                "selected_branch": "main",
            })
        );
        assert!(!mask_credentials(&mut echo));
    }

    #[test]
    fn secrets_become_static_secret_sources() {
        let mut secrets = Map::new();
        secrets.insert("A".into(), json!("1"));
        assert_eq!(
            secret_sources(&secrets),
            json!({"A": {"kind": "StaticSecret", "value": "1"}})
        );
    }
}
