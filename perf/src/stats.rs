//! Statistics over repeated runs: median, mean, min/max and coefficient of variation.
//!
//! All functions are pure and total: empty inputs give `None` or zero rather than panicking.

pub mod gates;

use serde::{Deserialize, Serialize};

/// Above this coefficient of variation (15%) a set of runs is unstable (Kong's rule).
pub const UNSTABLE_CV: f64 = 0.15;

/// The spread of one metric over repeated runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (mean of the two middle values for an even count).
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Sample standard deviation over the mean (0 for fewer than 2 samples or a zero mean).
    pub cv: f64,
}

impl Summary {
    /// Summarises `values`; NaN values are ignored. `None` when nothing is left.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
        v.sort_by(f64::total_cmp);
        Some(Summary {
            n: v.len(),
            mean: mean(&v)?,
            median: median_sorted(&v)?,
            min: *v.first()?,
            max: *v.last()?,
            cv: cv(&v),
        })
    }

    /// Whether the runs vary too much to be trusted (CV above [`UNSTABLE_CV`]).
    pub fn unstable(&self) -> bool {
        self.cv > UNSTABLE_CV
    }
}

/// The arithmetic mean, `None` for an empty slice.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The median, `None` for an empty slice. The input need not be sorted.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    median_sorted(&v)
}

fn median_sorted(v: &[f64]) -> Option<f64> {
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The coefficient of variation: sample standard deviation (n − 1) over the mean. 0 for fewer
/// than two values or a zero mean.
pub fn cv(values: &[f64]) -> f64 {
    let Some(m) = mean(values) else { return 0.0 };
    if values.len() < 2 || m == 0.0 {
        return 0.0;
    }
    let var = values.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64;
    var.sqrt() / m.abs()
}

/// `b / a`, or `None` when `a` is zero or the ratio is not finite.
pub fn ratio(b: f64, a: f64) -> Option<f64> {
    let r = b / a;
    (a != 0.0 && r.is_finite()).then_some(r)
}

/// p50/p95/p99/max in milliseconds of latencies given in microseconds (sorted in place); zeros when
/// there are none.
pub fn percentiles_ms(us: &mut [f64]) -> crate::results::Latency {
    us.sort_by(f64::total_cmp);
    let at = |q: f64| match us.len() {
        0 => 0.0,
        n => us[((n as f64 * q).ceil() as usize).clamp(1, n) - 1] / 1000.0,
    };
    crate::results::Latency {
        p50: at(0.50),
        p95: at(0.95),
        p99: at(0.99),
        max: at(1.0),
    }
}
