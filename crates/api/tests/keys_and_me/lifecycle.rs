//! A key's life: created, used, listed, revoked; and its last use, recorded at most once a
//! debounce interval.

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{Value, json};
use switchboard_testkit::Backend;

use crate::common::{SETTINGS, detail, instant, spawn_app, status_json};
use crate::keys_and_me::rig::{
    KEY_ELSEWHERE, KEY_FIELDS, create_key, delete_key, find, list_keys, me, secrets,
};

pub async fn create_use_list_revoke(backend: Backend) {
    let app = spawn_app(backend).await;
    let (status, created) = create_key(&app, &app.owner.key, &json!({"name": "ci"})).await;
    assert_eq!(status, 200, "{backend}: {created}");
    let secret = created["api_key"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("sb_"), "{backend}: {secret}");
    assert_eq!(secret.len(), 46, "{backend}: {secret}");
    assert!(
        secret[3..].bytes().all(|b| b.is_ascii_alphanumeric()),
        "{secret}"
    );
    let fields: Vec<&String> = created.as_object().unwrap().keys().collect();
    let mut expected_fields = KEY_FIELDS.to_vec();
    expected_fields.push("api_key");
    assert_eq!(fields, expected_fields, "{backend}");
    assert_eq!(created["name"], "ci");
    assert_eq!(created["prefix"], secret[..8], "{backend}");
    assert_eq!(
        created["org_id"],
        app.org.to_string(),
        "{backend}: bound to org A"
    );
    assert_eq!(created["last_used_at"], Value::Null);
    assert_eq!(created["expires_at"], Value::Null);
    assert_eq!(created["revoked"], false);
    instant(&created["created_at"]);
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(
        uuid::Uuid::parse_str(&id).unwrap().to_string(),
        id,
        "dashed lowercase"
    );

    // It works at once, on org A, and only there.
    let (status, body) = status_json(app.get(SETTINGS, Some(&secret)).await).await;
    assert_eq!(status, 200, "{backend}: {body}");
    assert_eq!(body, app.settings().await);
    let (status, body) = me(&app, &secret, None).await;
    assert_eq!(status, 200, "{backend}: {body}");
    assert_eq!(body["api_key_id"], id.as_str());
    assert_eq!(body["api_key_org_id"], app.org.to_string());
    let (status, body) = me(&app, &secret, Some(app.other_org.to_string())).await;
    assert_eq!((status, &body), (403, &detail(KEY_ELSEWHERE)), "{backend}");
    let resp = app
        .req(Method::GET, SETTINGS, Some(&secret))
        .header("X-Org-Id", app.other_org.to_string())
        .send()
        .await
        .unwrap();
    let (status, body) = status_json(resp).await;
    assert_eq!((status, &body), (403, &detail(KEY_ELSEWHERE)), "{backend}");

    // Names are trimmed; an expiry in the future is kept.
    let (status, spaced) = create_key(
        &app,
        &app.owner.key,
        &json!({"name": "  spaced  ", "expires_at": "2099-01-01T00:00:00Z"}),
    )
    .await;
    assert_eq!(status, 200, "{backend}: {spaced}");
    assert_eq!(spaced["name"], "spaced");
    assert_eq!(spaced["expires_at"], "2099-01-01T00:00:00.000000Z");
    let spaced_secret = spaced["api_key"].as_str().unwrap().to_owned();
    assert_ne!(spaced_secret, secret);
    let (status, _) = status_json(app.get(SETTINGS, Some(&spaced_secret)).await).await;
    assert_eq!(status, 200, "{backend}");

    // The list: the owner's keys usable in org A, newest first, never a secret.
    let (text, items) = list_keys(&app, &app.owner.key).await;
    let mut all_secrets = secrets(&app);
    all_secrets.extend([secret.clone(), spaced_secret.clone()]);
    for s in &all_secrets {
        assert!(!text.contains(s.as_str()), "{backend}: a secret is listed");
        assert!(!text.contains(&s[3..]), "{backend}: a secret is listed");
    }
    let names: Vec<&str> = items.iter().map(|k| k["name"].as_str().unwrap()).collect();
    assert_eq!(
        names.iter().copied().collect::<BTreeSet<_>>(),
        BTreeSet::from(["bootstrap", "test", "expired", "revoked", "ci", "spaced"]),
        "{backend}: {names:?}"
    );
    assert_eq!(names.len(), 6, "{backend}: {names:?}");
    assert_eq!(&names[..2], ["spaced", "ci"], "{backend}: newest first");
    for pair in items.windows(2) {
        assert!(
            instant(&pair[0]["created_at"]) >= instant(&pair[1]["created_at"]),
            "{backend}: {items:?}"
        );
    }
    for k in &items {
        let fields: Vec<&String> = k.as_object().unwrap().keys().collect();
        assert_eq!(fields, KEY_FIELDS, "{backend}");
    }
    let listed = find(&items, &created["id"]);
    for f in [
        "id",
        "name",
        "prefix",
        "org_id",
        "created_at",
        "expires_at",
        "revoked",
    ] {
        assert_eq!(listed[f], created[f], "{backend}: {f}");
    }
    let revoked_before: Vec<&str> = items
        .iter()
        .filter(|k| k["revoked"] == true)
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(revoked_before, ["revoked"], "{backend}");

    // Revoke: the key stops working; the list says so; revoking again changes nothing.
    let (status, body) = delete_key(&app, &app.owner.key, &id).await;
    assert_eq!(
        (status, &body),
        (200, &json!({"id": id, "revoked": true})),
        "{backend}"
    );
    let resp = app.get(SETTINGS, Some(&secret)).await;
    assert_eq!(
        resp.headers().get("www-authenticate").unwrap(),
        "Bearer",
        "{backend}"
    );
    let (status, body) = status_json(resp).await;
    assert_eq!(
        (status, &body),
        (401, &detail("API key revoked")),
        "{backend}"
    );
    let (_, items) = list_keys(&app, &app.owner.key).await;
    assert_eq!(find(&items, &created["id"])["revoked"], true, "{backend}");
    let (status, again) = delete_key(&app, &app.owner.key, &id).await;
    assert_eq!((status, &again), (200, &body_revoked(&id)), "{backend}");
    // The id in 32-hex form names the same key.
    let spaced_id = spaced["id"]
        .as_str()
        .unwrap()
        .replace('-', "")
        .to_uppercase();
    let (status, body) = delete_key(&app, &app.owner.key, &spaced_id).await;
    assert_eq!(
        (status, &body),
        (200, &body_revoked(spaced["id"].as_str().unwrap())),
        "{backend}"
    );
    let (status, _) = status_json(app.get(SETTINGS, Some(&spaced_secret)).await).await;
    assert_eq!(status, 401, "{backend}");
    // A key can revoke itself; the owner's other keys keep working.
    let (_, items) = list_keys(&app, &app.bound_owner.key).await;
    let bound_id = items
        .iter()
        .find(|k| k["prefix"] == app.bound_owner.key[..8])
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _) = delete_key(&app, &app.bound_owner.key, &bound_id).await;
    assert_eq!(status, 200, "{backend}");
    let (status, body) = status_json(app.get(SETTINGS, Some(&app.bound_owner.key)).await).await;
    assert_eq!(
        (status, &body),
        (401, &detail("API key revoked")),
        "{backend}"
    );
    let (status, _) = status_json(app.get(SETTINGS, Some(&app.owner.key)).await).await;
    assert_eq!(status, 200, "{backend}");
    app.stop().await;
}

