//! Calendar-aligned windows in UTC: where the current second/minute/hour/day/month/year starts and ends.

/// A rate-limit period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Period {
    Second,
    Minute,
    Hour,
    Day,
    Month,
    Year,
}

/// Shortest first (the order Kong checks that longer limits are not lower).
pub const PERIODS: [Period; 6] = [
    Period::Second,
    Period::Minute,
    Period::Hour,
    Period::Day,
    Period::Month,
    Period::Year,
];

impl Period {
    /// The config field name.
    pub fn name(self) -> &'static str {
        match self {
            Period::Second => "second",
            Period::Minute => "minute",
            Period::Hour => "hour",
            Period::Day => "day",
            Period::Month => "month",
            Period::Year => "year",
        }
    }
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// The civil (year, month) of a day number.
fn civil_from_days(z: i64) -> (i64, i64) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m)
}

/// How long a shared store keeps the counter of a window `len` seconds long, from its first count: the
/// window plus a grace (5 s, or the window's length up to 60 s), so a request stamped late in the window
/// that reaches Redis or the database after the window's end still counts in the same counter instead of
/// starting it again at 1 (a second window kept exactly 1 s let a lagging burst through twice).
pub fn kept_for(len: u64) -> u64 {
    len.max(1) + len.clamp(5, 60)
}

/// `[start, end)` in Unix seconds of the window of `period` containing `now`.
pub fn bounds(period: Period, now: u64) -> (u64, u64) {
    let fixed = |len: u64| (now - now % len, now - now % len + len);
    match period {
        Period::Second => (now, now + 1),
        Period::Minute => fixed(60),
        Period::Hour => fixed(3600),
        Period::Day => fixed(86400),
        Period::Month | Period::Year => {
            let (y, m) = civil_from_days((now / 86400) as i64);
            let (start, next) = if period == Period::Month {
                let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                (days_from_civil(y, m, 1), days_from_civil(ny, nm, 1))
            } else {
                (days_from_civil(y, 1, 1), days_from_civil(y + 1, 1, 1))
            };
            ((start * 86400) as u64, (next * 86400) as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_calendar_aligned() {
        // 2024-02-29T13:45:30Z
        let now = 1_709_214_330;
        assert_eq!(bounds(Period::Second, now), (now, now + 1));
        assert_eq!(bounds(Period::Minute, now), (1_709_214_300, 1_709_214_360));
        assert_eq!(bounds(Period::Hour, now), (1_709_211_600, 1_709_215_200));
        assert_eq!(bounds(Period::Day, now), (1_709_164_800, 1_709_251_200));
        // February 2024 (leap year) → March 1st.
        assert_eq!(bounds(Period::Month, now), (1_706_745_600, 1_709_251_200));
        assert_eq!(bounds(Period::Year, now), (1_704_067_200, 1_735_689_600));
        // December rolls over into the next year.
        let dec = 1_734_000_000; // 2024-12-12
        assert_eq!(bounds(Period::Month, dec), (1_733_011_200, 1_735_689_600));
    }

    #[test]
    fn counters_outlive_their_window_by_a_grace() {
        assert_eq!(kept_for(1), 6);
        assert_eq!(kept_for(60), 120);
        assert_eq!(kept_for(3600), 3660);
    }
}
