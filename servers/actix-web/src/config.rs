//! Configuration: read only from the environment variables the harness passes
//! (servers/README.md). Nothing here is hard-coded that the harness controls.

use std::env;
use std::fmt;

/// Which database the server talks to (`BENCH_DB`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DbKind {
    None,
    Postgres,
    Mysql,
}

impl DbKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DbKind::None => "none",
            DbKind::Postgres => "postgres",
            DbKind::Mysql => "mysql",
        }
    }
}

pub struct Config {
    pub server_id: String,
    pub host: String,
    pub port: u16,
    pub workers: usize,
    pub token: String,
    pub db: DbKind,
    /// `BENCH_ORM=1`: the SeaORM variant (orm.rs) instead of raw sqlx queries (db.rs).
    pub orm: bool,
    pub db_host: String,
    pub db_port: u16,
    pub db_name: String,
    pub db_user: String,
    pub db_password: String,
    pub pool_size: u32,
}

#[derive(Debug)]
pub struct ConfigError(String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn var_or(name: &str, default: &str) -> String {
    match env::var(name) {
        Ok(v) if !v.is_empty() => v,
        _ => default.to_owned(),
    }
}

fn parse_num<T: std::str::FromStr>(name: &str, default: &str) -> Result<T, ConfigError> {
    let raw = var_or(name, default);
    raw.trim()
        .parse()
        .map_err(|_| ConfigError(format!("{name}={raw:?} is not a valid number")))
}

impl Config {
    pub fn from_env() -> Result<Config, ConfigError> {
        let db = match var_or("BENCH_DB", "none").to_ascii_lowercase().as_str() {
            "none" => DbKind::None,
            "postgres" | "postgresql" => DbKind::Postgres,
            "mysql" | "mariadb" => DbKind::Mysql,
            other => {
                return Err(ConfigError(format!(
                    "BENCH_DB={other:?}: expected postgres, mysql or none"
                )))
            }
        };
        // manifest: orm = [false, true]. Anything but a clear 0/1 is refused rather
        // than silently run as the other variant.
        let orm = match var_or("BENCH_ORM", "0").as_str() {
            "0" | "false" | "False" => false,
            "1" | "true" | "True" => true,
            other => {
                return Err(ConfigError(format!(
                    "BENCH_ORM={other:?}: expected 0 (raw sqlx) or 1 (SeaORM)"
                )))
            }
        };
        let workers: usize = parse_num("BENCH_WORKERS", "8")?;
        if workers == 0 {
            return Err(ConfigError("BENCH_WORKERS must be at least 1".into()));
        }
        let pool_size: u32 = parse_num("BENCH_DB_POOL_SIZE", "8")?;
        if db != DbKind::None && pool_size == 0 {
            return Err(ConfigError("BENCH_DB_POOL_SIZE must be at least 1".into()));
        }
        let default_db_port = if db == DbKind::Mysql { "3306" } else { "5432" };
        Ok(Config {
            server_id: var_or("BENCH_SERVER_ID", "actix-web"),
            host: var_or("BENCH_HOST", "127.0.0.1"),
            port: parse_num("BENCH_PORT", "8000")?,
            workers,
            token: var_or("BENCH_TOKEN", "hardcoded_token"),
            db,
            orm,
            db_host: var_or("BENCH_DB_HOST", "127.0.0.1"),
            db_port: parse_num("BENCH_DB_PORT", default_db_port)?,
            db_name: var_or("BENCH_DB_NAME", "webservers_bench"),
            db_user: var_or("BENCH_DB_USER", "bench"),
            // An empty password is a legitimate value, so no var_or here.
            db_password: env::var("BENCH_DB_PASSWORD").unwrap_or_default(),
            pool_size,
        })
    }
}
