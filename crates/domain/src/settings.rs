//! Organization app settings (spec §2.5, §4.2; API.md, Organization settings; reference
//! `openhands-org-settings.md` §1): the stored form, the update body and every rule on it.

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;
use serde_json::Value;
use switchboard_model::{LocItem, ValidationError};

use crate::typed_body::RequestBody;
use crate::validation::{loc, value_error};
use time::OffsetDateTime;

use crate::ids::OrgId;
use crate::time_input::parse_datetime_value;

/// Where a marketplace entry applies (reference §1.4). Entries written through
/// `/api/organizations/app` are always `org`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MarketplaceScope {
    /// Instance-wide default.
    Instance,
    /// Organization-wide default.
    Org,
    /// One user's own.
    Personal,
}

/// A registered plugin marketplace (reference §1.2 `MarketplaceRegistration`).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Marketplace {
    /// Unique name within the list: a letter, then letters, digits, `-` or `_`.
    pub name: String,
    /// `github:owner/repo`, a git URL, or a relative local path.
    pub source: String,
    /// Git ref to check out.
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    /// Path inside the repository: relative, no `..`, no URL.
    pub repo_path: Option<String>,
    /// Whether to load it automatically.
    pub auto_load: bool,
    /// Always [`MarketplaceScope::Org`] for organization settings.
    pub scope: MarketplaceScope,
}

/// The app settings of one organization, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct OrgAppSettings {
    /// The organization.
    pub org_id: OrgId,
    /// Default `true`.
    pub enable_proactive_conversation_starters: bool,
    /// Per-task budget (finite, > 0), or none.
    pub max_budget_per_task: Option<f64>,
    /// The organization's LLM budget in USD per calendar month (UTC), finite and > 0, or none:
    /// the LLM pass-through refuses the organization's requests once its recorded cost in the
    /// current month reaches it.
    pub llm_monthly_budget: Option<f64>,
    /// Marketplaces, in the order given.
    pub registered_marketplaces: Vec<Marketplace>,
    /// The version for optimistic locking: the time of the last change, UTC, microseconds.
    /// Strictly increases with every change.
    pub updated_at: OffsetDateTime,
}

/// The changes of one update: `None` leaves a field alone (patch semantics, reference §1.2).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SettingsChange {
    /// New value of `enable_proactive_conversation_starters`.
    pub enable_proactive_conversation_starters: Option<bool>,
    /// New budget; `Some(None)` clears it (explicit `null`).
    pub max_budget_per_task: Option<Option<f64>>,
    /// New monthly LLM budget (USD); `Some(None)` clears it (explicit `null`).
    pub llm_monthly_budget: Option<Option<f64>>,
    /// New marketplace list, already validated and stamped `scope: org`.
    pub registered_marketplaces: Option<Vec<Marketplace>>,
}

impl SettingsChange {
    /// Whether nothing is to be written.
    pub fn is_empty(&self) -> bool {
        self.enable_proactive_conversation_starters.is_none()
            && self.max_budget_per_task.is_none()
            && self.llm_monthly_budget.is_none()
            && self.registered_marketplaces.is_none()
    }
}

/// A validated `POST /api/organizations/app` body.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SettingsUpdate {
    /// What to change.
    pub change: SettingsChange,
    /// The version the client last saw; `None` (absent or `null`) skips the check
    /// (reference §1.5 rule 4).
    pub last_known_updated_at: Option<OffsetDateTime>,
    /// Whether the body had any known key at all; an empty body returns the current settings
    /// without a version check (reference §1.5).
    pub has_any_field: bool,
}

/// The `scope` values a marketplace entry may be sent with (reference §1.4).
const SCOPES: [&str; 3] = ["instance", "org", "personal"];

