//! The contract's endpoints as the functions warp's filters end in (`.map` for the
//! ones that never wait, `.then` for the database ones): each one maps what its filter
//! extracted onto `webbench_common::contract` / `suite` (token check, id parsing, body
//! validation, the bodies) and turns the answer into a `warp::reply::Response`. Every
//! failure is a JSON `{"error": "..."}` with a 4xx status; only a database failure (not
//! any client input) gives a 500. Nothing here can panic on client input: with
//! `panic = "abort"` a panic would kill the server.
//!
//! The filters (src/routes.rs) extract only what cannot fail: the `{id}` segment as a
//! `String`, the `token` header and the query string as `Option`s, the body as a
//! stream. warp's own typed filters (`path!("user" / i32)`, `header::<T>`,
//! `query::<T>`, `body::json`, `body::content_length_limit`) reject with warp's
//! plain-text 400/404/411/413 before the handler runs, which would skip the token check
//! and break the JSON error contract.

use std::convert::Infallible;
use std::pin::pin;
use std::sync::Arc;

use futures_util::StreamExt;
use warp::http::header::HeaderValue;
use warp::http::StatusCode;
use warp::reject::{MethodNotAllowed, Rejection};
use warp::reply::Response;
use warp::{Buf, Reply};
use webbench_common::contract::{self, AppState, Failure, MAX_BODY};
use webbench_common::db::Db;
use webbench_common::reply::{self, HTML, JSON, TEXT};
use webbench_common::suite;
use webbench_common::workloads::{self, Upload, DELAY};

/// Shared by all worker threads; each request gets a clone of the `Arc`.
pub type State = Arc<AppState<Db>>;
/// The `token` header, if the request has one (warp::header::value, a refcount clone).
pub type Token = Option<HeaderValue>;

/// The `Allow` header of a 405 (RFC 9110 §15.5.6), per path.
pub const ALLOW_GET: HeaderValue = HeaderValue::from_static("GET");
pub const ALLOW_USER: HeaderValue = HeaderValue::from_static("GET, PATCH");
pub const ALLOW_POST: HeaderValue = HeaderValue::from_static("POST");

fn failure(f: Failure) -> Response {
    reply::failure(f)
}

fn json(answer: Result<Vec<u8>, Failure>) -> Response {
    reply::json(answer)
}

#[inline]
fn token(header: &Token) -> Option<&[u8]> {
    header.as_ref().map(HeaderValue::as_bytes)
}

#[inline]
fn query(raw: &Option<String>) -> &str {
    raw.as_deref().unwrap_or("")
}

/// The token, a database, then the `{id}` segment (contract::user_id). warp does not
/// percent-decode path segments: the id is the segment as sent.
#[inline]
fn user_id(state: &AppState<Db>, id: &str, header: &Token) -> Result<i32, Failure> {
    contract::user_id(state, token(header), || Some(id))
}

/// The PATCH body, whatever its Content-Type, read chunk by chunk and refused (400) as
/// soon as it passes [`MAX_BODY`]: the same cap as axum's `to_bytes`, whether the body
/// comes with a Content-Length or chunked (warp's `content_length_limit` would answer a
/// chunked body 411 and a large one 413, both plain text).
async fn read_body(
    body: impl futures_util::Stream<Item = Result<impl Buf, warp::Error>>,
) -> Result<Vec<u8>, Failure> {
    const TOO_LARGE: Failure = Failure::bad_request("could not read body or body too large");
    let mut body = pin!(body);
    let mut out = Vec::new();
    while let Some(chunk) = body.next().await {
        let mut chunk = chunk.map_err(|_| TOO_LARGE)?;
        if out.len() + chunk.remaining() > MAX_BODY {
            return Err(TOO_LARGE);
        }
        while chunk.has_remaining() {
            let part = chunk.chunk();
            let n = part.len();
            out.extend_from_slice(part);
            chunk.advance(n);
        }
    }
    Ok(out)
}

pub fn ping(state: State) -> Response {
    reply::typed(StatusCode::OK, JSON, state.ping_body.clone())
}

pub async fn get_user(state: State, id: String, header: Token) -> Response {
    let id = match user_id(&state, &id, &header) {
        Ok(id) => id,
        Err(f) => return failure(f),
    };
    json(contract::get_user(&state.db, id).await)
}

pub async fn patch_user(
    state: State,
    id: String,
    header: Token,
    body: impl futures_util::Stream<Item = Result<impl Buf, warp::Error>>,
) -> Response {
    let id = match user_id(&state, &id, &header) {
        Ok(id) => id,
        Err(f) => return failure(f),
    };
    match read_body(body).await {
        Ok(body) => json(contract::update_user(&state.db, id, &body).await),
        Err(f) => failure(f),
    }
}

pub fn plain(state: State, header: Token, raw: Option<String>) -> Response {
    reply::ok_or_failure(TEXT, contract::plain(&state, token(&header), query(&raw)))
}

pub fn to_json(state: State, header: Token, raw: Option<String>) -> Response {
    json(contract::to_json(&state, token(&header), query(&raw)))
}

/// `GET /queries/?n=N` (webbench_common::suite, as are the three below).
pub async fn queries(state: State, header: Token, raw: Option<String>) -> Response {
    json(suite::queries(&state, token(&header), query(&raw)).await)
}

