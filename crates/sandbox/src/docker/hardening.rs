//! What a sandbox's container may do (issue 18, "Docker runtime"): no new privileges, every
//! capability dropped (a few given back to images that run as root), a pids limit, never
//! privileged, private IPC, a read-only root filesystem with the tmpfs the image declares,
//! and, besides its own workspace volume, only the host directories the operator allows,
//! read-only. Pure functions of the configuration and the image, tested without a daemon.
//!
//! The capabilities were found by experiment with the agent-server image
//! (`docs/docker.md`, "Hardening"): the agent server runs as uid 10001, and its work (the
//! entry point, `git clone`, `tmux`, `python3 -m venv`, `pip install` into a venv, running
//! tests) needs none, so such images get none. An image that runs as root (e.g. one whose
//! agent installs system packages) needs [`ROOT_IMAGE_CAPABILITIES`] for `apt-get`: it
//! drops to the `_apt` user (`SETUID`, `SETGID`: "Failed to setgroups" without them) and
//! writes files owned by others (`CHOWN`, `DAC_OVERRIDE`, `FOWNER`). Everything else
//! (`NET_RAW`: raw sockets, `ping`; `MKNOD`; `SYS_CHROOT`; `KILL` of other users;
//! `NET_BIND_SERVICE`; `SETFCAP`, `SETPCAP`, `FSETID`, `AUDIT_WRITE`) is dropped for all.

use std::collections::HashMap;
use std::path::Path;

use bollard::models::{HostConfig, Mount, MountType};

use crate::docker::config::DockerConfig;

/// Capabilities given back to containers whose image runs as root (see the module's docs):
/// what `apt-get install` needs. Images running as another user get none.
pub const ROOT_IMAGE_CAPABILITIES: [&str; 5] =
    ["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID"];

/// Image label declaring what the image writes outside its workspace, as Docker tmpfs
/// mounts: a JSON object of absolute path → tmpfs options, e.g. `{"/tmp": "mode=1777,size=1g"}`
/// (the agent-server image's Dockerfile sets it). With it, and
/// [`DockerConfig::read_only_root`], containers get a read-only root filesystem and these
/// tmpfs; without it the root filesystem stays writable (Switchboard cannot know what the
/// image needs to write).
pub const LABEL_TMPFS: &str = "io.switchboard.tmpfs";

/// What the runtime reads from an image before creating a container of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageFacts {
    /// The image's working directory, when it sets one.
    pub working_dir: Option<String>,
    /// Whether its processes run as root (no `USER`, or `root`, `0`, `0:…`, `root:…`).
    pub runs_as_root: bool,
    /// The tmpfs it declares in [`LABEL_TMPFS`]; `None` when it declares none or the label
    /// is not a JSON object of absolute paths to strings.
    pub tmpfs: Option<HashMap<String, String>>,
}

impl ImageFacts {
    /// The facts of an image from its configuration's `User`, `WorkingDir` and labels.
    pub fn new(
        user: Option<&str>,
        working_dir: Option<&str>,
        labels: Option<&HashMap<String, String>>,
    ) -> Self {
        let user = user.unwrap_or("").trim();
        let name = user.split(':').next().unwrap_or("");
        ImageFacts {
            working_dir: working_dir.filter(|d| !d.is_empty()).map(str::to_owned),
            runs_as_root: name.is_empty() || name == "root" || name == "0",
            tmpfs: labels
                .and_then(|l| l.get(LABEL_TMPFS))
                .and_then(|text| parse_tmpfs(text)),
        }
    }
}

/// The tmpfs map of a [`LABEL_TMPFS`] value; `None` unless it is a non-empty JSON object of
/// absolute paths to option strings.
fn parse_tmpfs(text: &str) -> Option<HashMap<String, String>> {
    let map: HashMap<String, String> = serde_json::from_str(text).ok()?;
    let valid = !map.is_empty()
        && map.iter().all(|(path, options)| {
            path.starts_with('/') && !path.contains(['\0', ',', ':']) && !options.contains('\0')
        });
    valid.then_some(map)
}

/// Applies the confinement to `host`: `no-new-privileges`, all capabilities dropped (the
/// [`ROOT_IMAGE_CAPABILITIES`] added back for a root image), the pids limit, not
/// privileged, private IPC, the OCI runtime, the read-only root with the image's tmpfs
/// (when configured and declared), and the allowed host directories bound read-only at the
/// same path. The workspace volume must already be in `host.mounts`.
pub fn confine(host: &mut HostConfig, config: &DockerConfig, image: &ImageFacts) {
    host.privileged = Some(false);
    host.security_opt = Some(vec!["no-new-privileges".to_owned()]);
    host.cap_drop = Some(vec!["ALL".to_owned()]);
    host.cap_add = image.runs_as_root.then(|| {
        ROOT_IMAGE_CAPABILITIES
            .iter()
            .map(|c| (*c).to_owned())
            .collect()
    });
    host.pids_limit = (config.pids_limit > 0).then_some(config.pids_limit);
    host.ipc_mode = Some("private".to_owned());
    host.runtime.clone_from(&config.oci_runtime);
    if config.read_only_root
        && let Some(tmpfs) = &image.tmpfs
    {
        host.readonly_rootfs = Some(true);
        host.tmpfs = Some(tmpfs.clone());
    }
    let mounts = host.mounts.get_or_insert_with(Vec::new);
    mounts.extend(config.read_only_binds.iter().map(|p| read_only_bind(p)));
}

