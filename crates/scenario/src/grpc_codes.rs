//! gRPC status codes by number and name (the names gRPC's own documentation and
//! every client use), for checks written either way and for reports.

/// The names of codes 0 to 16.
pub const NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// The name of `code` (`None` past 16).
pub fn name(code: u16) -> Option<&'static str> {
    NAMES.get(code as usize).copied()
}

/// The code of a name, case and `_`/`-` insensitive (`NOT_FOUND`, `not-found`,
/// `NotFound`).
pub fn code(name: &str) -> Option<u16> {
    let want: String = name
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .map(|c| c.to_ascii_uppercase())
        .collect();
    NAMES
        .iter()
        .position(|n| n.replace('_', "") == want)
        .map(|i| i as u16)
}

/// The code a [`crate::GrpcCode`] stands for, or why it stands for none.
pub fn resolve(c: &crate::GrpcCode) -> Result<u16, String> {
    match c {
        crate::GrpcCode::Number(n) if *n <= 16 => Ok(*n),
        crate::GrpcCode::Number(n) => Err(format!("{n} is not a gRPC status code (0-16)")),
        crate::GrpcCode::Name(s) => {
            code(s).ok_or_else(|| format!("`{s}` is not a gRPC status code name"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_round_trip() {
        for (i, n) in NAMES.iter().enumerate() {
            assert_eq!(code(n), Some(i as u16));
            assert_eq!(name(i as u16), Some(*n));
        }
        assert_eq!(code("not_found"), Some(5));
        assert_eq!(code("NotFound"), Some(5));
        assert_eq!(code("deadline-exceeded"), Some(4));
        assert_eq!(code("NOPE"), None);
        assert_eq!(name(17), None);
        assert!(resolve(&crate::GrpcCode::Number(17)).is_err());
        assert_eq!(
            resolve(&crate::GrpcCode::Name("UNAVAILABLE".into())),
            Ok(14)
        );
    }
}
