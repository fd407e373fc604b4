//! The services a sandbox exposes (issue 22, "Sandbox traffic through Switchboard"), as
//! OpenHands names them (reference app-server §3.1 `ExposedUrl`: `AGENT_SERVER`, `VSCODE`,
//! `WORKER_1`, `WORKER_2`): the agent server always, the others when the sandbox's spec says
//! so (`exposed_services`, [`crate::sandboxes::specs`]). A runtime gives each exposed service
//! a port and tells the sandbox which through the environment ([`ExposedService::env`]), and
//! keeps where Switchboard reaches it in the handle ([`ServiceEndpoint`]); the proxy forwards
//! `/sandboxes/{id}/{service}/…` there.

use serde::{Deserialize, Serialize};

/// A service of a sandbox, by OpenHands' name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ExposedService {
    /// `AGENT_SERVER`: the agent server, always exposed.
    #[serde(rename = "AGENT_SERVER")]
    AgentServer,
    /// `VSCODE`: the VS Code server the agent server runs when enabled
    /// (`OH_ENABLE_VSCODE`), on the port of `OH_VSCODE_PORT`.
    #[serde(rename = "VSCODE")]
    Vscode,
    /// `WORKER_1`: a port left to what the agent (or the user) runs, e.g. a web app.
    #[serde(rename = "WORKER_1")]
    Worker1,
    /// `WORKER_2`: a second such port.
    #[serde(rename = "WORKER_2")]
    Worker2,
}

impl ExposedService {
    /// Every service, in OpenHands' order.
    pub const ALL: [ExposedService; 4] = [
        ExposedService::AgentServer,
        ExposedService::Vscode,
        ExposedService::Worker1,
        ExposedService::Worker2,
    ];

    /// OpenHands' name: `AGENT_SERVER`, `VSCODE`, `WORKER_1`, `WORKER_2`.
    pub fn name(self) -> &'static str {
        match self {
            ExposedService::AgentServer => "AGENT_SERVER",
            ExposedService::Vscode => "VSCODE",
            ExposedService::Worker1 => "WORKER_1",
            ExposedService::Worker2 => "WORKER_2",
        }
    }

    /// The service named `name`, case-insensitive, `-` read as `_` (`worker-1`, `vscode`,
    /// `AGENT_SERVER`); `None` for any other name.
    pub fn parse(name: &str) -> Option<ExposedService> {
        let wanted = name.replace('-', "_");
        Self::ALL
            .into_iter()
            .find(|s| s.name().eq_ignore_ascii_case(&wanted))
    }

    /// A spec's `exposed_services` (a JSON array of OpenHands' names, exactly as written;
    /// absent or `null`: none): the services besides `AGENT_SERVER` (which is always exposed
    /// and may be listed), sorted, each once.
    ///
    /// # Errors
    /// What is wrong, in words, for anything but such an array.
    pub fn parse_list(value: Option<&serde_json::Value>) -> Result<Vec<ExposedService>, String> {
        const EXPECTED: &str = "expected an array of VSCODE, WORKER_1, WORKER_2";
        let items = match value {
            None | Some(serde_json::Value::Null) => return Ok(Vec::new()),
            Some(serde_json::Value::Array(items)) => items,
            Some(_) => return Err(EXPECTED.to_owned()),
        };
        let mut services = Vec::with_capacity(items.len());
        for item in items {
            let name = item.as_str().ok_or_else(|| EXPECTED.to_owned())?;
            // Exact names: a spec file is no place for guesses.
            let service = Self::ALL
                .into_iter()
                .find(|s| s.name() == name)
                .ok_or_else(|| format!("{name:?} is not a service ({EXPECTED})"))?;
            if service != ExposedService::AgentServer {
                services.push(service);
            }
        }
        services.sort_unstable();
        services.dedup();
        Ok(services)
    }

    /// The service's port inside a container of OpenHands' Docker runtime (reference
    /// app-server §3.3: 8000 `AGENT_SERVER`, 8001 `VSCODE`, 8011 `WORKER_1`, 8012
    /// `WORKER_2`); Switchboard's Docker runtime uses the same (the agent server's is
    /// configurable there).
    pub fn container_port(self) -> u16 {
        match self {
            ExposedService::AgentServer => 8000,
            ExposedService::Vscode => 8001,
            ExposedService::Worker1 => 8011,
            ExposedService::Worker2 => 8012,
        }
    }

    /// The variables telling the sandbox the service's port `port`: one named as the service
    /// (`WORKER_1=8011`, `AGENT_SERVER=8000`, as OpenHands' Docker runtime sets every exposed
    /// port), for `VSCODE` also the agent server's own `OH_VSCODE_PORT`, and for the agent
    /// server also `AGENT_SERVER_PORT`, the name programs in OpenHands' sandboxes read (the
    /// SDK's `OpenHandsCloudWorkspace` in `local_agent_server_mode` dials
    /// `http://localhost:$AGENT_SERVER_PORT`; issue 31). The agent server itself takes its
    /// port from its command line.
    pub fn env(self, port: u16) -> Vec<(&'static str, String)> {
        match self {
            ExposedService::AgentServer => vec![
                (self.name(), port.to_string()),
                ("AGENT_SERVER_PORT", port.to_string()),
            ],
            ExposedService::Vscode => vec![
                (self.name(), port.to_string()),
                ("OH_VSCODE_PORT", port.to_string()),
            ],
            ExposedService::Worker1 | ExposedService::Worker2 => {
                vec![(self.name(), port.to_string())]
            }
        }
    }
}

