//! The contract's endpoints, as Rocket routes: each one maps the request onto
//! `webbench_common::contract` / `suite` (token check, id parsing, body validation, the
//! bodies) and turns the answer into a [`Reply`]. Every failure is a JSON
//! `{"error": "..."}` with a 4xx status; only a database failure (not any client input)
//! gives a 500. Nothing here can panic on client input: with `panic = "abort"` a panic
//! would kill the server.
//!
//! The routes use only guards that cannot fail (`&State`, [`Ctx`], `&Limits`, the `<id>`
//! segment as `&str`, the body as `Data`): a guard that fails or forwards would answer
//! through a catcher before the handler runs, skipping the token check. No `Json<T>`
//! (its 400/422 come before the token check and are not the contract's messages) and
//! no typed `<id: i32>` (a non-number would forward to the 404 catcher before the token
//! check).

use std::convert::Infallible;
use std::io::Cursor;

use bytes::Bytes;
use rocket::data::{ByteUnit, Data, DataStream, Limits, ToByteUnit};
use rocket::http::{Method, Status as HttpStatus};
use rocket::request::{FromRequest, Outcome, Request};
use rocket::response::{self, Responder, Response};
use rocket::tokio::io::AsyncReadExt;
use rocket::{catch, get, patch, post, State};
use webbench_common::contract::{self, AppState, Failure, Status, MAX_BODY};
use webbench_common::db::Db;
use webbench_common::suite;
use webbench_common::workloads::{self, Upload, DELAY, DRAIN_TIME};

/// Rocket's managed state: one per process, shared by all worker threads.
pub type App = AppState<Db>;

/// A response: status, Content-Type and a body whose length is known (Content-Length,
/// no chunking). `Bytes` so `/ping/`'s pre-serialised body is shared, not copied.
pub struct Reply {
    status: HttpStatus,
    content_type: &'static str,
    allow: Option<&'static str>,
    body: Bytes,
}

impl Reply {
    fn ok(content_type: &'static str, body: impl Into<Bytes>) -> Reply {
        Reply {
            status: HttpStatus::Ok,
            content_type,
            allow: None,
            body: body.into(),
        }
    }

    fn failure(f: Failure) -> Reply {
        Reply {
            status: status_code(f.status),
            content_type: contract::CONTENT_TYPE_JSON,
            allow: None,
            body: f.body().into(),
        }
    }

    /// A JSON body with 200, or the failure.
    fn json(answer: Result<Vec<u8>, Failure>) -> Reply {
        match answer {
            Ok(body) => Reply::ok(contract::CONTENT_TYPE_JSON, body),
            Err(f) => Reply::failure(f),
        }
    }
}

impl<'r> Responder<'r, 'static> for Reply {
    fn respond_to(self, _: &'r Request<'_>) -> response::Result<'static> {
        let mut res = Response::build();
        res.status(self.status)
            .raw_header("Content-Type", self.content_type)
            .sized_body(self.body.len(), Cursor::new(self.body));
        if let Some(allow) = self.allow {
            res.raw_header("Allow", allow);
        }
        res.ok()
    }
}

pub fn status_code(status: Status) -> HttpStatus {
    match status {
        Status::BadRequest => HttpStatus::BadRequest,
        Status::Unauthorized => HttpStatus::Unauthorized,
        Status::NotFound => HttpStatus::NotFound,
        Status::MethodNotAllowed => HttpStatus::MethodNotAllowed,
        Status::PayloadTooLarge => HttpStatus::PayloadTooLarge,
        Status::InternalServerError => HttpStatus::InternalServerError,
    }
}

/// What every contract route takes from the request besides the state: the `token`
/// header and the raw (still URL-encoded) query string. A guard that always succeeds.
pub struct Ctx<'r> {
    token: Option<&'r [u8]>,
    query: &'r str,
    /// The raw `Content-Length` (`/upload/` refuses one over the limit before reading).
    length: Option<&'r [u8]>,
}

#[rocket::async_trait]
impl<'r> FromRequest<'r> for Ctx<'r> {
    type Error = Infallible;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, Infallible> {
        Outcome::Success(Ctx {
            token: req
                .headers()
                .get_one(contract::TOKEN_HEADER)
                .map(str::as_bytes),
            query: req.uri().query().map_or("", |q| q.as_str()),
            length: req.headers().get_one("Content-Length").map(str::as_bytes),
        })
    }
}

