//! Resource limits of a sandbox spec: `memory_mb` and `cpus`, optional fields of the
//! operator's specs file (issue 12, "optional memory and CPU limits per spec"). The Docker
//! runtime has them enforced by the engine (`HostConfig.Memory`, `HostConfig.NanoCpus`, as
//! `docker run -m <n>m --cpus <x>`); the process runtime by a control group per sandbox
//! (issue 33; the sandbox crate's `cgroups`).

use std::fmt;

use serde_json::Value;

/// The smallest memory limit Docker accepts (6 MiB; a smaller `-m` is refused by the engine).
pub const MIN_MEMORY_MB: u64 = 6;
/// The largest memory limit accepted in a spec: 16 TiB in MiB (a guard against typos, far
/// above any machine the limits are meant for).
pub const MAX_MEMORY_MB: u64 = 16 * 1024 * 1024;
/// The largest CPU limit accepted in a spec (the engine also refuses more than the host has).
pub const MAX_CPUS: f64 = 1024.0;
/// The smallest CPU limit accepted: one hundredth of a CPU (Docker's own lower bound for
/// `--cpus`).
pub const MIN_CPUS: f64 = 0.01;

/// A CPU limit, kept as billionths of a CPU (Docker's `NanoCpus`), so it is exact, ordered
/// and hashable. Written as the decimal number of CPUs (`1.5`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cpus(u64);

impl Cpus {
    /// A limit of `cpus` CPUs (e.g. `0.5`, `2`).
    ///
    /// # Errors
    /// A message when `cpus` is not a finite number in [`MIN_CPUS`]..=[`MAX_CPUS`].
    pub fn from_cpus(cpus: f64) -> Result<Self, String> {
        if !cpus.is_finite() || !(MIN_CPUS..=MAX_CPUS).contains(&cpus) {
            return Err(cpus_message());
        }
        // In range, so the product is a small positive number and the cast exact enough.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let nano = (cpus * 1e9).round() as u64;
        Ok(Cpus(nano))
    }

    /// A limit written as a decimal number of CPUs (`--sandbox-cpus 1.5`).
    ///
    /// # Errors
    /// Not a number, or as [`Cpus::from_cpus`].
    pub fn parse(s: &str) -> Result<Self, String> {
        let cpus: f64 = s.parse().map_err(|e| format!("{e}"))?;
        Cpus::from_cpus(cpus)
    }

    /// The limit in billionths of a CPU (Docker's `HostConfig.NanoCpus`).
    pub fn nano_cpus(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Cpus {
    /// The number of CPUs in decimal, without trailing zeros (`1.5`, `2`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.0 / 1_000_000_000;
        let frac = self.0 % 1_000_000_000;
        if frac == 0 {
            write!(f, "{whole}")
        } else {
            let digits = format!("{frac:09}");
            write!(f, "{whole}.{}", digits.trim_end_matches('0'))
        }
    }
}

/// A spec's optional resource limits; the default is none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ResourceLimits {
    /// The most memory the sandbox may use, in MiB (`memory_mb`; Docker: `Memory`, with swap
    /// limited to the same amount so the limit is the real one).
    pub memory_mb: Option<u64>,
    /// The most CPU time the sandbox may use, in CPUs (`cpus`; Docker: `NanoCpus`).
    pub cpus: Option<Cpus>,
}

impl ResourceLimits {
    /// The memory limit in bytes, if any.
    pub fn memory_bytes(&self) -> Option<u64> {
        self.memory_mb.map(|mb| mb * 1024 * 1024)
    }
}

/// Reads `memory_mb` from a spec object's field value (`None` or JSON `null`: no limit).
///
/// # Errors
/// A message when the value is not an integer in [`MIN_MEMORY_MB`]..=[`MAX_MEMORY_MB`].
pub fn parse_memory_mb(value: Option<&Value>) -> Result<Option<u64>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(mb) if (MIN_MEMORY_MB..=MAX_MEMORY_MB).contains(&mb) => Ok(Some(mb)),
            _ => Err(memory_message()),
        },
        Some(_) => Err(memory_message()),
    }
}

/// The operator's default memory limit as written (`--sandbox-memory-mb`): `0` (no limit),
/// or a whole number of MiB a spec's `memory_mb` may hold.
///
/// # Errors
/// Not a whole number, or out of [`MIN_MEMORY_MB`]..=[`MAX_MEMORY_MB`].
pub fn parse_default_memory_mb(s: &str) -> Result<u64, String> {
    let mb: u64 = s.parse().map_err(|e| format!("{e}"))?;
    if mb == 0 {
        return Ok(0);
    }
    parse_memory_mb(Some(&serde_json::json!(mb))).map(|m| m.unwrap_or(0))
}

fn memory_message() -> String {
    format!("expected a whole number of MiB from {MIN_MEMORY_MB} to {MAX_MEMORY_MB}")
}

/// Reads `cpus` from a spec object's field value (`None` or JSON `null`: no limit).
///
/// # Errors
/// A message when the value is not a number in [`MIN_CPUS`]..=[`MAX_CPUS`].
pub fn parse_cpus(value: Option<&Value>) -> Result<Option<Cpus>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_f64()
            .ok_or_else(cpus_message)
            .and_then(Cpus::from_cpus)
            .map(Some),
        Some(_) => Err(cpus_message()),
    }
}

fn cpus_message() -> String {
    format!("expected a number of CPUs from {MIN_CPUS} to {MAX_CPUS}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn memory_is_a_whole_number_of_mib_in_range() {
        assert_eq!(parse_memory_mb(None), Ok(None));
        assert_eq!(parse_memory_mb(Some(&Value::Null)), Ok(None));
        assert_eq!(parse_memory_mb(Some(&json!(512))), Ok(Some(512)));
        assert_eq!(parse_memory_mb(Some(&json!(6))), Ok(Some(6)));
        for bad in [
            json!(5),
            json!(0),
            json!(-1),
            json!(1.5),
            json!("512"),
            json!(u64::MAX),
        ] {
            assert_eq!(
                parse_memory_mb(Some(&bad)),
                Err("expected a whole number of MiB from 6 to 16777216".into()),
                "{bad}"
            );
        }
        let limits = ResourceLimits {
            memory_mb: Some(512),
            cpus: None,
        };
        assert_eq!(limits.memory_bytes(), Some(536_870_912));
        assert_eq!(ResourceLimits::default().memory_bytes(), None);
    }

    #[test]
    fn cpus_are_exact_nano_cpus_and_print_back() {
        let half = parse_cpus(Some(&json!(0.5))).unwrap().unwrap();
        assert_eq!(half.nano_cpus(), 500_000_000);
        assert_eq!(half.to_string(), "0.5");
        let two = parse_cpus(Some(&json!(2))).unwrap().unwrap();
        assert_eq!(two.nano_cpus(), 2_000_000_000);
        assert_eq!(two.to_string(), "2");
        assert_eq!(Cpus::from_cpus(1.25).unwrap().to_string(), "1.25");
        assert_eq!(Cpus::from_cpus(0.01).unwrap().nano_cpus(), 10_000_000);
        assert_eq!(parse_cpus(Some(&Value::Null)), Ok(None));
        for bad in [
            json!(0),
            json!(0.001),
            json!(-1),
            json!(2000),
            json!("1"),
            json!([1]),
        ] {
            assert_eq!(
                parse_cpus(Some(&bad)),
                Err("expected a number of CPUs from 0.01 to 1024".into()),
                "{bad}"
            );
        }
    }
}
