//! Kubernetes names for one test: the test id that names its Job and ConfigMap and
//! labels its pods. Kubernetes wants DNS-1123 labels (lowercase ASCII letters, digits
//! and `-`, at most 63 characters, starting and ending with an alphanumeric); test
//! names are free text, Hangul included, so they are folded to ASCII and, when that
//! loses anything, a hash of the whole name keeps different names apart.

/// Longest test id: the Job controller names pods `<job>-<index>-<5 random>` and
/// labels them with the Job's name, so the id leaves room under 63 characters.
pub const MAX_TEST_ID: usize = 48;

/// The test id for `test_name` with a per-run `suffix` (e.g. [`run_suffix`]):
/// `pado-<ascii slug>[-<hash>]-<suffix>`, always a valid DNS-1123 label.
///
/// The slug keeps ASCII letters and digits (lowercased), turns every other run of
/// characters into one `-`, and is cut to fit. When the name had characters the
/// slug could not keep (Hangul, punctuation) or was cut, 8 hex digits of a hash of
/// the whole name follow, so `결제 테스트` and `주문 테스트` get different ids.
pub fn test_id(test_name: &str, suffix: &str) -> String {
    let mut slug = String::new();
    let mut lossy = false;
    for c in test_name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
            lossy |= c.is_ascii_uppercase();
        } else {
            if !matches!(c, ' ' | '-' | '_' | '.' | '/') {
                lossy = true;
            }
            if !slug.is_empty() && !slug.ends_with('-') {
                slug.push('-');
            }
        }
    }
    let suffix: String = suffix
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .take(12)
        .collect();
    let hash = format!("{:08x}", fnv1a(test_name.as_bytes()));
    // pado- + slug + -hash + -suffix
    let room = MAX_TEST_ID - "pado-".len() - 1 - suffix.len() - 9;
    if slug.len() > room {
        slug.truncate(room);
        lossy = true;
    }
    let slug = slug.trim_matches('-');
    let mut id = String::from("pado");
    if !slug.is_empty() {
        id.push('-');
        id.push_str(slug);
    }
    if lossy || slug.is_empty() {
        id.push('-');
        id.push_str(&hash);
    }
    if !suffix.is_empty() {
        id.push('-');
        id.push_str(&suffix);
    }
    id
}

/// A short per-run suffix (6 base-36 characters from the clock and the process id),
/// so two runs of the same test in one namespace do not collide.
pub fn run_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mut x = fnv1a(format!("{nanos}-{}", std::process::id()).as_bytes()) as u64;
    let mut s = String::new();
    for _ in 0..6 {
        let d = (x % 36) as u8;
        s.push(if d < 10 { b'0' + d } else { b'a' + d - 10 } as char);
        x /= 36;
    }
    s
}

/// Whether `s` is a DNS-1123 label as Kubernetes checks object names and label values.
pub fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

/// 32-bit FNV-1a: a stable hash (the same id for the same name on every machine),
/// enough to tell test names apart; nothing depends on it being secret.
fn fnv1a(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_names_keep_their_words() {
        assert_eq!(test_id("checkout", "abc123"), "pado-checkout-abc123");
        assert_eq!(test_id("my test_v2", "x1"), "pado-my-test-v2-x1");
    }

    #[test]
    fn hangul_names_give_valid_distinct_ids() {
        let a = test_id("결제 테스트", "abc123");
        let b = test_id("주문 테스트", "abc123");
        assert!(is_dns1123_label(&a), "{a}");
        assert!(is_dns1123_label(&b), "{b}");
        assert_ne!(a, b);
        assert!(a.starts_with("pado-") && a.ends_with("-abc123"), "{a}");
        // Mixed: the ASCII part stays readable, the hash keeps it apart.
        let m = test_id("API 부하 test", "abc123");
        assert!(m.starts_with("pado-api-test-"), "{m}");
        assert!(is_dns1123_label(&m));
    }

    #[test]
    fn long_and_odd_names_are_cut_to_a_valid_label() {
        for name in [
            &"x".repeat(300),
            "---",
            "",
            "UPPER.case/Name!!",
            "끝-",
            "a--b",
        ] {
            let id = test_id(name, "zz9");
            assert!(is_dns1123_label(&id), "{name:?} -> {id}");
            assert!(id.len() <= MAX_TEST_ID, "{id}");
        }
        assert_ne!(
            test_id(&"x".repeat(300), "s"),
            test_id(&"x".repeat(301), "s")
        );
    }

    #[test]
    fn the_label_check_rejects_what_kubernetes_rejects() {
        for bad in ["", "-a", "a-", "A", "a_b", "한", &"a".repeat(64)] {
            assert!(!is_dns1123_label(bad), "{bad}");
        }
        assert!(is_dns1123_label("a"));
        assert!(is_dns1123_label("a-1"));
    }

    #[test]
    fn run_suffixes_are_labels() {
        let s = run_suffix();
        assert_eq!(s.len(), 6);
        assert!(is_dns1123_label(&s) || s.chars().all(|c| c.is_ascii_alphanumeric()));
    }
}
