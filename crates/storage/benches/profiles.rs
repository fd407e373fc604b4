//! Named profiles benchmark (`just bench-profiles`; results in docs/benchmarks.md, "Named
//! profiles"). Not a CI test.
//!
//! For each backend (a fresh SQLite file and a fresh PostgreSQL database from the testkit):
//! one member holding `SB_BENCH_PROFILES` LLM profiles (default 50, the limit) and as many
//! agent profiles, then p50/p99 over `SB_BENCH_ITERS` calls (default 300), through the storage
//! ports the services call: the member's settings read (with their LLM profiles), a settings
//! save that changes no profile, a save of one LLM profile, a rename of one, the agent
//! profiles read, and a save of one agent profile.

use serde_json::{Map, json};
use switchboard_domain::OrgContext;
use switchboard_domain::agent_profiles::StoredAgentProfile;
use switchboard_domain::ports::{AgentProfileStore, UserSettingsStore};
use switchboard_domain::user_settings::StoredProfile;
use switchboard_testkit::Backend;
use time::OffsetDateTime;

#[path = "common/mod.rs"]
mod common;
use common::{env_num, print_table, time_it, world};

fn config(model: &str) -> Map<String, serde_json::Value> {
    json!({"model": model, "base_url": "https://llm.example/v1", "temperature": 0.2})
        .as_object()
        .cloned()
        .unwrap()
}

fn run(backend: Backend, n: u64, iters: u64) {
    let (_db, store, services, boot) = world(backend);
    let ctx: OrgContext = services
        .auth()
        .authenticate_in(&boot.api_key, Some(boot.org_id))
        .unwrap();
    let (org, user) = (boot.org_id, ctx.principal.user_id);
    let now = OffsetDateTime::now_utc;
    store
        .update_user_settings(org, user, now(), &mut |rec| {
            rec.profiles = (0..n)
                .map(|i| StoredProfile {
                    name: format!("llm-{i:03}"),
                    config: config("m"),
                    api_key_sealed: Some(format!("sealed-{i:03}-{}", "x".repeat(80))),
                })
                .collect();
            rec.active_profile = Some("llm-000".into());
            Ok(true)
        })
        .unwrap();
    store
        .update_agent_profiles(org, user, now(), &mut |set| {
            set.profiles = (0..n)
                .map(|i| StoredAgentProfile {
                    id: uuid::Uuid::new_v4(),
                    name: format!("agent-{i:03}"),
                    revision: 0,
                    agent_kind: "openhands".into(),
                    body: json!({"llm_profile_ref": "llm-000", "condenser": {"max_size": 240},
                        "tools": [{"name": "terminal"}], "schema_version": 3})
                    .as_object()
                    .cloned()
                    .unwrap(),
                })
                .collect();
            set.active_id = Some(set.profiles[0].id);
            Ok(true)
        })
        .unwrap();
    let mut rows = Vec::new();
    rows.push((
        "member settings read (with the LLM profiles)",
        time_it(iters, |_| {
            let rec = store.user_settings(org, user).unwrap().unwrap();
            assert_eq!(rec.profiles.len() as u64, n);
        }),
    ));
    rows.push((
        "settings save, no profile changed",
        time_it(iters, |i| {
            store
                .update_user_settings(org, user, now(), &mut |rec| {
                    rec.agent_settings.insert("bench".into(), json!(i));
                    Ok(true)
                })
                .unwrap();
        }),
    ));
    rows.push((
        "LLM profile save (one changed)",
        time_it(iters, |i| {
            store
                .update_user_settings(org, user, now(), &mut |rec| {
                    let p = &mut rec.profiles[(i % n) as usize];
                    p.config = config(&format!("m-{i}"));
                    Ok(true)
                })
                .unwrap();
        }),
    ));
    rows.push((
        "LLM profile rename",
        time_it(iters, |i| {
            store
                .update_user_settings(org, user, now(), &mut |rec| {
                    let last = rec.profiles.len() - 1;
                    let p = &mut rec.profiles[last];
                    p.name = format!("zz-{i:06}");
                    Ok(true)
                })
                .unwrap();
        }),
    ));
    rows.push((
        "agent profiles read",
        time_it(iters, |_| {
            let set = store.agent_profiles(org, user).unwrap();
            assert_eq!(set.profiles.len() as u64, n);
        }),
    ));
    rows.push((
        "agent profile save (one changed)",
        time_it(iters, |i| {
            store
                .update_agent_profiles(org, user, now(), &mut |set| {
                    let p = &mut set.profiles[(i % n) as usize];
                    p.revision += 1;
                    p.body
                        .insert("system_message_suffix".into(), json!(format!("s{i}")));
                    Ok(true)
                })
                .unwrap();
        }),
    ));
    let title = format!("{backend}: {n} LLM profiles and {n} agent profiles, {iters} calls each");
    print_table(&title, &rows);
}

fn main() {
    let n = env_num("SB_BENCH_PROFILES", 50);
    let iters = env_num("SB_BENCH_ITERS", 300);
    for backend in Backend::ALL {
        run(backend, n, iters);
    }
}
