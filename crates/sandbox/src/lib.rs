//! # switchboard-sandbox
//!
//! Switchboard's sandbox runtimes, implementing the domain's port
//! ([`switchboard_domain::sandboxes::runtime`]):
//!
//! - [`ProcessRuntime`]: each sandbox an agent server run as a local process in a process
//!   group of its own, with a clean environment, supervised through `/proc` (issue 9);
//!   confined by `bwrap` in namespaces of its own and, as root, as a user of its own
//!   ([`confine`], issue 18); what the operator asks checked here at start
//!   ([`confinement`]).
//! - [`DockerRuntime`]: each sandbox a container of the spec's image, run by the Docker
//!   Engine through `bollard`, labelled as this installation's, its agent server published on
//!   loopback only (issue 12).
//! - [`KubernetesRuntime`]: each sandbox a pod of the spec's image with a claim for its
//!   workspace, placed by Kubernetes' scheduler on any node of a cluster, observed from
//!   watch-fed caches (issue 32).
//! - [`HttpAgentServerClient`]: the blocking HTTP client that probes agent servers
//!   (`GET /alive`), starts and drives their conversations, and reads their conversations and
//!   events back for the pull path ([`agent_events`], issue 19).
//! - [`WsEventStreams`]: the stream path's client of the agent servers' event sockets
//!   ([`event_streams`], issue 19), driven by the caller's job without a thread of its own.
//!
//! - Their background work as [`switchboard_domain::jobs::Job`]s for the binary's supervisor:
//!   [`ProcessRuntime::log_cap_job`], and the Docker image pull and orphan sweep
//!   ([`docker::upkeep`]).
//! - [`wiring`]: all of them wired from the operator's options (plain values the binary fills
//!   from its flags) into the sandbox service's configuration, with their jobs.
//!
//! Every call blocks: async callers run them on a blocking pool.

pub mod agent_client;
pub mod agent_events;
pub mod agent_workspace;
pub mod cgroups;
pub mod confine;
pub mod confinement;
pub mod docker;
pub mod event_streams;
pub mod kubernetes;
pub mod launch;
pub mod listeners;
pub mod logs;
pub mod orphans;
pub mod ports;
pub mod process;
pub mod procfs;
pub mod uids;
pub mod wiring;
pub mod workspace_quota;

pub use agent_client::HttpAgentServerClient;
pub use cgroups::{Cgroups, SandboxGroups};
pub use confine::{Bwrap, Isolation, NetworkPolicy, Pasta, Unconfinable};
pub use docker::{DockerConfig, DockerError, DockerNetwork, DockerRuntime};
pub use event_streams::WsEventStreams;
pub use kubernetes::{KubernetesConfig, KubernetesError, KubernetesRuntime};
pub use process::{ProcessIdentity, ProcessRuntime};
pub use uids::{DEFAULT_UID_RANGE, UidRange};
pub use workspace_quota::WorkspaceQuota;
