//! LLM profiles (issue 21; OpenHands' `/api/v1/settings/profiles`): named LLM configurations
//! of a user, at most [`MAX_PROFILES_PER_USER`], one of them active. Names match
//! [`PROFILE_NAME_PATTERN`]; a profile's key is sealed like the settings' own.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use switchboard_model::{LocItem, ValidationError};
use utoipa::ToSchema;
use utoipa::openapi::schema::{AnyOfBuilder, Schema};

use super::diffs::{LlmInput, check_llm, llm_schema};
use crate::named_profiles::{Collection, Named};
use crate::typed_body::{self, RequestBody, fields};
use crate::validation::{field, loc, model_type, string_pattern_mismatch};
use crate::validation::{refuse_nul_deep, refuse_nul_in};

/// The most profiles a user keeps in one organization; one more is a 409 (OpenHands'
/// `MAX_PROFILES_PER_USER`).
pub const MAX_PROFILES_PER_USER: usize = 50;

/// What a profile name must match (OpenHands: letters, digits, `.`, `_`, `-`; 1 to 64).
pub const PROFILE_NAME_PATTERN: &str = "^[A-Za-z0-9._-]{1,64}$";

/// A stored profile: its LLM configuration without the key, and the key sealed for
/// [`super::Binding::ProfileApiKey`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredProfile {
    /// Name ([`PROFILE_NAME_PATTERN`]).
    pub name: String,
    /// The LLM object without `api_key` (`model`, `base_url`, …).
    pub config: Map<String, Value>,
    /// The key, sealed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_sealed: Option<String>,
}

/// LLM profiles as a collection (a member's and an organization's alike): `Profile` in the
/// messages, at most [`MAX_PROFILES_PER_USER`].
pub const LLM_PROFILES: Collection = Collection {
    noun: "Profile",
    limit: MAX_PROFILES_PER_USER,
    full: || format!("Profile limit reached: at most {MAX_PROFILES_PER_USER} profiles"),
};

impl Named for StoredProfile {
    fn name(&self) -> &str {
        &self.name
    }

    fn set_name(&mut self, name: &str) {
        name.clone_into(&mut self.name);
    }
}

impl StoredProfile {
    /// `config.<key>` as text.
    pub fn config_str(&self, key: &str) -> Option<&str> {
        self.config.get(key)?.as_str().filter(|s| !s.is_empty())
    }
}

/// The provider connection an LLM configuration names (`provider_connection_id`, non-empty
/// text), if any: its key and base URL are the configuration's ([`crate::org_profiles`]).
pub fn connection_id(config: &Map<String, Value>) -> Option<&str> {
    config
        .get("provider_connection_id")?
        .as_str()
        .filter(|s| !s.is_empty())
}

/// Whether `name` is a valid profile name.
pub fn is_profile_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// A profile name from `at` (`["path", "name"]` or `["body", "new_name"]`).
///
/// # Errors
/// `string_pattern_mismatch` with [`PROFILE_NAME_PATTERN`].
pub fn check_profile_name(name: &str, at: Vec<LocItem>) -> Result<(), ValidationError> {
    if is_profile_name(name) {
        Ok(())
    } else {
        Err(string_pattern_mismatch(at, PROFILE_NAME_PATTERN, name))
    }
}

/// `POST /api/v1/settings/profiles/{name}` (OpenHands' `SaveProfileRequest`). `Debug` shows
/// no key.
#[derive(Clone, PartialEq)]
pub struct SaveProfile {
    /// Keep the key (default true); false saves the profile without one.
    pub include_secrets: bool,
    /// The LLM to save (without `api_key`); `None`: the current settings' LLM.
    pub llm: Option<Map<String, Value>>,
    /// `llm.api_key`, when sent.
    pub api_key: Option<String>,
    /// Keep the stored profile's key whatever else is sent.
    pub preserve_existing_api_key: bool,
}

impl std::fmt::Debug for SaveProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaveProfile")
            .field("include_secrets", &self.include_secrets)
            .field("llm", &self.llm)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("preserve_existing_api_key", &self.preserve_existing_api_key)
            .finish()
    }
}

