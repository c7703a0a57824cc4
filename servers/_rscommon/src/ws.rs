//! The WebSocket echo's one RFC 6455 duty that tungstenite leaves to its user
//! (servers/README.md, "WebSocket"): tungstenite (0.29, under axum's `ws`, warp's
//! `websocket` and servers/hyper's tokio-tungstenite) refuses a text message that is not
//! UTF-8 and an unmasked client frame by returning an error from its read, and sends
//! nothing itself: the connection would just drop. [`close_code`] names the close status
//! the server then sends before it closes (RFC 6455 §7.4.1): 1007 for the text that is not
//! UTF-8, 1002 for a protocol error (an unmasked frame, a reserved bit or opcode, a
//! fragmented or oversized control frame, a continuation out of place), 1009 for a
//! message over the size limit. Everything else (pings, the close handshake, fragments)
//! tungstenite does itself.

use std::error::Error as StdError;

use tungstenite::error::{Error, ProtocolError};

/// Invalid frame payload data: a text message that is not UTF-8.
pub const INVALID_PAYLOAD: u16 = 1007;
/// Protocol error: e.g. an unmasked client frame.
pub const PROTOCOL_ERROR: u16 = 1002;
/// Message too big: over the library's limit.
pub const MESSAGE_TOO_BIG: u16 = 1009;

/// The close status to send for the error a read returned, or `None` when there is no
/// one to send it to (the peer went away, an I/O error) or nothing to say. `err` is the
/// framework's error (axum::Error, warp::Error) or tungstenite's own: the chain of
/// sources is searched for a tungstenite error.
pub fn close_code(err: &(dyn StdError + 'static)) -> Option<u16> {
    let mut cause = Some(err);
    while let Some(e) = cause {
        if let Some(e) = e.downcast_ref::<Error>() {
            return tungstenite_close_code(e);
        }
        cause = e.source();
    }
    None
}

fn tungstenite_close_code(err: &Error) -> Option<u16> {
    match err {
        Error::Utf8(_) => Some(INVALID_PAYLOAD),
        Error::Protocol(ProtocolError::ResetWithoutClosingHandshake) => None,
        Error::Protocol(_) => Some(PROTOCOL_ERROR),
        Error::Capacity(_) => Some(MESSAGE_TOO_BIG),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Wrapper(Error);

    impl std::fmt::Display for Wrapper {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            self.0.fmt(f)
        }
    }

    impl StdError for Wrapper {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn close_codes() {
        let utf8 = Error::Utf8("bad".into());
        assert_eq!(close_code(&utf8), Some(1007));
        let unmasked = Error::Protocol(ProtocolError::UnmaskedFrameFromClient);
        assert_eq!(close_code(&Wrapper(unmasked)), Some(1002));
        let gone = Error::Protocol(ProtocolError::ResetWithoutClosingHandshake);
        assert_eq!(close_code(&gone), None);
        assert_eq!(close_code(&Error::ConnectionClosed), None);
        let io = std::io::Error::other("x");
        assert_eq!(close_code(&io), None);
    }
}
