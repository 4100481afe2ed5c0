//! The open-files limit: every VU holds a connection, and the default soft limit
//! (often 1024) would turn a 5,000-VU test into a wall of `io` errors.

/// What raising the limit achieved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileLimit {
    /// Soft limit now in force.
    pub soft: u64,
    /// Hard limit.
    pub hard: u64,
    /// Descriptors the run needs (VUs plus headroom).
    pub needed: u64,
}

impl FileLimit {
    /// Whether the run fits.
    pub fn is_enough(&self) -> bool {
        self.soft >= self.needed
    }

    /// A clear message when it does not.
    pub fn warning(&self) -> Option<String> {
        (!self.is_enough()).then(|| {
            format!(
                "this run may need {} open files (one connection per VU) but the limit is {} (hard limit {}); connections beyond it will fail with `io` errors. Raise it with `ulimit -n {}` (as root, or in /etc/security/limits.conf) or use fewer VUs",
                self.needed, self.soft, self.hard, self.needed
            )
        })
    }
}

/// Raise the soft open-files limit towards what `vus` connections need (up to the
/// hard limit) and report the result.
pub fn raise_nofile(vus: u64) -> FileLimit {
    let needed = vus + 64;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit on a stack struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return FileLimit {
                soft: 0,
                hard: 0,
                needed,
            };
        }
        if lim.rlim_cur < needed as libc::rlim_t {
            let want = (needed as libc::rlim_t).min(lim.rlim_max);
            let new = libc::rlimit {
                rlim_cur: want,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &new) == 0 {
                lim.rlim_cur = want;
            }
        }
    }
    FileLimit {
        soft: lim.rlim_cur,
        hard: lim.rlim_max,
        needed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raises_to_what_is_needed_or_says_why_not() {
        let l = raise_nofile(100);
        assert!(l.is_enough(), "{l:?}");
        assert!(l.warning().is_none());
        let huge = raise_nofile(u32::MAX as u64 * 1000);
        assert!(!huge.is_enough());
        assert!(huge.warning().unwrap().contains("ulimit -n"));
    }
}
