//! Byte sizes: read as users write them in scenario files and flags (`4MiB`,
//! `512KiB`, `16MB`, `1GiB`, or a bare number of bytes), and written for people.
//!
//! The rule, one per kind of figure: traffic is written in decimal units as k6 writes
//! it ([`bytes`], `4.1 kB`); memory in binary units as dashboards show heaps
//! ([`memory`], `512 MiB`); a configured size in the exact binary unit that divides
//! it, so a message names the limit the way the user set it ([`size_exact`] in
//! sentences, `1000 bytes`; [`size`] as a scenario file writes it back, `1000 B`).

/// Largest size accepted: bodies are kept in memory per VU, so a limit beyond this is
/// a typo rather than an intention.
pub const MAX_BYTE_SIZE: u64 = 1 << 40;

/// Bytes in a mebibyte: memory in charts and comparisons is given in MiB.
pub const MIB: f64 = 1024.0 * 1024.0;

const HINT: &str = "write e.g. `16MiB`, `512KiB` or a number of bytes";

/// Why a text is not a size; each message says what to write instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// No number where one was expected (`MiB`, `-1MiB`).
    #[error("`{0}` is not a size; {HINT}")]
    NotASize(String),
    /// A unit pado does not know (`12 parsecs`).
    #[error("unknown size unit `{unit}` in `{text}`; {HINT}")]
    UnknownUnit {
        /// The unit as written.
        unit: String,
        /// The whole text.
        text: String,
    },
    /// More than [`MAX_BYTE_SIZE`].
    #[error("`{0}` is larger than pado allows (1 TiB)")]
    TooLarge(String),
}

/// The message alone, for callers whose errors are text.
impl From<SizeError> for String {
    fn from(e: SizeError) -> String {
        e.to_string()
    }
}

/// Parse `16MiB`, `512KiB`, `2MB`, `1GiB`, `1.5MiB` or a bare number of bytes.
/// Binary (`KiB`, `MiB`, `GiB`) and decimal (`kB`/`KB`, `MB`, `GB`) units; `B` for bytes.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let s = text.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().map_err(|_| SizeError::NotASize(text.into()))?;
    let mult: u64 = match unit.trim() {
        "" | "B" | "b" => 1,
        "KiB" | "kib" | "Ki" => 1 << 10,
        "MiB" | "mib" | "Mi" => 1 << 20,
        "GiB" | "gib" | "Gi" => 1 << 30,
        "kB" | "KB" | "kb" | "k" | "K" => 1_000,
        "MB" | "mb" | "M" => 1_000_000,
        "GB" | "gb" | "G" => 1_000_000_000,
        u => {
            return Err(SizeError::UnknownUnit {
                unit: u.into(),
                text: text.into(),
            })
        }
    };
    let v = n * mult as f64;
    if !v.is_finite() || v > MAX_BYTE_SIZE as f64 {
        return Err(SizeError::TooLarge(text.into()));
    }
    Ok(v as u64)
}

/// The largest binary unit that divides `n` exactly: `(count, unit)`.
fn exact_binary(n: u64) -> Option<(u64, &'static str)> {
    [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)]
        .into_iter()
        .find(|&(_, m)| n >= m && n.is_multiple_of(m))
        .map(|(unit, m)| (n / m, unit))
}

/// A configured size as a scenario file writes it back: `16 MiB`, `4 KiB` when a
/// binary unit divides it, MiB with one decimal from a MiB up (`1.5 MiB`), `1000 B`
/// below.
pub fn size(n: u64) -> String {
    match exact_binary(n) {
        Some((k, unit)) => format!("{k} {unit}"),
        None if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / MIB),
        None => format!("{n} B"),
    }
}

/// A configured size in exact binary units when one divides it (`16 MiB`, `4 KiB`),
/// bytes otherwise (`1000 bytes`): for sentences, so a message names the limit the
/// way the user set it.
pub fn size_exact(n: u64) -> String {
    match exact_binary(n) {
        Some((k, unit)) => format!("{k} {unit}"),
        None => format!("{n} bytes"),
    }
}

/// Bytes in B/kB/MB/GB, decimal units as k6 writes traffic (`512 B`, `4.1 kB`).
pub fn bytes(n: u64) -> String {
    let f = n as f64;
    if f < 1e3 {
        format!("{n} B")
    } else if f < 1e6 {
        format!("{:.1} kB", f / 1e3)
    } else if f < 1e9 {
        format!("{:.1} MB", f / 1e6)
    } else {
        format!("{:.2} GB", f / 1e9)
    }
}

/// A memory size in binary units, whole MiB below a GiB (`512 MiB`, `3.5 GiB`): how
/// heaps and machines' memory are usually read on dashboards.
pub fn memory(bytes: f64) -> String {
    const GI: f64 = 1024.0 * MIB;
    if bytes >= GI {
        format!("{:.1} GiB", bytes / GI)
    } else {
        format!("{:.0} MiB", bytes / MIB)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_size("16MiB").unwrap(), 16 << 20);
        assert_eq!(parse_size(" 512 KiB ").unwrap(), 512 << 10);
        assert_eq!(parse_size("2MB").unwrap(), 2_000_000);
        assert_eq!(parse_size("1.5MiB").unwrap(), 3 << 19);
        assert_eq!(parse_size("1000").unwrap(), 1000);
    }

    #[test]
    fn refuses_nonsense_with_a_hint() {
        for bad in ["", "MiB", "12 parsecs", "-1MiB", "99999GiB"] {
            let e = parse_size(bad).unwrap_err().to_string();
            assert!(e.contains('`'), "{bad}: {e}");
        }
        assert_eq!(
            parse_size("12 parsecs").unwrap_err().to_string(),
            "unknown size unit `parsecs` in `12 parsecs`; write e.g. `16MiB`, `512KiB` or a number of bytes"
        );
        assert_eq!(
            parse_size("99999GiB").unwrap_err().to_string(),
            "`99999GiB` is larger than pado allows (1 TiB)"
        );
    }

    #[test]
    fn formats() {
        assert_eq!(size(4 << 20), "4 MiB");
        assert_eq!(size(3 << 10), "3 KiB");
        assert_eq!(size(1000), "1000 B");
        assert_eq!(size(3 << 19), "1536 KiB");
        assert_eq!(size((3 << 20) + 1), "3.0 MiB");
    }

    #[test]
    fn counts_and_sizes() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(4_100), "4.1 kB");
        assert_eq!(bytes(12_300_000), "12.3 MB");
        assert_eq!(bytes(2_500_000_000), "2.50 GB");
        assert_eq!(memory(512.0 * 1024.0 * 1024.0), "512 MiB");
        assert_eq!(memory(3.5 * 1024.0 * 1024.0 * 1024.0), "3.5 GiB");
        assert_eq!(size_exact(16 << 20), "16 MiB");
        assert_eq!(size_exact(4096), "4 KiB");
        assert_eq!(size_exact(1000), "1000 bytes");
        assert_eq!(size_exact((3 << 20) + 1), "3145729 bytes");
    }
}
