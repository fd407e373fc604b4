//! The members routes' request bodies (OpenHands' `OrgMemberCreate` and `OrgMemberUpdate`),
//! declared as types (`crate::typed_body`): their rules, schema and 422s in one place.

use serde::Deserialize;

use crate::permissions::Role;

/// The longest e-mail address a member is added by, in characters (RFC 5321's 320).
pub const MAX_EMAIL_CHARS: usize = 320;

/// `POST /api/organizations/{org_id}/members`' body (OpenHands' `OrgMemberCreate`): other
/// keys are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
pub struct OrgMemberCreate {
    /// The user's e-mail, as stored (one who has signed in, or one the operator made): an
    /// `@`, at most [`MAX_EMAIL_CHARS`] characters, no NUL; surrounding white space is
    /// trimmed ([`Self::email`]).
    #[schema(schema_with = email_schema)]
    email: String,
    /// The role; `null` or left out: `member`.
    #[serde(default)]
    #[schema(schema_with = nullable_role_schema)]
    role: Option<Role>,
}

impl crate::typed_body::RequestBody for OrgMemberCreate {}

impl OrgMemberCreate {
    /// The e-mail, trimmed.
    pub fn email(&self) -> &str {
        self.email.trim()
    }

    /// The role (default `member`).
    pub fn role(&self) -> Role {
        self.role.unwrap_or(Role::Member)
    }
}

/// `PATCH /api/organizations/{org_id}/members/{user_id}`'s body (OpenHands'
/// `OrgMemberUpdate`): other keys are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
pub struct OrgMemberUpdate {
    /// The new role.
    #[schema(schema_with = role_schema)]
    pub role: Role,
}

impl crate::typed_body::RequestBody for OrgMemberUpdate {}

/// An e-mail: an `@`, at most [`MAX_EMAIL_CHARS`] characters, no NUL; any failure one
/// `value_error` (as OpenHands' validator words it).
fn email_schema() -> utoipa::openapi::schema::Object {
    crate::typed_body::fields::string()
        .description(Some(
            "The user's e-mail, as stored (one who has signed in, or one the operator made): an `@`, at most 320 characters, no NUL (U+0000); surrounding white space is trimmed.",
        ))
        .pattern(Some(r"^[^\x00]*@[^\x00]*$"))
        .max_length(Some(MAX_EMAIL_CHARS))
        .extensions(Some(crate::typed_body::fields::value_error_words(
            "an e-mail address needs an '@', at most 320 characters and no NUL (U+0000)",
        )))
        .build()
}

/// A role's wire name, as pydantic's `Literal["owner", "admin", "member"]`.
fn role_schema() -> utoipa::openapi::schema::Object {
    crate::typed_body::fields::literal(&Role::NAMES, false)
}

/// As [`role_schema`], or `null` (`member`).
fn nullable_role_schema() -> utoipa::openapi::schema::Object {
    let mut schema = crate::typed_body::fields::literal(&Role::NAMES, true);
    schema.description = Some("The role; `null` or left out: `member`.".to_owned());
    schema
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The one 422 entry of `body` read as `T`: (`type`, `loc`, `msg`).
    fn refusal<T: crate::typed_body::RequestBody + std::fmt::Debug>(
        body: serde_json::Value,
    ) -> (String, serde_json::Value, String) {
        let e = crate::typed_body::parse::<T>(&body).unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
        let v = serde_json::to_value(&e[0]).unwrap();
        (
            v["type"].as_str().unwrap().to_owned(),
            v["loc"].clone(),
            v["msg"].as_str().unwrap().to_owned(),
        )
    }

    #[test]
    fn a_member_is_added_by_a_trimmed_e_mail_and_a_literal_role() {
        let read = |v| crate::typed_body::parse::<OrgMemberCreate>(&v).unwrap();
        let add = read(json!({"email": " new@example.com ", "role": null, "other": 1}));
        assert_eq!((add.email(), add.role()), ("new@example.com", Role::Member));
        assert_eq!(
            read(json!({"email": "a@b", "role": "admin"})).role(),
            Role::Admin
        );
        let at = |field: &str| json!(["body", field]);
        for email in [
            json!("no-at-sign"),
            json!("a\u{0}@b"),
            json!(format!("a@{}", "b".repeat(319))),
        ] {
            let (kind, l, msg) = refusal::<OrgMemberCreate>(json!({ "email": email }));
            assert_eq!((kind.as_str(), l), ("value_error", at("email")), "{email}");
            assert!(msg.contains("needs an '@'"), "{msg}");
        }
        assert_eq!(
            refusal::<OrgMemberCreate>(json!({"email": 5})).0,
            "string_type"
        );
        assert_eq!(
            refusal::<OrgMemberCreate>(json!({"role": "admin"})),
            ("missing".into(), at("email"), "Field required".into())
        );
        assert_eq!(
            refusal::<OrgMemberCreate>(json!({"email": "a@b", "role": "boss"})),
            (
                "literal_error".into(),
                at("role"),
                "Input should be 'owner', 'admin' or 'member'".into()
            )
        );
    }

    #[test]
    fn a_role_update_names_one_of_the_three_roles() {
        let read = |v| crate::typed_body::parse::<OrgMemberUpdate>(&v);
        assert_eq!(read(json!({"role": "owner"})).unwrap().role, Role::Owner);
        for (role, error) in [
            (json!("superuser"), "literal_error"),
            (json!("Admin"), "literal_error"),
            (json!(3), "string_type"),
            (json!(null), "string_type"),
        ] {
            let (kind, l, _) = refusal::<OrgMemberUpdate>(json!({ "role": role }));
            assert_eq!(
                (kind.as_str(), l),
                (error, json!(["body", "role"])),
                "{role}"
            );
        }
        assert_eq!(refusal::<OrgMemberUpdate>(json!({})).0, "missing");
        let (kind, l, msg) = refusal::<OrgMemberUpdate>(json!(["owner"]));
        assert_eq!((kind.as_str(), l), ("model_type", json!(["body"])));
        assert!(msg.contains("OrgMemberUpdate"), "{msg}");
    }
}