/// Rocket 0.5 refuses a route URI with a trailing slash (an empty segment) and
/// matches a request's non-empty segments only: the route `/ping` answers the
/// contract's `/ping/` (and `/ping` as well). The same for every route below.
#[get("/ping")]
pub fn ping(state: &State<App>) -> Reply {
    Reply::ok(contract::CONTENT_TYPE_JSON, state.ping_body.clone())
}

/// `<id>` is Rocket's percent-decoded segment; contract::user_id checks it after the
/// token and the database.
#[get("/user/<id>")]
pub async fn get_user(state: &State<App>, ctx: Ctx<'_>, id: &str) -> Reply {
    let id = match contract::user_id(state, ctx.token, || Some(id)) {
        Ok(id) => id,
        Err(f) => return Reply::failure(f),
    };
    Reply::json(contract::get_user(&state.db, id).await)
}

#[patch("/user/<id>", data = "<body>")]
pub async fn patch_user(
    state: &State<App>,
    ctx: Ctx<'_>,
    limits: &Limits,
    id: &str,
    body: Data<'_>,
) -> Reply {
    let id = match contract::user_id(state, ctx.token, || Some(id)) {
        Ok(id) => id,
        Err(f) => return Reply::failure(f),
    };
    // The body is read only now, after the checks, as raw bytes whatever its
    // Content-Type, up to the configured "bytes" limit (64 KiB, main.rs); past it the
    // read stops and the body is incomplete: a JSON 400 like every other bad body.
    let limit = limits.get("bytes").unwrap_or(MAX_BODY.bytes());
    let body = match body.open(limit).into_bytes().await {
        Ok(body) if body.is_complete() => body.into_inner(),
        _ => {
            return Reply::failure(Failure::bad_request(
                "could not read body or body too large",
            ))
        }
    };
    Reply::json(contract::update_user(&state.db, id, &body).await)
}

#[get("/plain")]
pub fn plain(state: &State<App>, ctx: Ctx<'_>) -> Reply {
    match contract::plain(state, ctx.token, ctx.query) {
        Ok(body) => Reply::ok(contract::CONTENT_TYPE_TEXT, body),
        Err(f) => Reply::failure(f),
    }
}

#[get("/to_json")]
pub fn to_json(state: &State<App>, ctx: Ctx<'_>) -> Reply {
    Reply::json(contract::to_json(state, ctx.token, ctx.query))
}

/// `GET /queries/?n=N` (webbench_common::suite, as are the three below).
#[get("/queries")]
pub async fn queries(state: &State<App>, ctx: Ctx<'_>) -> Reply {
    Reply::json(suite::queries(state, ctx.token, ctx.query).await)
}

#[get("/updates")]
pub async fn updates(state: &State<App>, ctx: Ctx<'_>) -> Reply {
    Reply::json(suite::updates(state, ctx.token, ctx.query).await)
}

/// `GET /fortunes/`: the askama page as `text/html; charset=utf-8`.
#[get("/fortunes")]
pub async fn fortunes(state: &State<App>, ctx: Ctx<'_>) -> Reply {
    match suite::fortunes(state, ctx.token).await {
        Ok(page) => Reply::ok(suite::CONTENT_TYPE_HTML, page),
        Err(f) => Reply::failure(f),
    }
}

#[get("/cached")]
pub async fn cached(state: &State<App>, ctx: Ctx<'_>) -> Reply {
    Reply::json(suite::cached(state, ctx.token, ctx.query).await)
}

/// `POST /upload/` (webbench_common::workloads): the token, a declared length over 8 MiB
/// (413), then the body read from Rocket's data stream in 64 KiB reads through the
/// CRC-32 (never held whole), 413 as soon as it passes 8 MiB. The stream is opened
/// without a limit of Rocket's (Data::open takes the limit given; the count is the
/// workload's): a refused body's rest is read and dropped for at most
/// workloads::DRAIN_TIME before the 413, as Rocket would otherwise close the connection
/// with it unread and the client still writing it would be reset (workloads.rs).
#[post("/upload", data = "<body>")]
pub async fn upload(state: &State<App>, ctx: Ctx<'_>, body: Data<'_>) -> Reply {
    let mut stream = body.open(ByteUnit::max_value());
    let mut upload = match Upload::start(state, ctx.token, ctx.length) {
        Ok(upload) => upload,
        Err(f) => {
            if f == Failure::BODY_TOO_LARGE {
                drain(stream).await;
            }
            return Reply::failure(f);
        }
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let fed = match stream.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => upload.feed(&buf[..n]),
            Err(_) => Err(Failure::UNREADABLE_BODY),
        };
        if let Err(f) = fed {
            if f == Failure::BODY_TOO_LARGE {
                drain(stream).await;
            }
            return Reply::failure(f);
        }
    }
    Reply::json(Ok(upload.finish().into_bytes()))
}

