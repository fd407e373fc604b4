//! What a start tells the agent about skills and plugins from the member's and the
//! organization's settings (issue 36; docs/settings-fields.md): the member's `disabled_skills`
//! (the agent's deny-list, applied to whatever it loads) and the plugin marketplaces, the
//! member's `registered_marketplaces` then the organization's (`POST
//! /api/organizations/app`) under names the member's do not take, as the SDK's
//! `MarketplaceRegistration` objects of `agent_context.registered_marketplaces`.

use serde_json::{Map, Value, json};

use crate::settings::{Marketplace, parse_marketplace};

/// The member's `disabled_skills` (names; none when unset or not a list of text).
pub fn disabled_skills(prefs: &Map<String, Value>) -> Vec<String> {
    prefs
        .get("disabled_skills")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The SDK's `MarketplaceRegistration` of `m`: `name`, `source`, `ref`, `repo_path`,
/// `auto_load` (Switchboard's `scope` is its own and not sent).
pub fn registration(m: &Marketplace) -> Value {
    json!({
        "name": m.name,
        "source": m.source,
        "ref": m.git_ref,
        "repo_path": m.repo_path,
        "auto_load": m.auto_load,
    })
}

/// The marketplaces a start registers: the member's (stored preference
/// `registered_marketplaces`, each read again by the save rule; an entry that no longer reads
/// is left out), then the organization's whose names the member's do not take.
pub fn marketplaces(prefs: &Map<String, Value>, org: &[Marketplace]) -> Vec<Value> {
    let own: Vec<Marketplace> = prefs
        .get("registered_marketplaces")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|v| parse_marketplace(v, &[]).ok())
                .collect()
        })
        .unwrap_or_default();
    let mut out: Vec<Value> = own.iter().map(registration).collect();
    for m in org {
        if !own.iter().any(|o| o.name == m.name) {
            out.push(registration(m));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::MarketplaceScope;

    fn org(name: &str) -> Marketplace {
        Marketplace {
            name: name.into(),
            source: format!("github:team/{name}"),
            git_ref: Some("main".into()),
            repo_path: None,
            auto_load: true,
            scope: MarketplaceScope::Org,
        }
    }

    #[test]
    fn the_members_marketplaces_come_first_and_win_on_a_name() {
        let prefs = json!({"registered_marketplaces": [
            {"name": "shared", "source": "github:me/shared", "auto_load": false},
            {"name": "mine", "source": "github:me/mine", "ref": "v1", "repo_path": "plugins"},
        ]});
        let got = marketplaces(prefs.as_object().unwrap(), &[org("shared"), org("team")]);
        let names: Vec<&str> = got.iter().map(|m| m["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["shared", "mine", "team"]);
        assert_eq!(got[0]["source"], "github:me/shared");
        assert_eq!(got[0]["auto_load"], false);
        assert_eq!(got[1]["ref"], "v1");
        assert_eq!(got[1]["repo_path"], "plugins");
        assert_eq!(
            got[2],
            json!({"name": "team", "source": "github:team/team", "ref": "main",
                   "repo_path": null, "auto_load": true})
        );
        assert!(got.iter().all(|m| m.get("scope").is_none()));
    }

    #[test]
    fn nothing_set_registers_nothing_and_disables_nothing() {
        let prefs = json!({"registered_marketplaces": [], "disabled_skills": null});
        assert!(marketplaces(prefs.as_object().unwrap(), &[]).is_empty());
        assert!(disabled_skills(prefs.as_object().unwrap()).is_empty());
        let prefs = json!({"disabled_skills": ["noisy", "slow"]});
        assert_eq!(
            disabled_skills(prefs.as_object().unwrap()),
            ["noisy", "slow"]
        );
    }
}
