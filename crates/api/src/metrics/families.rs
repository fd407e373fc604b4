//! Making and registering the families of [`super::activity`] and [`super::jobs`].

use prometheus::core::Collector;
use prometheus::{GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry};

/// Registers `c` in `registry` and answers it.
///
/// # Panics
/// When a family of the same name is registered already (a programming error).
pub(super) fn register<C: Collector + Clone + 'static>(registry: &Registry, c: C) -> C {
    registry
        .register(Box::new(c.clone()))
        .expect("unique metric");
    c
}

/// A registered counter family.
///
/// # Panics
/// On an invalid name or label (a programming error), or one registered already.
pub(super) fn counters(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> IntCounterVec {
    let family = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
    register(registry, family)
}

/// A registered histogram family with `buckets` (seconds).
///
/// # Panics
/// As [`counters`].
pub(super) fn histograms(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
    buckets: &[f64],
) -> HistogramVec {
    let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
    register(
        registry,
        HistogramVec::new(opts, labels).expect("valid metric"),
    )
}

/// A registered gauge family (of floats).
///
/// # Panics
/// As [`counters`].
pub(super) fn gauges(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> GaugeVec {
    let family = GaugeVec::new(Opts::new(name, help), labels).expect("valid metric");
    register(registry, family)
}

/// A registered gauge without labels.
///
/// # Panics
/// As [`counters`].
pub(super) fn gauge(registry: &Registry, name: &str, help: &str) -> IntGauge {
    register(registry, IntGauge::new(name, help).expect("valid metric"))
}
