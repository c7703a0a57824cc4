//! The database suite (CONTRACT.md section 6): `/queries/`, `/updates/`,
//! `/fortunes/` and `/cached/`, without an HTTP framework, like [`crate::contract`].
//!
//! Each endpoint function takes what the server pulled out of its request (the `token`
//! header, the query string) and returns the body or a [`Failure`]. The checks come in
//! the user endpoints' order: the token (401), then a database at all (404 "no
//! database"); `n` is never an error ([`parse_n`]).
//!
//! The work goes through [`SuiteStore`], implemented by the raw sqlx queries
//! (`db::Db`) and by actix-web's SeaORM variant, so both variants run the same
//! statement sequence: every statement is awaited before the next one is sent (no
//! pipelining, no parallel statements, no transaction).

use std::future::Future;
use std::sync::Arc;

use askama::Template;
use chrono::{DateTime, SubsecRound, Utc};
use moka::sync::Cache;
use rand::seq::index;
use rand::Rng;

use crate::contract::{AppState, Failure, Status, UserStore};
use crate::db::User;

/// `n`'s bounds: anything else is clamped into them.
pub const N_MAX: usize = 500;
/// The ids the server draws: the contract's `users` table holds exactly 1..=10000.
pub const ROWS: i32 = 10_000;
/// The in-memory fortune every `/fortunes/` page adds to the table's rows.
pub const EXTRA_FORTUNE: &str = "A fortune added at request time.";
/// `/fortunes/`' Content-Type.
pub const CONTENT_TYPE_HTML: &str = "text/html; charset=utf-8";
/// The `/cached/` cache's capacity in entries: more than the 10,000 rows, so every row
/// fits and moka's admission policy (TinyLFU, which only decides once the cache is
/// full) never turns a row away; a warm cache then sends no statement at all.
pub const CACHE_CAPACITY: u64 = 16_384;

/// One row of the `fortune` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fortune {
    pub id: i32,
    pub message: String,
}

/// What the suite needs from the database beyond [`UserStore::get`] (the SELECT by
/// primary key that `/queries/`, `/updates/` and a `/cached/` miss send).
pub trait SuiteStore: UserStore {
    /// One `UPDATE users SET username = ?, updated_at = ? WHERE user_id = ?`.
    fn update_row(
        &self,
        id: i32,
        username: &str,
        updated_at: DateTime<Utc>,
    ) -> impl Future<Output = Result<(), Self::Error>>;
    /// One `SELECT id, message FROM fortune`.
    fn fortunes(&self) -> impl Future<Output = Result<Vec<Fortune>, Self::Error>>;
}

/// The `/cached/` cache: one per process, shared by all its worker threads (both Rust
/// servers run one process). Values are `Arc`s so a hit copies a pointer, not a row.
pub type UserCache = Cache<i32, Arc<User>>;

/// A cache of [`CACHE_CAPACITY`] entries, no time-to-live or time-to-idle (no expiry).
pub fn new_cache() -> UserCache {
    Cache::builder()
        .max_capacity(CACHE_CAPACITY)
        .initial_capacity(ROWS as usize)
        .build()
}

/// `n` from the query string (the first `n`, URL-decoded): ASCII digits only gives
/// min(value, 500), 0 becoming 1 (a digit string of any length, never an overflow);
/// anything else (missing, empty, a sign, a point, a letter) is 1. Never an error.
pub fn parse_n(query: &str) -> usize {
    let Some((_, raw)) = form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "n") else {
        return 1;
    };
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return 1;
    }
    let digits = raw.trim_start_matches('0');
    if digits.len() > 3 {
        return N_MAX;
    }
    // At most 3 digits: cannot fail; "" (all zeros) is 0.
    digits.parse::<usize>().unwrap_or(0).clamp(1, N_MAX)
}

/// `n` ids drawn uniformly from 1..=10000, repeats allowed. Drawn before any await:
/// rand's thread-local generator is not `Send` and is never held across one.
pub fn random_ids(n: usize) -> Vec<i32> {
    let mut rng = rand::thread_rng();
    (0..n).map(|_| rng.gen_range(1..=ROWS)).collect()
}

