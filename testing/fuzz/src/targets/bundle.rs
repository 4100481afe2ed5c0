//! The agent's unpacking of a job bundle (and the coordinator's of a result tar)
//! fed tar streams with hostile entries: paths with `..` or a root, symlinks and
//! hard links, PAX and GNU long-name headers that rename the next entry, sizes that
//! lie.
//!
//! Mutating a real tar's bytes mostly breaks its header checksums, which the reader
//! refuses before anything interesting; so the input describes the entries and the
//! target writes the tar itself, each header's checksum right. Entries are
//! separated by a line `--`; an entry's first line is its type byte (tar's: `0`
//! file, `5` directory, `2` symlink, `1` hard link, `x` PAX, `L` GNU long name, `S`
//! sparse, ...) and its name (raw bytes, cut at 100); then optional lines
//! `@size N` (the size the header claims) and `@link NAME`; the rest is its data.
//!
//! The stream goes to [`pado_fleet::bundle::unpack`] (an agent's job) and to
//! [`pado_fleet::archive::unpack`] with a small byte cap (a result). Whatever it
//! holds: nothing is written outside the destination, nothing but plain files and
//! directories inside it, never more bytes than the cap.

use std::path::Path;

use pado_fleet::{archive, bundle};

use super::with_scratch;

/// The byte cap of the second unpack: small, so inputs can go past it.
const SMALL_CAP: u64 = 4096;

/// Tokens of the input language for the mutator.
pub(crate) const DICT: &[&[u8]] = &[
    b"\n--\n",
    b"0",
    b"5",
    b"2",
    b"1",
    b"x",
    b"L",
    b"K",
    b"S",
    b"7",
    b"g",
    b"../",
    b"/etc/",
    b"./",
    b"files/",
    b"pado-job.json",
    b"\n@size 18446744073709551615\n",
    b"\n@size 8589934591\n",
    b"\n@size 0\n",
    b"\n@link ../../x\n",
    b"\n@link /etc/passwd\n",
    b"21 path=../../escape\n",
    b"24 linkpath=/etc/passwd\n",
    b"{\"test_name\":\"",
    b"\"args\":[\"--out\",",
    "결과".as_bytes(),
];

/// One entry as the input describes it.
struct Entry<'a> {
    kind: u8,
    name: &'a [u8],
    size: Option<u64>,
    link: Option<&'a [u8]>,
    data: &'a [u8],
}

fn entries(input: &[u8]) -> Vec<Entry<'_>> {
    let mut out = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let (one, after) = match rest.windows(4).position(|w| w == b"\n--\n") {
            Some(p) => (&rest[..p], &rest[p + 4..]),
            None => (rest, &[][..]),
        };
        rest = after;
        let (first, mut body) = match one.iter().position(|b| *b == b'\n') {
            Some(p) => (&one[..p], &one[p + 1..]),
            None => (one, &[][..]),
        };
        let Some((&kind, name)) = first.split_first() else {
            continue;
        };
        let mut e = Entry {
            kind,
            name,
            size: None,
            link: None,
            data: &[],
        };
        loop {
            let (line, after) = match body.iter().position(|b| *b == b'\n') {
                Some(p) => (&body[..p], &body[p + 1..]),
                None => (body, &[][..]),
            };
            if let Some(v) = line.strip_prefix(b"@size ") {
                e.size = std::str::from_utf8(v)
                    .ok()
                    .and_then(|v| v.trim().parse().ok());
            } else if let Some(v) = line.strip_prefix(b"@link ") {
                e.link = Some(v);
            } else {
                break;
            }
            body = after;
        }
        e.data = body;
        out.push(e);
    }
    out
}

/// The tar stream of `entries`: a GNU header each (name and link cut at 100 bytes,
/// the checksum right), the data padded to 512, two zero blocks.
fn tar_of(entries: &[Entry<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::new(e.kind));
        h.set_mode(0o644);
        h.set_size(e.size.unwrap_or(e.data.len() as u64));
        {
            let old = h.as_old_mut();
            let n = e.name.len().min(old.name.len());
            old.name[..n].copy_from_slice(&e.name[..n]);
            if let Some(link) = e.link {
                let n = link.len().min(old.linkname.len());
                old.linkname[..n].copy_from_slice(&link[..n]);
            }
        }
        h.set_cksum();
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(e.data);
        out.resize(out.len().next_multiple_of(512), 0);
    }
    out.resize(out.len() + 1024, 0);
    out
}

