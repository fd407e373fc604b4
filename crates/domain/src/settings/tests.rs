//! The update body's rules and the documented patterns, against the rules.

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

fn matches(pattern: &str, s: &str) -> bool {
    regex::Regex::new(pattern).unwrap().is_match(s)
}

/// The documented patterns say exactly what the rules say, on samples of every kind (the
/// rules are the source); the repo path's, on every string of up to 6 characters from
/// `a./:` and a line feed.
#[test]
fn patterns_agree_with_the_rules() {
    for s in [
        "github:o/r",
        "github:o.x/r-y_z",
        "github:/r",
        "github:o/r/x",
        "https://h/p",
        "https://u@h/p.git",
        "https://u:p@h/p",
        "git@github.com:o/r.git",
        "ssh://h:22/x",
        "git://h/x",
        "http://h",
        "a",
        "a/b",
        "a/../b",
        "a/..",
        "a/...",
        "a/.x",
        "a/..x",
        "a//b",
        "a/.",
        "./a",
        "../a",
        "/a",
        "_x",
        "-x",
        "a b",
        "",
        "a:b",
        "ftp://h/p",
    ] {
        let documented = MARKETPLACE_SOURCE_PATTERNS.iter().any(|p| matches(p, s));
        assert_eq!(documented, is_valid_marketplace_source(s), "source {s:?}");
    }
    for s in [
        "a", "a/b", "/a", "a/../b", "..", "x://y", "a.b", "a:b", "", ".a",
    ] {
        assert_eq!(
            matches(REPO_PATH_PATTERN, s),
            is_valid_repo_path(s),
            "repo_path {s:?}"
        );
    }
    let alphabet = ['a', '.', '/', ':', '\n'];
    let mut strings = vec![String::new()];
    for _ in 0..6 {
        let longer: Vec<String> = strings
            .iter()
            .filter(|s| s.chars().count() == strings.last().map_or(0, |l| l.chars().count()))
            .flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}")))
            .collect();
        strings.extend(longer);
    }
    assert_eq!(strings.len(), (0..=6).map(|n| 5usize.pow(n)).sum::<usize>());
    let re = regex::Regex::new(REPO_PATH_PATTERN).unwrap();
    for s in &strings {
        assert_eq!(re.is_match(s), is_valid_repo_path(s), "repo_path {s:?}");
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
