//! The choice of a start's LLM over its levels (the rule in `start_settings`' text, issue 21),
//! and what a member's settings show of it (issue 31: [`EffectiveLlm`]). One function,
//! [`choose_llm`], decides for both.

use serde_json::{Value, json};

use crate::services::conversations::start::LlmConfig;
use crate::services::user_settings::OwnLlm;

/// The LLM a start would use, as a member's settings show it (issue 31): never its key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EffectiveLlm {
    /// The model, if any level names one.
    pub model: Option<String>,
    /// The base URL that goes with the key.
    pub base_url: Option<String>,
    /// Whether a key goes with it.
    pub api_key_set: bool,
    /// Whose key goes with it (else whose base URL, else whose model): `user`, `organization`
    /// or `operator`; `None` when no level sets anything.
    pub source: Option<&'static str>,
}

impl EffectiveLlm {
    /// Shows this LLM in a `GETSettingsModel` `view`: `agent_settings.llm`'s `model` and
    /// `base_url` (its other fields kept), `llm_api_key_set`, and the additive `llm_source`
    /// (`user`, `organization`, `operator` or null).
    pub fn show_in(&self, view: &mut crate::user_settings::view::SettingsResponse) {
        if let Some(llm) = view
            .agent_settings
            .get_mut("llm")
            .and_then(Value::as_object_mut)
        {
            llm.insert("model".into(), json!(self.model));
            llm.insert("base_url".into(), json!(self.base_url));
        }
        view.llm_api_key_set = self.api_key_set;
        view.llm_source = self.source.map(str::to_owned);
    }

