//! Measures the Docker runtime with a real daemon: cold start → `/alive` of an image, one
//! container at a time, and pause, resume and delete of each.
//!
//! ```text
//! cargo run --release -p switchboard-sandbox --example docker_cold_start -- [RUNS] [IMAGE]
//! ```
//!
//! `RUNS` defaults to 5, `IMAGE` to `switchboard/agent-server:local`. Prints one line per run
//! (seconds) and the median; removes everything it started.

use std::time::{Duration, Instant};

use switchboard_domain::SandboxId;
use switchboard_domain::sandboxes::runtime::{
    AgentServerClient, LaunchSpec, SandboxRuntime, SessionKey,
};
use switchboard_domain::sandboxes::specs::{DEFAULT_AGENT_SERVER_IMAGE, docker_preset};
use switchboard_sandbox::{DockerConfig, DockerRuntime, HttpAgentServerClient};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().map_or(Ok(5), |a| a.parse())?;
    let image = args
        .next()
        .unwrap_or_else(|| DEFAULT_AGENT_SERVER_IMAGE.to_owned());
    let installation = format!("bench-{}", std::process::id());
    let runtime = DockerRuntime::connect(DockerConfig::new(&installation))?;
    let client = HttpAgentServerClient::new();
    println!(
        "Docker API {} at {}; image {image}; {runs} runs",
        runtime.api_version(),
        runtime.host()
    );
    println!("run  start()  →/alive  pause  resume→/alive  delete   (seconds)");
    let mut alive_times = Vec::with_capacity(runs);
    for run in 1..=runs {
        let launch = LaunchSpec {
            sandbox_id: SandboxId::new_random(),
            spec: docker_preset(&image, time::OffsetDateTime::now_utc())?,
            session_key: SessionKey::generate(),
            webhook_base_url: "http://host.docker.internal:9/api/v1/webhooks".into(),
            passthrough_env: Vec::new(),
            local_repositories: Vec::new(),
            org_id: None,
            owner_id: None,
        };
        let began = Instant::now();
        let handle = runtime.start(&launch)?;
        let started = began.elapsed();
        let answers = |limit: Duration| {
            let deadline = Instant::now() + limit;
            while Instant::now() < deadline {
                if client
                    .alive(&handle.agent_server_url, Duration::from_secs(1))
                    .is_ok()
                {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            false
        };
        let ok = answers(Duration::from_secs(180));
        let alive = began.elapsed();
        let paused = Instant::now();
        runtime.pause(&handle)?;
        let pause = paused.elapsed();
        let resumed = Instant::now();
        runtime.resume(&handle)?;
        let resume_ok = answers(Duration::from_secs(30));
        let resume = resumed.elapsed();
        let deleted = Instant::now();
        runtime.delete(&handle)?;
        let delete = deleted.elapsed();
        if !ok || !resume_ok {
            return Err(format!("run {run}: the agent server did not answer /alive").into());
        }
        println!(
            "{run:>3}  {:>7.3}  {:>7.2}  {:>5.3}  {:>13.3}  {:>6.2}",
            started.as_secs_f64(),
            alive.as_secs_f64(),
            pause.as_secs_f64(),
            resume.as_secs_f64(),
            delete.as_secs_f64()
        );
        alive_times.push(alive.as_secs_f64());
    }
    alive_times.sort_by(f64::total_cmp);
    println!(
        "cold start → /alive: median {:.2} s, min {:.2} s, max {:.2} s",
        alive_times[alive_times.len() / 2],
        alive_times[0],
        alive_times[alive_times.len() - 1]
    );
    Ok(())
}
