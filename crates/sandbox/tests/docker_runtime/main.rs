//! The Docker runtime against the real daemon and the agent-server image
//! (`scripts/agent-server-image.sh`): containers started, probed, paused, resumed, killed
//! behind its back and deleted for real (issue 12, "Tests"). Without a daemon or the image,
//! every test prints why and passes; `SWITCHBOARD_REQUIRE_DOCKER=1` makes that a failure.

mod calling;
mod common;
mod confinement;
mod egress;
mod lifecycle;
mod restart;
mod unpublished;
mod workspace;
