//! The largest loads one pado process accepts. They are far above what any machine
//! runs (pado needs about 8 KiB per VU and starts on the order of 10⁵ iterations a
//! second per core), and exist so that a typo such as `vus: 4294967295` or
//! `time_unit: 1ns` is refused with a message instead of exhausting memory or
//! running a scheduler that can never catch up.

/// Most VUs in one scenario on one generator (about 8 GiB of VU state).
pub const MAX_VUS: u32 = 1_000_000;

/// Highest arrival rate one generator schedules, iterations per second.
pub const MAX_RATE_PER_S: f64 = 10_000_000.0;

/// Largest scenario file read (real ones are kilobytes; a HAR import a few MB).
pub const MAX_SCENARIO_BYTES: u64 = 16 << 20;

/// Largest data feed or request body file read (feeds are held in memory at about
/// 1.1× their size, shared by every VU).
pub const MAX_DATA_BYTES: u64 = 4 << 30;

/// A reader that fails with [`std::io::ErrorKind::InvalidData`] once more than `cap`
/// bytes were read, so that an endless file (`/dev/zero`, a FIFO) or a runaway one
/// gives a clear error instead of exhausting memory.
pub struct CappedReader<R> {
    inner: R,
    left: u64,
    cap: u64,
}

impl<R: std::io::Read> CappedReader<R> {
    /// Wrap `inner`, allowing at most `cap` bytes.
    pub fn new(inner: R, cap: u64) -> Self {
        Self {
            inner,
            left: cap,
            cap,
        }
    }
}

impl<R: std::io::Read> std::io::Read for CappedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            // One byte more than allowed tells a file at the cap from a larger one.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(too_large(self.cap)),
            };
        }
        let want = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

fn too_large(cap: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "the file is larger than pado reads ({} MiB at most), or endless",
            cap >> 20
        ),
    )
}

/// Open a file to read at most `cap` bytes of it. Devices (`/dev/zero`,
/// `/dev/urandom`) are refused at once: they never end. Pipes and FIFOs are read
/// up to the cap. Also returns the file's size when it has one, for preallocation.
pub fn open_capped(
    path: &std::path::Path,
    cap: u64,
) -> std::io::Result<(CappedReader<std::fs::File>, u64)> {
    use std::os::unix::fs::FileTypeExt;
    let f = std::fs::File::open(path)?;
    let meta = f.metadata()?;
    let ft = meta.file_type();
    if ft.is_char_device() || ft.is_block_device() || ft.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a device or a directory): give a file",
        ));
    }
    if meta.len() > cap {
        return Err(too_large(cap));
    }
    Ok((CappedReader::new(f, cap), meta.len()))
}

/// Read a whole file, refusing one larger than `cap` bytes (or endless).
pub fn read_capped(path: &std::path::Path, cap: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let (mut r, hint) = open_capped(path, cap)?;
    let mut out = Vec::with_capacity(hint as usize);
    r.read_to_end(&mut out)?;
    Ok(out)
}

/// Read a whole text file (UTF-8), refusing one larger than `cap` bytes.
pub fn read_capped_string(path: &std::path::Path, cap: u64) -> std::io::Result<String> {
    String::from_utf8(read_capped(path, cap)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endless_and_oversized_files_are_refused() {
        let e = read_capped(std::path::Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        // An endless stream that is not a device: cut at the cap.
        let mut r = CappedReader::new(std::io::repeat(0), 1 << 20);
        let e = std::io::copy(&mut r, &mut std::io::sink()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("1 MiB at most"), "{e}");
        let dir = tempfile::Builder::new()
            .prefix("pado-capped-")
            .tempdir()
            .unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, vec![b'x'; 1000]).unwrap();
        assert_eq!(read_capped(&f, 1000).unwrap().len(), 1000);
        assert!(read_capped(&f, 999).is_err());
    }
}
