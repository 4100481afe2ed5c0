//! The request reader of pado's own servers fed any bytes as a client's connection.

use super::block_on;

// ---- h1server ----------------------------------------------------------------------

/// The request reader of pado's own servers: the bytes are what a client sent on one
/// connection (then closed); requests are read until the reader stops.
pub fn h1server_request(data: &[u8]) {
    use tokio::io::AsyncWriteExt;
    block_on(async {
        let (mut client, mut server) = tokio::io::duplex(data.len() + 64 * 1024);
        client.write_all(data).await.expect("write to duplex");
        drop(client);
        let mut buf = Vec::new();
        for _ in 0..10_000 {
            match pado_h1server::read_request(&mut server, &mut buf, pado_h1server::MAX_BODY).await
            {
                Ok(Some(req)) => {
                    let _ = req.header("content-type");
                    let _ = req.query_param("q");
                    let _ = req.is_head();
                    if !req.keep_alive {
                        break;
                    }
                }
                Ok(None) | Err(_) => break,
            }
        }
    });
}