/// A host directory bound read-only at the same path in the container.
fn read_only_bind(path: &Path) -> Mount {
    let path = path.display().to_string();
    Mount {
        typ: Some(MountType::BIND),
        source: Some(path.clone()),
        target: Some(path),
        read_only: Some(true),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent_server_image() -> ImageFacts {
        let labels = HashMap::from([(
            LABEL_TMPFS.to_owned(),
            r#"{"/tmp": "mode=1777,size=1g", "/home/openhands": "uid=10001,gid=10001,mode=0700"}"#
                .to_owned(),
        )]);
        ImageFacts::new(Some("openhands"), Some("/workspace/project"), Some(&labels))
    }

    #[test]
    fn image_facts_read_the_user_the_directory_and_the_tmpfs_label() {
        let facts = agent_server_image();
        assert!(!facts.runs_as_root);
        assert_eq!(facts.working_dir.as_deref(), Some("/workspace/project"));
        assert_eq!(facts.tmpfs.unwrap()["/tmp"], "mode=1777,size=1g");
        for root in [
            None,
            Some(""),
            Some("root"),
            Some("0"),
            Some("0:0"),
            Some("root:wheel"),
        ] {
            assert!(ImageFacts::new(root, None, None).runs_as_root, "{root:?}");
        }
        assert!(!ImageFacts::new(Some("10001:10001"), None, None).runs_as_root);
        for bad in [
            "",
            "[]",
            "{}",
            r#"{"tmp": "x"}"#,
            r#"{"/a,b": "x"}"#,
            r#"{"/t": 1}"#,
        ] {
            let labels = HashMap::from([(LABEL_TMPFS.to_owned(), bad.to_owned())]);
            assert_eq!(
                ImageFacts::new(None, Some(""), Some(&labels)),
                ImageFacts {
                    working_dir: None,
                    runs_as_root: true,
                    tmpfs: None
                },
                "{bad}"
            );
        }
    }

    #[test]
    fn a_non_root_image_gets_no_capability_and_a_read_only_root() {
        let config = DockerConfig::new("x")
            .with_pids_limit(300)
            .with_oci_runtime(Some("runsc".into()))
            .with_read_only_binds(vec!["/srv/repos".into()]);
        let mut host = HostConfig {
            mounts: Some(vec![Mount {
                typ: Some(MountType::VOLUME),
                ..Default::default()
            }]),
            ..Default::default()
        };
        confine(&mut host, &config, &agent_server_image());
        assert_eq!(host.privileged, Some(false));
        assert_eq!(host.security_opt.unwrap(), ["no-new-privileges"]);
        assert_eq!(host.cap_drop.unwrap(), ["ALL"]);
        assert_eq!(host.cap_add, None);
        assert_eq!(host.pids_limit, Some(300));
        assert_eq!(host.ipc_mode.as_deref(), Some("private"));
        assert_eq!(host.runtime.as_deref(), Some("runsc"));
        assert_eq!(host.readonly_rootfs, Some(true));
        assert_eq!(host.tmpfs.unwrap().len(), 2);
        let mounts = host.mounts.unwrap();
        assert_eq!(mounts.len(), 2);
        assert_eq!(mounts[1].typ, Some(MountType::BIND));
        assert_eq!(mounts[1].source.as_deref(), Some("/srv/repos"));
        assert_eq!(mounts[1].target.as_deref(), Some("/srv/repos"));
        assert_eq!(mounts[1].read_only, Some(true));
    }

    #[test]
    fn a_root_image_gets_what_apt_needs_and_an_undeclared_root_stays_writable() {
        let mut config = DockerConfig::new("x");
        config.read_only_root = true;
        let mut host = HostConfig::default();
        confine(&mut host, &config, &ImageFacts::new(None, None, None));
        assert_eq!(host.cap_drop.unwrap(), ["ALL"]);
        assert_eq!(host.cap_add.unwrap(), ROOT_IMAGE_CAPABILITIES);
        assert_eq!(host.readonly_rootfs, None, "nothing declared: writable");
        assert_eq!(host.tmpfs, None);
        assert_eq!(host.runtime, None, "the daemon's default runtime");
        assert_eq!(host.pids_limit, Some(crate::docker::DEFAULT_PIDS_LIMIT));
        assert!(host.mounts.unwrap().is_empty());

        // Turned off by the operator: writable even when declared.
        config.read_only_root = false;
        let mut host = HostConfig::default();
        confine(&mut host, &config, &agent_server_image());
        assert_eq!((host.readonly_rootfs, host.tmpfs), (None, None));
    }
}
