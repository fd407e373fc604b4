//! The server's integration tests, one binary: each module below was a test target of its own.
//! They start the real `switchboard` binary (`target/debug/switchboard`) on loopback ports over real
//! SQLite files and a real PostgreSQL and speak HTTP and websocket to it (`common`). Run one
//! file's tests with `cargo test -p switchboard --test integration <module>::`.

mod common;

#[path = "agent_canvas.rs"]
mod agent_canvas;
#[path = "agent_profile_fields.rs"]
mod agent_profile_fields;
#[path = "app_conversations_restart.rs"]
mod app_conversations_restart;
#[path = "automation_service.rs"]
mod automation_service;
#[path = "body_memory.rs"]
mod body_memory;
#[path = "budget.rs"]
mod budget;
#[path = "cli.rs"]
mod cli;
#[path = "cli_login.rs"]
mod cli_login;
#[path = "config_file.rs"]
mod config_file;
#[path = "config_keys.rs"]
mod config_keys;
#[path = "conversation_kept.rs"]
mod conversation_kept;
#[path = "crash_recovery.rs"]
mod crash_recovery;
#[path = "database_url_file.rs"]
mod database_url_file;
#[path = "disk_full.rs"]
mod disk_full;
#[path = "docker/main.rs"]
mod docker;
#[path = "event_catch_up/main.rs"]
mod event_catch_up;
#[path = "event_quotas.rs"]
mod event_quotas;
#[path = "events_restart.rs"]
mod events_restart;
#[path = "help.rs"]
mod help;
#[path = "idle_connections.rs"]
mod idle_connections;
#[path = "kube_deploy.rs"]
mod kube_deploy;
#[path = "kubernetes/main.rs"]
mod kubernetes;
#[path = "llm_relay/main.rs"]
mod llm_relay;
#[path = "members_admin.rs"]
mod members_admin;
#[path = "metrics_activity.rs"]
mod metrics_activity;
#[path = "one_address/main.rs"]
mod one_address;
#[path = "open_files.rs"]
mod open_files;
#[path = "operations/main.rs"]
mod operations;
#[path = "port_squatting.rs"]
mod port_squatting;
#[path = "postgres_restart.rs"]
mod postgres_restart;
#[path = "rate_limits.rs"]
mod rate_limits;
#[path = "sandbox_failures.rs"]
mod sandbox_failures;
#[path = "sandbox_grouping.rs"]
mod sandbox_grouping;
#[path = "sandbox_isolation.rs"]
mod sandbox_isolation;
#[path = "sandbox_processes.rs"]
mod sandbox_processes;
#[path = "sandbox_urls/main.rs"]
mod sandbox_urls;
#[path = "sandboxes_restart.rs"]
mod sandboxes_restart;
#[path = "sdk_member_llm.rs"]
mod sdk_member_llm;
#[path = "secrets.rs"]
mod secrets;
#[path = "serve.rs"]
mod serve;
#[path = "settings_replicas.rs"]
mod settings_replicas;
#[path = "settings_take_effect.rs"]
mod settings_take_effect;
#[path = "shutdown.rs"]
mod shutdown;
#[path = "sign_in_cli.rs"]
mod sign_in_cli;
#[path = "start_secrets_log.rs"]
mod start_secrets_log;
#[path = "switch_profile.rs"]
mod switch_profile;
#[path = "unprivileged.rs"]
mod unprivileged;
#[path = "user_settings/main.rs"]
mod user_settings;
#[path = "web_client.rs"]
mod web_client;
#[path = "workspace_routes/main.rs"]
mod workspace_routes;
