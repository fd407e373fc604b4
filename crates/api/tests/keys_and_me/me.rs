//! `GET /api/v1/users/me` for every caller, beside issue 21's UserInfo fields.

use serde_json::{Value, json};
use switchboard_testkit::Backend;

use crate::common::{assert_one_error, detail, spawn_app, status_json};
use crate::keys_and_me::rig::{
    MEMBER_PERMISSIONS, NOT_FOR_ADMINS, OWNER_PERMISSIONS, list_keys, me, sorted,
};

pub async fn users_me(backend: Backend) {
    let app = spawn_app(backend).await;
    let admin_permissions: Vec<&str> = OWNER_PERMISSIONS
        .iter()
        .copied()
        .filter(|p| !NOT_FOR_ADMINS.contains(p))
        .collect();
    assert_eq!(admin_permissions.len(), 20);
    let a = app.org.to_string();
    for (actor, email, role, permissions, bound) in [
        (
            &app.owner,
            "owner@example.com",
            "owner",
            sorted(&OWNER_PERMISSIONS),
            false,
        ),
        (
            &app.admin,
            "admin@example.com",
            "admin",
            sorted(&admin_permissions),
            false,
        ),
        (
            &app.member,
            "member@example.com",
            "member",
            sorted(&MEMBER_PERMISSIONS),
            false,
        ),
        (
            &app.bound_owner,
            "owner@example.com",
            "owner",
            sorted(&OWNER_PERMISSIONS),
            true,
        ),
    ] {
        let (_, items) = list_keys(&app, &actor.key).await;
        let key_id = items
            .iter()
            .find(|k| k["prefix"] == actor.key[..8])
            .unwrap()["id"]
            .clone();
        let (status, body) = me(&app, &actor.key, None).await;
        assert_eq!(status, 200, "{backend}: {body}");
        // Switchboard's own fields (issue 21 adds OpenHands' `UserInfo` fields beside them,
        // checked in bins/switchboard/tests/user_settings/).
        let ours = [
            "user_id",
            "email",
            "name",
            "org_id",
            "org_name",
            "role",
            "permissions",
            "api_key_id",
            "api_key_org_id",
        ];
        let shown: serde_json::Map<String, Value> = ours
            .iter()
            .map(|k| ((*k).to_owned(), body[*k].clone()))
            .collect();
        assert_eq!(body["id"], json!(actor.user_id.to_string()), "{backend}");
        assert_eq!(
            Value::Object(shown),
            json!({
                "user_id": actor.user_id.to_string(),
                "email": email,
                "name": null,
                "org_id": a,
                "org_name": "Org A",
                "role": role,
                "permissions": permissions,
                "api_key_id": key_id,
                "api_key_org_id": if bound { json!(a) } else { Value::Null },
            }),
            "{backend}: {role}"
        );
        let count = body["permissions"].as_array().unwrap().len();
        assert_eq!(
            count,
            match role {
                "owner" => 23,
                "admin" => 20,
                _ => 8,
            },
            "{backend}"
        );
        assert_eq!(
            body["permissions"]
                .as_array()
                .unwrap()
                .contains(&json!("edit_org_settings")),
            role != "member",
            "{backend}: {role}"
        );
    }
    // The outsider, in its own organization; refused in A.
    let (status, body) = me(&app, &app.non_member.key, None).await;
    assert_eq!(status, 200, "{backend}: {body}");
    assert_eq!(body["org_id"], app.other_org.to_string());
    assert_eq!(body["org_name"], "Org B");
    assert_eq!(body["email"], "outsider@example.com");
    assert_eq!(body["role"], "owner");
    let (status, body) = me(&app, &app.non_member.key, Some(a.clone())).await;
    assert_eq!(
        (status, &body),
        (403, &detail("User is not a member of this organization")),
        "{backend}"
    );
    let (status, body) = status_json(app.get("/api/v1/users/me", None).await).await;
    assert_eq!(
        (status, &body),
        (401, &detail("Not authenticated")),
        "{backend}"
    );
    let (status, body) = me(&app, &app.owner.key, Some("nope".into())).await;
    assert_eq!(status, 422, "{backend}: {body}");
    assert_one_error(&body, &json!(["header", "x-org-id"]), "uuid_parsing");
    app.stop().await;
}
