//! The contract's answers as responses of the `http` crate (1.x), the type axum, hyper
//! and warp all answer with: each picks only its body type `B` (axum's `Body`, hyper's
//! `Full<Bytes>`, warp's `Body`), made from [`Bytes`] without a copy. Generic and
//! `#[inline]`, so each server compiles to what it did when this was its own code.

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, ALLOW, CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, Response, StatusCode};
use http_body_util::BodyExt;

use crate::contract::{self, AppState, Failure, Status};
use crate::suite;
use crate::workloads::{self, Upload, DELAY, DRAIN_TIME};

pub const TOKEN_HEADER: HeaderName = HeaderName::from_static(contract::TOKEN_HEADER);
pub const JSON: HeaderValue = HeaderValue::from_static(contract::CONTENT_TYPE_JSON);
pub const TEXT: HeaderValue = HeaderValue::from_static(contract::CONTENT_TYPE_TEXT);
pub const HTML: HeaderValue = HeaderValue::from_static(suite::CONTENT_TYPE_HTML);

/// A response with its status, Content-Type and whole body (so a Content-Length).
#[inline]
pub fn typed<B: From<Bytes>>(
    status: StatusCode,
    content_type: HeaderValue,
    body: impl Into<Bytes>,
) -> Response<B> {
    let mut res = Response::new(B::from(body.into()));
    *res.status_mut() = status;
    res.headers_mut().insert(CONTENT_TYPE, content_type);
    res
}

/// A 200 with a body of the given Content-Type, or the failure.
#[inline]
pub fn ok_or_failure<B: From<Bytes>>(
    content_type: HeaderValue,
    answer: Result<impl Into<Bytes>, Failure>,
) -> Response<B> {
    match answer {
        Ok(body) => typed(StatusCode::OK, content_type, body),
        Err(f) => failure(f),
    }
}

/// A JSON body with 200, or the failure.
#[inline]
pub fn json<B: From<Bytes>>(answer: Result<Vec<u8>, Failure>) -> Response<B> {
    ok_or_failure(JSON, answer)
}

/// The contract's JSON `{"error": ...}` with its status.
#[inline]
pub fn failure<B: From<Bytes>>(f: Failure) -> Response<B> {
    typed(status_code(f.status), JSON, f.body())
}

/// A known path with a method it does not serve: JSON 405 with the path's `Allow`.
pub fn method_not_allowed<B: From<Bytes>>(allow: HeaderValue) -> Response<B> {
    let mut res = failure(Failure::METHOD_NOT_ALLOWED);
    res.headers_mut().insert(ALLOW, allow);
    res
}

/// The `token` header, if the request has one.
#[inline]
pub fn token(headers: &HeaderMap) -> Option<&[u8]> {
    headers.get(TOKEN_HEADER).map(HeaderValue::as_bytes)
}

/// `POST /upload/` (src/workloads.rs): the token, a declared length over the limit
/// (413 before reading), then the body streamed through the CRC-32 frame by frame as
/// hyper hands it over (never held whole: memory stays one frame whatever the size),
/// 413 as soon as it passes 8 MiB; `{"bytes": N, "crc32": "..."}`. A refused body is
/// left to [`drain`].
pub async fn upload<S, B, R>(state: &AppState<S>, headers: &HeaderMap, mut body: B) -> Response<R>
where
    B: http_body::Body + Unpin + Send + 'static,
    R: From<Bytes>,
{
    let declared = headers.get(CONTENT_LENGTH).map(HeaderValue::as_bytes);
    let mut upload = match Upload::start(state, token(headers), declared) {
        Ok(upload) => upload,
        Err(f) => {
            if f == Failure::BODY_TOO_LARGE {
                drain(body);
            }
            return failure(f);
        }
    };
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return failure(Failure::UNREADABLE_BODY);
        };
        // Trailers, if any, are not part of the body.
        if let Ok(data) = frame.into_data() {
            if let Err(f) = upload.feed_buf(data) {
                drain(body);
                return failure(f);
            }
        }
    }
    typed(StatusCode::OK, JSON, upload.finish())
}

