//! The contract's endpoints, as actix-web handlers: each one maps the request onto
//! `webbench_common::contract` (token check, id parsing, body validation, the bodies)
//! and turns its answer into an `HttpResponse`. Every failure is a JSON
//! `{"error": "..."}` with a 4xx status; only a database failure (not any client input)
//! gives a 500. Nothing here can panic on client input: with `panic = "abort"` a panic
//! would kill the server.

use actix_web::body::MessageBody;
use actix_web::http::header::{HeaderName, HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use actix_web::http::StatusCode;
use actix_web::web;
use actix_web::{HttpRequest, HttpResponse};
use futures_util::StreamExt;
use webbench_common::contract::{self, AppState, Failure, Status, UserStore, MAX_BODY};
use webbench_common::suite::{self, SuiteStore};
use webbench_common::workloads::{self, Upload, DELAY};

const TOKEN_HEADER: HeaderName = HeaderName::from_static(contract::TOKEN_HEADER);
const JSON: HeaderValue = HeaderValue::from_static(contract::CONTENT_TYPE_JSON);
const TEXT: HeaderValue = HeaderValue::from_static(contract::CONTENT_TYPE_TEXT);
const HTML: HeaderValue = HeaderValue::from_static(suite::CONTENT_TYPE_HTML);

fn typed_response<B: MessageBody + 'static>(
    status: StatusCode,
    content_type: HeaderValue,
    body: B,
) -> HttpResponse {
    let mut res = HttpResponse::with_body(status, body);
    res.headers_mut().insert(CONTENT_TYPE, content_type);
    res.map_into_boxed_body()
}

