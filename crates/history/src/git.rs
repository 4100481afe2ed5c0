//! The git commit a run was made from, read from the repository's files (no `git`
//! process): `.git` found upwards from a directory, `HEAD` followed to its ref, the
//! ref read loose or from `packed-refs`, worktrees through their `commondir`. Any
//! doubt gives `None`: a label is never worth failing a run.

use std::path::{Path, PathBuf};

/// The commit `HEAD` points at in the repository holding `start` (40 hex digits),
/// or `None` outside a repository or when it cannot be read.
pub fn git_commit(start: &Path) -> Option<String> {
    let git_dir = find_git_dir(start)?;
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(r) = head.strip_prefix("ref:") else {
        return is_hash(head).then(|| head.to_string());
    };
    let r = r.trim();
    if r.contains("..") {
        return None;
    }
    let common = std::fs::read_to_string(git_dir.join("commondir"))
        .ok()
        .map(|c| {
            let c = PathBuf::from(c.trim());
            if c.is_absolute() {
                c
            } else {
                git_dir.join(c)
            }
        })
        .unwrap_or_else(|| git_dir.clone());
    for base in [&git_dir, &common] {
        if let Ok(h) = std::fs::read_to_string(base.join(r)) {
            let h = h.trim();
            if is_hash(h) {
                return Some(h.to_string());
            }
        }
    }
    let packed = std::fs::read_to_string(common.join("packed-refs")).ok()?;
    packed.lines().find_map(|l| {
        let (hash, name) = l.split_once(' ')?;
        (name.trim() == r && is_hash(hash)).then(|| hash.to_string())
    })
}

fn is_hash(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The git directory for `start`: `.git` as a directory, or the `gitdir:` a `.git`
/// file (worktree, submodule) names.
fn find_git_dir(start: &Path) -> Option<PathBuf> {
    let start = std::fs::canonicalize(start).ok()?;
    for d in start.ancestors() {
        let g = d.join(".git");
        if g.is_dir() {
            return Some(g);
        }
        if g.is_file() {
            let text = std::fs::read_to_string(&g).ok()?;
            let p = PathBuf::from(text.trim().strip_prefix("gitdir:")?.trim());
            return Some(if p.is_absolute() { p } else { d.join(p) });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0123456789abcdef0123456789abcdef01234567";
    const B: &str = "89abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn loose_packed_detached_and_worktree_heads() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("repo");
        let g = repo.join(".git");
        std::fs::create_dir_all(g.join("refs/heads")).unwrap();
        std::fs::create_dir_all(repo.join("sub/dir")).unwrap();
        std::fs::write(g.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(g.join("refs/heads/main"), format!("{A}\n")).unwrap();
        assert_eq!(git_commit(&repo.join("sub/dir")).as_deref(), Some(A));
        // Packed only.
        std::fs::remove_file(g.join("refs/heads/main")).unwrap();
        std::fs::write(
            g.join("packed-refs"),
            format!("# pack-refs\n{B} refs/heads/main\n"),
        )
        .unwrap();
        assert_eq!(git_commit(&repo).as_deref(), Some(B));
        // A worktree: `.git` file → its gitdir, refs in the common directory.
        let wt_git = g.join("worktrees/wt");
        std::fs::create_dir_all(&wt_git).unwrap();
        std::fs::write(wt_git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(wt_git.join("commondir"), "../..\n").unwrap();
        let wt = t.path().join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", wt_git.display())).unwrap();
        assert_eq!(git_commit(&wt).as_deref(), Some(B));
        // Detached.
        std::fs::write(g.join("HEAD"), format!("{A}\n")).unwrap();
        assert_eq!(git_commit(&repo).as_deref(), Some(A));
        // An unborn branch: nothing.
        std::fs::write(g.join("HEAD"), "ref: refs/heads/none\n").unwrap();
        assert_eq!(git_commit(&repo), None);
    }
}
