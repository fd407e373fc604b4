//! A control group per process sandbox (issue 33, "Resources"): memory, CPU and process-count
//! limits enforced by the kernel, so a sandbox at its limit is the only one affected (the OOM
//! killer picks inside it, `fork` fails inside it, its threads share its CPU quota).
//!
//! The groups live under Switchboard's own group (so what limits Switchboard, e.g. its
//! container's memory, still holds for its sandboxes), in a directory of their own,
//! [`SANDBOXES_GROUP`], one group per sandbox named by its id:
//!
//! - **cgroup v1** (a hierarchy per controller, as on the machines these tests run on):
//!   `/sys/fs/cgroup/{memory,pids,cpu}/<own>/switchboard-sandboxes/<id>/` with
//!   `memory.limit_in_bytes` (and `memory.memsw.limit_in_bytes`, the same: no swap on top),
//!   `pids.max`, `cpu.cfs_quota_us` over `cpu.cfs_period_us`;
//! - **cgroup v2** (the unified hierarchy most hosts have): `/sys/fs/cgroup/<own>/
//!   switchboard-sandboxes/<id>/` with `memory.max`, `memory.swap.max` 0, `pids.max`,
//!   `cpu.max`. A group with processes cannot hand controllers to its children, so when
//!   Switchboard's own group holds processes they are first moved to a leaf `switchboard`
//!   beside the sandboxes' (the usual step of a delegated service).
//!
//! Every sandbox's group exists with its CPU controller even without a CPU limit: the
//! scheduler then shares the CPU between sandboxes as groups, so one with a hundred busy
//! threads does not get a hundred times the share of one with one.
//!
//! A sandbox's first process joins its group before it runs anything else (the launcher
//! writes its own pid to each group's `cgroup.procs`, then becomes `bwrap`), so everything the
//! sandbox starts is inside from the start. Needs root (the files belong to root).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use switchboard_domain::sandboxes::limits::ResourceLimits;
use switchboard_domain::sandboxes::runtime::RuntimeError;

/// The directory, under Switchboard's own group, that holds the sandboxes' groups.
pub const SANDBOXES_GROUP: &str = "switchboard-sandboxes";
/// The v1 controllers used, each its own hierarchy under `/sys/fs/cgroup/<name>`.
const V1_CONTROLLERS: [&str; 3] = ["memory", "pids", "cpu"];
/// The CFS period of a CPU limit, in microseconds (the kernel's default, 100 ms).
const CPU_PERIOD_US: u64 = 100_000;

/// The limits of one sandbox's group: the spec's memory and CPU, and the operator's
/// process-count cap (`--sandbox-pids-limit`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupLimits {
    /// The spec's `memory_mb` and `cpus`.
    pub resources: ResourceLimits,
    /// The most processes and threads, together; `None`: no cap.
    pub pids_max: Option<u64>,
}

/// The groups of a process runtime's sandboxes: where they are made, and the operator's
/// process-count cap every sandbox gets (`--sandbox-pids-limit`; `None`: no cap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxGroups {
    /// Where.
    pub cgroups: Cgroups,
    /// The cap.
    pub pids_max: Option<u64>,
}

impl SandboxGroups {
    /// Makes sandbox `name`'s group with the spec's `resources` and the operator's cap; the
    /// `cgroup.procs` files its first process joins.
    ///
    /// # Errors
    /// [`RuntimeError::Launch`] naming the file that could not be made or written.
    pub fn create(
        &self,
        name: &str,
        resources: ResourceLimits,
    ) -> Result<Vec<PathBuf>, RuntimeError> {
        let limits = GroupLimits {
            resources,
            pids_max: self.pids_max,
        };
        self.cgroups.create(name, &limits).map_err(|e| {
            let _ = self.cgroups.remove(name);
            RuntimeError::Launch(format!("cannot make the sandbox's control group: {e}"))
        })
    }
}

/// Where the sandboxes' groups are made: found once at start ([`Cgroups::detect`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cgroups {
    /// cgroup v1: the sandboxes' directory in each controller's hierarchy.
    V1 {
        /// `(controller, <mount>/<own group>/switchboard-sandboxes)`.
        parents: Vec<(String, PathBuf)>,
    },
    /// cgroup v2: the sandboxes' directory in the unified hierarchy.
    V2 {
        /// `<mount>/<own group>/switchboard-sandboxes`.
        parent: PathBuf,
    },
}