/// A job bundle (`pado-job.json` and a Hangul-named file); the same with an entry
/// escaping by `..`, by a PAX path, by a GNU long name, a symlink, a hard link, a
/// header claiming 8 GiB, and a job choosing its own output directory.
pub(crate) fn seeds() -> Vec<Vec<u8>> {
    let job = b"0pado-job.json\n{\"test_name\":\"t\",\"segment\":\"0/1\",\"args\":[\"s.yaml\"]}";
    let file = "0files/data/사용자.csv\n이름\n파도\n".as_bytes();
    let with = |extra: &[u8]| {
        let mut v = job.to_vec();
        v.extend_from_slice(b"\n--\n");
        v.extend_from_slice(file);
        if !extra.is_empty() {
            v.extend_from_slice(b"\n--\n");
            v.extend_from_slice(extra);
        }
        v
    };
    vec![
        with(b""),
        with(b"0../../escape\nx"),
        with(b"xpax\n21 path=../../escape\n\n--\n0innocent\ny"),
        with(b"L././@LongLink\n../../long-escape\n--\n0short\nz"),
        with(b"2files/link\n@link /etc/passwd\n"),
        with(b"1files/hard\n@link pado-job.json\n"),
        with(b"0files/huge\n@size 8589934591\nabc"),
        with(b"5files/sub\n\n--\n0files/sub/a\nabc"),
        b"0pado-job.json\n{\"test_name\":\"t\",\"segment\":\"0/1\",\"args\":[\"--out\",\"/etc\"]}"
            .to_vec(),
    ]
}

/// What is under `dir`: every entry must be a plain file or a directory; returns the
/// bytes of the files.
fn only_plain(dir: &Path) -> u64 {
    let mut bytes = 0;
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    for e in rd.flatten() {
        let p = e.path();
        let m = std::fs::symlink_metadata(&p).expect("metadata of an unpacked entry");
        if m.is_dir() {
            bytes += only_plain(&p);
        } else {
            assert!(m.is_file(), "unpacked {} is not a plain file", p.display());
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                assert_eq!(m.nlink(), 1, "unpacked {} is a hard link", p.display());
            }
            bytes += m.len();
        }
    }
    bytes
}

/// Names in `root` other than `dest`: what an unpack into `root/dest` left beside it.
fn beside(root: &Path, dest: &str) -> Vec<String> {
    std::fs::read_dir(root)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != dest)
                .collect()
        })
        .unwrap_or_default()
}

/// The input's tar through both unpackers.
pub fn bundle(data: &[u8]) {
    let tar = tar_of(&entries(data));
    with_scratch(|scratch| {
        // Two levels down, so an entry climbing out by one or two `..` is seen.
        let root = scratch.join("bundle").join("inner");
        let _ = std::fs::remove_dir_all(scratch.join("bundle"));
        std::fs::create_dir_all(&root).expect("create scratch directory");

        let job = root.join("job");
        match bundle::unpack(&tar[..], &job) {
            Ok(spec) => {
                assert!(
                    !spec.args.iter().any(|a| a == "--out" || a == "-o"),
                    "a job choosing its output directory was accepted: {:?}",
                    spec.args
                );
                assert!(job.join(bundle::FILES_DIR).is_dir());
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
        let bytes = only_plain(&job);
        assert!(bytes <= bundle::MAX_BUNDLE_BYTES);
        assert!(
            beside(&root, "job").is_empty(),
            "written beside the job: {:?}",
            beside(&root, "job")
        );
        assert!(
            beside(&scratch.join("bundle"), "inner").is_empty(),
            "written outside the job's directory"
        );

        let result = root.join("result");
        let _ = std::fs::remove_dir_all(&job);
        match archive::unpack(&tar[..], &result, SMALL_CAP) {
            Ok(u) => assert!(
                u.bytes <= SMALL_CAP,
                "{} bytes unpacked past the cap",
                u.bytes
            ),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
        let bytes = only_plain(&result);
        assert!(
            bytes <= SMALL_CAP,
            "{bytes} bytes on disk past the cap of {SMALL_CAP}"
        );
        assert!(
            beside(&root, "result").is_empty(),
            "written beside the result"
        );
        assert!(beside(&scratch.join("bundle"), "inner").is_empty());
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_read_as_described() {
        let es = entries(b"0a/b\n@size 9\n@link x\ndata\n--\n5dir\n--\n");
        assert_eq!(es.len(), 2);
        assert_eq!((es[0].kind, es[0].name), (b'0', &b"a/b"[..]));
        assert_eq!((es[0].size, es[0].link), (Some(9), Some(&b"x"[..])));
        assert_eq!(es[0].data, b"data");
        assert_eq!(
            (es[1].kind, es[1].name, es[1].data),
            (b'5', &b"dir"[..], &b""[..])
        );
        // The tar written reads back through the tar crate with the same entries.
        let tar = tar_of(&entries(b"0a\nxyz\n--\n5d"));
        let mut ar = tar::Archive::new(&tar[..]);
        let got: Vec<(String, u64)> = ar
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.path().unwrap().display().to_string(), e.size())
            })
            .collect();
        assert_eq!(got, vec![("a".to_string(), 3), ("d".to_string(), 0)]);
    }

    #[test]
    fn the_seeds_unpack_or_are_refused_safely() {
        for s in seeds() {
            bundle(&s);
        }
        // The first seed is a good bundle: its Hangul file arrives intact.
        with_scratch(|scratch| {
            let dest = scratch.join("seed-job");
            let _ = std::fs::remove_dir_all(&dest);
            let tar = tar_of(&entries(&seeds()[0]));
            let job = bundle::unpack(&tar[..], &dest).unwrap();
            assert_eq!(job.args, vec!["s.yaml".to_string()]);
            assert_eq!(
                std::fs::read_to_string(dest.join("files/data/사용자.csv")).unwrap(),
                "이름\n파도\n"
            );
        });
    }
}