static NAME_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-zA-Z][a-zA-Z0-9_-]*$").expect("valid regex"));
static GITHUB_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^github:[a-zA-Z0-9_.-]+/[a-zA-Z0-9_.-]+$").expect("valid regex"));
static GIT_URL_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:https?://|ssh://|git://|git@)(?:[A-Za-z0-9._~-]+@)?[A-Za-z0-9.-]+[:/][A-Za-z0-9._~/:-]*[A-Za-z0-9._~-]$")
        .expect("valid regex")
});
static LOCAL_PATH_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-zA-Z0-9_][a-zA-Z0-9_./-]*$").expect("valid regex"));

/// Whether `source` is one of the accepted marketplace sources (reference §1.2): a GitHub
/// shorthand `github:owner/repo`; a git URL (`http(s)://`, `ssh://`, `git://`, `git@`) with an
/// optional bare user name (never `user:password@`); or a relative local path without `..`.
pub fn is_valid_marketplace_source(source: &str) -> bool {
    if source.starts_with("github:") {
        return GITHUB_RE.is_match(source);
    }
    if ["http://", "https://", "ssh://", "git://", "git@"]
        .iter()
        .any(|p| source.starts_with(p))
    {
        if let Some(rest) = source.split_once("://").map(|(_, r)| r) {
            // user:password@host is refused: a colon before the first '@' of the authority.
            let authority = rest.split('/').next().unwrap_or("");
            if authority.contains('@') && authority.split('@').next().unwrap_or("").contains(':') {
                return false;
            }
        }
        return GIT_URL_RE.is_match(source);
    }
    LOCAL_PATH_RE.is_match(source) && !source.split('/').any(|seg| seg == "..")
}

/// Whether `repo_path` is acceptable (reference §1.2): no `://`, not absolute, no `..`.
pub fn is_valid_repo_path(path: &str) -> bool {
    !path.contains("://") && !path.starts_with('/') && !path.contains("..")
}

/// A marketplace name as the document states it (after trimming): a letter, then letters,
/// digits, `-`, `_`.
pub const MARKETPLACE_NAME_PATTERN: &str = r"^[a-zA-Z][a-zA-Z0-9_-]*$";
/// A marketplace source as the document states it, one of: `github:owner/repo`; a git URL
/// (`http(s)://`, `ssh://`, `git://`, `git@`, an optional bare user name); a relative local
/// path with no `..` segment. [`is_valid_marketplace_source`] is the rule.
pub const MARKETPLACE_SOURCE_PATTERNS: [&str; 3] = [
    r"^github:[a-zA-Z0-9_.-]+/[a-zA-Z0-9_.-]+$",
    r"^(https?://|ssh://|git://|git@)([A-Za-z0-9._~-]+@)?[A-Za-z0-9.-]+[:/][A-Za-z0-9._~/:-]*[A-Za-z0-9._~-]$",
    r"^[a-zA-Z0-9_][a-zA-Z0-9_.-]*(/([a-zA-Z0-9_-][a-zA-Z0-9_.-]*|\.([a-zA-Z0-9_-][a-zA-Z0-9_.-]*)?|\.\.[a-zA-Z0-9_.-]+)?)*$",
];
/// [`is_valid_repo_path`] as a pattern (no leading `/`, no `..`, no `://`), written without
/// lookaround so that every validator and generator reads it: a run of `.`, `:` and `/`
/// ([`REPO_PATH_PATTERN`]'s `(?:\.?:(?::|/:)*/?)`) never holds `..` or `://`.
pub const REPO_PATH_PATTERN: &str = r"^(?:(?:[^./:]|(?:\.?:(?::|/:)*/?)*\.[^.:]|(?:\.?:(?::|/:)*/?)+[^./:])(?:[^.:]|(?:\.?:(?::|/:)*/?)*\.[^.:]|(?:\.?:(?::|/:)*/?)+[^./:])*)?(?:(?:\.?:(?::|/:)*/?)*\.|(?:\.?:(?::|/:)*/?)+)?$";