/// Reads the rest of a refused body and drops it, for at most DRAIN_TIME.
async fn drain(mut stream: DataStream<'_>) {
    let mut sink = rocket::tokio::io::sink();
    let rest = rocket::tokio::io::copy(&mut stream, &mut sink);
    let _ = rocket::tokio::time::timeout(DRAIN_TIME, rest).await;
}

/// `GET /delay/`: tokio's timer (the runtime Rocket runs on) for 10 ms, the worker
/// serving other connections meanwhile.
#[get("/delay")]
pub async fn delay(state: &State<App>, ctx: Ctx<'_>) -> Reply {
    match workloads::delay(state, ctx.token) {
        Ok(body) => {
            rocket::tokio::time::sleep(DELAY).await;
            Reply::ok(contract::CONTENT_TYPE_TEXT, body)
        }
        Err(f) => Reply::failure(f),
    }
}

/// `GET /ws/`, the WebSocket echo (servers/README.md "WebSocket"): the token first (401
/// without it, no handshake), then rocket_ws's `WebSocket` guard, taken as an `Option`
/// so that a request that is not a handshake (the guard forwards) is a JSON 400 here
/// rather than a catcher's answer. Its `Channel` has Rocket answer 101 and hand the
/// upgraded connection to [`echo`] (Rocket's upgrade: a tokio task of its own). Limits:
/// tungstenite 0.21's defaults, 64 MiB a message, 16 MiB a frame.
#[get("/ws")]
pub fn ws(
    state: &State<App>,
    ctx: Ctx<'_>,
    upgrade: Option<rocket_ws::WebSocket>,
) -> Result<rocket_ws::Channel<'static>, Reply> {
    if !state.authorized(ctx.token) {
        return Err(Reply::failure(Failure::INVALID_TOKEN));
    }
    match upgrade {
        Some(ws) => Ok(ws.channel(|stream| Box::pin(echo(stream)))),
        None => Err(Reply::failure(Failure::bad_request(
            "not a websocket handshake",
        ))),
    }
}

/// Every text message back as text, binary as binary (tungstenite reassembles fragments,
/// answers pings and the close frame itself). A read error tungstenite returns without
/// telling the client is answered with a close frame first ([`close_code`]), then the
/// connection is dropped. Always `Ok`: rocket_ws would log an error (logging is off, but
/// the connection's end is no error).
async fn echo(mut stream: rocket_ws::stream::DuplexStream) -> rocket_ws::result::Result<()> {
    use rocket::futures::{SinkExt, StreamExt};
    use rocket_ws::frame::{CloseCode, CloseFrame};
    use rocket_ws::Message;
    while let Some(received) = stream.next().await {
        let reply = match received {
            Ok(message @ (Message::Text(_) | Message::Binary(_))) => message,
            // Ping: tungstenite has queued the pong, written by the next read. Pong:
            // ignored. Close: tungstenite has queued the reply; the next read writes it
            // and ends the stream.
            Ok(_) => continue,
            Err(e) => {
                if let Some(code) = close_code(&e) {
                    let close = CloseFrame {
                        code: CloseCode::from(code),
                        reason: "".into(),
                    };
                    let _ = stream.send(Message::Close(Some(close))).await;
                }
                return Ok(());
            }
        };
        if stream.send(reply).await.is_err() {
            return Ok(());
        }
    }
    Ok(())
}