fn status_code(status: Status) -> StatusCode {
    match status {
        Status::BadRequest => StatusCode::BAD_REQUEST,
        Status::Unauthorized => StatusCode::UNAUTHORIZED,
        Status::NotFound => StatusCode::NOT_FOUND,
        Status::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        Status::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        Status::InternalServerError => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

fn failure(f: Failure) -> HttpResponse {
    typed_response(status_code(f.status), JSON, f.body())
}

/// A JSON body with 200, or the failure.
fn json(answer: Result<Vec<u8>, Failure>) -> HttpResponse {
    match answer {
        Ok(body) => typed_response(StatusCode::OK, JSON, body),
        Err(f) => failure(f),
    }
}

/// The `token` header, if the request has one.
#[inline]
fn token(req: &HttpRequest) -> Option<&[u8]> {
    req.headers().get(TOKEN_HEADER).map(HeaderValue::as_bytes)
}

/// The token, a database, then the `{id}` capture (contract::user_id).
#[inline]
fn user_id<S: UserStore>(req: &HttpRequest, state: &AppState<S>) -> Result<i32, Failure> {
    contract::user_id(state, token(req), || req.match_info().get("id"))
}

pub async fn ping<S: UserStore>(state: web::Data<AppState<S>>) -> HttpResponse {
    typed_response(StatusCode::OK, JSON, state.ping_body.clone())
}

pub async fn get_user<S: UserStore>(
    req: HttpRequest,
    state: web::Data<AppState<S>>,
) -> HttpResponse {
    let id = match user_id(&req, &state) {
        Ok(id) => id,
        Err(f) => return failure(f),
    };
    json(contract::get_user(&state.db, id).await)
}

pub async fn patch_user<S: UserStore>(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState<S>>,
) -> HttpResponse {
    let id = match user_id(&req, &state) {
        Ok(id) => id,
        Err(f) => return failure(f),
    };
    // The body is taken as raw bytes whatever its Content-Type, and parsed by
    // contract::update_user.
    let body = match payload.to_bytes_limited(MAX_BODY).await {
        Ok(Ok(body)) => body,
        Ok(Err(_)) => return failure(Failure::bad_request("could not read body")),
        Err(_) => return failure(Failure::bad_request("body too large")),
    };
    json(contract::update_user(&state.db, id, &body).await)
}

pub async fn plain<S: UserStore>(req: HttpRequest, state: web::Data<AppState<S>>) -> HttpResponse {
    match contract::plain(&state, token(&req), req.query_string()) {
        Ok(body) => typed_response(StatusCode::OK, TEXT, body),
        Err(f) => failure(f),
    }
}

pub async fn to_json<S: UserStore>(
    req: HttpRequest,
    state: web::Data<AppState<S>>,
) -> HttpResponse {
    json(contract::to_json(&state, token(&req), req.query_string()))
}

/// `GET /queries/?n=N` (webbench_common::suite, as are the three below).
pub async fn queries<S: SuiteStore>(
    req: HttpRequest,
    state: web::Data<AppState<S>>,
) -> HttpResponse {
    json(suite::queries(&state, token(&req), req.query_string()).await)
}

/// `GET /updates/?n=N`.
pub async fn updates<S: SuiteStore>(
    req: HttpRequest,
    state: web::Data<AppState<S>>,
) -> HttpResponse {
    json(suite::updates(&state, token(&req), req.query_string()).await)
}

/// `GET /fortunes/`: the askama page as `text/html; charset=utf-8`.
pub async fn fortunes<S: SuiteStore>(
    req: HttpRequest,
    state: web::Data<AppState<S>>,
) -> HttpResponse {
    match suite::fortunes(&state, token(&req)).await {
        Ok(page) => typed_response(StatusCode::OK, HTML, page),
        Err(f) => failure(f),
    }
}

/// `GET /cached/?n=N`.
pub async fn cached<S: SuiteStore>(
    req: HttpRequest,
    state: web::Data<AppState<S>>,
) -> HttpResponse {
    json(suite::cached(&state, token(&req), req.query_string()).await)
}

/// `POST /upload/` (webbench_common::workloads): the token, a declared length over 8 MiB
/// (413 before reading), then the raw payload streamed through the CRC-32 chunk by chunk
/// as actix hands it over (never held whole), 413 as soon as it passes 8 MiB. web::Payload
/// has no size limit of its own (PayloadConfig's 256 KiB applies to the Bytes / String
/// extractors only).
pub async fn upload<S>(
    req: HttpRequest,
    mut payload: web::Payload,
    state: web::Data<AppState<S>>,
) -> HttpResponse {
    let declared = req.headers().get(CONTENT_LENGTH).map(HeaderValue::as_bytes);
    let mut upload = match Upload::start(&state, token(&req), declared) {
        Ok(upload) => upload,
        Err(f) => return failure(f),
    };
    while let Some(chunk) = payload.next().await {
        let fed = match chunk {
            Ok(chunk) => upload.feed(&chunk),
            Err(_) => Err(Failure::UNREADABLE_BODY),
        };
        if let Err(f) = fed {
            return failure(f);
        }
    }
    typed_response(StatusCode::OK, JSON, upload.finish())
}

/// `GET /delay/`: the token, then actix's timer (the worker's own tokio runtime) for
/// 10 ms, the worker serving its other connections meanwhile.
pub async fn delay<S>(req: HttpRequest, state: web::Data<AppState<S>>) -> HttpResponse {
    match workloads::delay(&state, token(&req)) {
        Ok(body) => {
            actix_web::rt::time::sleep(DELAY).await;
            typed_response(StatusCode::OK, TEXT, body)
        }
        Err(f) => failure(f),
    }
}

/// `GET /ws/`, the WebSocket echo (servers/README.md "WebSocket"): the token first (401
/// without it, no handshake), then actix-ws's handshake (a request that is not one is a
/// JSON 400); its 101 streams what the [`ws_echo`] task (spawned on the worker's own
/// runtime, actix_web::rt::spawn) sends through the Session, and the request's payload
/// is the client's frames, decoded by actix-http's ws codec.
pub async fn ws<S>(
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState<S>>,
) -> HttpResponse {
    if !state.authorized(token(&req)) {
        return failure(Failure::INVALID_TOKEN);
    }
    match actix_ws::handle(&req, body) {
        Ok((res, session, stream)) => {
            actix_web::rt::spawn(ws_echo(session, stream));
            res
        }
        Err(_) => failure(Failure::bad_request("not a websocket handshake")),
    }
}

/// Every text message back as text, binary as binary, fragments reassembled first
/// (aggregate_continuations); a ping answered by a pong with its payload and a close
/// frame by a close frame with its status (1000 if it had none), which ends the
/// response and so the connection: actix-ws does none of these itself. Limits: actix-http's
/// 64 KiB a frame, actix-ws's 1 MiB a reassembled message (their defaults). A read error
/// (actix-ws yields it and sends nothing) is answered with the close status of
/// [`ws_close_code`] before the connection ends.
async fn ws_echo(session: actix_ws::Session, stream: actix_ws::MessageStream) {
    use actix_ws::{AggregatedMessage, CloseCode, CloseReason};
    let mut session = session;
    let mut stream = stream.aggregate_continuations();
    while let Some(received) = stream.next().await {
        let sent = match received {
            Ok(AggregatedMessage::Text(text)) => session.text(text).await,
            Ok(AggregatedMessage::Binary(bytes)) => session.binary(bytes).await,
            Ok(AggregatedMessage::Ping(payload)) => session.pong(&payload).await,
            Ok(AggregatedMessage::Pong(_)) => Ok(()),
            Ok(AggregatedMessage::Close(reason)) => {
                let code = reason.map_or(CloseCode::Normal, |r| r.code);
                let _ = session.close(Some(code.into())).await;
                return;
            }
            Err(e) => {
                if let Some(code) = ws_close_code(&e) {
                    let reason = CloseReason {
                        code: code.into(),
                        description: None,
                    };
                    let _ = session.close(Some(reason)).await;
                }
                return;
            }
        };
        if sent.is_err() {
            return;
        }
    }
}

/// The close status for a read error (RFC 6455 §7.4.1): 1007 for a text message that is
/// not UTF-8 (actix-ws's ByteString conversion, an InvalidData I/O error), 1009 for a frame
/// or message over the limit, 1002 for any protocol error (an unmasked client frame:
/// actix-http's UnmaskedFrame); `None` for the connection's own I/O errors (gone).
fn ws_close_code(err: &actix_ws::ProtocolError) -> Option<u16> {
    use actix_ws::ProtocolError;
    match err {
        ProtocolError::Io(e) if e.kind() == std::io::ErrorKind::InvalidData => Some(1007),
        ProtocolError::Io(e) if e.to_string().contains("maximum continuation size") => Some(1009),
        ProtocolError::Io(_) => None,
        ProtocolError::Overflow => Some(1009),
        _ => Some(1002),
    }
}

/// Any path that is not one of the contract's routes.
pub async fn not_found() -> HttpResponse {
    failure(Failure::NOT_FOUND)
}

/// A known path with a method it does not serve.
pub async fn method_not_allowed() -> HttpResponse {
    failure(Failure::METHOD_NOT_ALLOWED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_json_with_their_status() {
        for status in Status::ALL {
            let res = failure(Failure::new(status, "x"));
            assert_eq!(res.status().as_u16(), status.as_u16());
            assert_eq!(res.headers().get(CONTENT_TYPE), Some(&JSON));
        }
    }
}
