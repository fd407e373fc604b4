//! Request-body parsing cost (issue 37): the JSON of each body already read, then parsed into
//! its type with every rule judged, valid and invalid. Bodies: the conversation start and the
//! member settings patch (the two largest), and the profile and secret bodies read through the
//! typed-body path. Run with `just bench-bodies`; numbers in docs/benchmarks.md.

use divan::{Bencher, black_box};
use serde_json::{Value, json};
use switchboard_domain::conversations::app::{AppConversationPatch, SendMessage};
use switchboard_domain::conversations::start_request::parse_start_request;
use switchboard_domain::typed_body::parse;
use switchboard_domain::user_secrets::{NewSecret, ProviderTokensRequest, SecretMeta};
use switchboard_domain::user_settings::patch::{SettingsPatch, SettingsRequest};
use switchboard_domain::user_settings::profiles::RenameProfileRequest;

fn main() {
    divan::main();
}

fn start_body() -> Value {
    json!({
        "sandbox_id": null,
        "initial_message": {"role": "user", "content": [{"type": "text", "text": "Fix the failing test in crates/api"}], "run": true},
        "selected_repository": "octo/hello",
        "selected_branch": "main",
        "git_provider": "github",
        "title": "Fix the test",
        "trigger": "gui",
        "agent_type": "default",
        "llm_model": "openai/gpt-4o",
    })
}

fn settings_body() -> Value {
    json!({
        "agent_settings_diff": {
            "llm": {"model": "anthropic/claude-sonnet-4", "base_url": "https://llm.example.com", "api_key": "sk-test"},
            "condenser": {"enabled": true, "max_size": 120},
        },
        "conversation_settings_diff": {"confirmation_mode": false, "max_iterations": 200},
        "language": "en",
        "enable_sound_notifications": true,
    })
}

#[divan::bench]
fn start_request(b: Bencher<'_, '_>) {
    let body = start_body();
    b.bench(|| parse_start_request(black_box(&body)).is_ok());
}

#[divan::bench]
fn start_request_invalid(b: Bencher<'_, '_>) {
    let mut body = start_body();
    body["trigger"] = json!("nonsense");
    b.bench(|| parse_start_request(black_box(&body)).is_err());
}

#[divan::bench]
fn settings_patch(b: Bencher<'_, '_>) {
    let body = settings_body();
    b.bench(|| {
        parse::<SettingsRequest>(black_box(&body))
            .map(SettingsPatch::from)
            .is_ok()
    });
}

#[divan::bench]
fn rename_profile(b: Bencher<'_, '_>) {
    let body = json!({"new_name": "claude-fast"});
    b.bench(|| parse::<RenameProfileRequest>(black_box(&body)).is_ok());
}

#[divan::bench]
fn rename_profile_invalid(b: Bencher<'_, '_>) {
    let body = json!({"new_name": "no spaces allowed"});
    b.bench(|| parse::<RenameProfileRequest>(black_box(&body)).is_err());
}

#[divan::bench]
fn new_secret(b: Bencher<'_, '_>) {
    let body =
        json!({"name": "API_TOKEN", "value": "v".repeat(64), "description": "the deploy token"});
    b.bench(|| parse::<NewSecret>(black_box(&body)).is_ok());
}

#[divan::bench]
fn new_secret_invalid(b: Bencher<'_, '_>) {
    let body = json!({"name": "a/b", "value": ""});
    b.bench(|| parse::<NewSecret>(black_box(&body)).is_err());
}

#[divan::bench]
fn secret_update(b: Bencher<'_, '_>) {
    let body = json!({"name": "API_TOKEN", "description": "rotated monthly"});
    b.bench(|| parse::<SecretMeta>(black_box(&body)).is_ok());
}

#[divan::bench]
fn provider_tokens(b: Bencher<'_, '_>) {
    let body = json!({"provider_tokens": {
        "github": {"token": "ghp_0123456789abcdef"},
        "gitlab": {"token": "", "host": "git.example.com:8443"},
    }});
    b.bench(|| parse::<ProviderTokensRequest>(black_box(&body)).is_ok());
}

fn patch_body() -> Value {
    json!({"title": "Fix the flaky test", "public": false, "selected_branch": "main", "git_provider": "github"})
}

fn message_body() -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": "Now run the whole suite"}], "run": true})
}

#[divan::bench]
fn conversation_patch(b: Bencher<'_, '_>) {
    let body = patch_body();
    b.bench(|| parse::<AppConversationPatch>(black_box(&body)).is_ok());
}

#[divan::bench]
fn send_message(b: Bencher<'_, '_>) {
    let body = message_body();
    b.bench(|| parse::<SendMessage>(black_box(&body)).is_ok());
}

#[divan::bench]
fn send_message_invalid(b: Bencher<'_, '_>) {
    let body = json!({"role": "agent", "content": [], "run": 1, "x": 0});
    b.bench(|| parse::<SendMessage>(black_box(&body)).is_err());
}

/// An Agent Canvas agent profile of the `openhands` kind.
fn agent_profile_body() -> Value {
    json!({
        "agent_kind": "openhands", "llm_profile_ref": "fast", "tools": [{"name": "terminal"}, {"name": "file_editor"}],
        "mcp_server_refs": ["github"], "condenser": {"max_size": 120}, "tool_concurrency_limit": 2,
        "system_message_suffix": "Be brief.",
    })
}

#[divan::bench]
fn agent_profile(b: Bencher<'_, '_>) {
    let body = agent_profile_body();
    b.bench(|| switchboard_domain::agent_profile_body::read(black_box(&body)).is_ok());
}

#[divan::bench]
fn agent_profile_invalid(b: Bencher<'_, '_>) {
    let mut body = agent_profile_body();
    body["tool_concurrency_limit"] = json!(0);
    b.bench(|| switchboard_domain::agent_profile_body::read(black_box(&body)).is_err());
}

#[divan::bench]
fn provider_connection(b: Bencher<'_, '_>) {
    let body = json!({"display_name": "Team OpenAI", "provider": "openai", "api_key": "sk-conn-1", "base_url": "https://llm.example.com/v1"});
    b.bench(|| {
        switchboard_domain::org_profiles::ConnectionInput::read(black_box(&body), true).is_ok()
    });
}
