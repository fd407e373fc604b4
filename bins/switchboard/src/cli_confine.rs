//! `serve`'s flags for how process sandboxes are confined (issue 18; docs/API.md, "What a
//! sandbox can reach"): `bwrap` and the sandboxes' users, and each sandbox's network of its
//! own (issue 33).

use clap::{Args, ValueEnum};
use switchboard_domain::sandboxes::limits::{self, Cpus, ResourceLimits};
use switchboard_sandbox::confine::egress::Destination;
use switchboard_sandbox::confinement::Confinement;

use crate::cli_help::heading;

#[derive(Args, Clone)]
pub struct ConfineArgs {
    /// How process sandboxes are confined: bwrap (each in namespaces of its own, seeing only the system read-only and its own directory, whose workspace/ it also sees at /workspace; as a user of its own when Switchboard runs as root) or none (single-user: sandboxes run as Switchboard's user and can read its data; warned at every start; no /workspace: a conversation start with a working_dir under /workspace is refused with 422, pass the sandbox's DATA_DIR/sandboxes/ID/workspace/project instead).
    #[arg(
        long,
        env = "SWITCHBOARD_PROCESS_ISOLATION",
        value_enum,
        default_value = "bwrap",
        help_heading = heading::PROCESS
    )]
    pub process_isolation: ProcessIsolation,
    /// The user and group ids given to process sandboxes when Switchboard runs as root, FIRST-LAST: one per sandbox, never two sandboxes at once.
    #[arg(long, env = "SWITCHBOARD_SANDBOX_UID_RANGE", default_value_t = switchboard_sandbox::DEFAULT_UID_RANGE, help_heading = heading::PROCESS)]
    pub sandbox_uid_range: switchboard_sandbox::UidRange,
    /// The network of a confined process sandbox: isolated (a network namespace of its own, connected by pasta, Debian package passt: the internet through Switchboard's host, but none of the host's loopback services (its database, Redis, other sandboxes) except its webhook URL's port and the --sandbox-host-port ones, and no port another sandbox is given) or host (the host's network: every loopback service of the host, and any free port, which another sandbox may be about to be given; Switchboard then checks who listens before it sends). For bridged Docker sandboxes, isolated loads the same egress rules on the Docker host's bridge (as root, daemon on this host), and host loads none).
    #[arg(
        long,
        env = "SWITCHBOARD_SANDBOX_NETWORK",
        value_enum,
        default_value = "isolated",
        help_heading = heading::SANDBOXES
    )]
    pub sandbox_network: SandboxNetwork,
    /// A port of the host's loopback that isolated process sandboxes may reach at 127.0.0.1:PORT (repeatable; default none besides the webhook URL's port): an LLM gateway or a git server that listens on the host's loopback. Bridged Docker sandboxes may reach it at host.docker.internal:PORT (the service must also listen on the bridge's gateway).
    #[arg(
        long = "sandbox-host-port",
        env = "SWITCHBOARD_SANDBOX_HOST_PORTS",
        value_name = "PORT",
        value_delimiter = ',',
        value_parser = clap::value_parser!(u16).range(1..),
        help_heading = heading::SANDBOXES
    )]
    pub sandbox_host_ports: Vec<u16>,
    /// A range (CIDR), address or host name that isolated process sandboxes and bridged Docker sandboxes may reach although it is private, link-local or reserved, e.g. an internal git server or LLM gateway (repeatable; a host name stands for the addresses it resolves to when a sandbox starts; the host's DNS servers and an IP webhook URL's address are always allowed).
    #[arg(
        long = "sandbox-egress-allow",
        env = "SWITCHBOARD_SANDBOX_EGRESS_ALLOW",
        value_name = "CIDR|HOST",
        value_delimiter = ',',
        help_heading = heading::SANDBOXES
    )]
    pub sandbox_egress_allow: Vec<Destination>,
    /// A range (CIDR), address or host name that isolated process sandboxes and bridged Docker sandboxes may not reach, even a public one (repeatable; wins over --sandbox-egress-allow). Private, link-local (cloud metadata, 169.254.169.254) and reserved ranges are refused by default.
    #[arg(
        long = "sandbox-egress-deny",
        env = "SWITCHBOARD_SANDBOX_EGRESS_DENY",
        value_name = "CIDR|HOST",
        value_delimiter = ',',
        help_heading = heading::SANDBOXES
    )]
    pub sandbox_egress_deny: Vec<Destination>,
    // Issue 33, "Resources" (docs/API.md, "A sandbox's share of the host").
    /// Memory a process or Docker sandbox may use, in MiB, when its spec gives no memory_mb: past it the kernel's OOM killer acts inside that sandbox only (process sandboxes: their control group's memory limit, swap included; Docker: --memory); 0: no limit.
    #[arg(long, env = "SWITCHBOARD_SANDBOX_MEMORY_MB", default_value_t = 4096, value_parser = limits::parse_default_memory_mb, help_heading = heading::SANDBOXES)]
    pub sandbox_memory_mb: u64,
    /// CPUs a process or Docker sandbox may use when its spec gives no cpus (e.g. 1.5); default none (process sandboxes still share the CPU as equal groups, so many busy threads in one do not starve another).
    #[arg(long, env = "SWITCHBOARD_SANDBOX_CPUS", value_parser = Cpus::parse, help_heading = heading::SANDBOXES)]
    pub sandbox_cpus: Option<Cpus>,
    /// Processes and threads a process sandbox may hold together (its control group's pids.max): a fork bomb stops there; 0: no cap. Docker sandboxes: --docker-pids-limit.
    #[arg(long, env = "SWITCHBOARD_SANDBOX_PIDS_LIMIT", default_value_t = 1024, help_heading = heading::PROCESS)]
    pub sandbox_pids_limit: u64,
    /// Size, in MiB, of a confined process sandbox's own file system (its directory: its /workspace, home and log, an ext4 image mounted over it, sparse on the host): filling it is ENOSPC inside that sandbox, never on Switchboard's database; 0: sandboxes write on the data directory's file system.
    #[arg(
        long,
        env = "SWITCHBOARD_SANDBOX_WORKSPACE_MB",
        default_value_t = 20480,
        help_heading = heading::PROCESS
    )]
    pub sandbox_workspace_mb: u64,
}

