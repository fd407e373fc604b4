//! What a start takes from the member's app preferences (issue 36; docs/settings-fields.md),
//! as OpenHands' app server does (`clone_or_init_git_repo`, `_configure_git_user_settings`,
//! the default spec of `_start_app_conversation`):
//! - `default_sandbox_spec_id`: the spec of a new sandbox when the request names none;
//! - `git_full_clone`: `false` (the default) clones with `--depth 1` and tells the agent so
//!   in its system message ([`SHALLOW_CLONE_CONTEXT`]); `true` clones the whole history;
//! - `git_user_name`, `git_user_email`: `git config --global user.name` / `user.email` in
//!   the sandbox before the clone, when set (a failure is logged, as OpenHands does: the
//!   start goes on).

use serde_json::{Map, Value};

use crate::sandboxes::agent_requests::{AgentContext, StartConversationRequest};

/// Appended to the agent's system message after a shallow clone, so that it fetches history
/// before relying on it.
pub const SHALLOW_CLONE_CONTEXT: &str = "<GIT_WORKSPACE_CONTEXT>\n\
The repository was cloned with `--depth 1`: only its latest commit is present. Before using \
history, tags, merge bases, blame or an older commit, check `git rev-parse \
--is-shallow-repository`; fetch more with `git fetch --unshallow` or `git fetch --deepen=<n>`.\n\
</GIT_WORKSPACE_CONTEXT>";

/// The member's preferences a start acts on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartPreferences {
    /// `default_sandbox_spec_id`, when set (not empty).
    pub default_spec: Option<String>,
    /// `git_full_clone`.
    pub full_clone: bool,
    /// `git_user_name`, when set (not empty).
    pub git_user_name: Option<String>,
    /// `git_user_email`, when set (not empty).
    pub git_user_email: Option<String>,
}

impl StartPreferences {
    /// Read from the effective preferences (defaults overlaid with the stored ones).
    pub fn of(prefs: &Map<String, Value>) -> Self {
        let text = |k: &str| {
            prefs
                .get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        StartPreferences {
            default_spec: text("default_sandbox_spec_id"),
            full_clone: prefs.get("git_full_clone") == Some(&Value::Bool(true)),
            git_user_name: text("git_user_name"),
            git_user_email: text("git_user_email"),
        }
    }

    /// The clone's depth flag: `--depth 1` unless the member asked for full clones.
    pub fn depth_flag(&self) -> Option<&'static str> {
        (!self.full_clone).then_some("--depth 1")
    }

    /// The `git config --global` command setting the identity, when any part is set.
    pub fn identity_command(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(name) = &self.git_user_name {
            parts.push(format!(
                "git config --global user.name {}",
                shell_quote(name)
            ));
        }
        if let Some(email) = &self.git_user_email {
            parts.push(format!(
                "git config --global user.email {}",
                shell_quote(email)
            ));
        }
        (!parts.is_empty()).then(|| parts.join(" && "))
    }
}

/// `s` as one single-quoted shell word.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Appends [`SHALLOW_CLONE_CONTEXT`] to the agent's system message suffix.
pub fn tell_shallow(body: &mut StartConversationRequest) {
    let joined = match body.agent.agent_context.take() {
        Some(c) if !c.system_message_suffix.is_empty() => {
            format!("{}\n\n{SHALLOW_CLONE_CONTEXT}", c.system_message_suffix)
        }
        _ => SHALLOW_CLONE_CONTEXT.to_owned(),
    };
    body.agent.agent_context = Some(AgentContext {
        system_message_suffix: joined,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prefs(v: Value) -> StartPreferences {
        StartPreferences::of(v.as_object().unwrap())
    }

    #[test]
    fn defaults_clone_shallow_with_no_identity_or_spec() {
        let p = prefs(json!({"git_full_clone": false, "git_user_name": null,
            "default_sandbox_spec_id": null}));
        assert_eq!(p.depth_flag(), Some("--depth 1"));
        assert_eq!(p.identity_command(), None);
        assert_eq!(p.default_spec, None);
        assert_eq!(
            prefs(json!({"default_sandbox_spec_id": ""})).default_spec,
            None
        );
    }

    #[test]
    fn a_full_clone_has_no_depth() {
        assert_eq!(prefs(json!({"git_full_clone": true})).depth_flag(), None);
    }

    #[test]
    fn the_identity_is_quoted_for_the_shell() {
        let p = prefs(json!({"git_user_name": "Ada O'Neil; rm -rf /",
            "git_user_email": "ada@example.com"}));
        assert_eq!(
            p.identity_command().unwrap(),
            r"git config --global user.name 'Ada O'\''Neil; rm -rf /' && git config --global user.email 'ada@example.com'"
        );
        let only_email = prefs(json!({"git_user_email": "a@b.c"}));
        assert_eq!(
            only_email.identity_command().unwrap(),
            "git config --global user.email 'a@b.c'"
        );
    }
}
