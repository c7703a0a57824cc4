//! `GET /ws/`, the WebSocket echo (servers/README.md "WebSocket"), as hyper users write
//! it with tokio-tungstenite (its server-custom-accept example): the RFC 6455 §4.2
//! handshake checked and answered by hand (101 with Sec-WebSocket-Accept from
//! tungstenite's derive_accept_key), then `hyper::upgrade::on` hands the connection over
//! once the 101 is written and tokio-tungstenite's WebSocketStream serves it in a tokio
//! task of its own. Its limits are tungstenite's defaults: 64 MiB a message, 16 MiB a
//! frame; no subprotocol, no extension.

use std::error::Error as StdError;

use futures_util::{SinkExt, StreamExt};
use http_body_util::Full;
use hyper::body::{Body as HttpBody, Bytes};
use hyper::header::{
    HeaderMap, HeaderValue, CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY,
    SEC_WEBSOCKET_VERSION, UPGRADE,
};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;
use webbench_common::contract::Failure;
use webbench_common::reply;

const WEBSOCKET: HeaderValue = HeaderValue::from_static("websocket");
const UPGRADE_VALUE: HeaderValue = HeaderValue::from_static("upgrade");

/// Whether `name` holds `token` among its comma-separated values (any case).
fn has_token(headers: &HeaderMap, name: hyper::header::HeaderName, token: &str) -> bool {
    headers.get_all(name).iter().any(|v| {
        v.to_str().is_ok_and(|v| {
            v.split(',')
                .any(|part| part.trim().eq_ignore_ascii_case(token))
        })
    })
}

/// The handshake (the token already checked): a 101 that spawns the echo, or a JSON 400
/// for a request that is not a WebSocket handshake.
pub fn upgrade<B>(mut req: Request<B>) -> Response<Full<Bytes>>
where
    B: HttpBody + Send + 'static,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    let headers = req.headers();
    let key = match headers.get(SEC_WEBSOCKET_KEY) {
        Some(key)
            if has_token(headers, CONNECTION, "upgrade")
                && has_token(headers, UPGRADE, "websocket")
                && headers
                    .get(SEC_WEBSOCKET_VERSION)
                    .is_some_and(|v| v.as_bytes() == b"13") =>
        {
            key
        }
        _ => return reply::failure(Failure::bad_request("not a websocket handshake")),
    };
    let accept = derive_accept_key(key.as_bytes());
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        // Err: the client went away before the 101 was written.
        if let Ok(upgraded) = on_upgrade.await {
            let socket =
                WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
            echo(socket).await;
        }
    });
    let mut res = Response::new(Full::new(Bytes::new()));
    *res.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = res.headers_mut();
    headers.insert(CONNECTION, UPGRADE_VALUE);
    headers.insert(UPGRADE, WEBSOCKET);
    // A base64 string: always a valid header value.
    if let Ok(accept) = HeaderValue::from_str(&accept) {
        headers.insert(SEC_WEBSOCKET_ACCEPT, accept);
    }
    res
}

/// Every text message back as text, binary as binary (tungstenite reassembles fragments,
/// answers pings and the close frame itself). A read error tungstenite returns without
/// telling the client (a text that is not UTF-8, an unmasked frame) is answered with the
/// close status webbench_common::ws names (1007, 1002), then the connection is dropped.
async fn echo<S>(mut socket: WebSocketStream<S>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    while let Some(received) = socket.next().await {
        let reply = match received {
            Ok(message @ (Message::Text(_) | Message::Binary(_))) => message,
            // Ping: tungstenite has queued the pong, written by the next read. Pong:
            // ignored. Close: tungstenite has queued the reply; the next read writes it
            // and ends the stream.
            Ok(_) => continue,
            Err(e) => {
                if let Some(code) = webbench_common::ws::close_code(&e) {
                    let close = CloseFrame {
                        code: code.into(),
                        reason: "".into(),
                    };
                    let _ = socket.send(Message::Close(Some(close))).await;
                }
                return;
            }
        };
        if socket.send(reply).await.is_err() {
            return;
        }
    }
}
