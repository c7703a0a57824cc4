//! The contract's endpoints, as axum handlers: each one maps the request onto
//! `webbench_common::contract` (token check, id parsing, body validation, the bodies)
//! and turns its answer into a `Response`. Every failure is a JSON `{"error": "..."}`
//! with a 4xx status; only a database failure (not any client input) gives a 500.
//! Nothing here can panic on client input: with `panic = "abort"` a panic would kill
//! the server.
//!
//! Handlers take the whole `Request` (and the path captures as a `Result`) rather than
//! axum's typed extractors (`Path<i32>`, `Json<T>`, `Query<T>`, `TypedHeader`): an
//! extractor that fails answers with its own plain-text rejection before the handler
//! runs, which would skip the token check and break the JSON error contract.

use std::sync::Arc;

use axum::body::{self, Body};
use axum::extract::rejection::RawPathParamsRejection;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{RawPathParams, Request, State};
use axum::http::{HeaderMap, StatusCode};
use webbench_common::contract::{self, AppState, Failure, MAX_BODY};
use webbench_common::db::Db;
use webbench_common::reply::{self, token, HTML, JSON, TEXT};
use webbench_common::suite;

/// Shared by all worker threads (one `Arc`, cloned into every request's `State`).
pub type AppStateRef = State<Arc<AppState<Db>>>;
/// The `{id}` capture, percent-decoded by axum. A rejection (a capture that does not
/// decode to UTF-8) is kept as an `Err` and answered as "not found" after the token
/// check, never with axum's plain-text 400.
type IdParam = Result<RawPathParams, RawPathParamsRejection>;

/// Every response's body: axum's, made from the shared answers' `Bytes`.
type Response = axum::response::Response<Body>;

fn failure(f: Failure) -> Response {
    reply::failure(f)
}

fn json(answer: Result<Vec<u8>, Failure>) -> Response {
    reply::json(answer)
}

/// The token, a database, then the `{id}` capture (contract::user_id).
#[inline]
fn user_id(state: &AppState<Db>, id: &IdParam, req: &Request) -> Result<i32, Failure> {
    let raw_id = || {
        let params = id.as_ref().ok()?;
        let (_, raw) = params.iter().find(|(name, _)| *name == "id")?;
        Some(raw)
    };
    contract::user_id(state, token(req.headers()), raw_id)
}

pub async fn ping(State(state): AppStateRef) -> Response {
    reply::typed(StatusCode::OK, JSON, state.ping_body.clone())
}

pub async fn get_user(State(state): AppStateRef, id: IdParam, req: Request) -> Response {
    let id = match user_id(&state, &id, &req) {
        Ok(id) => id,
        Err(f) => return failure(f),
    };
    json(contract::get_user(&state.db, id).await)
}

pub async fn patch_user(State(state): AppStateRef, id: IdParam, req: Request) -> Response {
    let id = match user_id(&state, &id, &req) {
        Ok(id) => id,
        Err(f) => return failure(f),
    };
    // The body is taken as raw bytes whatever its Content-Type, and parsed by
    // contract::update_user. to_bytes stops reading (an error) once the limit is passed.
    let body = match body::to_bytes(req.into_body(), MAX_BODY).await {
        Ok(body) => body,
        Err(_) => {
            return failure(Failure::bad_request(
                "could not read body or body too large",
            ))
        }
    };
    json(contract::update_user(&state.db, id, &body).await)
}

pub async fn plain(State(state): AppStateRef, req: Request) -> Response {
    reply::ok_or_failure(
        TEXT,
        contract::plain(
            &state,
            token(req.headers()),
            req.uri().query().unwrap_or(""),
        ),
    )
}

pub async fn to_json(State(state): AppStateRef, req: Request) -> Response {
    json(contract::to_json(
        &state,
        token(req.headers()),
        req.uri().query().unwrap_or(""),
    ))
}

/// `GET /queries/?n=N` (webbench_common::suite, as are the three below).
pub async fn queries(State(state): AppStateRef, req: Request) -> Response {
    json(
        suite::queries(
            &state,
            token(req.headers()),
            req.uri().query().unwrap_or(""),
        )
        .await,
    )
}

/// `GET /updates/?n=N`.
pub async fn updates(State(state): AppStateRef, req: Request) -> Response {
    json(
        suite::updates(
            &state,
            token(req.headers()),
            req.uri().query().unwrap_or(""),
        )
        .await,
    )
}

/// `GET /fortunes/`: the askama page as `text/html; charset=utf-8`.
pub async fn fortunes(State(state): AppStateRef, req: Request) -> Response {
    reply::ok_or_failure(HTML, suite::fortunes(&state, token(req.headers())).await)
}

/// `GET /cached/?n=N`.
pub async fn cached(State(state): AppStateRef, req: Request) -> Response {
    json(
        suite::cached(
            &state,
            token(req.headers()),
            req.uri().query().unwrap_or(""),
        )
        .await,
    )
}

/// `POST /upload/`: the body streamed through the CRC-32 frame by frame
/// (webbench_common::reply::upload). axum's DefaultBodyLimit (2 MB) bounds its Bytes /
/// String / Json extractors only; the raw body taken here has no limit but the 8 MiB
/// counted as it is read.
pub async fn upload(State(state): AppStateRef, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    reply::upload(&state, &parts.headers, body).await
}

/// `GET /delay/`: tokio's timer for 10 ms (webbench_common::reply::delay).
pub async fn delay(State(state): AppStateRef, req: Request) -> Response {
    reply::delay(&state, req.headers()).await
}

/// `GET /ws/`: the token first (401 without it, no handshake), then axum's
/// WebSocketUpgrade (a request that is not a WebSocket handshake is a JSON 400), whose
/// 101 hands the connection to [`echo`] in a task of its own (axum spawns it on the
/// runtime). Its limits are tungstenite's defaults: 64 MiB a message, 16 MiB a frame;
/// no subprotocol, no compression (tungstenite has no permessage-deflate here).
pub async fn ws(
    State(state): AppStateRef,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    if !state.authorized(token(&headers)) {
        return failure(Failure::INVALID_TOKEN);
    }
    match upgrade {
        Ok(upgrade) => upgrade.on_upgrade(echo),
        Err(_) => failure(Failure::bad_request("not a websocket handshake")),
    }
}

/// Every text message back as text, binary as binary (tungstenite reassembles fragments,
/// answers pings and the close frame itself). A read error tungstenite returns without
/// telling the client (a text that is not UTF-8, an unmasked frame) is answered with the
/// close status webbench_common::ws names (1007, 1002), then the connection is dropped.
async fn echo(mut socket: WebSocket) {
    while let Some(received) = socket.recv().await {
        let reply = match received {
            Ok(message @ (Message::Text(_) | Message::Binary(_))) => message,
            // Ping: tungstenite has queued the pong, written by the next read. Pong:
            // ignored. Close: tungstenite has queued the reply; the next read writes
            // it and ends the stream.
            Ok(_) => continue,
            Err(e) => {
                if let Some(code) = webbench_common::ws::close_code(&e) {
                    let close = CloseFrame {
                        code,
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

/// Any path that is not one of the contract's routes.
pub async fn not_found() -> Response {
    failure(Failure::NOT_FOUND)
}

/// A known path with a method it does not serve (axum adds the `Allow` header).
pub async fn method_not_allowed() -> Response {
    failure(Failure::METHOD_NOT_ALLOWED)
}