/// `n` distinct ids from 1..=10000 (`n` <= 500), in ascending order: the order of
/// `/updates/`' UPDATEs, so concurrent requests lock rows in the same order and cannot
/// deadlock.
pub fn distinct_ids(n: usize) -> Vec<i32> {
    let mut rng = rand::thread_rng();
    let mut ids: Vec<i32> = index::sample(&mut rng, ROWS as usize, n.min(ROWS as usize))
        .into_iter()
        .map(|i| i as i32 + 1)
        .collect();
    ids.sort_unstable();
    ids
}

/// `"u"` + a random integer 1..=1000000, one per row.
fn random_usernames(n: usize) -> Vec<String> {
    let mut rng = rand::thread_rng();
    (0..n)
        .map(|_| format!("u{}", rng.gen_range(1..=1_000_000u32)))
        .collect()
}

/// The server's current UTC time at the precision both databases store
/// (microseconds), so the response carries exactly the value written.
pub fn now_micros() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}

/// The table's rows plus the in-memory one, sorted by message. Rust's `str` order is
/// the byte order of UTF-8, which is code-point order, as the contract asks.
pub fn sorted_fortunes(mut rows: Vec<Fortune>) -> Vec<Fortune> {
    rows.push(Fortune {
        id: 0,
        message: EXTRA_FORTUNE.to_owned(),
    });
    rows.sort_unstable_by(|a, b| a.message.cmp(&b.message));
    rows
}

/// The fortunes page: askama, compiled from `templates/fortunes.html` at build time;
/// an `.html` template escapes every `{{ }}` (`&`, `<`, `>`, `"`, `'`, as numeric
/// references: `&#60;` ...) unless told otherwise (`|safe`), and this one never is.
#[derive(Template)]
#[template(path = "fortunes.html")]
struct FortunesPage<'a> {
    fortunes: &'a [Fortune],
}

pub fn render_fortunes(fortunes: &[Fortune]) -> Result<String, Failure> {
    FortunesPage { fortunes }
        .render()
        .map_err(|_| Failure::new(Status::InternalServerError, "template error"))
}

/// The token, then a database at all.
#[inline]
fn check<S: UserStore>(state: &AppState<S>, token: Option<&[u8]>) -> Result<(), Failure> {
    if !state.authorized(token) {
        return Err(Failure::INVALID_TOKEN);
    }
    if !state.db.has_database() {
        return Err(Failure::NO_DATABASE);
    }
    Ok(())
}

fn db_error(e: impl std::fmt::Display) -> Failure {
    // Errors only, never per request: this is not an access log.
    eprintln!("database error: {e}");
    Failure::DATABASE_ERROR
}

/// Every id drawn is in 1..=10000, which the contract's table always holds: a missing
/// row is the database's state, not the client's input.
const MISSING_ROW: Failure = Failure::new(Status::InternalServerError, "row missing");

/// One SELECT by primary key.
async fn fetch<S: UserStore>(db: &S, id: i32) -> Result<User, Failure> {
    match db.get(id).await {
        Ok(Some(user)) => Ok(user),
        Ok(None) => Err(MISSING_ROW),
        Err(e) => Err(db_error(e)),
    }
}

fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, Failure> {
    serde_json::to_vec(value).map_err(|_| Failure::SERIALISATION_FAILED)
}

/// `GET /queries/?n=N`: N SELECTs by primary key, one after another.
pub async fn queries<S: SuiteStore>(
    state: &AppState<S>,
    token: Option<&[u8]>,
    query: &str,
) -> Result<Vec<u8>, Failure> {
    check(state, token)?;
    let ids = random_ids(parse_n(query));
    let mut users = Vec::with_capacity(ids.len());
    for id in ids {
        users.push(fetch(&state.db, id).await?);
    }
    to_json(&users)
}

/// `GET /updates/?n=N`: N distinct ids; N SELECTs, then N single-row UPDATEs in
/// ascending id order (autocommit, each awaited), and the rows as written.
pub async fn updates<S: SuiteStore>(
    state: &AppState<S>,
    token: Option<&[u8]>,
    query: &str,
) -> Result<Vec<u8>, Failure> {
    check(state, token)?;
    let ids = distinct_ids(parse_n(query));
    let names = random_usernames(ids.len());
    let mut users = Vec::with_capacity(ids.len());
    for &id in &ids {
        users.push(fetch(&state.db, id).await?);
    }
    // Taken once the rows are read, one timestamp for the request's writes.
    let now = now_micros();
    for (user, name) in users.iter_mut().zip(names) {
        user.username = name;
        user.updated_at = now;
    }
    // `users` is in `ids`' ascending order.
    for user in &users {
        state
            .db
            .update_row(user.user_id, &user.username, user.updated_at)
            .await
            .map_err(db_error)?;
    }
    to_json(&users)
}

