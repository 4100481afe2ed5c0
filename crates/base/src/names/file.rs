//! Names of files and directories pado creates: a default result directory is
//! `<UTC time>-<test name>` (`20261123T020304.567Z-board`, so a listing sorts by
//! start time), a distributed test's segments sit beside the merged result as
//! `segment-<i>` (Kubernetes) or `segment-<i>-of-<n>` (agents). Test names are free
//! text: every character a file system or a shell would trip on becomes `-`, while
//! letters of any script (Hangul included) stay as written.

use std::time::SystemTime;

/// Where default result directories go, relative to the working directory.
pub const RESULTS_PARENT: &str = "pado-results";

/// Longest name part kept: leaves room for the stamp and a `-N` suffix under the
/// 255 bytes most file systems allow, Hangul's 3 bytes a character included.
const MAX_NAME_CHARS: usize = 60;

/// `name` safe as one path component: letters and digits of any script, `-`, `_`
/// and `.` kept, every other character `-`, leading and trailing `-` trimmed, at most
/// 60 characters; `run` when nothing is left.
pub fn file_safe(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches('-');
    if s.is_empty() {
        "run".into()
    } else {
        s.chars().take(MAX_NAME_CHARS).collect()
    }
}

/// A default result directory's name for the test `name` started at `at`:
/// `20261123T020304.567Z-board`.
pub fn result_dir_stem(name: &str, at: SystemTime) -> String {
    format!("{}-{}", crate::stamp::file_stamp(at), file_safe(name))
}

/// The directory of segment `index` of a distributed test beside the merged result:
/// `segment-<index>` when the segments' count is implied by who ran them (the pods of
/// one Kubernetes Job), `segment-<index>-of-<count>` when it is given (agents, where
/// a directory may be looked at alone).
pub fn segment_dir(index: u64, count: Option<u64>) -> String {
    match count {
        Some(n) => format!("segment-{index}-of-{n}"),
        None => format!("segment-{index}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn names_keep_letters_of_any_script_and_lose_path_characters() {
        assert_eq!(file_safe("board"), "board");
        assert_eq!(file_safe("결제 테스트"), "결제-테스트");
        assert_eq!(file_safe("결제 / checkout"), "결제---checkout");
        assert_eq!(file_safe("../etc/passwd"), "..-etc-passwd");
        assert_eq!(file_safe("a b/c\\d:e"), "a-b-c-d-e");
        assert_eq!(file_safe(" / "), "run");
        assert_eq!(file_safe(""), "run");
        assert_eq!(file_safe(&"가".repeat(100)).chars().count(), 60);
    }

    #[test]
    fn result_directories_sort_by_start_and_name_the_test() {
        let t = UNIX_EPOCH + Duration::from_millis(1_795_000_060_250);
        assert_eq!(
            result_dir_stem("장바구니 test", t),
            "20261118T110740.250Z-장바구니-test"
        );
        let later = t + Duration::from_millis(1);
        assert!(result_dir_stem("a", t) < result_dir_stem("a", later));
    }

    #[test]
    fn segment_directories() {
        assert_eq!(segment_dir(0, None), "segment-0");
        assert_eq!(segment_dir(1, Some(2)), "segment-1-of-2");
    }
}
