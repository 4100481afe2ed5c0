//! How pado reads and writes units: milliseconds, percentages, byte sizes, counts,
//! rates and durations. One home for them so the terminal summary, the HTML report,
//! the exports, the live progress line, the analysis' sentences and the scenario's
//! messages agree on the same figure, and a change of precision is made once. Each
//! kind of figure has one rule; where two spellings of the same value are both
//! wanted (a sentence and a table), each has its own function saying which.
//!
//! Formatting here is presentation only: result files keep the raw numbers.

mod duration;
mod size;

pub use duration::{duration, duration_compact, parse_duration, seconds, DurationError};
pub use size::{bytes, memory, parse_size, size, size_exact, SizeError, MAX_BYTE_SIZE, MIB};

/// Microseconds (how samples and histograms store time) as fractional milliseconds
/// (how every report shows it).
pub fn us_to_ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Milliseconds with a precision that fits the magnitude (`0.412`, `12.35`, `240.5`,
/// `12034`), so a column of latencies stays readable from microseconds to minutes.
pub fn ms(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v < 1.0 {
        format!("{v:.3}")
    } else if v < 100.0 {
        format!("{v:.2}")
    } else if v < 10_000.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// Milliseconds at microsecond precision without trailing zeros (`12.5`, `3`): for
/// machine-read exports, where nothing must be rounded away.
pub fn ms_exact(v: f64) -> String {
    format!("{v:.3}")
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_string()
}

/// Microseconds as milliseconds with two decimals and the unit (`12.35 ms`): for one
/// request's timings, where every phase gets the same precision.
pub fn ms_of_us(us: u64) -> String {
    format!("{:.2} ms", us_to_ms(us))
}

/// Milliseconds with their unit and at most one decimal (`4.2 ms`, `37 ms`): for
/// sentences, where a rough figure reads better than a precise one.
pub fn ms_short(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.1} ms")
    } else {
        format!("{v:.0} ms")
    }
}

/// A number without trailing zeros (`0.0007`, `20.015`, `3`): how a threshold's value
/// or a limit is written back, as close as possible to how the user wrote it.
pub fn plain(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.4}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

/// A value of any unit with precision by magnitude (`1234`, `12.35`, `0.412`), `-`
/// when missing: for tables that put different metrics in one column.
pub fn value(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x.abs() >= 100.0 => format!("{x:.0}"),
        Some(x) if x.abs() >= 1.0 => format!("{x:.2}"),
        Some(x) => format!("{x:.3}"),
    }
}

/// A rate per second: whole above 100 (`1234`), one decimal below (`12.5`).
pub fn rate(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A rate (or any figure) as a message writes it back: whole numbers bare (`200`),
/// at most three decimals (`2.5`), scientific notation outside 0.001..10⁷
/// (`1.000e308`), and `an unbounded number of` when not finite: for limits, where the
/// user must recognise the number they wrote.
pub fn rate_exact(r: f64) -> String {
    if !r.is_finite() {
        "an unbounded number of".to_string()
    } else if r != 0.0 && !(1e-3..1e7).contains(&r.abs()) {
        format!("{r:.3e}")
    } else if r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

/// A load level (VUs, a rate) in a schedule's description: whole numbers bare (`50`),
/// others with two decimals (`2.50`).
pub fn level(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{v:.2}")
    }
}

/// A measured load or count in a sentence: whole when within 0.05 of a whole number
/// (`12`), else one decimal (`12.3`).
pub fn short(x: f64) -> String {
    if (x - x.round()).abs() < 0.05 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// `part` over `whole` as a fraction (0 when `whole` is 0, never NaN): an error
/// rate (failed over requests), a rate (requests over seconds), a late share.
pub fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// `part` as a percentage of `whole` (0 when `whole` is 0, never NaN).
pub fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// A fraction (0.42) as a whole percentage (`42%`): for sentences about shares.
pub fn percent(fraction: f64) -> String {
    format!("{:.0}%", fraction * 100.0)
}

/// A fraction (0.0123) as a percentage with two decimals (`1.23%`): for error rates,
/// where 0.01% matters.
pub fn percent2(fraction: f64) -> String {
    format!("{:.2}%", fraction * 100.0)
}

/// `1234567` -> `1,234,567`: counts people compare by eye.
pub fn thousands(n: u64) -> String {
    let mut buf = itoa::Buffer::new();
    let s = buf.format(n);
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A VU count in words: `1 VU`, `150 VUs` (rounded to whole VUs; averages are
/// fractional).
pub fn vus(n: f64) -> String {
    let n = n.round();
    if n == 1.0 {
        "1 VU".into()
    } else {
        format!("{n:.0} VUs")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_of_nothing_is_zero_not_nan() {
        assert_eq!(share(3, 4), 0.75);
        assert_eq!(share(0, 4), 0.0);
        assert_eq!(share(5, 0), 0.0);
        assert_eq!(share(u64::MAX, u64::MAX), 1.0);
    }

    #[test]
    fn milliseconds() {
        assert_eq!(us_to_ms(1500), 1.5);
        assert_eq!(ms(0.0), "0");
        assert_eq!(ms(0.4123), "0.412");
        assert_eq!(ms(12.345), "12.35");
        assert_eq!(ms(240.53), "240.5");
        assert_eq!(ms(12_034.4), "12034");
        assert_eq!(ms_exact(12.5), "12.5");
        assert_eq!(ms_exact(3.0), "3");
        assert_eq!(ms_exact(0.0004), "0");
        assert_eq!(ms_of_us(12_345), "12.35 ms");
        assert_eq!(ms_of_us(0), "0.00 ms");
        assert_eq!(ms_short(4.23), "4.2 ms");
        assert_eq!(ms_short(37.4), "37 ms");
    }

    #[test]
    fn plain_values_and_rates() {
        assert_eq!(plain(3.0), "3");
        assert_eq!(plain(0.0007), "0.0007");
        assert_eq!(plain(20.015), "20.015");
        assert_eq!(plain(-2.5), "-2.5");
        assert_eq!(value(None), "-");
        assert_eq!(value(Some(1234.4)), "1234");
        assert_eq!(value(Some(-12.345)), "-12.35");
        assert_eq!(value(Some(0.4123)), "0.412");
        assert_eq!(rate(1234.4), "1234");
        assert_eq!(rate(12.54), "12.5");
        assert_eq!(rate_exact(200.0), "200");
        assert_eq!(rate_exact(2.5), "2.5");
        assert_eq!(rate_exact(1e308), "1.000e308");
        assert_eq!(rate_exact(1e-9), "1.000e-9");
        assert_eq!(rate_exact(f64::INFINITY), "an unbounded number of");
        assert_eq!(level(50.0), "50");
        assert_eq!(level(2.5), "2.50");
        assert_eq!(short(12.04), "12");
        assert_eq!(short(12.3), "12.3");
    }

    #[test]
    fn percentages() {
        assert_eq!(pct(1, 4), 25.0);
        assert_eq!(pct(1, 0), 0.0);
        assert_eq!(percent(0.424), "42%");
        assert_eq!(percent2(0.0123), "1.23%");
        assert_eq!(percent2(0.0), "0.00%");
    }

    #[test]
    fn counts_and_sizes() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(vus(1.0), "1 VU");
        assert_eq!(vus(149.6), "150 VUs");
        assert_eq!(vus(0.0), "0 VUs");
    }
}
