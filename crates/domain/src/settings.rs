//! Organization app settings (spec §2.5, §4.2; API.md, Organization settings; reference
//! `openhands-org-settings.md` §1): the stored form, the update body and every rule on it.

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;
use serde_json::{Map, Value};
use switchboard_model::{ErrorType, LocItem, ValidationError};

use crate::validation::{
    bool_type, field, float_type, list_type, loc, missing, model_type, not_one_of, string_type,
    value_error,
};
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

fn string_field(
    obj: &Map<String, Value>,
    key: &str,
    path: &[LocItem],
    required: bool,
) -> Result<Option<String>, ValidationError> {
    match obj.get(key) {
        None if required => Err(missing(field(path, key), Value::Object(obj.clone()))),
        None | Some(Value::Null) if !required => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(string_type(field(path, key), other)),
        None => unreachable!("handled above"),
    }
}

/// Validates one marketplace entry at `path` (e.g. `["body", "registered_marketplaces", 0]`).
/// Unknown keys are ignored; `scope` is checked, then replaced by `org` (reference §1.4).
pub fn parse_marketplace(v: &Value, path: &[LocItem]) -> Result<Marketplace, ValidationError> {
    let Value::Object(obj) = v else {
        return Err(model_type(path.to_vec(), "MarketplaceRegistration", v));
    };
    let name = string_field(obj, "name", path, true)?.unwrap_or_default();
    let name = name.trim().to_owned();
    if name.is_empty() {
        return Err(value_error(
            field(path, "name"),
            "name cannot be empty",
            &obj["name"],
        ));
    }
    if !NAME_RE.is_match(&name) {
        return Err(value_error(
            field(path, "name"),
            "name must start with a letter and contain only letters, numbers, hyphens, and underscores",
            &obj["name"],
        ));
    }
    let source = string_field(obj, "source", path, true)?
        .unwrap_or_default()
        .trim()
        .to_owned();
    if !is_valid_marketplace_source(&source) {
        return Err(value_error(
            field(path, "source"),
            "source must be 'github:owner/repo', a git URL (https://, ssh://, git://, git@) or a relative local path without '..'",
            &obj["source"],
        ));
    }
    let git_ref = string_field(obj, "ref", path, false)?;
    let repo_path = string_field(obj, "repo_path", path, false)?;
    if let Some(p) = &repo_path
        && !is_valid_repo_path(p)
    {
        return Err(value_error(
            field(path, "repo_path"),
            "repo_path must be a relative path inside the repository: no '://', no leading '/', no '..'",
            &obj["repo_path"],
        ));
    }
    let auto_load = match obj.get("auto_load") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(bool_type(field(path, "auto_load"), other)),
    };
    match obj.get("scope") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if SCOPES.contains(&s.as_str()) => {}
        Some(other) => {
            return Err(not_one_of(
                ErrorType::Enum,
                field(path, "scope"),
                &SCOPES,
                other,
            ));
        }
    }
    Ok(Marketplace {
        name,
        source,
        git_ref,
        repo_path,
        auto_load,
        scope: MarketplaceScope::Org,
    })
}

/// An amount of USD at `root`.`key`: a finite number > 0 (`Some`), or `null` (`None`, which
/// clears it).
fn positive_amount(v: &Value, root: &[LocItem], key: &str) -> Result<Option<f64>, ValidationError> {
    let l = field(root, key);
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if !x.is_finite() || x <= 0.0 {
                return Err(value_error(l, &format!("{key} must be greater than 0"), v));
            }
            Ok(Some(x))
        }
        other => Err(float_type(l, other)),
    }
}

