//! Sandboxes and sandbox specs as OpenHands writes them (reference app-server §3.1, §4):
//! `SandboxInfo`, `SandboxPage`, `ExposedUrl`, `SandboxSpecInfo`, `SandboxSpecInfoPage`, and
//! the `{"success": true}` of pause, resume and delete.

use std::collections::BTreeMap;

use serde::Serialize;
use switchboard_domain::sandboxes::records::{Page, SandboxView};
use switchboard_domain::sandboxes::runtime::SandboxStatus;
use switchboard_domain::sandboxes::specs::SandboxSpec;
use switchboard_domain::time_input::format_rfc3339_micros;
use utoipa::ToSchema;

use crate::sandbox_proxy::public::PublicUrls;

/// A sandbox's status (reference app-server §3.1).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SandboxStatusName {
    /// Started or resumed; its agent server does not answer yet.
    Starting,
    /// Running and answering `/alive`.
    Running,
    /// Paused.
    Paused,
    /// Failed to start, or stopped answering past the health grace.
    Error,
    /// Its process is gone.
    Missing,
}

impl From<SandboxStatus> for SandboxStatusName {
    fn from(s: SandboxStatus) -> Self {
        match s {
            SandboxStatus::Starting => SandboxStatusName::Starting,
            SandboxStatus::Running => SandboxStatusName::Running,
            SandboxStatus::Paused => SandboxStatusName::Paused,
            SandboxStatus::Error => SandboxStatusName::Error,
            SandboxStatus::Missing => SandboxStatusName::Missing,
        }
    }
}

/// A URL a sandbox exposes.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExposedUrl {
    /// `AGENT_SERVER`, and `VSCODE`, `WORKER_1`, `WORKER_2` where the sandbox's spec exposes
    /// them.
    pub name: String,
    /// Where the service answers, through Switchboard: the agent server at
    /// `<scheme>://<public host>:<port>` in the port form (the default), else under
    /// Switchboard's public URL (`<public-url>/sandboxes/{sandbox_id}/agent_server`,
    /// `…/worker_1`) or on a host of its own (API.md, Sandbox URLs).
    pub url: String,
    /// The port inside the sandbox.
    pub port: u16,
}

