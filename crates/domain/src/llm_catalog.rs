//! The LLM model and provider catalogs (issue 25; OpenHands' `GET /api/v1/config/models/search`
//! and `/providers/search`): what a member may pick in a client's model pickers.
//!
//! The catalog is the file `data/llm_catalog.json`, compiled in (no file or network read at
//! run time). `scripts/llm-catalog.py` regenerates it from LiteLLM's model list as the
//! `litellm` package ships it and from the models OpenHands verifies (`openhands-sdk`'s
//! `VERIFIED_MODELS`); the file names both versions. The operator narrows it with
//! `switchboard serve --llm-model-allow PATTERN` ([`ModelPattern`]): a member is offered only
//! the models a pattern matches, and only the providers of those.
//!
//! Searches follow OpenHands: `query` a case-insensitive substring of the model's (or
//! provider's) name, `verified__eq` and `provider__eq` exact; models in provider then name
//! order, providers verified first then by name. Pages continue after a position
//! ([`CatalogCursor`]) rather than OpenHands' offsets, so they are this service's cursors.

use serde::Deserialize;
use std::collections::BTreeSet;
use std::sync::OnceLock;

use crate::cursor::Keyset;
pub use crate::llm_allow::ModelPattern;

const SHIPPED: &str = include_str!("../data/llm_catalog.json");

/// One model: `provider/name` is what a client writes in an LLM setting's `model`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogModel {
    /// LiteLLM's routing prefix (`anthropic`, `bedrock`, `openrouter`, …).
    pub provider: String,
    /// The model's name under that provider (may hold `/` and `:`).
    pub name: String,
    /// Verified by OpenHands (in `openhands-sdk`'s `VERIFIED_MODELS`).
    pub verified: bool,
}

/// One provider of the catalog's models.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogProvider {
    /// The provider's name.
    pub name: String,
    /// Whether OpenHands verifies models of it.
    pub verified: bool,
}

/// A position in a catalog list: the index of the last item of the previous page in the
/// (unfiltered) list. The catalog does not change while the process runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatalogCursor(pub usize);

impl Keyset for CatalogCursor {
    const VERSION: &'static str = "c1";

    fn to_fields(&self) -> Vec<String> {
        vec![self.0.to_string()]
    }

    fn from_fields(fields: &[&str]) -> Option<Self> {
        match fields {
            [i] => i.parse().ok().map(CatalogCursor),
            _ => None,
        }
    }
}

/// The filters of a model search (OpenHands' query parameters).
#[derive(Clone, Debug, Default)]
pub struct ModelQuery {
    /// Case-insensitive substring of the model's name.
    pub query: Option<String>,
    /// Verified or not.
    pub verified: Option<bool>,
    /// The provider, exactly.
    pub provider: Option<String>,
}

/// The filters of a provider search.
#[derive(Clone, Debug, Default)]
pub struct ProviderQuery {
    /// Case-insensitive substring of the provider's name.
    pub query: Option<String>,
    /// Verified or not.
    pub verified: Option<bool>,
}

/// One page of a catalog list and the cursor of the next (`None` on the last).
#[derive(Clone, Debug)]
pub struct CatalogPage<T> {
    /// The items, in the list's order.
    pub items: Vec<T>,
    /// Where the next page starts.
    pub next: Option<CatalogCursor>,
}

/// The catalog members are offered (see the module docs).
#[derive(Clone, Debug)]
pub struct LlmCatalog {
    source: String,
    allow: crate::llm_allow::ModelAllowList,
    models: Vec<CatalogModel>,
    providers: Vec<CatalogProvider>,
}

#[derive(Deserialize)]
struct ShippedFile {
    source: String,
    verified_providers: Vec<String>,
    models: Vec<(String, String, bool)>,
}

fn shipped_file() -> &'static ShippedFile {
    static FILE: OnceLock<ShippedFile> = OnceLock::new();
    FILE.get_or_init(|| {
        serde_json::from_str(SHIPPED).expect("data/llm_catalog.json is the generator's JSON")
    })
}

impl LlmCatalog {
    /// The shipped catalog, narrowed to the models `allow` matches (all of them when `allow`
    /// is empty).
    pub fn shipped(allow: &[ModelPattern]) -> LlmCatalog {
        let file = shipped_file();
        let models: Vec<CatalogModel> = file
            .models
            .iter()
            .filter(|(p, n, _)| allow.is_empty() || allow.iter().any(|a| a.matches(p, n)))
            .map(|(provider, name, verified)| CatalogModel {
                provider: provider.clone(),
                name: name.clone(),
                verified: *verified,
            })
            .collect();
        let verified: BTreeSet<&str> = file.verified_providers.iter().map(String::as_str).collect();
        let names: BTreeSet<&str> = models.iter().map(|m| m.provider.as_str()).collect();
        let mut providers: Vec<CatalogProvider> = names
            .into_iter()
            .map(|name| CatalogProvider {
                name: name.to_owned(),
                verified: verified.contains(name),
            })
            .collect();
        providers.sort_by(|a, b| (!a.verified, &a.name).cmp(&(!b.verified, &b.name)));
        LlmCatalog {
            source: file.source.clone(),
            allow: crate::llm_allow::ModelAllowList::new(allow.to_vec()),
            models,
            providers,
        }
    }

