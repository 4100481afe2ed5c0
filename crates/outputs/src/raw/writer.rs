//! The raw output's writer: one thread that takes the workers' batches, formats
//! them ([`LineFormat`]) and writes them to the file (gzip-compressed for `.gz`),
//! giving emptied batches back. It is never waited for during the run; at the end
//! it writes what is queued, then reports lines written and dropped.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use pado_metrics::raw::{raw_channel, RawLink, RawStream, QUEUED_BATCHES};
use pado_metrics::RawOutputMeta;

use super::format::{LineFormat, Mask};
use super::spec::RawSpec;

/// Why the raw output could not start.
#[derive(Debug, thiserror::Error)]
#[error("{label}: cannot create the file: {source}")]
pub struct RawStartError {
    /// The output (`raw-json requests.jsonl`).
    pub label: String,
    /// The file system's error.
    #[source]
    pub source: std::io::Error,
}

/// A running raw output.
pub struct RawWriter {
    handle: JoinHandle<(u64, u64, Option<String>)>,
    dropped: Arc<AtomicU64>,
    spec: RawSpec,
}

impl RawWriter {
    /// Create the file and start the writer; the [`RawLink`] goes to the engine
    /// (`RunOptions::raw`). `steps` are the plan's step names by series index.
    pub fn start(
        spec: &RawSpec,
        steps: Vec<String>,
        mask: Mask,
    ) -> Result<(RawWriter, RawLink), RawStartError> {
        let file = File::create(&spec.path).map_err(|source| RawStartError {
            label: spec.label(),
            source,
        })?;
        let buffered = BufWriter::with_capacity(1 << 16, file);
        let out: Box<dyn Write + Send> = if spec.gzip() {
            Box::new(flate2::write::GzEncoder::new(
                buffered,
                flate2::Compression::fast(),
            ))
        } else {
            Box::new(buffered)
        };
        let (link, stream) = raw_channel(QUEUED_BATCHES);
        let fmt = LineFormat {
            format: spec.format,
            steps,
            mask,
        };
        let counter = stream.drop_counter();
        let handle = std::thread::Builder::new()
            .name("pado-raw-output".into())
            .spawn(move || write_all(stream, fmt, out))
            .map_err(|source| RawStartError {
                label: spec.label(),
                source,
            })?;
        Ok((
            RawWriter {
                handle,
                dropped: counter,
                spec: spec.clone(),
            },
            link,
        ))
    }

    /// Wait for the writer to write what the workers handed over (it ends once
    /// every [`RawLink`] is dropped, which the engine does when the run ends) and
    /// say what it wrote.
    pub fn finish(self) -> RawOutputMeta {
        let (written, failed, error) =
            self.handle
                .join()
                .unwrap_or((0, 0, Some("the writer thread panicked".into())));
        RawOutputMeta {
            kind: self.spec.format.kind().to_string(),
            path: self.spec.path.display().to_string(),
            lines_written: written,
            lines_dropped: self.dropped.load(Ordering::Relaxed) + failed,
            error,
        }
    }
}

/// Write every batch until the workers are gone: (lines written, lines lost to a
/// write error, that error).
fn write_all(
    stream: RawStream,
    fmt: LineFormat,
    mut out: Box<dyn Write + Send>,
) -> (u64, u64, Option<String>) {
    let mut written = 0u64;
    let mut failed = 0u64;
    let mut error: Option<String> = fmt.header(&mut out).err().map(|e| e.to_string());
    while let Ok(b) = stream.rx.recv() {
        let n = b.records.len() as u64;
        if error.is_some() {
            failed += n;
        } else {
            match fmt.write_batch(&b, &mut out) {
                Ok(()) => written += n,
                Err(e) => {
                    failed += n;
                    error = Some(e.to_string());
                }
            }
        }
        stream.recycle(b);
    }
    if error.is_none() {
        if let Err(e) = out.flush() {
            error = Some(e.to_string());
        }
    }
    // A gzip stream's trailer is written when the encoder is dropped.
    drop(out);
    (written, failed, error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::spec::RawFormat;
    use pado_metrics::raw::{RawRecord, RawTap};
    use std::io::Read;

    #[test]
    fn every_handed_over_record_is_a_line_and_gz_files_decompress() {
        let dir = tempfile::tempdir().unwrap();
        let spec = RawSpec {
            format: RawFormat::Json,
            path: dir.path().join("요청.jsonl.gz"),
        };
        let (w, link) = RawWriter::start(
            &spec,
            vec!["step".into()],
            Box::new(|u: &[u8]| String::from_utf8_lossy(u).into_owned()),
        )
        .unwrap();
        let mut tap = RawTap::new(link);
        for i in 0..2500u64 {
            let url = tap
                .batch()
                .push_text(&[b"http://127.0.0.1/", i.to_string().as_bytes()]);
            tap.push(RawRecord {
                at_us: i,
                url,
                ..RawRecord::default()
            });
        }
        drop(tap);
        let meta = w.finish();
        assert_eq!((meta.lines_written, meta.lines_dropped), (2500, 0));
        assert_eq!(meta.kind, "raw-json");
        let mut text = String::new();
        flate2::read::GzDecoder::new(File::open(&spec.path).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2500);
        assert!(lines[2499].contains("\"url\":\"http://127.0.0.1/2499\""));
    }

    #[test]
    fn a_file_that_cannot_be_created_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let spec = RawSpec {
            format: RawFormat::Csv,
            path: dir.path().join("no/such/dir/out.csv"),
        };
        let e = RawWriter::start(&spec, Vec::new(), Box::new(|_: &[u8]| String::new()))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.starts_with("raw-csv ") && e.contains("cannot create the file"),
            "{e}"
        );
    }
}
