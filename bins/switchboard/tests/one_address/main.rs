//! One address for everything (issue 22): a client that can reach Switchboard and nothing
//! else works through it. The tests make a network namespace joined to this one by a veth
//! pair, in which only the pair's two addresses and the namespace's own loopback exist;
//! Switchboard listens on this side's address (its public URL by default), the sandboxes'
//! agent servers and the fake LLM on this side's loopback, out of the client's reach. In the
//! namespace, OpenHands' own clients run unchanged:
//! - `sdk`: the SDK's `OpenHandsCloudWorkspace` runs a whole conversation;
//! - `cli`: the OpenHands CLI's `openhands cloud -t TASK` starts one;
//! - `acp`: `openhands login` writes the member's agent settings, and `openhands acp --cloud`
//!   opens a session and runs one prompt.
//!
//! Needs root (`ip netns`), the real agent server and the clients' venvs (`scripts/e2e.sh`);
//! without them each test says so and passes.

mod acp;
mod cli;
mod netns;
mod sdk;
