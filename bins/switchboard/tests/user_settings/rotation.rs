//! `switchboard secrets rotate-key` over every kind of sealed value the other steps stored
//! (sandboxes' session keys, start tasks' sealed requests, users' settings, profiles, secrets,
//! provider tokens, the organization's defaults, the LLM pass-through's routes): refused
//! while a server is connected (PostgreSQL), changes nothing when one value does not open,
//! then re-seals everything; the old key opens nothing, the new one everything, and a server
//! started with the new key file reads every value, its sandboxes still running under the
//! same installation id.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_domain::identity::sealing::{Sealer, from_hex};
use switchboard_domain::ports::SealedStore;
use switchboard_domain::services::binding_of;
use switchboard_storage::DieselStore;
use switchboard_testkit::Backend;

use crate::common::{cli, expect_error, expect_json, str_of, wait_sandbox_status};
use crate::user_settings::org_defaults::ORG_URL;
use crate::user_settings::relayed::{Chosen, assert_relayed};
use crate::user_settings::rig::{
    GITHUB_TOKEN, LLM_KEY, MCP_KEY, ORG_KEY, ORG_MCP_KEY, PROFILE_KEY, Rig, SECRET_VALUE, serve,
};
use crate::user_settings::starts::start;

/// Every sealed value: (where it belongs, the sealed text), sorted (PostgreSQL's row order
/// changes with updates).
fn sealed_values(url: &str) -> Vec<(String, String)> {
    let (store, _) = DieselStore::open(url, None).unwrap();
    let mut out = Vec::new();
    store
        .reseal_all(
            &mut |what, sealed| {
                out.push((format!("{what:?}"), sealed.to_owned()));
                Ok(sealed.to_owned())
            },
            None,
        )
        .unwrap();
    out.sort();
    out
}

/// How many sealed values `yes` opens and `no` does not (each under its binding).
fn opened_by(url: &str, yes: &Sealer, no: &Sealer) -> u64 {
    let (store, _) = DieselStore::open(url, None).unwrap();
    store
        .reseal_all(
            &mut |what, sealed| {
                let b = binding_of(what);
                assert!(yes.open(sealed, &b).is_ok(), "{what:?} does not open");
                assert!(
                    no.open(sealed, &b).is_err(),
                    "{what:?} opens with the other key"
                );
                Ok(sealed.to_owned())
            },
            None,
        )
        .unwrap()
}

pub fn sealer_of(text: &str) -> Sealer {
    let bytes = from_hex(text.lines().next().unwrap()).unwrap();
    Sealer::new(&bytes.try_into().unwrap())
}

fn sql(r: &Rig, backend: Backend, statement: &str) {
    let out = match backend {
        Backend::Sqlite => std::process::Command::new("sqlite3")
            .arg(r.db.url().trim_start_matches("sqlite://"))
            .arg(statement)
            .output(),
        Backend::Postgres => std::process::Command::new("psql")
            .args([r.db.url(), "-c", statement])
            .output(),
    }
    .unwrap();
    assert!(out.status.success(), "{statement}: {out:?}");
}

fn rotate(url: &str, key_file: &Path) -> crate::common::CliOutput {
    cli(
        url,
        &[
            "secrets",
            "rotate-key",
            "--secret-key-file",
            &key_file.display().to_string(),
        ],
    )
}

pub fn rotation(r: &mut Rig, backend: Backend, (mine, my_session): (&str, &str)) {
    let url = r.db.url().to_owned();
    let key_file = r._data.path().join("secret.key");
    let old_text = std::fs::read_to_string(&key_file).unwrap();
    if backend == Backend::Postgres {
        let e = expect_error(&rotate(&url, &key_file));
        assert!(e.contains("stop every server"), "{e}");
    }
    let bind = r.server.socket_addr().to_string();
    r.server.kill9();
    let before = sealed_values(&url);
    let kinds = |v: &[(String, String)], k: &str| v.iter().filter(|(w, _)| w.contains(k)).count();
    for k in [
        "SandboxSessionKey",
        "StartTask",
        "LlmApiKey",
        "SearchApiKey",
        "McpConfig",
        "ProfileApiKey",
        "CustomSecret",
        "ProviderToken",
        "Org(LlmApiKey",
        "Org(McpConfig",
        "Org(SearchApiKey",
        "Org(ProfileApiKey",
        "Org(ConnectionApiKey",
        "LlmRoute",
    ] {
        assert!(kinds(&before, k) > 0, "{backend}: no {k} in {before:?}");
    }

    a_failed_rotation_changes_nothing(r, backend, (&key_file, &old_text));
    assert_eq!(sealed_values(&url), before);
    rotated(
        r,
        backend,
        (&key_file, &old_text, before.len()),
        (mine, my_session),
        &bind,
    );
}

