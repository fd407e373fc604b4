//! Who reads what: the 401/403/404/409 matrix, a sandbox's reads of its owner's secrets and
//! `users/me?expose_secrets=true`, and the SDK's reads through `OpenHandsCloudWorkspace`.

use serde_json::{Value, json};
use switchboard_testkit::Backend;

use crate::common::{cli_json, client, str_of};
use crate::user_settings::rig::{GITHUB_TOKEN, MCP_KEY, PROFILE_KEY, Rig, SECRET_VALUE, detail};

pub fn auth_matrix(r: &Rig, backend: Backend) {
    let routes = [
        ("GET", "/api/v1/settings"),
        ("POST", "/api/v1/settings"),
        ("GET", "/api/v1/settings/profiles"),
        ("GET", "/api/v1/settings/profiles/quick"),
        ("POST", "/api/v1/settings/profiles/quick/activate"),
        ("GET", "/api/v1/secrets/search"),
        ("POST", "/api/v1/secrets"),
        ("DELETE", "/api/v1/secrets/API_TOKEN"),
        ("POST", "/api/v1/secrets/git-providers"),
        ("GET", "/api/keys/current"),
        ("GET", "/api/organizations"),
    ];
    let revoked = str_of(
        &cli_json(
            r.db.url(),
            &[
                "keys",
                "create",
                "--user-id",
                &user_of(r, &r.owner),
                "--org-id",
                &r.org,
            ],
        ),
        "api_key",
    )
    .to_owned();
    let (_, current) = r.get("/api/keys/current", &revoked);
    cli_json(
        r.db.url(),
        &["keys", "revoke", "--id", current["id"].as_str().unwrap()],
    );
    // The CLI's revocation reaches the server within the key cache's time to live (1 s,
    // API.md "API keys: lookups from a per-replica cache").
    let revoked_at = std::time::Instant::now();
    while r.get("/api/keys/current", &revoked).0 != 401 {
        assert!(revoked_at.elapsed() < std::time::Duration::from_millis(1500));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for (method, path) in routes {
        let body = (method == "POST").then(|| json!({}));
        let (code, _) = r.call(method, path, None, body.clone());
        assert_eq!(code, 401, "{backend}: no key: {method} {path}");
        let (code, e) = r.call(method, path, Some(&revoked), body.clone());
        assert_eq!(
            (code, detail(&e)),
            (401, "API key revoked"),
            "{backend}: {method} {path}"
        );
        // Another organization's member naming this organization.
        let resp = client()
            .request(
                reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
                r.server.url(path),
            )
            .header("X-Access-Token", &r.outsider)
            .header("X-Org-Id", &r.org)
            .json(&body.unwrap_or(Value::Null))
            .send()
            .unwrap();
        assert_eq!(
            resp.status().as_u16(),
            403,
            "{backend}: outsider: {method} {path}"
        );
    }
    // Organizations.
    let (code, orgs) = r.get("/api/organizations", &r.owner);
    assert_eq!(
        (code, &orgs["current_org_id"]),
        (200, &json!(r.org)),
        "{orgs}"
    );
    assert_eq!(orgs["items"][0]["role"], "owner");
    let (code, me) = r.get(&format!("/api/organizations/{}/me", r.org), &r.member);
    assert_eq!(
        (code, &me["role"], &me["llm_api_key"]),
        (200, &json!("member"), &Value::Null),
        "{me}"
    );
    let (_, me) = r.get(&format!("/api/organizations/{}/me", r.org), &r.owner);
    assert_eq!(me["llm_api_key"], "**********");
    let (code, _) = r.get(&format!("/api/organizations/{}/me", r.other_org), &r.owner);
    assert_eq!(code, 404, "{backend}: not a member");
    let (code, k) = r.get("/api/keys/current", &r.member);
    assert_eq!(
        (code, &k["org_id"], &k["bound_org_id"]),
        (200, &json!(r.org), &json!(r.org)),
        "{k}"
    );
}

pub fn user_of(r: &Rig, key: &str) -> String {
    r.get("/api/v1/users/me", key).1["user_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub fn sandbox_reads(r: &Rig, backend: Backend) -> (String, String, String) {
    let (mine, my_key, my_url) = r.sandbox(&r.owner);
    let (theirs, their_key, _) = r.sandbox(&r.member);
    let list = format!("/api/v1/sandboxes/{mine}/settings/secrets");
    let (code, text) = r.with_session(&list, Some(&my_key), None);
    assert_eq!(code, 200, "{backend}: {text}");
    let names: Value = serde_json::from_str(&text).unwrap();
    let names: Vec<&str> = names["secrets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["API_TOKEN", "DB_PASSWORD", "github_token"],
        "{backend}"
    );
    assert!(!text.contains(SECRET_VALUE));
    let (code, value) = r.with_session(&format!("{list}/API_TOKEN"), Some(&my_key), None);
    assert_eq!((code, value.as_str()), (200, SECRET_VALUE), "{backend}");
    let (code, value) = r.with_session(&format!("{list}/github_token"), Some(&my_key), None);
    assert_eq!((code, value.as_str()), (200, GITHUB_TOKEN));
    for (session, path, status) in [
        (None, format!("{list}/API_TOKEN"), 401),
        (Some("sbs_nope"), format!("{list}/API_TOKEN"), 401),
        (Some(their_key.as_str()), format!("{list}/API_TOKEN"), 403),
        (Some(their_key.as_str()), list.clone(), 403),
        (Some(my_key.as_str()), format!("{list}/NOPE"), 404),
        (
            Some(my_key.as_str()),
            format!("/api/v1/sandboxes/{theirs}/settings/secrets"),
            403,
        ),
    ] {
        let (code, text) = r.with_session(&path, session, None);
        assert_eq!(code, status, "{backend}: {path}: {text}");
        assert!(!text.contains(SECRET_VALUE));
        r.seen.borrow_mut().push(text);
    }
    // The member's sandbox lists the member's secrets: none.
    let (_, text) = r.with_session(
        &format!("/api/v1/sandboxes/{theirs}/settings/secrets"),
        Some(&their_key),
        None,
    );
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"secrets": []})
    );

    // users/me: the UserInfo fields, no key; with expose_secrets, the owner's own LLM only for
    // their API key with their running sandbox's session key.
    let (code, me) = r.get("/api/v1/users/me", &r.owner);
    assert_eq!(code, 200);
    assert_eq!(
        (&me["id"], &me["llm_api_key_set"]),
        (&me["user_id"], &json!(true)),
        "{me}"
    );
    assert!(me.get("llm_api_key").is_none(), "{me}");
    let exposed = "/api/v1/users/me?expose_secrets=true";
    for (session, key, status) in [
        (None, Some(r.owner.as_str()), 401),
        (Some(their_key.as_str()), Some(r.owner.as_str()), 403),
        (Some(my_key.as_str()), Some(r.member.as_str()), 403),
        (Some(my_key.as_str()), None, 401),
    ] {
        let (code, text) = r.with_session(exposed, session, key);
        assert_eq!(code, status, "{backend}: {text}");
        r.seen.borrow_mut().push(text);
    }
    let (code, text) = r.with_session(
        "/api/v1/users/me?expose_secrets=maybe",
        None,
        Some(&r.owner),
    );
    assert_eq!(code, 422, "{text}");
    let (code, text) = r.with_session(exposed, Some(&my_key), Some(&r.owner));
    assert_eq!(code, 200, "{backend}: {text}");
    let me: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (&me["llm_model"], &me["llm_api_key"]),
        (&json!("openai/profile-model"), &json!(PROFILE_KEY)),
        "{backend}: the active profile"
    );
    assert_eq!(me["mcp_config"]["sse_servers"][0]["api_key"], MCP_KEY);
    assert_eq!(
        me["llm_profiles"]["profiles"]["quick"]["api_key"],
        PROFILE_KEY
    );
    (mine, my_key, my_url)
}

