//! Result directories as one tar stream: packed in the pod, unpacked by the
//! coordinator. Unpacking trusts nothing: only regular files and directories, no
//! path that could leave the destination (absolute, `..`, links), a cap on bytes
//! and entries.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// Most bytes one segment's result may unpack to by default (a one-hour run's
/// timeline is tens of MB).
pub const DEFAULT_MAX_BYTES: u64 = 2 * 1024 * 1024 * 1024;
/// Most entries one result may hold.
pub const MAX_ENTRIES: usize = 10_000;

/// Why a result could not be packed or unpacked.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// Reading or writing failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// An entry that would leave the destination or is not a plain file or directory.
    #[error("refused entry `{0}`: only plain files and directories under the result directory")]
    Unsafe(String),
    /// Past the byte cap.
    #[error("the result is larger than {0} bytes")]
    TooLarge(u64),
    /// Past the entry cap.
    #[error("the result has more than {MAX_ENTRIES} entries")]
    TooManyEntries,
}

/// Packs the files under `dir` (recursively, symlinks not followed) into a tar.
pub fn pack_dir(dir: &Path) -> Result<Vec<u8>, ArchiveError> {
    let mut b = tar::Builder::new(Vec::new());
    b.follow_symlinks(false);
    b.mode(tar::HeaderMode::Deterministic);
    b.append_dir_all(".", dir)?;
    Ok(b.into_inner()?)
}

/// What an unpack wrote.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Unpacked {
    /// Files written.
    pub files: usize,
    /// Bytes written.
    pub bytes: u64,
}

/// Unpacks `tar` into `dest` (created if missing), refusing anything unsafe and
/// stopping past `max_bytes`. Files are created new: an entry cannot overwrite.
pub fn unpack(tar: impl Read, dest: &Path, max_bytes: u64) -> Result<Unpacked, ArchiveError> {
    std::fs::create_dir_all(dest)?;
    let mut archive = tar::Archive::new(tar);
    let mut done = Unpacked::default();
    for (n, entry) in archive.entries()?.enumerate() {
        if n >= MAX_ENTRIES {
            return Err(ArchiveError::TooManyEntries);
        }
        let mut entry = entry?;
        let raw = entry.path()?.into_owned();
        let shown = raw.display().to_string();
        let rel = safe_relative(&raw).ok_or_else(|| ArchiveError::Unsafe(shown.clone()))?;
        let kind = entry.header().entry_type();
        let target = dest.join(&rel);
        if kind.is_dir() {
            std::fs::create_dir_all(&target)?;
            continue;
        }
        if !kind.is_file() {
            return Err(ArchiveError::Unsafe(shown));
        }
        if rel.as_os_str().is_empty() {
            return Err(ArchiveError::Unsafe(shown));
        }
        let size = entry.header().size()?;
        if done.bytes.saturating_add(size) > max_bytes {
            return Err(ArchiveError::TooLarge(max_bytes));
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&target)?;
        // The header's size is what the reader yields; take() guards a lying one.
        let copied = std::io::copy(&mut (&mut entry).take(size), &mut out)?;
        done.bytes += copied;
        done.files += 1;
    }
    Ok(done)
}

/// The path with `.` dropped, or `None` when it has a root, a prefix or `..`.
fn safe_relative(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => out.push(s),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw_tar(entries: &[(&str, tar::EntryType, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (path, kind, body) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(*kind);
            h.set_size(body.len() as u64);
            h.set_mode(0o644);
            // set_path refuses `..`; write the name bytes directly as an attacker would.
            let name = &mut h.as_old_mut().name;
            name[..path.len()].copy_from_slice(path.as_bytes());
            if *kind == tar::EntryType::Symlink {
                h.set_link_name("/etc/passwd").unwrap();
            }
            h.set_cksum();
            b.append(&h, *body).unwrap();
        }
        b.into_inner().unwrap()
    }

    #[test]
    fn a_directory_round_trips_with_hangul_names() {
        let src = tempfile::tempdir().unwrap();
        std::fs::write(src.path().join("run.json"), b"{\"name\":\"\xea\xb2\xb0\"}").unwrap();
        std::fs::create_dir(src.path().join("sub")).unwrap();
        std::fs::write(src.path().join("sub/결과.txt"), "한글").unwrap();
        let tar = pack_dir(src.path()).unwrap();
        let dst = tempfile::tempdir().unwrap();
        let got = unpack(&tar[..], &dst.path().join("seg-0"), 1 << 20).unwrap();
        assert_eq!(got.files, 2);
        assert_eq!(
            std::fs::read_to_string(dst.path().join("seg-0/sub/결과.txt")).unwrap(),
            "한글"
        );
        assert_eq!(
            std::fs::read(dst.path().join("seg-0/run.json")).unwrap(),
            std::fs::read(src.path().join("run.json")).unwrap()
        );
    }

    #[test]
    fn escaping_paths_and_links_are_refused() {
        let dst = tempfile::tempdir().unwrap();
        for (path, kind) in [
            ("../evil", tar::EntryType::Regular),
            ("/abs", tar::EntryType::Regular),
            ("a/../../evil", tar::EntryType::Regular),
            ("link", tar::EntryType::Symlink),
        ] {
            let t = raw_tar(&[(path, kind, b"x")]);
            let e = unpack(&t[..], &dst.path().join("d"), 1 << 20).unwrap_err();
            assert!(matches!(e, ArchiveError::Unsafe(_)), "{path}: {e}");
        }
        assert!(!dst.path().join("evil").exists());
        assert!(!dst.path().join("d/link").exists());
    }

    #[test]
    fn the_byte_cap_stops_a_large_result() {
        let t = raw_tar(&[
            ("a", tar::EntryType::Regular, &[1u8; 600]),
            ("b", tar::EntryType::Regular, &[2u8; 600]),
        ]);
        let dst = tempfile::tempdir().unwrap();
        let e = unpack(&t[..], dst.path(), 1000).unwrap_err();
        assert!(matches!(e, ArchiveError::TooLarge(1000)), "{e}");
        assert!(unpack(&t[..], &dst.path().join("ok"), 1200).is_ok());
    }
}