/// A marketplace entry as sent (reference §1.2 `MarketplaceRegistration`; the document's
/// `MarketplaceRegistrationInput`, the answer's shape being `MarketplaceRegistration`). Other
/// keys are ignored; `scope` is checked, then replaced by `org` (reference §1.4); `name` and
/// `source` are trimmed, then judged ([`RequestBody::check`]).
#[derive(Debug, Clone, PartialEq, serde::Deserialize, utoipa::ToSchema)]
#[schema(
    title = "MarketplaceRegistration",
    description = "A marketplace entry as sent (other keys are ignored; `scope` is accepted and replaced by `org`). Names must be unique in the list (400 otherwise)."
)]
pub struct MarketplaceRegistrationInput {
    /// A letter, then letters, digits, `-`, `_` (surrounding white space is trimmed).
    #[schema(schema_with = marketplace_name_schema)]
    name: String,
    #[schema(schema_with = marketplace_source_schema)]
    source: String,
    /// Git ref, or null.
    #[serde(default, rename = "ref")]
    git_ref: Option<String>,
    #[serde(default)]
    #[schema(schema_with = repo_path_schema)]
    repo_path: Option<String>,
    /// Default false (`null` is refused).
    #[serde(default)]
    auto_load: bool,
    /// Ignored: always `org`.
    #[serde(default)]
    #[schema(schema_with = scope_schema)]
    #[allow(dead_code, reason = "judged by the schema, then replaced by `org`")]
    scope: Option<String>,
}

fn marketplace_name_schema() -> utoipa::openapi::schema::Object {
    crate::typed_body::fields::string()
        .pattern(Some(MARKETPLACE_NAME_PATTERN))
        .description(Some(
            "A letter, then letters, digits, `-`, `_` (surrounding white space is trimmed).",
        ))
        .extensions(Some(crate::typed_body::fields::accepts_more()))
        .build()
}

fn marketplace_source_schema() -> utoipa::openapi::schema::Schema {
    let mut any = utoipa::openapi::schema::AnyOfBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .description(Some("`github:owner/repo`, a git URL (`http(s)://`, `ssh://`, `git://`, `git@`; a bare user name at most), or a relative local path without `..` (surrounding white space is trimmed)."))
        .extensions(Some(crate::typed_body::fields::accepts_more()));
    for p in MARKETPLACE_SOURCE_PATTERNS {
        any = any.item(crate::typed_body::fields::string().pattern(Some(p)));
    }
    utoipa::openapi::schema::Schema::AnyOf(any.build())
}

fn repo_path_schema() -> utoipa::openapi::schema::Object {
    crate::typed_body::fields::nullable_string()
        .pattern(Some(REPO_PATH_PATTERN))
        .description(Some(
            "Relative path inside the repository: no leading `/`, no `..`, no `://`; or null.",
        ))
        .extensions(Some(crate::typed_body::fields::value_error_words(
            "repo_path must be a relative path inside the repository: no '://', no leading '/', no '..'",
        )))
        .build()
}

fn scope_schema() -> utoipa::openapi::schema::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::AnyValue)
        .enum_values(Some(
            SCOPES.iter().map(|s| Value::from(*s)).chain([Value::Null]),
        ))
        .description(Some("Ignored: always `org`."))
        .build()
}

impl RequestBody for MarketplaceRegistrationInput {
    /// The trimmed name and source (the schema states their untrimmed form).
    fn check(&self) -> Result<(), Vec<ValidationError>> {
        let at = |key: &str| loc(["body", key]);
        let name = self.name.trim();
        let refused = if name.is_empty() {
            Some(("name", "name cannot be empty", &self.name))
        } else if !NAME_RE.is_match(name) {
            Some((
                "name",
                "name must start with a letter and contain only letters, numbers, hyphens, and underscores",
                &self.name,
            ))
        } else if !is_valid_marketplace_source(self.source.trim()) {
            Some((
                "source",
                "source must be 'github:owner/repo', a git URL (https://, ssh://, git://, git@) or a relative local path without '..'",
                &self.source,
            ))
        } else {
            None
        };
        match refused {
            Some((key, text, input)) => Err(vec![value_error(
                at(key),
                text,
                &Value::String(input.clone()),
            )]),
            None => Ok(()),
        }
    }
}

