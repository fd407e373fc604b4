//! `serve`'s sandboxes wired from the operator's options (issue 9; docs/sandbox-specs.md):
//! the options as plain values ([`options`], which the binary fills from its flags), the
//! specs they name ([`specs`]), the Docker and Kubernetes runtimes connected
//! ([`docker`], [`kube`]), the sandbox service's configuration ([`configure()`]) and the
//! background work of the runtimes ([`upkeep`]).

pub mod configure;
pub mod docker;
pub mod kube;
pub mod options;
pub mod specs;
pub mod upkeep;

pub use configure::{Configured, Server, configure};
pub use options::{DockerOptions, KubeOptions, SandboxOptions, SpecOptions};
pub use specs::specs_pull;
pub use upkeep::Upkeep;
