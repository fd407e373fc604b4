//! The Kubernetes runtime against a real cluster (`scripts/kube-cluster.sh up`: two nodes,
//! the agent-server image in each) and the real agent server: pods and claims made, probed,
//! paused, resumed, removed behind the runtime's back and deleted for real (issue 32,
//! "Tests"). Without a cluster, every test prints why and passes;
//! `SWITCHBOARD_REQUIRE_KUBE=1` makes that a failure.

mod common;
mod lifecycle;
mod objects;