impl Cgroups {
    /// Finds Switchboard's own group (`/proc/self/cgroup`) under `/sys/fs/cgroup` and makes the
    /// sandboxes' directory in it, with the memory, pids and cpu controllers.
    ///
    /// # Errors
    /// A message saying which hierarchy or controller is missing, or which file could not be
    /// written (not root; a container whose cgroup file system is read-only; controllers not
    /// delegated to Switchboard's group).
    pub fn detect() -> Result<Self, String> {
        Self::detect_at(Path::new("/sys/fs/cgroup"), &read("/proc/self/cgroup")?)
    }

    /// As [`Cgroups::detect`], with the hierarchies mounted under `root` and `own` the text
    /// of `/proc/self/cgroup`.
    fn detect_at(root: &Path, own: &str) -> Result<Self, String> {
        if root.join("cgroup.controllers").is_file() {
            let path = own
                .lines()
                .find_map(|l| l.strip_prefix("0::"))
                .ok_or("no cgroup v2 line (0::) in /proc/self/cgroup")?;
            let group = root.join(path.trim_start_matches('/'));
            return v2_parent(&group).map(|parent| Cgroups::V2 { parent });
        }
        let mut parents = Vec::new();
        for controller in V1_CONTROLLERS {
            let mount = root.join(controller);
            if !mount.join("cgroup.procs").is_file() {
                return Err(format!(
                    "no cgroup v1 hierarchy of the {controller} controller at {}",
                    mount.display()
                ));
            }
            let path = own
                .lines()
                .find_map(|l| {
                    let mut parts = l.splitn(3, ':');
                    let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
                    names.split(',').any(|n| n == controller).then_some(path)
                })
                .ok_or_else(|| format!("no {controller} line in /proc/self/cgroup"))?;
            let parent = mount
                .join(path.trim_start_matches('/'))
                .join(SANDBOXES_GROUP);
            make_dir(&parent)?;
            parents.push((controller.to_owned(), parent));
        }
        Ok(Cgroups::V1 { parents })
    }

    /// Makes the group of sandbox `name` with `limits`. Returns the `cgroup.procs` files its
    /// first process writes its pid to (one per hierarchy).
    ///
    /// # Errors
    /// A message naming the file that could not be made or written.
    pub fn create(&self, name: &str, limits: &GroupLimits) -> Result<Vec<PathBuf>, String> {
        let memory = limits.resources.memory_bytes();
        let quota = limits
            .resources
            .cpus
            .map(|c| (c.nano_cpus() * CPU_PERIOD_US / 1_000_000_000).max(1_000));
        let pids = limits.pids_max;
        match self {
            Cgroups::V1 { parents } => {
                let mut procs = Vec::new();
                for (controller, parent) in parents {
                    let dir = parent.join(name);
                    make_dir(&dir)?;
                    match controller.as_str() {
                        "memory" => {
                            if let Some(bytes) = memory {
                                write(&dir, "memory.limit_in_bytes", bytes)?;
                                // Absent when the kernel does not account swap.
                                if dir.join("memory.memsw.limit_in_bytes").exists() {
                                    write(&dir, "memory.memsw.limit_in_bytes", bytes)?;
                                }
                            }
                        }
                        "pids" => {
                            if let Some(max) = pids {
                                write(&dir, "pids.max", max)?;
                            }
                        }
                        _ => {
                            if let Some(quota) = quota {
                                write(&dir, "cpu.cfs_period_us", CPU_PERIOD_US)?;
                                write(&dir, "cpu.cfs_quota_us", quota)?;
                            }
                        }
                    }
                    procs.push(dir.join("cgroup.procs"));
                }
                Ok(procs)
            }
            Cgroups::V2 { parent } => {
                let dir = parent.join(name);
                make_dir(&dir)?;
                if let Some(bytes) = memory {
                    write(&dir, "memory.max", bytes)?;
                    if dir.join("memory.swap.max").exists() {
                        write(&dir, "memory.swap.max", 0)?;
                    }
                }
                if let Some(max) = pids {
                    write(&dir, "pids.max", max)?;
                }
                if let Some(quota) = quota {
                    write(&dir, "cpu.max", format!("{quota} {CPU_PERIOD_US}"))?;
                }
                Ok(vec![dir.join("cgroup.procs")])
            }
        }
    }

    /// The directories of sandbox `name`'s group (one per hierarchy).
    pub fn dirs(&self, name: &str) -> Vec<PathBuf> {
        match self {
            Cgroups::V1 { parents } => parents.iter().map(|(_, p)| p.join(name)).collect(),
            Cgroups::V2 { parent } => vec![parent.join(name)],
        }
    }