/// A sandbox (OpenHands' `SandboxInfo`).
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxInfo {
    /// Sandbox id (UUID).
    #[schema(format = Uuid)]
    pub id: String,
    /// Its creator (user UUID); `null` for none.
    #[schema(format = Uuid)]
    pub created_by_user_id: Option<String>,
    /// The sandbox spec it runs (`external` for a registered agent server).
    pub sandbox_spec_id: String,
    /// The status from the last reconciliation.
    pub status: SandboxStatusName,
    /// Why the sandbox is `ERROR` or `MISSING`, in words its user can act on (at most about
    /// a kilobyte: the reason, and the last lines of its log when the runtime keeps one);
    /// `null` for any other status. An addition to OpenHands' `SandboxInfo`.
    pub status_message: Option<String>,
    /// The agent server's `X-Session-API-Key`: only when `RUNNING`, and only for its creator
    /// and the organization's admins and owners; `null` otherwise.
    pub session_api_key: Option<String>,
    /// `AGENT_SERVER` (first) and the other services its spec exposes, when `RUNNING` (and run
    /// by Switchboard); `null` otherwise.
    pub exposed_urls: Option<Vec<ExposedUrl>>,
    /// Creation time (RFC 3339, UTC).
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl SandboxInfo {
    /// The sandbox as shown, its URLs written under `public`.
    pub fn present(v: SandboxView, public: PublicUrls<'_>) -> Self {
        SandboxInfo {
            id: v.id.to_string(),
            created_by_user_id: v.created_by_user_id.map(|u| u.to_string()),
            sandbox_spec_id: v.sandbox_spec_id,
            status: v.status.into(),
            status_message: v.status_message,
            session_api_key: v.session_api_key.map(|k| k.expose().to_owned()),
            exposed_urls: v.exposed_urls.map(|urls| {
                urls.into_iter()
                    .map(|u| ExposedUrl {
                        url: public.rewrite(&u.url, v.id, &u.name),
                        name: u.name,
                        port: u.port,
                    })
                    .collect()
            }),
            created_at: format_rfc3339_micros(v.created_at),
        }
    }
}

/// A page of sandboxes (OpenHands' `SandboxPage`).
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxPage {
    /// The sandboxes, newest first.
    pub items: Vec<SandboxInfo>,
    /// The `page_id` of the next page; `null` on the last.
    pub next_page_id: Option<String>,
}

impl SandboxPage {
    /// The page as shown (see [`SandboxInfo::present`]).
    pub fn present(p: Page<SandboxView>, public: PublicUrls<'_>) -> Self {
        SandboxPage {
            items: p
                .items
                .into_iter()
                .map(|v| SandboxInfo::present(v, public))
                .collect(),
            next_page_id: p.next_page_id,
        }
    }
}

/// A sandbox spec (OpenHands' `SandboxSpecInfo`).
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxSpecInfo {
    /// Spec id.
    pub id: String,
    /// The program and its arguments (Switchboard appends `--host 127.0.0.1 --port <port>`).
    pub command: Option<Vec<String>>,
    /// When Switchboard loaded it (RFC 3339, UTC).
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Variables the sandbox starts with; values of names containing `KEY`, `SECRET`,
    /// `TOKEN` or `PASSWORD` are shown as `**********`.
    pub initial_env: BTreeMap<String, String>,
    /// Where the command runs, inside the sandbox's directory.
    pub working_dir: String,
}

/// Whether a variable's name suggests a secret, whose value the API never shows.
fn secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "SECRET", "TOKEN", "PASSWORD"]
        .iter()
        .any(|w| upper.contains(w))
}

impl From<SandboxSpec> for SandboxSpecInfo {
    fn from(s: SandboxSpec) -> Self {
        SandboxSpecInfo {
            id: s.id,
            command: Some(s.command),
            created_at: format_rfc3339_micros(s.created_at),
            initial_env: s
                .initial_env
                .into_iter()
                .map(|(k, v)| {
                    let v = if secret_name(&k) {
                        "**********".to_owned()
                    } else {
                        v
                    };
                    (k, v)
                })
                .collect(),
            working_dir: s.working_dir,
        }
    }
}

/// A page of sandbox specs (OpenHands' `SandboxSpecInfoPage`).
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxSpecInfoPage {
    /// The specs, in the configured order.
    pub items: Vec<SandboxSpecInfo>,
    /// The `page_id` of the next page; `null` on the last.
    pub next_page_id: Option<String>,
}

/// The optional body of `POST /api/v1/sandboxes`.
#[derive(Debug, Serialize, ToSchema)]
pub struct StartSandboxRequest {
    /// The spec to run (the query parameter of the same name wins); default the first.
    pub sandbox_spec_id: Option<String>,
}

/// `{"success": true}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Success {
    /// Always `true`.
    pub success: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_values_are_hidden() {
        let spec = SandboxSpec {
            id: "s".into(),
            command: vec!["x".into()],
            initial_env: [("LLM_API_KEY", "sk-1"), ("MODE", "fast"), ("gh_token", "t")]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            working_dir: ".".into(),
            limits: Default::default(),
            created_at: time::OffsetDateTime::UNIX_EPOCH,
            runtime: None,
            exposed_services: Vec::new(),
            egress: Default::default(),
        };
        let info = SandboxSpecInfo::from(spec);
        assert_eq!(info.initial_env["LLM_API_KEY"], "**********");
        assert_eq!(info.initial_env["gh_token"], "**********");
        assert_eq!(info.initial_env["MODE"], "fast");
    }
}
