//! Organization app settings bodies (spec §2.5; API.md, Organization settings).

use serde::Serialize;
use switchboard_domain::settings::{Marketplace, MarketplaceScope, OrgAppSettings};
use switchboard_domain::time_input::format_rfc3339_micros;
use utoipa::ToSchema;

/// A registered marketplace as returned: every key written, `scope` always `org`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct MarketplaceRegistration {
    /// Name: a letter, then letters, digits, `-`, `_`; unique in the list.
    pub name: String,
    /// `github:owner/repo`, a git URL, or a relative local path.
    pub source: String,
    /// Git ref, or null.
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    /// Path inside the repository, or null.
    pub repo_path: Option<String>,
    /// Load automatically.
    pub auto_load: bool,
    /// `instance`, `org` or `personal`; always `org` here.
    pub scope: String,
}

impl From<&Marketplace> for MarketplaceRegistration {
    fn from(m: &Marketplace) -> Self {
        MarketplaceRegistration {
            name: m.name.clone(),
            source: m.source.clone(),
            git_ref: m.git_ref.clone(),
            repo_path: m.repo_path.clone(),
            auto_load: m.auto_load,
            scope: match m.scope {
                MarketplaceScope::Instance => "instance",
                MarketplaceScope::Org => "org",
                MarketplaceScope::Personal => "personal",
            }
            .to_owned(),
        }
    }
}

/// `OrgAppSettingsResponse` (spec §2.5).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OrgAppSettingsResponse {
    /// Proactive conversation starters.
    pub enable_proactive_conversation_starters: bool,
    /// Per-task budget, or null.
    pub max_budget_per_task: Option<f64>,
    /// The organization's LLM budget in USD per calendar month (UTC), or null: the LLM
    /// pass-through refuses its requests once this month's recorded cost reaches it.
    pub llm_monthly_budget: Option<f64>,
    /// The organization's marketplaces, in the order given.
    pub registered_marketplaces: Vec<MarketplaceRegistration>,
    /// The settings version (RFC 3339, microseconds); echo it as `last_known_updated_at`.
    pub updated_at: String,
}

impl From<&OrgAppSettings> for OrgAppSettingsResponse {
    fn from(s: &OrgAppSettings) -> Self {
        OrgAppSettingsResponse {
            enable_proactive_conversation_starters: s.enable_proactive_conversation_starters,
            max_budget_per_task: s.max_budget_per_task,
            llm_monthly_budget: s.llm_monthly_budget,
            registered_marketplaces: s.registered_marketplaces.iter().map(Into::into).collect(),
            updated_at: format_rfc3339_micros(s.updated_at),
        }
    }
}
