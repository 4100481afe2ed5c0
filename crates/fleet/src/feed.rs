//! A generator's live feed: the complete lines of its `timeline.jsonl` from a given
//! second on, read from the file the run is writing (the run itself does nothing
//! for it, so watching costs the load nothing).
//!
//! Line `n` of the timeline is second `n` (every second is written, an idle one
//! empty), so the feed keeps the byte offset of each complete line it has seen and
//! answers `from = t` by reading from line `t`'s offset: each poll reads only what
//! it returns, however long the run.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

/// Most seconds one answer holds: a coordinator that fell behind catches up over a
/// few polls instead of one huge answer.
pub const MAX_SECONDS_PER_POLL: usize = 120;

/// The index of a growing timeline file.
#[derive(Debug)]
pub struct TimelineFeed {
    path: PathBuf,
    /// Byte offset of the start of each complete line, and one past the last one.
    starts: Vec<u64>,
    /// How far the file has been scanned for line ends.
    scanned: u64,
}

impl TimelineFeed {
    /// The feed of the timeline at `path` (it may not exist yet).
    pub fn new(path: PathBuf) -> TimelineFeed {
        TimelineFeed {
            path,
            starts: vec![0],
            scanned: 0,
        }
    }

    /// Complete seconds known so far (after the last [`TimelineFeed::lines_from`]).
    pub fn seconds(&self) -> usize {
        self.starts.len() - 1
    }

    /// The complete lines for seconds `from..` (at most `max`), as written: one
    /// JSON object per line, each ending in `\n`. Empty when none is complete yet
    /// or the file does not exist yet.
    pub fn lines_from(&mut self, from: usize, max: usize) -> std::io::Result<Vec<u8>> {
        let mut f = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        self.scan(&mut f)?;
        let have = self.seconds();
        if from >= have {
            return Ok(Vec::new());
        }
        let end_line = have.min(from.saturating_add(max));
        let (a, b) = (self.starts[from], self.starts[end_line]);
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
        let mut feed = TimelineFeed::new(path.clone());
        assert!(feed.lines_from(0, 10).unwrap().is_empty(), "no file yet");
        let mut f = File::create(&path).unwrap();
        f.write_all(b"{\"t\":0}\n{\"t\":1}\n{\"t\":2,\"na").unwrap();
        f.flush().unwrap();
        assert_eq!(feed.lines_from(0, 10).unwrap(), b"{\"t\":0}\n{\"t\":1}\n");
        assert_eq!(feed.lines_from(1, 10).unwrap(), b"{\"t\":1}\n");
        assert!(feed.lines_from(2, 10).unwrap().is_empty(), "line 2 is torn");
        f.write_all("me\":\"파도\"}\n{\"t\":3}\n".as_bytes())
            .unwrap();
        f.flush().unwrap();
        assert_eq!(
            String::from_utf8(feed.lines_from(2, 10).unwrap()).unwrap(),
            "{\"t\":2,\"name\":\"파도\"}\n{\"t\":3}\n"
        );
        assert_eq!(
            feed.lines_from(0, 2).unwrap(),
            b"{\"t\":0}\n{\"t\":1}\n",
            "max"
        );
        assert_eq!(feed.seconds(), 4);
        assert!(feed.lines_from(9, 10).unwrap().is_empty());
    }
}