/// Stores in `profiles` (kept sorted by name) the profile `name` that `save` makes, by
/// OpenHands' rules for `POST /api/v1/settings/profiles/{name}`, which the organization's
/// profiles follow too (issues 21 and 25): the LLM sent, with `sent_key` (already sealed to
/// the profile) or else the stored profile's key; with no LLM sent, `current()`'s LLM and key
/// (the settings' or the organization defaults' LLM now, its key sealed again for the
/// profile); `preserve_existing_api_key` keeps the stored profile's key whatever else was
/// sent; `include_secrets: false` stores none. A profile linked to a provider connection
/// (`provider_connection_id`) keeps no key or base URL of its own: the connection's are used
/// (the agent server's `LLMProfileStore.save`, its rule 5c).
///
/// # Errors
/// [`crate::error::DomainError::AlreadyExists`] (409) for a new name when `profiles` holds
/// [`MAX_PROFILES_PER_USER`] already (judged first); `current`'s error.
pub fn save_into(
    profiles: &mut Vec<StoredProfile>,
    name: &str,
    save: &SaveProfile,
    sent_key: Option<&str>,
    current: impl FnOnce() -> Result<(Map<String, Value>, Option<String>), crate::error::DomainError>,
) -> Result<(), crate::error::DomainError> {
    let existing = LLM_PROFILES.room_for(profiles, name)?;
    let stored_key = existing.map(|p| p.api_key_sealed.clone());
    let (config, mut key) = match &save.llm {
        Some(llm) => (
            llm.clone(),
            sent_key
                .map(str::to_owned)
                .or_else(|| stored_key.clone().flatten()),
        ),
        None => current()?,
    };
    if save.preserve_existing_api_key
        && let Some(stored) = stored_key
    {
        key = stored;
    }
    if !save.include_secrets {
        key = None;
    }
    let mut config = config;
    if connection_id(&config).is_some() {
        config.remove("base_url");
        key = None;
    }
    Collection::put(
        profiles,
        StoredProfile {
            name: name.to_owned(),
            config,
            api_key_sealed: key,
        },
    );
    Ok(())
}

/// The 404 of a profile route naming no profile: `Profile '<name>' not found`.
pub fn profile_not_found(name: &str) -> crate::error::DomainError {
    LLM_PROFILES.not_found(name)
}

/// Renames profile `name` to `new_name` in `profiles` (kept sorted), the `active` pointer
/// following it; a member's and the organization's profiles alike. Returns whether anything
/// changed (renaming to the same name changes nothing).
///
/// # Errors
/// [`profile_not_found`] (404) when there is no `name`;
/// [`crate::error::DomainError::AlreadyExists`] (409) when another profile is `new_name`.
pub fn rename_in(
    profiles: &mut [StoredProfile],
    active: &mut Option<String>,
    name: &str,
    new_name: &str,
) -> Result<bool, crate::error::DomainError> {
    let renamed = LLM_PROFILES.rename(profiles, name, new_name)?;
    if renamed && active.as_deref() == Some(name) {
        *active = Some(new_name.to_owned());
    }
    Ok(renamed)
}

/// Deletes profile `name` from `profiles` (idempotent), ending `active` when it named it.
/// Returns whether a profile was deleted.
pub fn delete_in(
    profiles: &mut Vec<StoredProfile>,
    active: &mut Option<String>,
    name: &str,
) -> bool {
    if active.as_deref() == Some(name) {
        *active = None;
    }
    Collection::remove(profiles, name).is_some()
}

