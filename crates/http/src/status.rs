//! Which response statuses a request accepts. It lives with the client because the
//! exchange reads it per response: a status outside the set is a failure whose first
//! body bytes are kept for the failure sample ([`crate::RequestRef::failed_prefix`]).

/// A set of accepted statuses, as inclusive ranges (`200..=299` is `(200, 299)`).
#[derive(Clone, Debug, PartialEq)]
pub struct StatusSet(pub Vec<(u16, u16)>);

impl StatusSet {
    /// Whether `code` is accepted.
    #[inline]
    pub fn contains(&self, code: u16) -> bool {
        self.0.iter().any(|&(a, b)| a <= code && code <= b)
    }
    /// 100..=399, the default expectation.
    pub fn default_ok() -> Self {
        StatusSet(vec![(100, 399)])
    }
}