/// `GET /fortunes/`: one SELECT of the whole table, the extra row, sorted, rendered.
pub async fn fortunes<S: SuiteStore>(
    state: &AppState<S>,
    token: Option<&[u8]>,
) -> Result<String, Failure> {
    check(state, token)?;
    let rows = state.db.fortunes().await.map_err(db_error)?;
    render_fortunes(&sorted_fortunes(rows))
}

/// `GET /cached/?n=N`: N ids from the process's cache; a miss is one SELECT by primary
/// key through the store (raw or ORM), whose row is then cached.
pub async fn cached<S: SuiteStore>(
    state: &AppState<S>,
    token: Option<&[u8]>,
    query: &str,
) -> Result<Vec<u8>, Failure> {
    check(state, token)?;
    let ids = random_ids(parse_n(query));
    let mut users: Vec<Arc<User>> = Vec::with_capacity(ids.len());
    for id in ids {
        let user = match state.cache.get(&id) {
            Some(user) => user,
            None => {
                let user = Arc::new(fetch(&state.db, id).await?);
                state.cache.insert(id, user.clone());
                user
            }
        };
        users.push(user);
    }
    let rows: Vec<&User> = users.iter().map(|u| &**u).collect();
    to_json(&rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n() {
        for (query, n) in [
            ("", 1),
            ("n=", 1),
            ("n=0", 1),
            ("n=000", 1),
            ("n=1", 1),
            ("n=20", 20),
            ("n=0020", 20),
            ("n=500", 500),
            ("n=501", 500),
            ("n=99999999999999999999", 500),
            ("n=00000000000000000007", 7),
            ("n=abc", 1),
            ("n=-3", 1),
            ("n=+3", 1),
            ("n=1.5", 1),
            ("n=%35", 5),
            ("n=５", 1),
            ("x=7&n=9&n=3", 9),
            ("x=7", 1),
        ] {
            assert_eq!(parse_n(query), n, "{query}");
        }
    }

    #[test]
    fn ids() {
        let ids = random_ids(500);
        assert_eq!(ids.len(), 500);
        assert!(ids.iter().all(|&id| (1..=ROWS).contains(&id)));
        for n in [1, 20, 500] {
            let ids = distinct_ids(n);
            assert_eq!(ids.len(), n);
            assert!(
                ids.windows(2).all(|w| w[0] < w[1]),
                "ascending and distinct"
            );
            assert!(ids.iter().all(|&id| (1..=ROWS).contains(&id)));
        }
        let names = random_usernames(100);
        assert!(names.iter().all(|u| {
            let v: u32 = u[1..].parse().unwrap();
            u.starts_with('u') && (1..=1_000_000).contains(&v)
        }));
    }

    #[test]
    fn fortunes_page() {
        let rows = vec![
            Fortune {
                id: 2,
                message: "<script>alert(\"escape me\")</script>".into(),
            },
            Fortune {
                id: 10,
                message: "Ünïcödé".into(),
            },
            Fortune {
                id: 9,
                message: "フレーム".into(),
            },
            Fortune {
                id: 3,
                message: "Tom & Jerry's".into(),
            },
        ];
        let sorted = sorted_fortunes(rows);
        let ids: Vec<i32> = sorted.iter().map(|f| f.id).collect();
        assert_eq!(ids, [2, 0, 3, 10, 9]);
        let page = render_fortunes(&sorted).unwrap();
        assert!(page.starts_with(
            "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>\
             <tr><th>id</th><th>message</th></tr><tr><td>2</td><td>&#60;script&#62;alert(&#34;escape me&#34;)&#60;/script&#62;</td></tr>"
        ));
        assert!(!page.contains("<script>"));
        assert!(page.contains("<tr><td>3</td><td>Tom &#38; Jerry&#39;s</td></tr>"));
        assert!(page.ends_with("<tr><td>9</td><td>フレーム</td></tr></table></body></html>"));
    }

    #[test]
    fn timestamps_are_microseconds() {
        let now = now_micros();
        assert_eq!(now.timestamp_subsec_nanos() % 1000, 0);
    }
}