/// Optional; none or `null` means every default: the profile saves the current settings' LLM,
/// with its key. Other keys are ignored; no NUL in any string or key.
// OpenHands' `SaveProfileRequest`: the body of `POST /api/v1/settings/profiles/{name}` and of
// `POST /api/organizations/{org_id}/profiles/{name}` (`SaveProfile::read`). No `Debug`: it
// holds a key (`SaveProfile`'s hides it).
#[derive(Clone, PartialEq, Deserialize, ToSchema)]
pub struct SaveProfileRequest {
    /// Keep the key (default true); false saves the profile without one.
    #[serde(default = "fields::yes")]
    #[schema(default = true)]
    include_secrets: bool,
    /// Keep the stored profile's key whatever else is sent (default false).
    #[serde(default)]
    #[schema(default = false)]
    preserve_existing_api_key: bool,
    /// The LLM to save ([`check_llm`]); absent or `null`: the current settings' LLM.
    #[serde(default)]
    #[schema(schema_with = strict_llm)]
    llm: Option<Value>,
    /// Any other key: ignored.
    #[serde(flatten)]
    #[schema(schema_with = fields::others_without_nul)]
    others: Map<String, Value>,
}

impl Default for SaveProfileRequest {
    fn default() -> Self {
        SaveProfileRequest {
            include_secrets: true,
            preserve_existing_api_key: false,
            llm: None,
            others: Map::new(),
        }
    }
}

impl RequestBody for SaveProfileRequest {
    /// What the schema leaves to the code: no NUL in the keys ignored and `llm`, then `llm`
    /// an object ([`check_llm`]); the first failure only.
    fn check(&self) -> Result<(), Vec<ValidationError>> {
        let root = loc(["body"]);
        let at = field(&root, "llm");
        let first = || {
            refuse_nul_in(&self.others, &root)?;
            match &self.llm {
                None => Ok(()),
                Some(llm) => {
                    refuse_nul_deep(llm, &at)?;
                    match llm {
                        Value::Object(_) => check_llm(llm, &at),
                        other => Err(model_type(at.clone(), "StrictLLM", other)),
                    }
                }
            }
        };
        first().map_err(|e: ValidationError| vec![e])
    }
}

impl From<SaveProfileRequest> for SaveProfile {
    fn from(body: SaveProfileRequest) -> Self {
        let (llm, api_key) = match body.llm {
            Some(Value::Object(m)) => {
                let (config, key) = LlmInput::checked(m).split();
                (Some(config), key.flatten())
            }
            _ => (None, None),
        };
        SaveProfile {
            include_secrets: body.include_secrets,
            llm,
            api_key,
            preserve_existing_api_key: body.preserve_existing_api_key,
        }
    }
}

impl SaveProfile {
    /// Reads a save's body ([`SaveProfileRequest`]): none or `null` means every default.
    ///
    /// # Errors
    /// The 422 entries of [`typed_body::parse`].
    pub fn read(body: Option<&Value>) -> Result<SaveProfile, Vec<ValidationError>> {
        match body {
            None | Some(Value::Null) => Ok(SaveProfileRequest::default().into()),
            Some(v) => typed_body::parse::<SaveProfileRequest>(v).map(SaveProfile::from),
        }
    }
}

fn strict_llm() -> Schema {
    fields::documentation_only(
        AnyOfBuilder::new()
            .item(llm_schema("StrictLLM"))
            .item(fields::null()),
    )
}

/// A profile's new name (OpenHands' `RenameProfileRequest`). Other keys are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
pub struct RenameProfileRequest {
    /// The new name ([`PROFILE_NAME_PATTERN`]).
    #[schema(schema_with = profile_name_schema)]
    pub new_name: String,
}

impl crate::typed_body::RequestBody for RenameProfileRequest {}

/// A profile name's schema: [`PROFILE_NAME_PATTERN`].
pub fn profile_name_schema() -> utoipa::openapi::schema::Object {
    crate::typed_body::fields::text_matching(PROFILE_NAME_PATTERN)
}

/// A profile of the caller's, by name (OpenHands' `SwitchProfileRequest`, the body of
/// `POST /api/v1/app-conversations/{id}/switch_profile`). Other keys are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
pub struct SwitchProfileRequest {
    /// The profile's name.
    #[schema(min_length = 1)]
    pub profile_name: String,
}

impl crate::typed_body::RequestBody for SwitchProfileRequest {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::typed_body::parse;
    use serde_json::json;

    /// A save's body as the routes read it.
    fn parse_save_profile(body: Option<&Value>) -> Result<SaveProfile, Vec<ValidationError>> {
        SaveProfile::read(body)
    }