/// `GET /updates/?n=N`.
pub async fn updates(state: State, header: Token, raw: Option<String>) -> Response {
    json(suite::updates(&state, token(&header), query(&raw)).await)
}

/// `GET /fortunes/`: the askama page as `text/html; charset=utf-8`.
pub async fn fortunes(state: State, header: Token) -> Response {
    reply::ok_or_failure(HTML, suite::fortunes(&state, token(&header)).await)
}

/// `GET /cached/?n=N`.
pub async fn cached(state: State, header: Token, raw: Option<String>) -> Response {
    json(suite::cached(&state, token(&header), query(&raw)).await)
}

/// `POST /upload/` (webbench_common::workloads): the token, a declared length over 8 MiB
/// (413 before reading), then warp's body stream (`warp::body::stream`, hyper's frames
/// as they arrive) through the CRC-32 chunk by chunk, never held whole, 413 as soon as
/// it passes 8 MiB. Not `warp::body::content_length_limit` (its 411 and 413 are plain
/// text, and a chunked body would be refused).
pub async fn upload(
    state: State,
    header: Token,
    length: Option<HeaderValue>,
    body: impl futures_util::Stream<Item = Result<impl Buf, warp::Error>> + Send + 'static,
) -> Response {
    let declared = length.as_ref().map(HeaderValue::as_bytes);
    let mut body = Box::pin(body);
    let answer = match Upload::start(&state, token(&header), declared) {
        Ok(mut upload) => loop {
            let fed = match body.next().await {
                None => break Ok(upload.finish()),
                Some(Ok(chunk)) => upload.feed_buf(chunk),
                Some(Err(_)) => Err(Failure::UNREADABLE_BODY),
            };
            if let Err(f) = fed {
                break Err(f);
            }
        },
        Err(f) => Err(f),
    };
    match answer {
        Ok(body) => reply::typed(StatusCode::OK, JSON, body),
        Err(f) => {
            if f == Failure::BODY_TOO_LARGE {
                // The rest is read while the 413 goes out (reply::spawn_drain says why).
                reply::spawn_drain(async move { while let Some(Ok(_)) = body.next().await {} });
            }
            failure(f)
        }
    }
}

/// `GET /delay/`: tokio's timer for 10 ms, the worker serving others meanwhile.
pub async fn delay(state: State, header: Token) -> Response {
    match workloads::delay(&state, token(&header)) {
        Ok(body) => {
            tokio::time::sleep(DELAY).await;
            reply::typed(StatusCode::OK, TEXT, body)
        }
        Err(f) => failure(f),
    }
}

/// `GET /ws/`: the token first (401 without it, no handshake), then warp's `Ws` (a
/// request that is not a WebSocket handshake is a JSON 400), whose 101 hands the
/// connection to [`echo`] in a task of its own (warp spawns it with tokio::spawn). Its
/// limits are tungstenite's defaults: 64 MiB a message, 16 MiB a frame; no subprotocol,
/// no compression.
pub fn ws(state: State, header: Token, upgrade: Option<warp::ws::Ws>) -> Response {
    if !state.authorized(token(&header)) {
        return failure(Failure::INVALID_TOKEN);
    }
    match upgrade {
        Some(upgrade) => upgrade.on_upgrade(echo).into_response(),
        None => failure(Failure::bad_request("not a websocket handshake")),
    }
}

/// Every text message back as text, binary as binary (tungstenite reassembles fragments,
/// answers pings and the close frame itself). A read error tungstenite returns without
/// telling the client (a text that is not UTF-8, an unmasked frame) is answered with the
/// close status webbench_common::ws names (1007, 1002), then the connection is dropped.
async fn echo(mut socket: warp::ws::WebSocket) {
    use futures_util::SinkExt;
    while let Some(received) = socket.next().await {
        let reply = match received {
            Ok(message) if message.is_text() || message.is_binary() => message,
            // Ping: tungstenite has queued the pong, written by the next read. Pong:
            // ignored. Close: tungstenite has queued the reply; the next read writes it
            // and ends the stream.
            Ok(_) => continue,
            Err(e) => {
                if let Some(code) = webbench_common::ws::close_code(&e) {
                    let close = warp::ws::Message::close_with(code, "");
                    let _ = socket.send(close).await;
                }
                return;
            }
        };
        if socket.send(reply).await.is_err() {
            return;
        }
    }
}

/// A known path with a method it does not serve: JSON 405 with the path's `Allow`.
pub fn method_not_allowed(allow: HeaderValue) -> Response {
    reply::method_not_allowed(allow)
}

/// What the routes leave rejected, as the contract's JSON. A path no route matched is
/// warp's `not_found` (404). Every known path ends in a filter that answers a wrong
/// method itself (405 with `Allow`), so `MethodNotAllowed` only shows up if a route
/// lacks it; nothing else rejects (the filters used extract only what cannot fail), but
/// anything that did would be a JSON 400 rather than warp's plain-text default.
pub async fn recover(rejection: Rejection) -> Result<Response, Infallible> {
    let f = if rejection.is_not_found() {
        Failure::NOT_FOUND
    } else if rejection.find::<MethodNotAllowed>().is_some() {
        Failure::METHOD_NOT_ALLOWED
    } else {
        Failure::bad_request("bad request")
    };
    Ok(failure(f))
}
