//! The network namespace the one-address tests run their clients in, joined to this one by
//! a veth pair: only the pair's two addresses and the namespace's own loopback exist there.
//! Also the real agent server's spec and a reachability check run inside the namespace (the
//! fake LLM, on this side's loopback and so out of the namespace's reach, is `common::fake_llm`).

use std::path::Path;
use std::process::{Command, Output};

/// A network namespace and its veth pair, removed on drop.
pub struct Netns {
    pub name: String,
    pub host_link: String,
    /// This side's address (Switchboard listens here).
    pub host_ip: String,
}

fn ip(args: &[&str]) -> Output {
    Command::new("ip").args(args).output().expect("running ip")
}

impl Netns {
    /// A namespace named after `tag`, joined by a /30 on 10.231.N.0; `None` when this machine
    /// cannot make one (not root, no `ip`).
    pub fn create(tag: u8) -> Option<Netns> {
        let pid = std::process::id();
        let name = format!("sbtest{pid}{tag}");
        let host_link = format!("sbh{}{tag}", pid % 100_000);
        let peer = format!("sbn{}{tag}", pid % 100_000);
        let net = (pid % 60) as u8 * 4 + tag;
        let (host_ip, ns_ip) = (format!("10.231.{net}.1"), format!("10.231.{net}.2"));
        let ns = Netns {
            name: name.clone(),
            host_link: host_link.clone(),
            host_ip: host_ip.clone(),
        };
        let steps: [Vec<String>; 8] = [
            vec!["netns".into(), "add".into(), name.clone()],
            vec![
                "link".into(),
                "add".into(),
                host_link.clone(),
                "type".into(),
                "veth".into(),
                "peer".into(),
                "name".into(),
                peer.clone(),
            ],
            vec![
                "link".into(),
                "set".into(),
                peer.clone(),
                "netns".into(),
                name.clone(),
            ],
            vec![
                "addr".into(),
                "add".into(),
                format!("{host_ip}/30"),
                "dev".into(),
                host_link.clone(),
            ],
            vec!["link".into(), "set".into(), host_link.clone(), "up".into()],
            vec![
                "-n".into(),
                name.clone(),
                "addr".into(),
                "add".into(),
                format!("{ns_ip}/30"),
                "dev".into(),
                peer.clone(),
            ],
            vec![
                "-n".into(),
                name.clone(),
                "link".into(),
                "set".into(),
                peer,
                "up".into(),
            ],
            vec![
                "-n".into(),
                name.clone(),
                "link".into(),
                "set".into(),
                "lo".into(),
                "up".into(),
            ],
        ];
        for step in steps {
            let args: Vec<&str> = step.iter().map(String::as_str).collect();
            let out = ip(&args);
            if !out.status.success() {
                eprintln!(
                    "cannot make a network namespace (ip {}: {}): the one-address test is skipped",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                return None;
            }
        }
        std::fs::create_dir_all(ns.hosts_file().parent().unwrap()).ok()?;
        std::fs::write(ns.hosts_file(), "127.0.0.1 localhost\n").ok()?;
        Some(ns)
    }

    /// `program args…` inside the namespace.
    pub fn command(&self, program: &Path) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).arg(program);
        c
    }
}

impl Netns {
    /// The namespace's `/etc/hosts` (mounted there by `ip netns exec`).
    pub fn hosts_file(&self) -> std::path::PathBuf {
        Path::new("/etc/netns").join(&self.name).join("hosts")
    }

    /// Adds `ip name` to the namespace's `/etc/hosts`, in place (the file is bind-mounted).
    pub fn add_host(&self, ip: &str, name: &str) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(self.hosts_file())
            .unwrap();
        writeln!(f, "{ip} {name}").unwrap();
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = ip(&["link", "del", &self.host_link]);
        let _ = ip(&["netns", "del", &self.name]);
        let _ = std::fs::remove_dir_all(Path::new("/etc/netns").join(&self.name));
    }
}

/// Whether, from inside the namespace, a TCP connection to `host:port` opens within 3 s.
pub fn reachable_from(ns: &Netns, python: &Path, host: &str, port: u16) -> bool {
    let out = ns
        .command(python)
        .args([
            "-c",
            &format!(
                "import socket,sys\ntry:\n socket.create_connection(('{host}', {port}), timeout=3)\n print('open')\nexcept OSError as e:\n print('closed', e)"
            ),
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).starts_with("open")
}

/// The sandbox specs file in `data`: one spec, `agent`, running the real agent server
/// `agent_server` with the environment the tests give it; its path.
pub fn real_agent_specs(data: &Path, agent_server: &Path) -> String {
    let env: serde_json::Map<String, serde_json::Value> =
        switchboard_testkit::REAL_AGENT_SERVER_ENV
            .iter()
            .map(|(k, v)| ((*k).to_owned(), serde_json::json!(v)))
            .collect();
    let specs = data.join("specs.json");
    std::fs::write(
        &specs,
        serde_json::json!([{"id": "agent", "command": [agent_server.display().to_string()], "initial_env": env}])
            .to_string(),
    )
    .unwrap();
    specs.display().to_string()
}

impl Netns {
    /// A free `ip:port` on the host's side of the pair, for Switchboard to listen on (the
    /// address the namespace reaches it at), and its port.
    pub fn free_host_address(&self) -> (String, u16) {
        let port = std::net::TcpListener::bind((self.host_ip.as_str(), 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        (format!("{}:{port}", self.host_ip), port)
    }
}