impl From<MarketplaceRegistrationInput> for Marketplace {
    fn from(m: MarketplaceRegistrationInput) -> Self {
        Marketplace {
            name: m.name.trim().to_owned(),
            source: m.source.trim().to_owned(),
            git_ref: m.git_ref,
            repo_path: m.repo_path,
            auto_load: m.auto_load,
            scope: MarketplaceScope::Org,
        }
    }
}

/// Reads one marketplace entry at `path` (e.g. `["body", "registered_marketplaces", 0]`)
/// through [`MarketplaceRegistrationInput`].
///
/// # Errors
/// Its first 422 entry, located under `path`.
pub fn parse_marketplace(v: &Value, path: &[LocItem]) -> Result<Marketplace, ValidationError> {
    crate::typed_body::parse_at::<MarketplaceRegistrationInput>(v, path)
        .map(Marketplace::from)
        .map_err(|mut e| e.swap_remove(0))
}

/// `POST /api/organizations/app`'s body (`OrgAppSettingsUpdate`; reference §1.2 with API.md's
/// fixes): every field optional, an absent one left alone; unknown keys ignored;
/// `enable_proactive_conversation_starters` a boolean (explicit `null` refused);
/// `max_budget_per_task` and `llm_monthly_budget` each a finite number > 0 or `null` (clears
/// it); `registered_marketplaces` a list of valid entries (explicit `null` refused);
/// `last_known_updated_at` a date-time or `null`. Strings are not coerced to booleans or
/// numbers. Read into a [`SettingsUpdate`] with [`SettingsUpdate::from`].
#[derive(Debug, Clone, PartialEq, serde::Deserialize, utoipa::ToSchema)]
#[schema(
    description = "`OrgAppSettingsUpdate`: every field optional; an absent field is left alone; other keys are ignored."
)]
pub struct OrgAppSettingsUpdate {
    /// A boolean (`null` is refused).
    #[serde(default)]
    #[schema(nullable = false)]
    enable_proactive_conversation_starters: Option<bool>,
    /// A finite number > 0, or `null` to clear.
    #[serde(default, deserialize_with = "crate::typed_body::fields::present")]
    #[schema(schema_with = budget_per_task_schema)]
    max_budget_per_task: Option<Option<f64>>,
    /// The organization's LLM budget in USD per calendar month (UTC): a finite number > 0, or
    /// `null` to clear. The LLM pass-through refuses the organization's requests once its
    /// recorded cost this month reaches it.
    #[serde(default, deserialize_with = "crate::typed_body::fields::present")]
    #[schema(schema_with = monthly_budget_schema)]
    llm_monthly_budget: Option<Option<f64>>,
    /// The whole list (replaces it; `null` is refused); names unique (400 otherwise).
    /// Needs `edit_org_settings`.
    #[serde(default)]
    #[schema(nullable = false)]
    registered_marketplaces: Option<Vec<MarketplaceRegistrationInput>>,
    #[serde(default, deserialize_with = "crate::typed_body::fields::present")]
    #[schema(schema_with = last_known_schema)]
    last_known_updated_at: Option<Option<Value>>,
}

/// A positive amount: anything else one `value_error` worded `{key} must be greater than 0`
/// (a value of another type keeps its `float_type`).
fn amount_schema(key: &str, description: &str) -> utoipa::openapi::schema::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
            utoipa::openapi::schema::Type::Number,
            utoipa::openapi::schema::Type::Null,
        ]))
        .exclusive_minimum(Some(0))
        .maximum(Some(f64::MAX))
        .description(Some(description))
        .extensions(Some(crate::typed_body::fields::value_error_words(
            &format!("{key} must be greater than 0"),
        )))
        .build()
}

