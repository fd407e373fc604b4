//! `serve`'s flags for the sandboxes (issue 9; docs/sandbox-specs.md) and the specs
//! (`serve` and `specs pull`), made into the sandbox crate's options
//! ([`switchboard_sandbox::wiring`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use switchboard_sandbox::wiring::{SandboxOptions, SpecOptions};

use crate::cli_help::heading;

// How Switchboard runs sandboxes (issue 9; docs/sandbox-specs.md).
#[derive(Args, Clone)]
pub struct SandboxArgs {
    #[command(flatten)]
    pub specs: SpecArgs,
    /// Switchboard's URL as clients and sandboxes reach it: sandboxes post webhooks to it + /api/v1/webhooks, and the API shows every sandbox's services under it + /sandboxes/{id}/{service} (exposed_urls, conversation_url, agent_server_url; default: the bound address).
    #[arg(long, env = "SWITCHBOARD_PUBLIC_URL", help_heading = heading::SERVER)]
    pub public_url: Option<String>,
    /// Switchboard's URL as sandboxes reach it, when it differs from --public-url (e.g. clients use `https://switchboard.example.com` through a TLS proxy, sandboxes on this host `http://127.0.0.1:3000`); they post webhooks to it + /api/v1/webhooks (default: --public-url).
    #[arg(long, env = "SWITCHBOARD_WEBHOOK_URL", help_heading = heading::SERVER)]
    pub webhook_url: Option<String>,
    /// Switchboard's URL as process sandboxes reach its LLM pass-through, when it differs from --webhook-url's (the pass-through is at it + /api/v1/llm-proxy; Docker and Kubernetes sandboxes use the address they post webhooks to). Default: --webhook-url, else --public-url.
    #[arg(long, env = "SWITCHBOARD_LLM_PROXY_URL", help_heading = heading::SERVER)]
    pub llm_proxy_url: Option<String>,
    /// A variable of Switchboard's environment to pass to every sandbox (repeatable; e.g. LLM_API_KEY). PATH, HOME and LANG always pass to processes (never to containers).
    #[arg(long = "sandbox-env", value_name = "NAME", env = "SWITCHBOARD_SANDBOX_ENV", value_delimiter = ',', help_heading = heading::SANDBOXES)]
    pub sandbox_env: Vec<String>,
    /// Do not stream events from the agent servers' own event sockets: events then arrive by the webhooks and the pull path only.
    #[arg(long, env = "SWITCHBOARD_NO_EVENT_STREAMS", help_heading = heading::SANDBOXES)]
    pub no_event_streams: bool,
    /// Seconds a sandbox may take to answer /alive after a start or resume before it is ERROR.
    #[arg(long, env = "SWITCHBOARD_SANDBOX_START_TIMEOUT", default_value = "120", help_heading = heading::SANDBOXES)]
    pub sandbox_start_timeout: u64,
    /// Running sandboxes per user; starting or resuming beyond it pauses the user's least recently used one.
    #[arg(long, env = "SWITCHBOARD_MAX_RUNNING_SANDBOXES", default_value = "5", value_parser = clap::value_parser!(u32).range(1..), help_heading = heading::SANDBOXES)]
    pub max_running_sandboxes: u32,
    /// Sandboxes holding resources (STARTING, RUNNING or PAUSED: paused ones keep their memory) per user; a start beyond it is 409 naming which to delete.
    #[arg(long, env = "SWITCHBOARD_MAX_SANDBOXES_PER_USER", default_value_t = switchboard_domain::sandboxes::settings::DEFAULT_MAX_SANDBOXES_PER_USER, value_parser = clap::value_parser!(u32).range(1..), help_heading = heading::SANDBOXES)]
    pub max_sandboxes_per_user: u32,
    /// Sandboxes holding resources per organization, for hosts shared between teams [default: unbounded].
    #[arg(long, env = "SWITCHBOARD_MAX_SANDBOXES_PER_ORG", value_parser = clap::value_parser!(u32).range(1..), help_heading = heading::SANDBOXES)]
    pub max_sandboxes_per_org: Option<u32>,
    /// Conversations one sandbox holds before a start grouped by its member's sandbox_grouping_strategy starts another (docs/API.md, Sandbox grouping).
    #[arg(long, env = "SWITCHBOARD_SANDBOX_MAX_CONVERSATIONS", default_value_t = switchboard_domain::sandboxes::grouping::DEFAULT_MAX_CONVERSATIONS_PER_SANDBOX, value_parser = clap::value_parser!(u32).range(1..), help_heading = heading::SANDBOXES)]
    pub sandbox_max_conversations: u32,
    /// Started, unowned sandboxes of the default spec kept ready; a start claims one at once.
    #[arg(long, env = "SWITCHBOARD_WARM_SANDBOXES", default_value = "0", help_heading = heading::WARM_POOL)]
    pub warm_sandboxes: u32,
    /// The key sealing session keys at rest (created 0600 if missing; refused if group or others can read it) [default: DATA_DIR/secret.key].
    #[arg(long, env = "SWITCHBOARD_SECRET_KEY_FILE", help_heading = heading::STORAGE)]
    pub secret_key_file: Option<PathBuf>,
    /// Cap on each process sandbox's log file (agent-server.log), in MiB, checked every second: over it, the log's last MiB replaces agent-server.log.1 and the log starts empty; 0 leaves logs unbounded. Containers' logs: Docker's json-file driver with the same cap.
    #[arg(long, env = "SWITCHBOARD_SANDBOX_LOG_MAX_MIB", default_value = "64", help_heading = heading::SANDBOXES)]
    pub sandbox_log_max_mib: u64,
    #[command(flatten)]
    pub confine: crate::cli_confine::ConfineArgs,
    /// A directory under which a conversation start may clone a local path or file:// URL (repeatable; default none); every sandbox (process or Docker) sees it read-only at the same path, so its repositories must be readable by others (docs/API.md, Repository sources).
    #[arg(long = "allow-local-repositories", value_name = "DIR", env = "SWITCHBOARD_ALLOW_LOCAL_REPOSITORIES", value_delimiter = ',', help_heading = heading::SANDBOXES)]
    pub allow_local_repositories: Vec<PathBuf>,
    /// The base URL an owner/repo of a git provider is cloned from, KEY=URL with KEY a provider name (github, gitlab, bitbucket, bitbucket_data_center, azure_devops, forgejo) or the host (host:port) a user stores with their token (repeatable; default none: the providers' public hosts, a stored host over https). For GitHub Enterprise or a self-hosted server on a private network; http:// is allowed here.
    #[arg(long = "git-provider-url", value_name = "KEY=URL", value_parser = switchboard_domain::conversations::provider_remote::parse_provider_url, env = "SWITCHBOARD_GIT_PROVIDER_URLS", value_delimiter = ',', help_heading = heading::SANDBOXES)]
    pub git_provider_urls: Vec<(String, String)>,
    #[command(flatten)]
    pub docker: crate::cli_docker::DockerArgs,
    #[command(flatten)]
    pub kube: crate::cli_kube::KubeArgs,
}