    /// Removes sandbox `name`'s group, once its processes have ended (a group with processes
    /// cannot be removed: the error says so). A group that is not there is fine.
    ///
    /// # Errors
    /// The first directory that could not be removed.
    pub fn remove(&self, name: &str) -> Result<(), String> {
        let mut outcome = Ok(());
        for dir in self.dirs(name) {
            match fs::remove_dir(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    outcome = outcome.and(Err(format!("removing {}: {e}", dir.display())));
                }
            }
        }
        outcome
    }
}

/// The v2 sandboxes' directory under `group` (Switchboard's own), made with the memory, pids
/// and cpu controllers enabled for its children: `group`'s processes moved to a leaf first.
fn v2_parent(group: &Path) -> Result<PathBuf, String> {
    let available = read(group.join("cgroup.controllers"))?;
    for needed in ["memory", "pids", "cpu"] {
        if !available.split_whitespace().any(|c| c == needed) {
            return Err(format!(
                "the {needed} controller is not available in {} (controllers: {}): delegate it \
                 to Switchboard's group (systemd: Delegate=yes)",
                group.display(),
                available.trim()
            ));
        }
    }
    let enable = "+memory +pids +cpu";
    if fs::write(group.join("cgroup.subtree_control"), enable).is_err() {
        // The group holds processes ("no internal processes"): move them to a leaf.
        let leaf = group.join("switchboard");
        make_dir(&leaf)?;
        for pid in read(group.join("cgroup.procs"))?.split_whitespace() {
            // A process that ended meanwhile cannot be moved; that is fine.
            let _ = fs::write(leaf.join("cgroup.procs"), pid);
        }
        write(group, "cgroup.subtree_control", enable)?;
    }
    let parent = group.join(SANDBOXES_GROUP);
    make_dir(&parent)?;
    write(&parent, "cgroup.subtree_control", enable)?;
    Ok(parent)
}

fn read(path: impl AsRef<Path>) -> Result<String, String> {
    let path = path.as_ref();
    fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
}

fn make_dir(dir: &Path) -> Result<(), String> {
    match fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(format!("making {}: {e}", dir.display())),
    }
}

fn write(dir: &Path, file: &str, value: impl ToString) -> Result<(), String> {
    let path = dir.join(file);
    fs::write(&path, value.to_string()).map_err(|e| format!("writing {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_groups_nest_under_switchboards_own_in_each_hierarchy() {
        let root = tempfile::tempdir().unwrap();
        for c in V1_CONTROLLERS {
            fs::create_dir_all(root.path().join(c).join("outer")).unwrap();
            fs::write(root.path().join(c).join("cgroup.procs"), "").unwrap();
        }
        let own = "4:memory:/outer\n8:pids:/\n1:cpu,cpuacct:/\n0::/\n";
        let cgroups = Cgroups::detect_at(root.path(), own).unwrap();
        let Cgroups::V1 { parents } = &cgroups else {
            panic!("{cgroups:?}")
        };
        assert_eq!(
            parents[0].1,
            root.path().join("memory/outer").join(SANDBOXES_GROUP)
        );
        assert_eq!(parents[2].1, root.path().join("cpu").join(SANDBOXES_GROUP));
        let limits = GroupLimits {
            resources: ResourceLimits {
                memory_mb: Some(64),
                cpus: Some(switchboard_domain::sandboxes::limits::Cpus::from_cpus(0.5).unwrap()),
            },
            pids_max: Some(100),
        };
        let procs = cgroups.create("sb", &limits).unwrap();
        assert_eq!(procs.len(), 3);
        let at = |c: &str, f: &str| {
            fs::read_to_string(
                parents
                    .iter()
                    .find(|p| p.0 == c)
                    .unwrap()
                    .1
                    .join("sb")
                    .join(f),
            )
            .unwrap()
        };
        assert_eq!(
            at("memory", "memory.limit_in_bytes"),
            (64 << 20).to_string()
        );
        assert_eq!(at("pids", "pids.max"), "100");
        assert_eq!(at("cpu", "cpu.cfs_quota_us"), "50000");
        // Files of the fake tree: remove fails on non-empty directories, as on a cgroupfs
        // with processes; an absent group is fine.
        assert!(cgroups.remove("sb").is_err());
        assert!(cgroups.remove("absent").is_ok());
    }

    #[test]
    fn a_missing_controller_is_named() {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir_all(root.path().join("memory")).unwrap();
        fs::write(root.path().join("memory/cgroup.procs"), "").unwrap();
        let err = Cgroups::detect_at(root.path(), "4:memory:/\n").unwrap_err();
        assert!(err.contains("pids"), "{err}");
    }
}
