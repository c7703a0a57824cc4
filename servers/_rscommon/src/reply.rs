//! The contract's answers as responses of the `http` crate (1.x), the type axum, hyper
//! and warp all answer with: each picks only its body type `B` (axum's `Body`, hyper's
//! `Full<Bytes>`, warp's `Body`), made from [`Bytes`] without a copy. Generic and
//! `#[inline]`, so each server compiles to what it did when this was its own code.

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, ALLOW, CONTENT_TYPE};
use http::{HeaderMap, Response, StatusCode};

use crate::contract::{self, Failure, Status};
use crate::suite;

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

#[inline]
pub fn status_code(status: Status) -> StatusCode {
    match status {
        Status::BadRequest => StatusCode::BAD_REQUEST,
        Status::Unauthorized => StatusCode::UNAUTHORIZED,
        Status::NotFound => StatusCode::NOT_FOUND,
        Status::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
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

    #[test]
    fn the_token_is_read_from_its_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(token(&headers), None);
        headers.insert(TOKEN_HEADER, HeaderValue::from_static("tok"));
        assert_eq!(token(&headers), Some(&b"tok"[..]));
    }
}