impl std::fmt::Display for ExposedService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where Switchboard reaches one service of a sandbox besides its agent server (whose URL is
/// [`RuntimeHandle::agent_server_url`](crate::sandboxes::runtime::RuntimeHandle::agent_server_url)),
/// kept in the runtime handle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceEndpoint {
    /// The service.
    pub service: ExposedService,
    /// Its base URL as Switchboard reaches it (`http://127.0.0.1:<port>`, or the container's
    /// address and port); never shown to clients.
    pub url: String,
    /// The port on Switchboard's host the runtime reserved for it (released on delete);
    /// the container's port when nothing is published.
    pub host_port: u16,
    /// The port inside the sandbox (the `port` of its exposed URL, reference app-server
    /// §3.1).
    pub sandbox_port: u16,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_ports_and_variables_are_openhands() {
        for (s, name, port) in [
            (ExposedService::AgentServer, "AGENT_SERVER", 8000),
            (ExposedService::Vscode, "VSCODE", 8001),
            (ExposedService::Worker1, "WORKER_1", 8011),
            (ExposedService::Worker2, "WORKER_2", 8012),
        ] {
            assert_eq!((s.name(), s.container_port()), (name, port));
            assert_eq!(ExposedService::parse(name), Some(s));
            assert_eq!(
                ExposedService::parse(&name.to_ascii_lowercase().replace('_', "-")),
                Some(s)
            );
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{name}\""));
        }
        assert_eq!(ExposedService::parse("worker_3"), None);
        assert_eq!(
            ExposedService::AgentServer.env(60000),
            [
                ("AGENT_SERVER", "60000".to_owned()),
                ("AGENT_SERVER_PORT", "60000".to_owned())
            ]
        );
        assert_eq!(
            ExposedService::Vscode.env(41000),
            [
                ("VSCODE", "41000".to_owned()),
                ("OH_VSCODE_PORT", "41000".to_owned())
            ]
        );
        assert_eq!(
            ExposedService::Worker2.env(8012),
            [("WORKER_2", "8012".to_owned())]
        );
    }

    #[test]
    fn spec_lists_are_exact_names_sorted_once() {
        use serde_json::json;
        let parse = |v: serde_json::Value| ExposedService::parse_list(Some(&v));
        assert_eq!(
            parse(json!(["WORKER_2", "AGENT_SERVER", "VSCODE", "WORKER_2"])),
            Ok(vec![ExposedService::Vscode, ExposedService::Worker2])
        );
        assert_eq!(ExposedService::parse_list(None), Ok(Vec::new()));
        assert_eq!(parse(json!(null)), Ok(Vec::new()));
        assert_eq!(
            parse(json!(["worker_1"])),
            Err(
                "\"worker_1\" is not a service (expected an array of VSCODE, WORKER_1, \
                 WORKER_2)"
                    .to_owned()
            )
        );
        assert!(parse(json!([1])).is_err());
        assert!(parse(json!({"VSCODE": true})).is_err());
    }
}