// Which sandbox specs there are (`serve` and `specs pull`).
#[derive(Args, Clone)]
pub struct SpecArgs {
    /// JSON file of sandbox specs (default: one built-in spec running the OpenHands agent server: a process, or with `--sandbox-runtime docker` or `kubernetes` a container of `--agent-server-image`).
    #[arg(long, env = "SWITCHBOARD_SANDBOX_SPECS", help_heading = heading::SANDBOXES)]
    pub sandbox_specs: Option<PathBuf>,
    /// The agent server command of the built-in process spec, split as a shell would (default: `agent-server` on PATH, else `python3 -m openhands.agent_server`).
    #[arg(long, env = "SWITCHBOARD_AGENT_SERVER_COMMAND", help_heading = heading::PROCESS)]
    pub agent_server_command: Option<String>,
    /// The runtime of specs that name none: process, docker or kubernetes.
    #[arg(long, env = "SWITCHBOARD_SANDBOX_RUNTIME", default_value = "process", help_heading = heading::SANDBOXES)]
    pub sandbox_runtime: String,
    /// The image of the built-in container spec (with `--sandbox-runtime docker` or `kubernetes` and no `--sandbox-specs`); `scripts/agent-server-image.sh` builds the default.
    #[arg(
        long,
        env = "SWITCHBOARD_AGENT_SERVER_IMAGE",
        default_value = switchboard_domain::sandboxes::specs::DEFAULT_AGENT_SERVER_IMAGE,
        help_heading = heading::SANDBOXES
    )]
    pub agent_server_image: String,
}

impl SandboxArgs {
    /// The sandbox crate's options these flags give.
    pub fn options(&self) -> SandboxOptions {
        SandboxOptions {
            specs: self.specs.options(),
            public_url: self.public_url.clone(),
            webhook_url: self.webhook_url.clone(),
            llm_proxy_url: self.llm_proxy_url.clone(),
            sandbox_env: self.sandbox_env.clone(),
            event_streams: !self.no_event_streams,
            start_timeout: Duration::from_secs(self.sandbox_start_timeout),
            max_running_sandboxes: self.max_running_sandboxes,
            max_sandboxes_per_user: self.max_sandboxes_per_user,
            max_sandboxes_per_org: self.max_sandboxes_per_org,
            max_conversations_per_sandbox: self.sandbox_max_conversations,
            warm_sandboxes: self.warm_sandboxes,
            log_max_mib: self.sandbox_log_max_mib,
            confinement: self.confine.confinement(),
            default_limits: self.confine.default_limits(),
            allow_local_repositories: self.allow_local_repositories.clone(),
            git_provider_urls: self.git_provider_urls.clone(),
            docker: self.docker.options(),
            kube: self.kube.options(),
        }
    }
}

impl SpecArgs {
    /// The sandbox crate's spec options these flags give.
    pub fn options(&self) -> SpecOptions {
        SpecOptions {
            sandbox_specs: self.sandbox_specs.clone(),
            agent_server_command: self.agent_server_command.clone(),
            sandbox_runtime: self.sandbox_runtime.clone(),
            agent_server_image: self.agent_server_image.clone(),
        }
    }
}
