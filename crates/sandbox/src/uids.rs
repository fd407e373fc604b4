//! The user ids of confined process sandboxes (issue 18, "Process runtime"): when Switchboard
//! runs as root, each sandbox runs as a user and group of its own, numbered from
//! `--sandbox-uid-range FIRST-LAST`.
//!
//! An id is in use while a directory under the sandboxes root belongs to it (a sandbox's
//! directory is given to its user at start and removed only once every process of the
//! sandbox has ended), while a start holds it, while a process runs as it, or when
//! `/etc/passwd` or `/etc/group` names it: so an id is never given to two sandboxes at once,
//! also after a restart of Switchboard, and never to an account of the host.

use std::collections::HashSet;
use std::fmt;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::str::FromStr;

/// An inclusive range of user (and group) ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UidRange {
    /// The first id.
    pub first: u32,
    /// The last id (included).
    pub last: u32,
}

/// The default `--sandbox-uid-range`: 65,536 ids from 2,100,000,000. Chosen from systemd's
/// table of id ranges (systemd.io/UIDS-GIDS): above regular users (1000–60000), systemd's
/// homed, nspawn-mapped and dynamic service users (60001–65519), `nobody` (65534), the
/// subordinate ids `useradd` hands out for rootless containers (100000–600100000), systemd's
/// container ranges (524288–1879048191) and sssd's default Active Directory id mapping
/// (200000–2000200000); and below 2^31, which some programs and kernel interfaces (devpts,
/// `setfsuid`) mishandle.
pub const DEFAULT_UID_RANGE: UidRange = UidRange {
    first: 2_100_000_000,
    last: 2_100_065_535,
};

/// The largest id a range may hold: 2^31 − 1 (see [`DEFAULT_UID_RANGE`]).
const MAX_ID: u32 = i32::MAX as u32;

impl UidRange {
    /// How many ids the range holds.
    pub fn len(&self) -> u64 {
        u64::from(self.last) - u64::from(self.first) + 1
    }

    /// A range always holds at least one id.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Whether `id` is in the range.
    pub fn contains(&self, id: u32) -> bool {
        (self.first..=self.last).contains(&id)
    }
}

impl fmt::Display for UidRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

impl FromStr for UidRange {
    type Err = String;

    /// `FIRST-LAST`, e.g. `2100000000-2100065535`: both between 1000 and 2^31 − 1, FIRST ≤
    /// LAST, and not holding 65534 (`nobody`) or 65535 (16-bit −1).
    fn from_str(s: &str) -> Result<Self, String> {
        let (first, last) = s
            .trim()
            .split_once('-')
            .ok_or_else(|| format!("{s:?}: expected FIRST-LAST, e.g. {DEFAULT_UID_RANGE}"))?;
        let id = |t: &str| -> Result<u32, String> {
            t.trim()
                .parse::<u32>()
                .map_err(|e| format!("{t:?} is not a user id: {e}"))
        };
        let range = UidRange {
            first: id(first)?,
            last: id(last)?,
        };
        if range.first > range.last {
            return Err(format!("{s:?}: FIRST is above LAST"));
        }
        if range.first < 1000 || range.last > MAX_ID {
            return Err(format!(
                "{s:?}: ids must be between 1000 (system users are below) and {MAX_ID}"
            ));
        }
        if range.contains(65534) || range.contains(65535) {
            return Err(format!(
                "{s:?} holds 65534 (nobody) or 65535 (16-bit -1), which are never given to a sandbox"
            ));
        }
        Ok(range)
    }
}

/// The ids of `range` that are in use outside what the caller holds: owners of the entries of
/// `sandboxes_root`, users of running processes, and ids named by `/etc/passwd` or
/// `/etc/group`.
pub fn ids_in_use(range: UidRange, sandboxes_root: &Path) -> HashSet<u32> {
    let mut used = HashSet::new();
    for dir in [sandboxes_root, Path::new("/proc")] {
        for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
            if let Ok(meta) = entry.metadata() {
                for id in [meta.uid(), meta.gid()] {
                    if range.contains(id) {
                        used.insert(id);
                    }
                }
            }
        }
    }
    for file in ["/etc/passwd", "/etc/group"] {
        let text = fs::read_to_string(file).unwrap_or_default();
        // name:password:ID:...
        for id in text
            .lines()
            .filter_map(|l| l.split(':').nth(2)?.parse().ok())
        {
            if range.contains(id) {
                used.insert(id);
            }
        }
    }
    used
}

/// The first id of `range` in neither `used` nor `held`, looking from `range.first + from`
/// (modulo the range's length) onwards and round. Starts give a random `from` (from the
/// sandbox's id), so that two installations sharing a host by mistake are unlikely to pick
/// the same id for sandboxes started at the same moment (each sees the other's only once its
/// directory or process exists).
pub fn first_free(
    range: UidRange,
    used: &HashSet<u32>,
    held: &HashSet<u32>,
    from: u64,
) -> Option<u32> {
    let len = range.len();
    (0..len)
        .map(|i| {
            let offset = u32::try_from((from % len + i) % len).expect("a range fits u32");
            range.first + offset
        })
        .find(|id| !used.contains(id) && !held.contains(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_refuse_what_is_never_a_sandbox_user() {
        let r: UidRange = "2100000000-2100065535".parse().unwrap();
        assert_eq!(r, DEFAULT_UID_RANGE);
        assert_eq!(r.len(), 65_536);
        assert_eq!(r.to_string(), "2100000000-2100065535");
        assert_eq!(
            " 70000 - 70009 ".parse::<UidRange>().unwrap(),
            UidRange {
                first: 70000,
                last: 70009
            }
        );
        for bad in [
            "",
            "5",
            "a-b",
            "20-10",
            "0-100",
            "999-2000",
            "60000-70000",
            "2147483647-4294967294",
        ] {
            assert!(bad.parse::<UidRange>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_first_free_id_skips_used_and_held_ones() {
        let r = UidRange {
            first: 70000,
            last: 70003,
        };
        let used: HashSet<u32> = [70000, 70002].into();
        let held: HashSet<u32> = [70001].into();
        assert_eq!(first_free(r, &used, &held, 0), Some(70003));
        assert_eq!(
            first_free(r, &used, &held, 7),
            Some(70003),
            "from 70003, round"
        );
        assert_eq!(first_free(r, &HashSet::new(), &held, 2), Some(70002));
        assert_eq!(first_free(r, &HashSet::new(), &held, 5), Some(70002));
        let all: HashSet<u32> = [70003].into();
        assert_eq!(
            first_free(r, &used.union(&all).copied().collect(), &held, 1),
            None
        );
    }

    #[test]
    fn owners_of_sandbox_directories_and_processes_are_in_use() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a");
        fs::create_dir(&dir).unwrap();
        let me = rustix::process::getuid().as_raw();
        let id = if me == 0 {
            // Root: a directory given to a sandbox user.
            std::os::unix::fs::chown(&dir, Some(2_100_000_123), Some(2_100_000_123)).unwrap();
            2_100_000_123
        } else {
            // Anyone else: this process runs as its own user.
            me
        };
        let r = UidRange {
            first: id,
            last: id,
        };
        assert!(ids_in_use(r, root.path()).contains(&id));
        assert_eq!(
            first_free(r, &ids_in_use(r, root.path()), &HashSet::new(), 0),
            None
        );
    }
}