    fn llm(model: &str) -> Map<String, Value> {
        json!({ "model": model }).as_object().unwrap().clone()
    }

    fn save(body: Value) -> SaveProfile {
        parse_save_profile(Some(&body)).unwrap()
    }

    fn stored(name: &str, key: Option<&str>) -> StoredProfile {
        StoredProfile {
            name: name.into(),
            config: llm("old"),
            api_key_sealed: key.map(str::to_owned),
        }
    }

    fn unused() -> Result<(Map<String, Value>, Option<String>), crate::error::DomainError> {
        panic!("the current LLM is read only when no LLM is sent")
    }

    #[test]
    fn saves_by_openhands_rules() {
        // The LLM sent with the key sent; a new name is inserted in name order.
        let mut ps = vec![stored("b", Some("kb"))];
        save_into(
            &mut ps,
            "a",
            &save(json!({"llm": {"model": "m"}})),
            Some("ka"),
            unused,
        )
        .unwrap();
        assert_eq!(
            ps.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(
            (ps[0].config_str("model"), ps[0].api_key_sealed.as_deref()),
            (Some("m"), Some("ka"))
        );
        // No key sent keeps the stored one.
        save_into(
            &mut ps,
            "b",
            &save(json!({"llm": {"model": "n"}})),
            None,
            unused,
        )
        .unwrap();
        assert_eq!(
            (ps[1].config_str("model"), ps[1].api_key_sealed.as_deref()),
            (Some("n"), Some("kb"))
        );
        // No LLM sent: the current one, with its key.
        save_into(&mut ps, "b", &save(json!({})), None, || {
            Ok((llm("cur"), Some("kc".into())))
        })
        .unwrap();
        assert_eq!(
            (ps[1].config_str("model"), ps[1].api_key_sealed.as_deref()),
            (Some("cur"), Some("kc"))
        );
        // preserve_existing_api_key keeps the stored key over the one sent, a missing one too.
        let keep = save(json!({"llm": {"model": "m"}, "preserve_existing_api_key": true}));
        save_into(&mut ps, "b", &keep, Some("new"), unused).unwrap();
        assert_eq!(ps[1].api_key_sealed.as_deref(), Some("kc"));
        ps.push(stored("c", None));
        save_into(&mut ps, "c", &keep, Some("new"), unused).unwrap();
        assert_eq!(ps[2].api_key_sealed, None);
        // include_secrets: false stores none.
        let bare = save(json!({"llm": {"model": "m"}, "include_secrets": false}));
        save_into(&mut ps, "a", &bare, Some("ka"), unused).unwrap();
        assert_eq!(ps[0].api_key_sealed, None);
        assert_eq!(ps.len(), 3);
    }

    #[test]
    fn a_profile_linked_to_a_provider_connection_keeps_no_key_or_base_url() {
        let mut ps = Vec::new();
        let linked = save(json!({"llm": {"model": "m", "base_url": "https://own.test",
            "provider_connection_id": "c-1"}}));
        save_into(&mut ps, "p", &linked, Some("sealed"), unused).unwrap();
        assert_eq!(ps[0].api_key_sealed, None);
        assert_eq!(ps[0].config_str("base_url"), None);
        assert_eq!(connection_id(&ps[0].config), Some("c-1"));
        assert!(parse_save_profile(Some(&json!({"llm": {"provider_connection_id": 3}}))).is_err());
    }

    #[test]
    fn rename_and_delete() {
        let mut ps = vec![stored("a", None), stored("b", None)];
        let mut active = Some("a".to_owned());
        let err = rename_in(&mut ps, &mut active, "x", "y").unwrap_err();
        assert!(
            matches!(err, crate::error::DomainError::NotFound(_)),
            "{err:?}"
        );
        let err = rename_in(&mut ps, &mut active, "a", "b").unwrap_err();
        assert!(
            matches!(err, crate::error::DomainError::AlreadyExists(_)),
            "{err:?}"
        );
        assert!(!rename_in(&mut ps, &mut active, "a", "a").unwrap());
        // The active pointer follows; the list stays in name order.
        assert!(rename_in(&mut ps, &mut active, "a", "c").unwrap());
        assert_eq!(
            ps.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            ["b", "c"]
        );
        assert_eq!(active.as_deref(), Some("c"));
        assert!(!delete_in(&mut ps, &mut active, "zz"));
        assert!(delete_in(&mut ps, &mut active, "c"));
        assert_eq!((ps.len(), active), (1, None));
    }

    #[test]
    fn profile_limit() {
        let mut ps: Vec<_> = (0..MAX_PROFILES_PER_USER)
            .map(|i| stored(&format!("p{i:02}"), None))
            .collect();
        let body = save(json!({"llm": {"model": "m"}}));
        let err = save_into(&mut ps, "new", &body, None, unused).unwrap_err();
        assert!(
            matches!(err, crate::error::DomainError::AlreadyExists(_)),
            "{err:?}"
        );
        assert_eq!(ps.len(), MAX_PROFILES_PER_USER);
        // A namesake is replaced, not added.
        save_into(&mut ps, "p07", &body, None, unused).unwrap();
        assert_eq!(ps.len(), MAX_PROFILES_PER_USER);
        assert_eq!(ps[7].config_str("model"), Some("m"));
        // The current LLM's error is the save's.
        let err = save_into(&mut ps, "p01", &save(json!({})), None, || {
            Err(crate::error::DomainError::BadRequest("no".into()))
        });
        assert!(err.is_err());
        assert_eq!(ps[1].config_str("model"), Some("old"));
    }

    /// The name patterns of the documents take exactly what the checks take.
    #[test]
    fn name_patterns_agree_with_the_checks() {
        use crate::user_secrets::{SECRET_NAME_PATTERN, is_secret_name};
        let profile = regex::Regex::new(PROFILE_NAME_PATTERN).unwrap();
        let secret = regex::Regex::new(SECRET_NAME_PATTERN).unwrap();
        let long = "x".repeat(129);
        for name in [
            "a",
            "a.b-c_D9",
            "",
            "a b",
            "a/b",
            "\u{e9}",
            &long,
            &long[..64],
        ] {
            assert_eq!(profile.is_match(name), is_profile_name(name), "{name:?}");
            assert_eq!(secret.is_match(name), is_secret_name(name), "{name:?}");
        }
    }

    #[test]
    fn names() {
        for ok in ["a", "gpt-4o.mini_2", &"x".repeat(64)] {
            assert!(is_profile_name(ok), "{ok}");
        }
        for bad in ["", "a/b", "a b", "..%2f", &"x".repeat(65), "é"] {
            assert!(!is_profile_name(bad), "{bad}");
        }
    }

    #[test]
    fn save_bodies() {
        let s = parse_save_profile(None).unwrap();
        assert!(s.include_secrets && s.llm.is_none());
        let s = parse_save_profile(Some(
            &json!({"llm": {"model": "m", "api_key": "sk-1"}, "include_secrets": false}),
        ))
        .unwrap();
        assert_eq!(s.api_key.as_deref(), Some("sk-1"));
        assert!(!s.include_secrets);
        assert_eq!(s.llm.unwrap().get("api_key"), None);
        assert!(parse_save_profile(Some(&json!({"llm": 3}))).is_err());
        assert!(parse_save_profile(Some(&json!({"include_secrets": "yes"}))).is_err());
        let rename = |v: Value| parse::<RenameProfileRequest>(&v).map(|r| r.new_name);
        assert_eq!(rename(json!({"new_name": "b"})).unwrap(), "b");
        assert!(rename(json!({"new_name": "b/c"})).is_err());
        assert!(rename(json!({})).is_err());
        let switch = |v: Value| parse::<SwitchProfileRequest>(&v).map(|r| r.profile_name);
        assert_eq!(switch(json!({"profile_name": "p", "x": 1})).unwrap(), "p");
        for bad in [
            json!({}),
            json!({"profile_name": ""}),
            json!({"profile_name": 3}),
            json!([]),
        ] {
            assert!(switch(bad.clone()).is_err(), "{bad}");
        }
    }
}