/// Reads the rest of a refused body in a task of its own, for at most [`DRAIN_TIME`]
/// (workloads.rs says why), while the 413 goes out: hyper keeps reading the connection
/// for a body still wanted after the answer, and only drains what it already buffered
/// of one dropped. With it the connection even stays open for the next request.
fn drain<B>(mut body: B)
where
    B: http_body::Body + Unpin + Send + 'static,
{
    spawn_drain(async move { while let Some(Ok(_)) = body.frame().await {} });
}

/// Runs `rest` (what reads a refused body to its end) as a task, for at most
/// [`DRAIN_TIME`]: [`drain`] for hyper's bodies, warp's for its body stream.
pub fn spawn_drain(rest: impl std::future::Future<Output = ()> + Send + 'static) {
    tokio::spawn(async move {
        let _ = tokio::time::timeout(DRAIN_TIME, rest).await;
    });
}

/// `GET /delay/`: the token, then tokio's timer for 10 ms (the worker serves other
/// connections meanwhile), then `delayed 10 ms` as text/plain.
pub async fn delay<S, R: From<Bytes>>(state: &AppState<S>, headers: &HeaderMap) -> Response<R> {
    match workloads::delay(state, token(headers)) {
        Ok(body) => {
            tokio::time::sleep(DELAY).await;
            typed(StatusCode::OK, TEXT, body)
        }
        Err(f) => failure(f),
    }
}

#[inline]
pub fn status_code(status: Status) -> StatusCode {
    match status {
        Status::BadRequest => StatusCode::BAD_REQUEST,
        Status::Unauthorized => StatusCode::UNAUTHORIZED,
        Status::NotFound => StatusCode::NOT_FOUND,
        Status::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        Status::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        Status::InternalServerError => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_json_with_their_status() {
        for status in Status::ALL {
            let res: Response<Bytes> = failure(Failure::new(status, "x"));
            assert_eq!(res.status().as_u16(), status.as_u16());
            assert_eq!(res.headers().get(CONTENT_TYPE), Some(&JSON));
            assert_eq!(&res.body()[..], br#"{"error":"x"}"#);
        }
    }

    #[test]
    fn a_405_names_what_the_path_allows() {
        let allow = HeaderValue::from_static("GET, PATCH");
        let res: Response<Bytes> = method_not_allowed(allow.clone());
        assert_eq!(res.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(res.headers().get(ALLOW), Some(&allow));
    }

    #[test]
    fn an_answer_is_a_200_of_its_type_or_its_failure() {
        let page: Response<Bytes> = ok_or_failure(HTML, Ok::<_, Failure>("<p>"));
        assert_eq!(page.status(), StatusCode::OK);
        assert_eq!(page.headers().get(CONTENT_TYPE), Some(&HTML));
        let missing: Response<Bytes> = json(Err(Failure::NOT_FOUND));
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    }

    /// Runs a future on a runtime of its own (a refused upload's drain is a task).
    fn ready<F: std::future::Future>(f: F) -> F::Output {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build();
        runtime.expect("a runtime").block_on(f)
    }

    #[test]
    fn an_upload_is_read_whole_or_refused() {
        let state = AppState::new(&crate::config::Config::without_database("srv"), ());
        let mut headers = HeaderMap::new();
        let body = |b: &'static [u8]| http_body_util::Full::new(Bytes::from_static(b));
        let res: Response<Bytes> = ready(upload(&state, &headers, body(b"123456789")));
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);

        headers.insert(TOKEN_HEADER, HeaderValue::from_static("tok"));
        let res: Response<Bytes> = ready(upload(&state, &headers, body(b"123456789")));
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers().get(CONTENT_TYPE), Some(&JSON));
        assert_eq!(&res.body()[..], br#"{"bytes": 9, "crc32": "cbf43926"}"#);

        let big = http_body_util::Full::new(Bytes::from(vec![7u8; 8 * 1024 * 1024 + 1]));
        let res: Response<Bytes> = ready(upload(&state, &headers, big));
        assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(&res.body()[..], Failure::BODY_TOO_LARGE.body().as_slice());

        headers.insert(CONTENT_LENGTH, HeaderValue::from_static("8388609"));
        let res: Response<Bytes> = ready(upload(&state, &headers, body(b"")));
        assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[test]
    fn the_token_is_read_from_its_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(token(&headers), None);
        headers.insert(TOKEN_HEADER, HeaderValue::from_static("tok"));
        assert_eq!(token(&headers), Some(&b"tok"[..]));
    }
}
