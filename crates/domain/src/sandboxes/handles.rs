//! What a runtime must persist to find a sandbox again ([`RuntimeHandle`]); reading it back
//! is the runtime port's (`RuntimeHandle::from_json`, `RuntimeHandle::data_of`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::sandboxes::services::ServiceEndpoint;

/// What must be persisted to find a sandbox again, also after a Switchboard restart. Stored
/// as JSON text ([`RuntimeHandle::to_json`], [`RuntimeHandle::from_json`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeHandle {
    /// The runtime that made it (the runtime's `name()`, e.g. `process`).
    pub runtime: String,
    /// The agent server's base URL as Switchboard reaches it (`http://127.0.0.1:<port>`, or a
    /// container's network address).
    pub agent_server_url: String,
    /// The port on Switchboard's host (for a Docker container reached at its own network
    /// address, nothing being published: the container's port).
    pub host_port: u16,
    /// The port inside the sandbox (the `port` of the `AGENT_SERVER` exposed URL, reference
    /// app-server §3.1); equal to `host_port` for processes.
    pub sandbox_port: u16,
    /// The sandbox's directory on Switchboard's host (holds its log; removed on delete).
    pub working_dir: PathBuf,
    /// The project directory as the sandbox's own processes name it, where Switchboard's
    /// starts put a conversation's workspace (issue 31): `/workspace/project`
    /// ([`super::workspace_dirs::SANDBOX_PROJECT_DIR`]) where the sandbox has a `/workspace`
    /// of its own (a confined process, a container); for a process that shares Switchboard's file system (`--process-isolation none`) the same layout under
    /// its directory, `<working_dir>/workspace/project`. `None` in handles stored before
    /// (Switchboard's start then uses the agent server's own directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_dir: Option<String>,
    /// Runtime-specific identity, opaque to the domain (for processes: the pid and its start
    /// time from `/proc`, so a reused pid is never mistaken for the sandbox).
    #[serde(default)]
    pub data: serde_json::Value,
    /// The services the sandbox exposes besides its agent server (its spec's
    /// `exposed_services`, issue 22), each where Switchboard reaches it; empty for the agent
    /// server only (and in handles stored before there were any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<ServiceEndpoint>,
}

impl RuntimeHandle {
    /// The handle as JSON text, for storage.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a RuntimeHandle always serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_through_json() {
        let handle = RuntimeHandle {
            runtime: "process".into(),
            agent_server_url: "http://127.0.0.1:40001".into(),
            host_port: 40001,
            sandbox_port: 40001,
            working_dir: PathBuf::from("/data/sandboxes/x"),
            project_dir: None,
            data: serde_json::json!({"pid": 42, "start_time": 1234}),
            services: Vec::new(),
        };
        let text = handle.to_json();
        assert_eq!(RuntimeHandle::from_json(&text).unwrap(), handle);
        assert!(
            !text.contains("services") && !text.contains("project_dir"),
            "{text}: none, as handles stored before them"
        );
        let with = RuntimeHandle {
            project_dir: Some(super::super::workspace_dirs::SANDBOX_PROJECT_DIR.into()),
            services: vec![ServiceEndpoint {
                service: crate::sandboxes::services::ExposedService::Worker1,
                url: "http://127.0.0.1:40002".into(),
                host_port: 40002,
                sandbox_port: 40002,
            }],
            ..handle
        };
        assert_eq!(RuntimeHandle::from_json(&with.to_json()).unwrap(), with);
        assert!(matches!(
            RuntimeHandle::from_json("{\"runtime\":\"process\"}"),
            Err(crate::sandboxes::runtime::RuntimeError::BadHandle(_))
        ));
    }
}