/// The close status for a read error tungstenite 0.21 returns without sending anything
/// (RFC 6455 §7.4.1): 1007 for a text message that is not UTF-8, 1002 for a protocol
/// error (an unmasked client frame among them), 1009 for a message over the limit; `None`
/// for I/O errors (the peer is gone). (webbench_common::ws does the same for tungstenite
/// 0.29.) rocket_ws does not export tungstenite's ProtocolError, so a peer that reset the
/// connection (ResetWithoutClosingHandshake) gets a close frame too, whose write fails.
fn close_code(err: &rocket_ws::result::Error) -> Option<u16> {
    use rocket_ws::result::Error;
    match err {
        Error::Utf8 => Some(1007),
        Error::Protocol(_) => Some(1002),
        Error::Capacity(_) => Some(1009),
        _ => None,
    }
}

/// The methods each contract path serves (HEAD: Rocket answers it with the GET route,
/// body dropped), for the 405's `Allow` header; `None` for a path with no route.
/// Matched on Rocket's percent-decoded, non-empty segments, as its router matches
/// (so with or without the trailing slash, see [`ping`]).
pub fn allowed_methods(req: &Request<'_>) -> Option<&'static str> {
    let mut segs = req.uri().path().segments();
    let allow = match (segs.next(), segs.next(), segs.next()) {
        (Some("user"), Some(_), None) => "GET, HEAD, PATCH",
        (Some("upload"), None, None) => "POST",
        (
            Some(
                "ping" | "plain" | "to_json" | "queries" | "updates" | "fortunes" | "cached"
                | "delay" | "ws",
            ),
            None,
            None,
        ) => "GET, HEAD",
        _ => return None,
    };
    Some(allow)
}

/// Every error Rocket answers itself, as the contract's JSON. Rocket has no 405 of its
/// own: a request no route matches, whatever the reason, is a 404. So a 404 on a
/// contract path (one that has routes, for other methods) becomes 405 "method not
/// allowed" with `Allow`, as axum and actix-web answer; any other path is 404
/// "not found".
///
/// A method outside Rocket's `Method` enum (`QUERY`, a made-up one) never reaches the
/// router either: Rocket answers 400 through this catcher with the request salvaged as
/// a GET of the same URI. Every contract path has a GET route whose guards cannot fail,
/// so a 400 on a GET of a contract path can only be that: it gets the same 405 with
/// `Allow` as any other method the path does not serve. Any other 400 (a URI Rocket
/// cannot parse) stays 400 "bad request"; a 500 (a responder failed) keeps its status.
#[catch(default)]
pub fn catch_all(status: HttpStatus, req: &Request<'_>) -> Reply {
    let not_allowed = |allow| Reply {
        allow: Some(allow),
        ..Reply::failure(Failure::METHOD_NOT_ALLOWED)
    };
    let failure = match status.code {
        404 => match allowed_methods(req) {
            Some(allow) => return not_allowed(allow),
            None => Failure::NOT_FOUND,
        },
        400 => match (req.method(), allowed_methods(req)) {
            (Method::Get, Some(allow)) => return not_allowed(allow),
            _ => Failure::bad_request("bad request"),
        },
        _ => Failure::new(
            Status::InternalServerError,
            status.reason().unwrap_or("error"),
        ),
    };
    Reply {
        status,
        ..Reply::failure(failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_json_with_their_status() {
        for status in Status::ALL {
            let reply = Reply::failure(Failure::new(status, "x"));
            assert_eq!(reply.status.code, status.as_u16());
            assert_eq!(reply.content_type, contract::CONTENT_TYPE_JSON);
            assert_eq!(&reply.body[..], br#"{"error":"x"}"#);
        }
    }

    /// Rocket's salvaged request for an unknown method is a GET of the same URI: on a
    /// contract path the 400 becomes the 405 of any other method; elsewhere it stays.
    #[test]
    fn a_salvaged_unknown_method_on_a_contract_path_is_a_405() {
        let client = rocket::local::blocking::Client::untracked(rocket::build()).unwrap();
        let on_user = client.get("/user/7/");
        let reply = catch_all(HttpStatus::BadRequest, on_user.inner());
        assert_eq!(reply.status, HttpStatus::MethodNotAllowed);
        assert_eq!(reply.allow, Some("GET, HEAD, PATCH"));
        assert_eq!(&reply.body[..], br#"{"error":"method not allowed"}"#);

        let elsewhere = client.get("/nowhere/");
        let reply = catch_all(HttpStatus::BadRequest, elsewhere.inner());
        assert_eq!(reply.status, HttpStatus::BadRequest);
        assert_eq!(reply.allow, None);
    }
}
