//! A generator's live feeds: the complete lines of a JSON-lines file the run is
//! writing (its `timeline.jsonl`, its `observe.jsonl`) from a given line on, read
//! from the file itself (the run does nothing for it, so watching costs the load
//! nothing).
//!
//! The feed keeps the byte offset of each complete line it has seen and answers
//! `from = n` by reading from line `n`'s offset: each poll reads only what it
//! returns, however long the run. An answer is bounded in lines and in bytes, so a
//! reader that fell behind catches up over a few polls instead of one huge answer.
//!
//! Line `n` of the timeline is second `n` (every second is written, an idle one
//! empty); the lines of `observe.jsonl` are its records in the order written.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

/// Most seconds one answer of the timeline holds.
pub const MAX_SECONDS_PER_POLL: usize = 120;

/// Most bytes one answer of the timeline holds (below the coordinator's limit on
/// an answer, `crate::client`'s).
pub const MAX_TIMELINE_BYTES_PER_POLL: usize = 128 * 1024 * 1024;

/// Most lines of `observe.jsonl` one answer holds: a scrape every second of a
/// few endpoints is a few lines a second.
pub const MAX_OBSERVED_LINES_PER_POLL: usize = 2000;

/// Most bytes of `observe.jsonl` one answer holds (a scrape line of an exporter's
/// 20,000 changed series is about 400 KiB).
pub const MAX_OBSERVED_BYTES_PER_POLL: usize = 4 * 1024 * 1024;

/// The index of a growing JSON-lines file.
#[derive(Debug)]
pub struct LineFeed {
    path: PathBuf,
    /// Byte offset of the start of each complete line, and one past the last one.
    starts: Vec<u64>,
    /// How far the file has been scanned for line ends.
    scanned: u64,
}

impl LineFeed {
    /// The feed of the file at `path` (it may not exist yet).
    pub fn new(path: PathBuf) -> LineFeed {
        LineFeed {
            path,
            starts: vec![0],
            scanned: 0,
        }
    }

    /// Complete lines known so far (after the last [`LineFeed::lines_from`]): for
    /// the timeline, its complete seconds.
    pub fn lines(&self) -> usize {
        self.starts.len() - 1
    }

    /// The complete lines `from..` as written, each ending in `\n`: at most
    /// `max_lines`, and no more bytes than `max_bytes` unless the first line alone
    /// is longer (then it alone, so the reader never stalls on it). Empty when
    /// none is complete yet or the file does not exist yet.
    pub fn lines_from(
        &mut self,
        from: usize,
        max_lines: usize,
        max_bytes: usize,
    ) -> std::io::Result<Vec<u8>> {
        let mut f = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        self.scan(&mut f)?;
        let have = self.lines();
        if from >= have || max_lines == 0 {
            return Ok(Vec::new());
        }
        let a = self.starts[from];
        let mut end_line = have.min(from.saturating_add(max_lines));
        // The last line that still fits in `max_bytes` (at least one).
        let limit = a.saturating_add(max_bytes as u64);
        let fits = self.starts[from + 1..=end_line].partition_point(|s| *s <= limit);
        end_line = from + fits.max(1);
        let b = self.starts[end_line];
        let mut out = vec![0; (b - a) as usize];
        f.seek(SeekFrom::Start(a))?;
        f.read_exact(&mut out)?;
        Ok(out)
    }

    /// Finds the line ends written since the last scan.
    fn scan(&mut self, f: &mut File) -> std::io::Result<()> {
        let len = f.metadata()?.len();
        if len < self.scanned {
            // The file was replaced: start over.
            self.starts = vec![0];
            self.scanned = 0;
        }
        if len == self.scanned {
            return Ok(());
        }
        f.seek(SeekFrom::Start(self.scanned))?;
        let mut buf = vec![0u8; 64 * 1024];
        let mut pos = self.scanned;
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            for (i, b) in buf[..n].iter().enumerate() {
                if *b == b'\n' {
                    self.starts.push(pos + i as u64 + 1);
                }
            }
            pos += n as u64;
        }
        self.scanned = pos;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn answers_complete_lines_from_a_second_as_the_file_grows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timeline.jsonl");
        let mut feed = LineFeed::new(path.clone());
        assert!(
            feed.lines_from(0, 10, usize::MAX).unwrap().is_empty(),
            "no file yet"
        );
        let mut f = File::create(&path).unwrap();
        f.write_all(b"{\"t\":0}\n{\"t\":1}\n{\"t\":2,\"na").unwrap();
        f.flush().unwrap();
        assert_eq!(
            feed.lines_from(0, 10, usize::MAX).unwrap(),
            b"{\"t\":0}\n{\"t\":1}\n"
        );
        assert_eq!(feed.lines_from(1, 10, usize::MAX).unwrap(), b"{\"t\":1}\n");
        assert!(
            feed.lines_from(2, 10, usize::MAX).unwrap().is_empty(),
            "line 2 is torn"
        );
        f.write_all("me\":\"파도\"}\n{\"t\":3}\n".as_bytes())
            .unwrap();
        f.flush().unwrap();
        assert_eq!(
            String::from_utf8(feed.lines_from(2, 10, usize::MAX).unwrap()).unwrap(),
            "{\"t\":2,\"name\":\"파도\"}\n{\"t\":3}\n"
        );
        assert_eq!(
            feed.lines_from(0, 2, usize::MAX).unwrap(),
            b"{\"t\":0}\n{\"t\":1}\n",
            "max"
        );
        assert_eq!(feed.lines(), 4);
        assert!(feed.lines_from(9, 10, usize::MAX).unwrap().is_empty());
    }

    #[test]
    fn an_answer_is_bounded_in_lines_and_bytes_and_never_stalls_on_a_long_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("observe.jsonl");
        // Lines of 10, 10, 30 and 10 bytes (Hangul is 3 bytes a letter).
        let long = format!("{{\"k\":\"{}\"}}\n", "파".repeat(7));
        assert_eq!(long.len(), 30);
        let text = format!("{{\"a\":111}}\n{{\"a\":222}}\n{long}{{\"a\":333}}\n");
        std::fs::write(&path, &text).unwrap();
        let mut feed = LineFeed::new(path);
        // 25 bytes hold the first two lines, not the third.
        assert_eq!(
            feed.lines_from(0, 100, 25).unwrap(),
            b"{\"a\":111}\n{\"a\":222}\n"
        );
        // Exactly the bytes of two lines: both.
        assert_eq!(feed.lines_from(0, 100, 20).unwrap().len(), 20);
        // A line longer than the bound comes alone, whole.
        assert_eq!(
            String::from_utf8(feed.lines_from(2, 100, 25).unwrap()).unwrap(),
            long
        );
        // The line bound holds before the byte bound.
        assert_eq!(feed.lines_from(0, 1, 1000).unwrap(), b"{\"a\":111}\n");
        assert!(feed.lines_from(0, 0, 1000).unwrap().is_empty());
        assert_eq!(feed.lines_from(3, 100, 1).unwrap(), b"{\"a\":333}\n");
        assert_eq!(feed.lines(), 4);
    }
}
