//! The operator's rule on LLM models (`switchboard serve --llm-model-allow PATTERN`), enforced
//! wherever a model is chosen, not only in the pickers (issue 36; docs/settings-fields.md): a
//! member's settings, an LLM profile (the member's or the organization's), the organization's
//! default and a start's `llm_model` are refused (422 naming the rule) when no pattern matches
//! the model; a start whose model, chosen by precedence, is not allowed (stored before the
//! rule narrowed) is refused before its task is written, or ends in `ERROR` saying so.
//!
//! Models are matched as [`ModelPattern`] matches the catalog's: `provider/name`, the text
//! before the first `/` the provider. A model without a `/` (LiteLLM infers its provider) is
//! matched whole: patterns need a provider, so only `*` allows it.

use serde_json::Value;
use switchboard_model::{LocItem, ValidationError};

use crate::validation::value_error;

/// An operator's pattern of the models members may pick: `provider/name`, where `*` stands
/// for any run of characters (`anthropic/*`, `openai/gpt-5*`, `*`). Matching is exact
/// otherwise (case-sensitive, as LiteLLM's names are).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelPattern(String);

impl std::str::FromStr for ModelPattern {
    type Err = String;

    /// # Errors
    /// A pattern that is empty, holds whitespace, or (unless it is `*`) has no `/` between a
    /// provider and a name.
    fn from_str(s: &str) -> Result<Self, String> {
        if s.is_empty() || s.chars().any(char::is_whitespace) {
            return Err(format!(
                "{s:?}: a model pattern is provider/name, `*` for any run of characters"
            ));
        }
        if s != "*"
            && !s
                .split_once('/')
                .is_some_and(|(p, n)| !p.is_empty() && !n.is_empty())
        {
            return Err(format!(
                "{s:?}: a model pattern is provider/name (e.g. anthropic/*), or `*`"
            ));
        }
        Ok(ModelPattern(s.to_owned()))
    }
}

impl ModelPattern {
    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `provider/name` matches.
    pub fn matches(&self, provider: &str, name: &str) -> bool {
        glob(self.0.as_bytes(), format!("{provider}/{name}").as_bytes())
    }
}

/// `*`-only glob matching (iterative, linear backtracking on the last star).
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// The models members may choose: every model when no pattern is given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelAllowList(Vec<ModelPattern>);

impl ModelAllowList {
    /// The list of `patterns` (`--llm-model-allow`); empty: every model.
    pub fn new(patterns: Vec<ModelPattern>) -> Self {
        ModelAllowList(patterns)
    }

    /// The patterns, as given.
    pub fn patterns(&self) -> &[ModelPattern] {
        &self.0
    }

    /// Whether `model` (`provider/name`, or a bare name) may be chosen.
    pub fn allows(&self, model: &str) -> bool {
        if self.0.is_empty() {
            return true;
        }
        let (provider, name) = model.split_once('/').unwrap_or(("", model));
        self.0.iter().any(|p| {
            if provider.is_empty() {
                p.as_str() == "*"
            } else {
                p.matches(provider, name)
            }
        })
    }

    /// Why `model` may not be chosen (naming the rule), or `None` when it may.
    pub fn refusal(&self, model: &str) -> Option<String> {
        (!self.allows(model)).then(|| {
            let rule: Vec<&str> = self.0.iter().map(ModelPattern::as_str).collect();
            format!(
                "the LLM model '{model}' is not allowed on this server (--llm-model-allow {})",
                rule.join(",")
            )
        })
    }

    /// Checks the operator's default model (`--llm-model`, when set): it must be one members
    /// may use.
    ///
    /// # Errors
    /// `--llm-model: <the refusal>: …`, when it may not be chosen.
    pub fn check_operator_default(&self, model: Option<&str>) -> Result<(), String> {
        match model.and_then(|m| self.refusal(m)) {
            Some(why) => Err(format!(
                "--llm-model: {why}: the operator's default model must be one members may use"
            )),
            None => Ok(()),
        }
    }

    /// Checks the model at `value` (a string; anything else, `null` or `""` is left to the
    /// body's own parser), for a body field at `loc`.
    ///
    /// # Errors
    /// A `value_error` at `loc` naming the rule (422).
    pub fn check_field(
        &self,
        value: Option<&Value>,
        loc: Vec<LocItem>,
    ) -> Result<(), ValidationError> {
        match value.and_then(Value::as_str).filter(|m| !m.is_empty()) {
            Some(model) => match self.refusal(model) {
                Some(why) => Err(value_error(loc, &why, &Value::String(model.to_owned()))),
                None => Ok(()),
            },
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list(patterns: &[&str]) -> ModelAllowList {
        ModelAllowList::new(patterns.iter().map(|p| p.parse().unwrap()).collect())
    }

    #[test]
    fn an_empty_list_allows_every_model() {
        let all = ModelAllowList::default();
        assert!(all.allows("openai/gpt-4o"));
        assert!(all.allows("gpt-4o"));
        assert_eq!(all.refusal("anything"), None);
    }

    #[test]
    fn patterns_match_provider_and_name() {
        let l = list(&["anthropic/*", "openai/gpt-5*"]);
        assert!(l.allows("anthropic/claude-sonnet-4-5"));
        assert!(l.allows("openai/gpt-5-mini"));
        assert!(!l.allows("openai/gpt-4o"));
        assert!(!l.allows("gpt-5"), "a bare name is not under a provider");
        assert!(l.allows("openai/gpt-5/with/slashes"));
        assert!(list(&["*"]).allows("gpt-4o"));
    }

    #[test]
    fn a_refusal_names_the_model_and_the_rule() {
        let l = list(&["anthropic/*", "openai/gpt-5*"]);
        let why = l.refusal("openai/gpt-4o").unwrap();
        assert!(why.contains("'openai/gpt-4o'"), "{why}");
        assert!(
            why.contains("--llm-model-allow anthropic/*,openai/gpt-5*"),
            "{why}"
        );
    }

    #[test]
    fn a_field_is_a_value_error_at_its_location() {
        let l = list(&["anthropic/*"]);
        let at = vec![LocItem::from("body"), LocItem::from("llm_model")];
        let e = l
            .check_field(Some(&json!("openai/gpt-4o")), at.clone())
            .unwrap_err();
        let body = serde_json::to_value(&e).unwrap();
        assert_eq!(body["type"], "value_error", "{body}");
        assert_eq!(body["loc"], json!(["body", "llm_model"]));
        assert_eq!(body["input"], "openai/gpt-4o");
        assert!(
            l.check_field(Some(&json!("anthropic/x")), at.clone())
                .is_ok()
        );
        assert!(l.check_field(Some(&json!(null)), at.clone()).is_ok());
        assert!(l.check_field(Some(&json!("")), at.clone()).is_ok());
        assert!(l.check_field(None, at).is_ok());
    }
}
