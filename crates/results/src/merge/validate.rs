//! Which directories may be merged: each one segment of the same test, each segment
//! once; and what is missing or cut short (a merge of those is partial).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{MergeError, Source};
use crate::result_dir::{ResultDir, ResultError, SUMMARY_FILE, TIMELINE_FILE};

/// Open `dirs` and check they are segments of one test, each once. Sorted by
/// segment index.
pub(crate) fn open_sources(dirs: &[PathBuf]) -> Result<Vec<Source>, MergeError> {
    let mut sources: Vec<Source> = Vec::with_capacity(dirs.len());
    for d in dirs {
        only_regular_files(d)?;
        let dir = ResultDir::open(d)?;
        let meta = dir.read_meta()?;
        let segment = meta
            .segment
            .clone()
            .ok_or_else(|| MergeError::NotASegment(d.clone()))?;
        let finished = meta.duration_s > 0.0 && d.join(SUMMARY_FILE).is_file();
        let (seconds, idle) = timeline_seconds(&d.join(TIMELINE_FILE))?;
        sources.push(Source {
            path: d.clone(),
            dir,
            meta,
            segment,
            finished,
            seconds,
            idle,
        });
    }
    let first = &sources[0];
    for s in &sources[1..] {
        let (a, b) = (&first.segment, &s.segment);
        let what = if a.plan_id != b.plan_id {
            Some(format!(
                "plan {} vs {}",
                short(&a.plan_id),
                short(&b.plan_id)
            ))
        } else if a.count != b.count {
            Some(format!("{} vs {} segments", a.count, b.count))
        } else if a.weights != b.weights {
            Some(format!(
                "weights {} vs {}",
                join(&a.weights),
                join(&b.weights)
            ))
        } else {
            None
        };
        if let Some(what) = what {
            return Err(MergeError::DifferentTests {
                a: first.path.clone(),
                b: s.path.clone(),
                what,
            });
        }
    }
    sources.sort_by_key(|s| s.segment.index);
    for w in sources.windows(2) {
        if w[0].segment.index == w[1].segment.index {
            return Err(MergeError::DuplicateSegment {
                a: w[0].path.clone(),
                b: w[1].path.clone(),
                index: w[0].segment.index,
                count: w[0].segment.count,
            });
        }
    }
    Ok(sources)
}

/// What keeps the merge from being the whole test: missing segments and segments that
/// ended early, one sentence each, in segment order.
pub(crate) fn problems(sources: &[Source]) -> Vec<String> {
    let count = sources[0].segment.count;
    let planned = planned_length(sources);
    let mut out = Vec::new();
    for i in 0..count {
        let Some(s) = sources.iter().find(|s| s.segment.index == i) else {
            out.push(format!(
                "segment {i}/{count} missing: its share of the load was not sent"
            ));
            continue;
        };
        let reason = if !s.finished {
            Some("pado did not finish writing it (killed or crashed: no summary.json)")
        } else if s.meta.interrupted {
            Some("it was interrupted (Ctrl-C or an aborting threshold)")
        } else if f64::from(s.seconds) + 1.0 < planned.floor()
            && !(s.idle && s.meta.duration_s + 1.0 >= planned.floor())
        {
            Some("its timeline stops there")
        } else {
            None
        };
        if let Some(reason) = reason {
            out.push(format!(
                "segment {i}/{count} ended early at {} s of {} s: {reason} ({})",
                s.seconds,
                planned.round() as u64,
                s.path.display()
            ));
        }
    }
    out
}

/// The test's planned length, seconds: the end of its last executor stage, or the
/// longest segment that ran to its end.
fn planned_length(sources: &[Source]) -> f64 {
    let stages = sources
        .iter()
        .flat_map(|s| s.meta.stages.iter())
        .filter(|m| m.is_executor_stage())
        .map(|m| m.end_s)
        .fold(0.0f64, f64::max);
    let ran = sources
        .iter()
        .filter(|s| s.finished && !s.meta.interrupted)
        .map(|s| s.meta.duration_s)
        .fold(0.0f64, f64::max);
    stages.max(ran)
}

fn short(id: &str) -> String {
    if id.chars().count() > 8 {
        format!("{}…", id.chars().take(8).collect::<String>())
    } else {
        id.to_string()
    }
}

fn join(w: &[u32]) -> String {
    w.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// Refuses a directory holding (or linking to) anything but regular files and
/// directories, judged by its metadata before any file is opened: a FIFO named
/// `timeline.jsonl` would hold a merge up for ever, a device would feed it without
/// end. A directory that cannot be listed is left to the reading that follows, which
/// says why.
fn only_regular_files(dir: &Path) -> Result<(), MergeError> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let path = e.path();
        // Followed through a symlink: a link to a FIFO blocks as the FIFO does.
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let t = meta.file_type();
        let kind = if t.is_file() || t.is_dir() {
            continue;
        } else if t.is_fifo() {
            "FIFO"
        } else if t.is_socket() {
            "socket"
        } else if t.is_block_device() || t.is_char_device() {
            "device"
        } else {
            "special file"
        };
        return Err(MergeError::NotARegularFile { path, kind });
    }
    Ok(())
}

/// Seconds in a timeline (`t` of its last complete line + 1), and whether that last
/// second had no VU at all (a segment whose share of the test is nothing: its
/// timeline ends when its VUs would have started, though its run lasted the test),
/// read from the end of the file: a one-hour timeline is not read twice. A
/// half-written last line (a killed writer) is passed over, as the reader does.
fn timeline_seconds(path: &Path) -> Result<(u32, bool), MergeError> {
    #[derive(Deserialize)]
    struct T {
        t: u32,
        #[serde(default)]
        vus_max: u64,
    }
    let io = |e: std::io::Error| {
        MergeError::Result(ResultError::Io {
            path: path.to_path_buf(),
            source: e,
        })
    };
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((0, false)),
        Err(e) => return Err(io(e)),
    };
    let len = f.metadata().map_err(io)?.len();
    let mut chunk = 64 * 1024u64;
    loop {
        let from = len.saturating_sub(chunk);
        f.seek(SeekFrom::Start(from)).map_err(io)?;
        let mut buf = Vec::with_capacity((len - from) as usize);
        (&mut f)
            .take(len - from)
            .read_to_end(&mut buf)
            .map_err(io)?;
        let mut lines: Vec<&[u8]> = buf.split(|b| *b == b'\n').collect();
        if from > 0 {
            // The first piece may start mid-line.
            lines.remove(0);
        }
        let mut tried_last = false;
        for line in lines.iter().rev() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<T>(line) {
                Ok(t) => return Ok((t.t.saturating_add(1), t.vus_max == 0)),
                Err(e) if e.is_eof() && !tried_last => tried_last = true,
                Err(e) => {
                    return Err(MergeError::Result(ResultError::Format {
                        path: path.to_path_buf(),
                        line: 0,
                        message: format!("near the end: {e}"),
                    }))
                }
            }
        }
        if from == 0 {
            return Ok((0, false));
        }
        chunk *= 4;
    }
}
