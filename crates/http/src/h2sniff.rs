//! Telling an HTTP/1.1 server apart from a broken HTTP/2 one. With h2c (HTTP/2 over
//! cleartext, prior knowledge) pado opens with the HTTP/2 preface; a server that
//! speaks only HTTP/1.1 answers it with an HTTP/1.1 response (`HTTP/1.1 400 Bad
//! Request`). Read as HTTP/2, those bytes are a frame header announcing a 4.7 MB
//! frame, and the h2 crate ends the connection with `FRAME_SIZE_ERROR`, which would
//! count every request as `goaway` and say nothing of the cause. [`FirstBytes`]
//! watches the first bytes the server sends so the failure can be named
//! ([`ErrorKind::H2cUnsupported`](pado_metrics::ErrorKind::H2cUnsupported)).

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What every HTTP/1.x response starts with.
const HTTP1: &[u8; 7] = b"HTTP/1.";

/// The failure's reason, in the user's words.
pub const H2C_UNSUPPORTED: &str = "the server answered in HTTP/1.1; it does not speak \
     HTTP/2 over cleartext (h2c). Use --http auto or https";

/// A stream that compares the first 7 bytes read with `HTTP/1.` and raises `flag`
/// when they match. After those bytes it only passes reads and writes through (one
/// comparison per read).
pub(crate) struct FirstBytes<S> {
    inner: S,
    seen: usize,
    flag: Rc<Cell<bool>>,
}

impl<S> FirstBytes<S> {
    /// Wraps `inner`; `flag` is raised if the server's first bytes are `HTTP/1.`.
    pub(crate) fn new(inner: S, flag: Rc<Cell<bool>>) -> Self {
        FirstBytes {
            inner,
            seen: 0,
            flag,
        }
    }

    /// Compares newly read bytes with the rest of `HTTP/1.`; a mismatch ends the
    /// watch (`seen` past the prefix) without raising the flag.
    fn watch(&mut self, read: &[u8]) {
        if self.seen >= HTTP1.len() {
            return;
        }
        let want = &HTTP1[self.seen..];
        let n = want.len().min(read.len());
        if read[..n] != want[..n] {
            self.seen = usize::MAX;
            return;
        }
        self.seen += n;
        if self.seen == HTTP1.len() {
            self.flag.set(true);
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for FirstBytes<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        if this.seen < HTTP1.len() {
            if let Poll::Ready(Ok(())) = &r {
                this.watch(&buf.filled()[before..]);
            }
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for FirstBytes<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// Reads `pieces` (each one read of the server's bytes) through a `FirstBytes`
    /// and says whether it raised its flag.
    fn flagged(pieces: &[&[u8]]) -> bool {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut b = tokio_test_reader(pieces);
            let flag = Rc::new(Cell::new(false));
            let mut s = FirstBytes::new(&mut b, flag.clone());
            let mut out = Vec::new();
            s.read_to_end(&mut out).await.unwrap();
            assert_eq!(out, pieces.concat(), "bytes pass through unchanged");
            flag.get()
        })
    }

    fn tokio_test_reader(pieces: &[&[u8]]) -> impl AsyncRead + Unpin {
        // A chain of readers gives one read per piece.
        let mut chain: Box<dyn AsyncRead + Unpin> = Box::new(tokio::io::empty());
        for p in pieces.iter().rev() {
            chain = Box::new(std::io::Cursor::new(p.to_vec()).chain(chain));
        }
        chain
    }

    #[test]
    fn an_http1_answer_is_flagged_in_one_read_or_split() {
        assert!(flagged(&[b"HTTP/1.1 400 Bad Request\r\n\r\n"]));
        assert!(flagged(&[b"HTTP/1.0 505 x\r\n\r\n"]));
        assert!(flagged(&[b"HT", b"TP/", b"1.1 400 Bad Request\r\n"]));
    }

    #[test]
    fn http2_frames_and_other_bytes_are_not() {
        // A server's SETTINGS frame: length 0, type 4, flags 0, stream 0.
        assert!(!flagged(&[&[0, 0, 0, 4, 0, 0, 0, 0, 0]]));
        assert!(!flagged(&[b"HTTP/2 200\r\n"]));
        assert!(!flagged(&[b"HTT"]), "a cut prefix is not an answer");
        assert!(!flagged(&[b"this is not http"]));
        // The prefix only counts at the start of the stream.
        assert!(!flagged(&[
            &[0, 0, 0, 4, 0, 0, 0, 0, 0],
            b"HTTP/1.1 200 OK"
        ]));
    }
}