/// Validates a `POST /api/organizations/app` body (already parsed as JSON). Locations start
/// with `"body"`. Rules (reference §1.2 with API.md's fixes): every field optional; unknown
/// keys ignored; `enable_proactive_conversation_starters` a boolean (explicit `null` refused);
/// `max_budget_per_task` and `llm_monthly_budget` each a finite number > 0 or `null` (clears
/// it); `registered_marketplaces` a list of valid entries (explicit `null` refused);
/// `last_known_updated_at` a date-time or `null`. Strings are not coerced to booleans or
/// numbers.
///
/// # Errors
/// The first rule broken, as a FastAPI 422 entry.
pub fn parse_settings_update(body: &Value) -> Result<SettingsUpdate, ValidationError> {
    let root = loc(["body"]);
    let Value::Object(obj) = body else {
        return Err(model_type(root, "OrgAppSettingsUpdate", body));
    };
    let mut update = SettingsUpdate::default();
    if let Some(v) = obj.get("enable_proactive_conversation_starters") {
        update.has_any_field = true;
        match v {
            Value::Bool(b) => update.change.enable_proactive_conversation_starters = Some(*b),
            other => {
                return Err(bool_type(
                    field(&root, "enable_proactive_conversation_starters"),
                    other,
                ));
            }
        }
    }
    for (key, slot) in [
        (
            "max_budget_per_task",
            &mut update.change.max_budget_per_task,
        ),
        ("llm_monthly_budget", &mut update.change.llm_monthly_budget),
    ] {
        if let Some(v) = obj.get(key) {
            update.has_any_field = true;
            *slot = Some(positive_amount(v, &root, key)?);
        }
    }
    if let Some(v) = obj.get("registered_marketplaces") {
        update.has_any_field = true;
        let l = field(&root, "registered_marketplaces");
        let Value::Array(items) = v else {
            return Err(list_type(l, v));
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let mut p = l.clone();
            p.push(LocItem::Index(i));
            out.push(parse_marketplace(item, &p)?);
        }
        update.change.registered_marketplaces = Some(out);
    }
    if let Some(v) = obj.get("last_known_updated_at") {
        update.has_any_field = true;
        if !v.is_null() {
            update.last_known_updated_at = Some(parse_datetime_value(
                v,
                field(&root, "last_known_updated_at"),
            )?);
        }
    }
    Ok(update)
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
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sources() {
        for ok in [
            "github:owner/repo",
            "github:my.org/my-repo_1",
            "https://github.com/o/r.git",
            "http://host:8080/o/r",
            "https://user@host.com/o/r",
            "ssh://git@host.com/o/r",
            "git://host/o/r",
            "git@github.com:o/r.git",
            "https://host/~user/r",
            "plugins/local",
            "_x/y.z",
        ] {
            assert!(is_valid_marketplace_source(ok), "{ok}");
        }
        for bad in [
            "",
            "github:owner",
            "github:owner/repo/extra",
            "https://user:pass@host/o/r",
            "ftp://host/o/r",
            "/abs/path",
            "../up",
            "a/../b",
            "https://",
            "file:///etc",
            "has space",
        ] {
            assert!(!is_valid_marketplace_source(bad), "{bad}");
        }
    }

    #[test]
    fn body_rules() {
        let ok = parse_settings_update(&json!({
            "max_budget_per_task": 2.5,
            "llm_monthly_budget": 1e3,
            "registered_marketplaces": [{"name": " a ", "source": "github:o/r", "scope": "personal", "extra": 1}],
            "last_known_updated_at": "2026-11-21T09:08:18.014821Z",
            "unknown": true
        }))
        .unwrap();
        assert_eq!(ok.change.max_budget_per_task, Some(Some(2.5)));
        assert_eq!(ok.change.llm_monthly_budget, Some(Some(1000.0)));
        let cleared = parse_settings_update(&json!({"llm_monthly_budget": null})).unwrap();
        assert!(cleared.has_any_field && !cleared.change.is_empty());
        assert_eq!(
            (
                cleared.change.llm_monthly_budget,
                cleared.change.max_budget_per_task
            ),
            (Some(None), None)
        );
        let m = &ok.change.registered_marketplaces.as_ref().unwrap()[0];
        assert_eq!((m.name.as_str(), m.scope), ("a", MarketplaceScope::Org));
        assert!(ok.last_known_updated_at.is_some());
        assert!(parse_settings_update(&json!({})).unwrap() == SettingsUpdate::default());

        let cases = [
            (
                json!({"max_budget_per_task": 0}),
                vec!["body", "max_budget_per_task"],
                "value_error",
            ),
            (
                json!({"max_budget_per_task": -5}),
                vec!["body", "max_budget_per_task"],
                "value_error",
            ),
            (
                json!({"max_budget_per_task": "5"}),
                vec!["body", "max_budget_per_task"],
                "float_type",
            ),
            (
                json!({"llm_monthly_budget": 0}),
                vec!["body", "llm_monthly_budget"],
                "value_error",
            ),
            (
                json!({"llm_monthly_budget": -0.5}),
                vec!["body", "llm_monthly_budget"],
                "value_error",
            ),
            (
                json!({"llm_monthly_budget": "NaN"}),
                vec!["body", "llm_monthly_budget"],
                "float_type",
            ),
            (
                json!({"llm_monthly_budget": false}),
                vec!["body", "llm_monthly_budget"],
                "float_type",
            ),
            (
                json!({"enable_proactive_conversation_starters": null}),
                vec!["body", "enable_proactive_conversation_starters"],
                "bool_type",
            ),
            (
                json!({"registered_marketplaces": null}),
                vec!["body", "registered_marketplaces"],
                "list_type",
            ),
            (
                json!({"last_known_updated_at": "yesterday"}),
                vec!["body", "last_known_updated_at"],
                "datetime_from_date_parsing",
            ),
        ];
        for (body, want_loc, want_type) in cases {
            let e = parse_settings_update(&body).unwrap_err();
            let l: Vec<LocItem> = want_loc.into_iter().map(LocItem::from).collect();
            assert_eq!((e.loc, e.error_type.as_str()), (l, want_type), "{body}");
        }
        let e = parse_settings_update(&json!({"llm_monthly_budget": -1})).unwrap_err();
        assert_eq!(
            e.msg,
            "Value error, llm_monthly_budget must be greater than 0"
        );
    }

    #[test]
    fn duplicates_are_sorted() {
        let m = |n: &str| Marketplace {
            name: n.into(),
            source: "x".into(),
            git_ref: None,
            repo_path: None,
            auto_load: false,
            scope: MarketplaceScope::Org,
        };
        assert_eq!(
            duplicate_marketplace_names(&[m("b"), m("a"), m("b"), m("a"), m("c")]),
            ["a", "b"]
        );
        assert!(duplicate_marketplace_names(&[m("a"), m("A")]).is_empty());
    }
}
