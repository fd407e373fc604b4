//! The process runtime against real processes: the stand-in agent server of the testkit,
//! started, probed, paused, resumed, killed and deleted for real (issue 9, "Tests").

mod attacks;
mod common;
mod confinement;
mod environment;
mod lifecycle;
mod limits;
mod listeners;
mod restart;
mod signals;
mod workspace;