pub fn body_revoked(id: &str) -> Value {
    json!({"id": id, "revoked": true})
}

pub async fn last_used_is_debounced(backend: Backend) {
    let app = spawn_app(backend).await;
    let (status, created) = create_key(&app, &app.owner.key, &json!({"name": "used"})).await;
    assert_eq!(status, 200, "{backend}: {created}");
    let secret = created["api_key"].as_str().unwrap().to_owned();
    let last_used = |items: &[Value]| find(items, &created["id"])["last_used_at"].clone();
    let (_, items) = list_keys(&app, &app.owner.key).await;
    assert_eq!(last_used(&items), Value::Null, "{backend}: not used yet");
    let owner_first =
        items.iter().find(|k| k["name"] == "bootstrap").unwrap()["last_used_at"].clone();
    assert!(
        !owner_first.is_null(),
        "{backend}: the listing key was used"
    );

    let (status, _) = status_json(app.get(SETTINGS, Some(&secret)).await).await;
    assert_eq!(status, 200);
    let (_, items) = list_keys(&app, &app.owner.key).await;
    let first = last_used(&items);
    assert!(
        instant(&first) >= instant(&created["created_at"]),
        "{backend}: {first}"
    );
    for _ in 0..3 {
        let (status, _) = status_json(app.get(SETTINGS, Some(&secret)).await).await;
        assert_eq!(status, 200);
    }
    let (_, items) = list_keys(&app, &app.owner.key).await;
    assert_eq!(
        last_used(&items),
        first,
        "{backend}: written once a minute at most"
    );
    let bootstrap = items.iter().find(|k| k["name"] == "bootstrap").unwrap();
    assert_eq!(bootstrap["last_used_at"], owner_first, "{backend}");
    // Refused keys are not marked used.
    for k in [&app.expired.key, &app.revoked.key] {
        let (status, _) = status_json(app.get(SETTINGS, Some(k)).await).await;
        assert_eq!(status, 401);
    }
    let (_, items) = list_keys(&app, &app.owner.key).await;
    for name in ["expired", "revoked"] {
        let k = items.iter().find(|k| k["name"] == name).unwrap();
        assert_eq!(k["last_used_at"], Value::Null, "{backend}: {name}");
    }
    // A use more than a minute after the last one is written. The row is changed behind the
    // server's back: its key cache sees the change after its time to live (1 s, API.md "API
    // keys: lookups from a per-replica cache").
    app.exec_sql(&format!(
        "UPDATE api_keys SET last_used_at = '2000-01-01 00:00:00.000000' WHERE id = '{}'",
        created["id"].as_str().unwrap()
    ))
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let (_, items) = list_keys(&app, &app.owner.key).await;
    assert_eq!(
        last_used(&items),
        "2000-01-01T00:00:00.000000Z",
        "{backend}"
    );
    let (status, _) = status_json(app.get(SETTINGS, Some(&secret)).await).await;
    assert_eq!(status, 200);
    let (_, items) = list_keys(&app, &app.owner.key).await;
    assert!(
        instant(&last_used(&items)) >= instant(&first),
        "{backend}: {}",
        last_used(&items)
    );
    app.stop().await;
}
