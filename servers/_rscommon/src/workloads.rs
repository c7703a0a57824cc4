//! The HTTP workloads besides the contract's endpoints (servers/README.md, "The HTTP
//! workloads"), what every Rust server answers the same way whatever its framework:
//! `/upload/`'s limit, checksum and body, `/delay/`'s wait and body, and where `/static/`
//! is mounted. The static files themselves are served by each framework's own static
//! handler from [`crate::contract::AppState::static_dir`], and compression is each
//! framework's middleware, switched by [`crate::contract::AppState::compression`].
//!
//! Like the contract's functions, these take what a server pulled out of its request
//! and return a body or a [`Failure`]; the server reads the body (streamed through
//! [`Upload::feed`] chunk by chunk where its framework hands the body over as a stream)
//! and waits [`DELAY`] with its own runtime's timer.

use std::time::Duration;

use bytes::Buf;

use crate::contract::{AppState, Failure, Status};

/// The largest `/upload/` body accepted: 8 MiB. One byte more is a 413.
pub const UPLOAD_LIMIT: u64 = 8 * 1024 * 1024;
/// `/delay/`'s wait.
pub const DELAY: Duration = Duration::from_millis(10);
/// `/delay/`'s body, served as [`crate::contract::CONTENT_TYPE_TEXT`].
pub const DELAY_BODY: &str = "delayed 10 ms";
/// How long the rest of a refused `/upload/` body is still read, and dropped, around the
/// 413: a server that closes a connection whose request body it left unread has the
/// kernel reset the client still writing that body, and a client that writes its whole
/// body before it reads the answer (Python's http.client, most HTTP libraries) then sees
/// a broken connection instead of the 413. nginx's lingering close, in short; actix-web
/// does it itself, hyper (axum, hyper, warp) and Rocket leave it to the handler.
pub const DRAIN_TIME: Duration = Duration::from_secs(5);
/// Where the static folder is mounted: `/static/{name}` is the file `{name}` of
/// `BENCH_STATIC_DIR`. Without the trailing slash, as the frameworks' mounts take it.
pub const STATIC_MOUNT: &str = "/static";

impl Failure {
    /// An `/upload/` body over [`UPLOAD_LIMIT`], declared or read.
    pub const BODY_TOO_LARGE: Failure = Failure::new(
        Status::PayloadTooLarge,
        "body too large (at most 8388608 bytes)",
    );
    /// The body could not be read to its end (the client went away, bad chunking).
    pub const UNREADABLE_BODY: Failure = Failure::bad_request("could not read body");
}

/// An `/upload/` body being read: its length so far and its CRC-32 (IEEE 802.3, zlib's
/// and Python's `zlib.crc32`, by crc32fast).
pub struct Upload {
    crc: crc32fast::Hasher,
    bytes: u64,
}

impl Upload {
    /// What `/upload/` checks before reading anything: the token (401), then a declared
    /// `Content-Length` over [`UPLOAD_LIMIT`] (413 at once, the body left unread, as the
    /// frameworks' own body limits answer). `content_length`: the header's raw value.
    pub fn start<S>(
        state: &AppState<S>,
        token: Option<&[u8]>,
        content_length: Option<&[u8]>,
    ) -> Result<Upload, Failure> {
        if !state.authorized(token) {
            return Err(Failure::INVALID_TOKEN);
        }
        let declared = content_length
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if declared.is_some_and(|n| n > UPLOAD_LIMIT) {
            return Err(Failure::BODY_TOO_LARGE);
        }
        Ok(Upload {
            crc: crc32fast::Hasher::new(),
            bytes: 0,
        })
    }