/// One value that does not open: the command fails, nothing changes, the key file stays; the
/// value restored after.
fn a_failed_rotation_changes_nothing(
    r: &Rig,
    backend: Backend,
    (key_file, old_text): (&Path, &str),
) {
    let url = r.db.url().to_owned();
    sql(
        r,
        backend,
        "UPDATE user_secrets SET value_sealed = value_sealed || '00' WHERE name = 'API_TOKEN'",
    );
    let corrupted = sealed_values(&url);
    let deadline = Instant::now() + Duration::from_secs(10);
    let e = loop {
        // PostgreSQL notices the killed server's connections going away within moments.
        let e = expect_error(&rotate(&url, key_file));
        if !e.contains("stop every server") || Instant::now() > deadline {
            break e;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        e.contains("nothing changed") && e.contains("CustomSecret") && !e.contains(SECRET_VALUE),
        "{backend}: {e}"
    );
    assert_eq!(sealed_values(&url), corrupted, "{backend}: rolled back");
    assert_eq!(std::fs::read_to_string(key_file).unwrap(), old_text);
    assert!(!r._data.path().join("secret.key.new").exists());
    sql(
        r,
        backend,
        "UPDATE user_secrets SET value_sealed = substr(value_sealed, 1, length(value_sealed) - 2) WHERE name = 'API_TOKEN'",
    );
}

/// The rotation, then a server with the new key file reading every value.
fn rotated(
    r: &mut Rig,
    backend: Backend,
    (key_file, old_text, count): (&Path, &str, usize),
    (mine, my_session): (&str, &str),
    bind: &str,
) {
    let url = r.db.url().to_owned();
    let old = sealer_of(old_text);
    let done = expect_json(&rotate(&url, key_file));
    assert_eq!(done["resealed"], json!(count), "{backend}: {done:?}");
    assert_eq!(str_of(&done, "key_id"), old.key_id());
    let new_text = std::fs::read_to_string(key_file).unwrap();
    assert_ne!(new_text.lines().next(), old_text.lines().next());
    assert_eq!(
        new_text.lines().nth(1),
        Some(format!("key-id {}", old.key_id()).as_str()),
        "the installation keeps its name"
    );
    let old_kept = r._data.path().join("secret.key.old");
    assert_eq!(std::fs::read_to_string(&old_kept).unwrap(), old_text);
    use std::os::unix::fs::PermissionsExt;
    for f in [key_file, old_kept.as_path()] {
        let mode = std::fs::metadata(f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", f.display());
    }
    let new = sealer_of(&new_text);
    assert_eq!(opened_by(&url, &new, &old), count as u64);
    // The installation's record names the new key (a server with the old one now refuses),
    // under the same installation id.
    let (store, _) = DieselStore::open(&url, None).unwrap();
    let record = store.installation().unwrap().expect("the record");
    assert_eq!(record.key_fingerprint, new.fingerprint(), "{backend}");
    assert_eq!(record.id, format!("sb-{}", old.key_id()), "{backend}");
    drop(store);

    // A server with the new key file reads every value; the sandbox kept running.
    r.server = serve(&url, r._data.path(), bind, r.git.port);
    let info = wait_sandbox_status(&r.server, &r.owner, mine, "RUNNING");
    assert_eq!(info["session_api_key"], json!(my_session), "{backend}");
    let read = |name: &str| {
        r.with_session(
            &format!("/api/v1/sandboxes/{mine}/settings/secrets/{name}"),
            Some(my_session),
            None,
        )
    };
    assert_eq!(read("API_TOKEN"), (200, SECRET_VALUE.to_owned()));
    assert_eq!(read("github_token"), (200, GITHUB_TOKEN.to_owned()));
    let (code, text) = r.with_session(
        "/api/v1/users/me?expose_secrets=true",
        Some(my_session),
        Some(&r.owner),
    );
    assert_eq!(code, 200, "{backend}: {text}");
    let me: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(me["llm_api_key"], LLM_KEY, "{backend}");
    assert_eq!(me["mcp_config"]["sse_servers"][0]["api_key"], MCP_KEY);
    assert_eq!(
        me["llm_profiles"]["profiles"]["quick"]["api_key"],
        PROFILE_KEY
    );
    let (sandbox, _, agent) = r.sandbox(&r.member);
    let c = start(r, &r.member, &sandbox, &agent, json!({}));
    let org = Chosen {
        model: "openai/org-model",
        upstream: ORG_URL,
        owner: "organization",
        key: ORG_KEY,
    };
    assert_relayed(r, backend, &c, &org);
    assert_eq!(
        c["agent"]["mcp_config"]["sse_servers"][0]["api_key"],
        ORG_MCP_KEY
    );
}