impl ConfineArgs {
    /// The confinement these flags ask for.
    pub fn confinement(&self) -> Confinement {
        Confinement {
            bwrap: self.process_isolation == ProcessIsolation::Bwrap,
            uid_range: self.sandbox_uid_range,
            isolated_network: self.sandbox_network == SandboxNetwork::Isolated,
            host_ports: self.sandbox_host_ports.clone(),
            egress_allow: self.sandbox_egress_allow.clone(),
            egress_deny: self.sandbox_egress_deny.clone(),
            pids_limit: self.sandbox_pids_limit,
            workspace_mb: self.sandbox_workspace_mb,
        }
    }

    /// The operator's default limits, for specs that give none.
    pub fn default_limits(&self) -> ResourceLimits {
        ResourceLimits {
            memory_mb: (self.sandbox_memory_mb > 0).then_some(self.sandbox_memory_mb),
            cpus: self.sandbox_cpus,
        }
    }
}

/// `--process-isolation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProcessIsolation {
    /// Each sandbox in namespaces of its own with bwrap and, when Switchboard runs as root, as
    /// a user of its own.
    Bwrap,
    /// None: sandboxes run as Switchboard's user and see what it sees (single-user only);
    /// they have no `/workspace` of their own (docs/API.md).
    None,
}

/// `--sandbox-network`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SandboxNetwork {
    /// A network namespace of its own per sandbox, connected by `pasta`.
    Isolated,
    /// The host's network, shared with Switchboard and every other sandbox.
    Host,
}