    /// The next chunk of the body: 413 as soon as the body passes [`UPLOAD_LIMIT`]
    /// (a chunked body, or one longer than it said), so nothing past it is read.
    #[inline]
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), Failure> {
        self.bytes += chunk.len() as u64;
        if self.bytes > UPLOAD_LIMIT {
            return Err(Failure::BODY_TOO_LARGE);
        }
        self.crc.update(chunk);
        Ok(())
    }

    /// [`Upload::feed`] for a chunk the framework hands over as a [`Buf`] (which may
    /// hold its bytes in more than one piece).
    #[inline]
    pub fn feed_buf(&mut self, mut chunk: impl Buf) -> Result<(), Failure> {
        while chunk.has_remaining() {
            let part = chunk.chunk();
            let n = part.len();
            self.feed(part)?;
            chunk.advance(n);
        }
        Ok(())
    }

    /// The answer once the whole body was read: `{"bytes": N, "crc32": "xxxxxxxx"}`
    /// (8 lowercase hex digits), served as JSON.
    pub fn finish(self) -> String {
        format!(
            r#"{{"bytes": {}, "crc32": "{:08x}"}}"#,
            self.bytes,
            self.crc.finalize()
        )
    }
}

/// `GET /delay/`: the token; then the server waits [`DELAY`] without holding a worker
/// (its runtime's timer) and answers this body.
#[inline]
pub fn delay<S>(state: &AppState<S>, token: Option<&[u8]>) -> Result<&'static str, Failure> {
    if !state.authorized(token) {
        return Err(Failure::INVALID_TOKEN);
    }
    Ok(DELAY_BODY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn state() -> AppState<()> {
        AppState::new(&Config::without_database("srv"), ())
    }

    fn upload(chunks: &[&[u8]]) -> Result<String, Failure> {
        let mut up = Upload::start(&state(), Some(b"tok"), None)?;
        for chunk in chunks {
            up.feed(chunk)?;
        }
        Ok(up.finish())
    }

    #[test]
    fn crc32_is_zlibs() {
        // zlib.crc32(b"123456789") == 0xcbf43926, the CRC-32 check value.
        assert_eq!(
            upload(&[b"123456789"]).unwrap(),
            r#"{"bytes": 9, "crc32": "cbf43926"}"#
        );
        // Fed in pieces, the same answer.
        assert_eq!(
            upload(&[b"1234", b"", b"56789"]).unwrap(),
            r#"{"bytes": 9, "crc32": "cbf43926"}"#
        );
        assert_eq!(
            upload(&[b"The quick brown fox jumps over the lazy dog"]).unwrap(),
            r#"{"bytes": 43, "crc32": "414fa339"}"#
        );
        // Leading zeros are kept: zlib.crc32(b"62") == 0x0012d20a.
        assert_eq!(
            upload(&[b"62"]).unwrap(),
            r#"{"bytes": 2, "crc32": "0012d20a"}"#
        );
        assert_eq!(upload(&[]).unwrap(), r#"{"bytes": 0, "crc32": "00000000"}"#);
    }

    #[test]
    fn a_buf_in_pieces_is_fed_whole() {
        let mut up = Upload::start(&state(), Some(b"tok"), Some(b"9")).unwrap();
        up.feed_buf(Buf::chain(&b"1234"[..], &b"56789"[..]))
            .unwrap();
        assert_eq!(up.finish(), r#"{"bytes": 9, "crc32": "cbf43926"}"#);
    }

    #[test]
    fn the_limit() {
        let limit = UPLOAD_LIMIT as usize;
        let full = vec![0u8; limit];
        assert!(upload(&[&full]).is_ok());
        assert_eq!(upload(&[&full, b"x"]), Err(Failure::BODY_TOO_LARGE));
        assert_eq!(Failure::BODY_TOO_LARGE.status.as_u16(), 413);
        let s = state();
        let declared = |v: &[u8]| Upload::start(&s, Some(b"tok"), Some(v)).map(|_| ());
        assert_eq!(declared(b"8388608"), Ok(()));
        assert_eq!(declared(b"8388609"), Err(Failure::BODY_TOO_LARGE));
        // Unparsable (the framework refuses such a head first): the read decides.
        assert_eq!(declared(b"99999999999999999999"), Ok(()));
        // The token comes first.
        assert_eq!(
            Upload::start(&s, None, Some(b"8388609")).map(|_| ()),
            Err(Failure::INVALID_TOKEN)
        );
    }

    #[test]
    fn delay_needs_the_token() {
        let s = state();
        assert_eq!(delay(&s, Some(b"tok")), Ok("delayed 10 ms"));
        assert_eq!(delay(&s, Some(b"x")), Err(Failure::INVALID_TOKEN));
        assert_eq!(DELAY, Duration::from_millis(10));
    }
}