/// The SDK's `OpenHandsCloudWorkspace` (openhands-workspace 1.58.2, unchanged), when this
/// machine has its venv: `get_llm()` answers the owner's model and key, `get_secrets()` their
/// secrets (each `LookupSecret` resolving to its value), `get_mcp_config()` their MCP server.
pub fn sdk_reads_the_members_settings(r: &Rig, backend: Backend) {
    let Some(python) = switchboard_testkit::sdk_workspace_python() else {
        eprintln!(
            "no openhands-workspace venv on this machine (scripts/e2e.sh installs it): the SDK check is skipped"
        );
        return;
    };
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts/e2e/sdk_user_settings.py");
    // The sandboxes' hosts resolve through a private /etc/hosts (a mount namespace of the SDK's
    // own), written as each sandbox appears: the wildcard DNS record of a deployment.
    let hosts = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(hosts.path(), "127.0.0.1 localhost\n").unwrap();
    let child = std::process::Command::new("unshare")
        .args(["--mount", "--", "sh", "-c"])
        .arg(format!(
            "mount --bind '{}' /etc/hosts && exec \"$0\" \"$@\"",
            hosts.path().display()
        ))
        .arg(python)
        .arg(script)
        .args([&r.server.address, &r.owner])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let waiter = std::thread::spawn(move || child.wait_with_output().unwrap());
    let mut named = std::collections::HashSet::new();
    while !waiter.is_finished() {
        let (_, page) = r.get("/api/v1/sandboxes/search", &r.owner);
        for s in page["items"].as_array().into_iter().flatten() {
            let id = s["id"].as_str().unwrap().to_owned();
            if named.insert(id.clone()) {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(hosts.path())
                    .unwrap();
                writeln!(f, "127.0.0.1 {id}-agent-server.sandboxes.test").unwrap();
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let out = waiter.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{backend}: the SDK failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    assert_eq!(
        (&v["model"], &v["api_key"]),
        (&json!("openai/profile-model"), &json!(PROFILE_KEY)),
        "{backend}: {v}"
    );
    assert_eq!(v["secrets"]["API_TOKEN"], SECRET_VALUE, "{backend}: {v}");
    assert_eq!(v["secrets"]["github_token"], GITHUB_TOKEN);
    let mcp = v["mcp"].to_string();
    assert!(
        mcp.contains("http://127.0.0.1:7/sse") && mcp.contains(MCP_KEY),
        "{backend}: get_mcp_config: {mcp}"
    );
}