    /// Where the catalog comes from (the generator's versions).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The operator's rule on models, enforced where a model is saved or a start chooses one
    /// (not only in these searches).
    pub fn allow_list(&self) -> &crate::llm_allow::ModelAllowList {
        &self.allow
    }

    /// How many models members are offered.
    pub fn model_count(&self) -> usize {
        self.models.len()
    }

    /// Whether members may pick `provider/name`.
    pub fn offers(&self, provider: &str, name: &str) -> bool {
        self.models
            .iter()
            .any(|m| m.provider == provider && m.name == name)
    }

    /// Up to `limit` models matching `q`, after `after`.
    pub fn search_models(
        &self,
        q: &ModelQuery,
        after: Option<CatalogCursor>,
        limit: usize,
    ) -> CatalogPage<CatalogModel> {
        let needle = q.query.as_deref().map(str::to_lowercase);
        page(&self.models, after, limit, |m| {
            needle
                .as_deref()
                .is_none_or(|n| m.name.to_lowercase().contains(n))
                && q.verified.is_none_or(|v| m.verified == v)
                && q.provider.as_deref().is_none_or(|p| m.provider == p)
        })
    }

    /// Up to `limit` providers matching `q`, after `after`.
    pub fn search_providers(
        &self,
        q: &ProviderQuery,
        after: Option<CatalogCursor>,
        limit: usize,
    ) -> CatalogPage<CatalogProvider> {
        let needle = q.query.as_deref().map(str::to_lowercase);
        page(&self.providers, after, limit, |p| {
            needle
                .as_deref()
                .is_none_or(|n| p.name.to_lowercase().contains(n))
                && q.verified.is_none_or(|v| p.verified == v)
        })
    }
}

fn page<T: Clone>(
    list: &[T],
    after: Option<CatalogCursor>,
    limit: usize,
    keep: impl Fn(&T) -> bool,
) -> CatalogPage<T> {
    let start = after.map_or(0, |c| c.0.saturating_add(1));
    let mut items = Vec::new();
    let mut last = None;
    let mut more = false;
    for (i, item) in list.iter().enumerate().skip(start) {
        if !keep(item) {
            continue;
        }
        if items.len() == limit {
            more = true;
            break;
        }
        items.push(item.clone());
        last = Some(i);
    }
    CatalogPage {
        items,
        next: if more { last.map(CatalogCursor) } else { None },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_provider_and_name() {
        let p: ModelPattern = "anthropic/*".parse().unwrap();
        assert!(p.matches("anthropic", "claude-sonnet-5"));
        assert!(!p.matches("openai", "gpt-5.6"));
        let p: ModelPattern = "openai/gpt-5*-sol".parse().unwrap();
        assert!(p.matches("openai", "gpt-5.6-sol"));
        assert!(!p.matches("openai", "gpt-5.6-luna"));
        assert!("*".parse::<ModelPattern>().unwrap().matches("a", "b/c"));
        for bad in ["", "gpt-5", "/x", "x/", "a b/c"] {
            assert!(bad.parse::<ModelPattern>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_shipped_catalog_has_litellm_and_verified_models() {
        let c = LlmCatalog::shipped(&[]);
        assert!(c.model_count() > 1000, "{}", c.model_count());
        assert!(c.source().contains("litellm"));
        assert!(c.offers("anthropic", "claude-sonnet-5"));
        let verified = c.search_models(
            &ModelQuery {
                verified: Some(true),
                provider: Some("anthropic".into()),
                ..ModelQuery::default()
            },
            None,
            100,
        );
        assert!(!verified.items.is_empty());
        assert!(
            verified
                .items
                .iter()
                .all(|m| m.verified && m.provider == "anthropic")
        );
        let providers = c.search_providers(&ProviderQuery::default(), None, 100);
        assert!(providers.items[0].verified);
        assert!(
            !c.offers("openhands", "claude-sonnet-5"),
            "OpenHands' own proxy is left out"
        );
    }

    #[test]
    fn pages_continue_after_the_cursor_without_gaps() {
        let c = LlmCatalog::shipped(&["openai/*".parse().unwrap()]);
        let all = c
            .search_models(&ModelQuery::default(), None, usize::MAX)
            .items;
        assert!(all.iter().all(|m| m.provider == "openai"));
        let mut walked = Vec::new();
        let mut after = None;
        loop {
            let page = c.search_models(&ModelQuery::default(), after, 7);
            assert!(page.items.len() <= 7);
            walked.extend(page.items);
            match page.next {
                Some(n) => after = Some(CatalogCursor::decode(&n.encode()).unwrap()),
                None => break,
            }
        }
        assert_eq!(walked, all);
        let only: Vec<String> = c
            .search_providers(&ProviderQuery::default(), None, 100)
            .items
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(only, ["openai"]);
    }
}