fn budget_per_task_schema() -> utoipa::openapi::schema::Object {
    amount_schema(
        "max_budget_per_task",
        "A finite number > 0, or `null` to clear.",
    )
}

fn monthly_budget_schema() -> utoipa::openapi::schema::Object {
    amount_schema(
        "llm_monthly_budget",
        "The organization's LLM budget in USD per calendar month (UTC): a finite number > 0, or `null` to clear. The LLM pass-through refuses the organization's requests once its recorded cost this month reaches it.",
    )
}

fn last_known_schema() -> utoipa::openapi::schema::Schema {
    use crate::time_input::{DATE_TIME_PATTERN, UNIX_1900, UNIX_3000};
    crate::typed_body::fields::date_time(
        DATE_TIME_PATTERN,
        UNIX_1900,
        UNIX_3000,
        "The `updated_at` last seen: RFC 3339 or naive ISO-8601 (UTC), a date, or Unix seconds. When given and not equal to the stored version: 409.",
    )
}

impl OrgAppSettingsUpdate {
    fn last_known(&self) -> Result<Option<OffsetDateTime>, ValidationError> {
        match &self.last_known_updated_at {
            Some(Some(v)) => {
                parse_datetime_value(v, loc(["body", "last_known_updated_at"])).map(Some)
            }
            _ => Ok(None),
        }
    }
}

impl RequestBody for OrgAppSettingsUpdate {
    /// Each marketplace's trimmed name and source, then the version's date-time.
    fn check(&self) -> Result<(), Vec<ValidationError>> {
        for (i, m) in self.registered_marketplaces.iter().flatten().enumerate() {
            m.check().map_err(|entries| {
                entries
                    .into_iter()
                    .map(|mut e| {
                        let at = [
                            LocItem::from("body"),
                            LocItem::from("registered_marketplaces"),
                            LocItem::Index(i),
                        ];
                        e.loc.splice(..1, at);
                        e
                    })
                    .collect::<Vec<_>>()
            })?;
        }
        self.last_known().map(drop).map_err(|e| vec![e])
    }
}

impl From<OrgAppSettingsUpdate> for SettingsUpdate {
    fn from(body: OrgAppSettingsUpdate) -> Self {
        let last_known_updated_at = body.last_known().ok().flatten();
        let has_any_field = body.enable_proactive_conversation_starters.is_some()
            || body.max_budget_per_task.is_some()
            || body.llm_monthly_budget.is_some()
            || body.registered_marketplaces.is_some()
            || body.last_known_updated_at.is_some();
        SettingsUpdate {
            change: SettingsChange {
                enable_proactive_conversation_starters: body.enable_proactive_conversation_starters,
                max_budget_per_task: body.max_budget_per_task,
                llm_monthly_budget: body.llm_monthly_budget,
                registered_marketplaces: body
                    .registered_marketplaces
                    .map(|list| list.into_iter().map(Marketplace::from).collect()),
            },
            last_known_updated_at,
            has_any_field,
        }
    }
}

/// Reads a `POST /api/organizations/app` body through [`OrgAppSettingsUpdate`].
///
/// # Errors
/// Its first 422 entry.
pub fn parse_settings_update(body: &Value) -> Result<SettingsUpdate, ValidationError> {
    crate::typed_body::parse_one::<OrgAppSettingsUpdate>(body).map(SettingsUpdate::from)
}

/// Names that occur more than once, sorted (reference §1.6 rule 8; names are compared after
/// trimming, case-sensitively).
pub fn duplicate_marketplace_names(list: &[Marketplace]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut dups = std::collections::BTreeSet::new();
    for m in list {
        if !seen.insert(m.name.as_str()) {
            dups.insert(m.name.clone());
        }
    }
    dups.into_iter().collect()
}

#[cfg(test)]
mod tests;