    /// What [`choose_llm`] picks from `levels`, and whose key (else base URL, else model) it is.
    /// An endpoint lost with its provider connection ([`broken_endpoint`]) shows as none,
    /// its level's: a start would fail, not use a later level's.
    pub(crate) fn of(levels: &[(OwnLlm, &'static str)], stream: bool) -> Self {
        let (llm, _) = choose_llm(levels, stream);
        let whose = |s: &str| match s {
            "profile" | "settings" => "user",
            "org" => "organization",
            _ => "operator",
        };
        if broken_endpoint(levels).is_some() {
            let at = levels.iter().find(|(l, _)| l.broken.is_some());
            return EffectiveLlm {
                model: llm.model,
                base_url: None,
                api_key_set: false,
                source: at.map(|(_, s)| whose(s)),
            };
        }
        // Whose key goes, else whose base URL, else whose model.
        let source = levels
            .iter()
            .find(|(l, _)| llm.api_key.is_some() && l.api_key == llm.api_key)
            .or_else(|| levels.iter().find(|(l, _)| l.base_url.is_some()))
            .or_else(|| levels.iter().find(|(l, _)| l.model.is_some()))
            .map(|(_, s)| whose(s));
        EffectiveLlm {
            model: llm.model,
            base_url: llm.base_url,
            api_key_set: llm.api_key.is_some(),
            source,
        }
    }
}

/// Why the start's endpoint cannot be chosen: the first level that sets a base URL or key is
/// one whose provider connection no longer exists (its `broken` text), so the endpoint would
/// otherwise fall to a later level's key. `None` when the endpoint is sound.
pub(crate) fn broken_endpoint(levels: &[(OwnLlm, &'static str)]) -> Option<String> {
    levels
        .iter()
        .map(|(l, _)| l)
        .find(|l| l.broken.is_some() || l.base_url.is_some() || l.api_key.is_some())
        .and_then(|l| l.broken.clone())
}

/// The LLM from the levels, first to last (the rule in `start_settings`' text): the model of the first level
/// naming one; the base URL and key of the first level setting either, together; the source
/// is the first level setting anything.
pub(crate) fn choose_llm(
    levels: &[(OwnLlm, &'static str)],
    stream: bool,
) -> (LlmConfig, &'static str) {
    let set = |l: &OwnLlm| l.model.is_some() || l.base_url.is_some() || l.api_key.is_some();
    let source = levels
        .iter()
        .find(|(l, _)| set(l))
        .map_or("server", |(_, s)| *s);
    let model = levels.iter().find_map(|(l, _)| l.model.clone());
    let at = levels
        .iter()
        .position(|(l, _)| l.base_url.is_some() || l.api_key.is_some());
    let endpoint = at
        .map(|i| {
            let l = &levels[i].0;
            // A base URL without a key takes the key a later level set for that same base URL
            // (a member who saved the base URL their settings showed them): the key still goes
            // only where its owner sends it.
            let key = match &l.api_key {
                Some(k) => Some((k.clone(), l.key_owner)),
                None => levels[i + 1..]
                    .iter()
                    .find(|(o, _)| o.base_url.is_some() && o.base_url == l.base_url)
                    .and_then(|(o, _)| o.api_key.clone().map(|k| (k, o.key_owner))),
            };
            (l.base_url.clone(), key)
        })
        .unwrap_or_default();
    let (api_key, key_owner) = endpoint.1.map_or((None, None), |(k, o)| (Some(k), o));
    (
        LlmConfig {
            model,
            base_url: endpoint.0,
            api_key,
            stream,
            key_owner,
        },
        source,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(model: Option<&str>, base_url: Option<&str>, key: Option<&str>) -> OwnLlm {
        OwnLlm {
            model: model.map(str::to_owned),
            base_url: base_url.map(str::to_owned),
            api_key: key.map(str::to_owned),
            broken: None,
            key_owner: None,
        }
    }

    /// Whose key a start sends (issue 38): the level's that set it, also when a base URL
    /// without a key takes a later level's key for the same base URL.
    #[test]
    fn the_chosen_key_keeps_its_owner() {
        let org = OwnLlm {
            key_owner: Some("organization"),
            ..l(Some("org-m"), Some("http://org"), Some("org-k"))
        };
        let server = OwnLlm {
            key_owner: Some("operator"),
            ..l(Some("srv-m"), Some("http://srv"), Some("srv-k"))
        };
        let none = l(None, None, None);
        let (llm, _) = choose_llm(
            &[
                (none.clone(), "settings"),
                (org.clone(), "org"),
                (server.clone(), "server"),
            ],
            false,
        );
        assert_eq!(
            (llm.api_key.as_deref(), llm.key_owner),
            (Some("org-k"), Some("organization"))
        );
        let own = l(None, None, Some("own-k"));
        let (llm, _) = choose_llm(
            &[
                (own, "settings"),
                (org.clone(), "org"),
                (server.clone(), "server"),
            ],
            false,
        );
        assert_eq!(
            (llm.api_key.as_deref(), llm.key_owner),
            (Some("own-k"), None)
        );
        // The member saved the organization's base URL without a key: the organization's key,
        // still the organization's.
        let url_only = l(None, Some("http://org"), None);
        let (llm, _) = choose_llm(
            &[(url_only, "settings"), (org, "org"), (server, "server")],
            false,
        );
        assert_eq!(
            (llm.api_key.as_deref(), llm.key_owner),
            (Some("org-k"), Some("organization"))
        );
    }

    /// A level whose provider connection was deleted stops the choice there: no later key.
    #[test]
    fn a_lost_connection_is_not_replaced_by_another_key() {
        let server = l(Some("srv-m"), Some("http://srv"), Some("srv-k"));
        let lost = OwnLlm {
            broken: Some(
                "LLM profile 'p' uses provider connection 'c', which no longer exists".into(),
            ),
            ..l(Some("u-m"), None, None)
        };
        let levels = [
            (lost.clone(), "profile"),
            (l(None, None, Some("org-k")), "org"),
            (server.clone(), "server"),
        ];
        assert!(
            broken_endpoint(&levels)
                .unwrap()
                .contains("no longer exists")
        );
        let shown = EffectiveLlm::of(&levels, false);
        assert_eq!(
            (
                shown.model.as_deref(),
                shown.base_url,
                shown.api_key_set,
                shown.source
            ),
            (Some("u-m"), None, false, Some("user"))
        );
        // A sound level before it sets the endpoint: the lost one is never reached.
        let levels = [
            (l(Some("u-m"), None, Some("u-k")), "settings"),
            (
                OwnLlm {
                    broken: Some("gone".into()),
                    ..OwnLlm::default()
                },
                "org",
            ),
            (server, "server"),
        ];
        assert_eq!(broken_endpoint(&levels), None);
    }

    /// Whose LLM a member's settings show: the endpoint's level, else the model's.
    #[test]
    fn the_effective_llm_names_whose_endpoint_it_is() {
        let none = l(None, None, None);
        let server = l(Some("srv-m"), Some("http://srv"), Some("srv-k"));
        let cases = [
            (
                none.clone(),
                none.clone(),
                server.clone(),
                ("srv-m", Some("http://srv"), true, Some("operator")),
            ),
            (
                none.clone(),
                l(Some("org-m"), None, Some("org-k")),
                server.clone(),
                ("org-m", None, true, Some("organization")),
            ),
            (
                l(Some("u-m"), None, None),
                none.clone(),
                server.clone(),
                ("u-m", Some("http://srv"), true, Some("operator")),
            ),
            (
                l(Some("u-m"), None, Some("u-k")),
                none.clone(),
                server.clone(),
                ("u-m", None, true, Some("user")),
            ),
            (
                l(Some("u-m"), None, None),
                none.clone(),
                none.clone(),
                ("u-m", None, false, Some("user")),
            ),
        ];
        for (user, org, server, (model, base, key_set, source)) in cases {
            let levels = [(user, "settings"), (org, "org"), (server, "server")];
            let e = EffectiveLlm::of(&levels, false);
            assert_eq!(
                (
                    e.model.as_deref(),
                    e.base_url.as_deref(),
                    e.api_key_set,
                    e.source
                ),
                (Some(model), base, key_set, source)
            );
        }
        let nothing = [
            (none.clone(), "settings"),
            (none.clone(), "org"),
            (none, "server"),
        ];
        assert_eq!(EffectiveLlm::of(&nothing, false), EffectiveLlm::default());
    }

    /// (user, org) → (model, base URL, key, source), the operator's always set.
    #[test]
    fn the_model_and_the_endpoint_are_chosen_level_by_level() {
        let server = l(Some("srv-m"), Some("http://srv"), Some("srv-k"));
        let none = l(None, None, None);
        let cases = [
            (
                none.clone(),
                none.clone(),
                ("srv-m", Some("http://srv"), Some("srv-k"), "server"),
            ),
            (
                none.clone(),
                l(Some("org-m"), Some("http://org"), Some("org-k")),
                ("org-m", Some("http://org"), Some("org-k"), "org"),
            ),
            (
                none.clone(),
                l(Some("org-m"), None, None),
                ("org-m", Some("http://srv"), Some("srv-k"), "org"),
            ),
            (
                none.clone(),
                l(None, None, Some("org-k")),
                ("srv-m", None, Some("org-k"), "org"),
            ),
            (
                l(Some("u-m"), None, None),
                l(Some("org-m"), Some("http://org"), Some("org-k")),
                ("u-m", Some("http://org"), Some("org-k"), "settings"),
            ),
            (
                l(None, Some("http://u"), None),
                l(Some("org-m"), Some("http://org"), Some("org-k")),
                ("org-m", Some("http://u"), None, "settings"),
            ),
            (
                l(Some("u-m"), None, Some("u-k")),
                l(Some("org-m"), Some("http://org"), Some("org-k")),
                ("u-m", None, Some("u-k"), "settings"),
            ),
            // The organization's own base URL saved by the member: its key goes with it.
            (
                l(Some("u-m"), Some("http://org"), None),
                l(Some("org-m"), Some("http://org"), Some("org-k")),
                ("u-m", Some("http://org"), Some("org-k"), "settings"),
            ),
            (
                l(None, Some("http://srv"), None),
                none.clone(),
                ("srv-m", Some("http://srv"), Some("srv-k"), "settings"),
            ),
        ];
        for (user, org, (model, base, key, source)) in cases {
            let levels = [(user, "settings"), (org, "org"), (server.clone(), "server")];
            let (llm, got) = choose_llm(&levels, true);
            assert_eq!(
                (
                    llm.model.as_deref(),
                    llm.base_url.as_deref(),
                    llm.api_key.as_deref(),
                    got
                ),
                (Some(model), base, key, source)
            );
            assert!(llm.stream);
        }
    }
}
