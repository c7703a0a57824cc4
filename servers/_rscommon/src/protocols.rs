//! The protocols a Rust server speaks itself besides HTTP/1.1 on BENCH_PORT, as the
//! harness asks for them by environment (servers/README.md, "Protocols a server speaks
//! itself"; the reference is servers/_gocommon/listeners.go): [`OwnProtocols`], the
//! listeners asked for, and [`tls_config`], the one TLS configuration every Rust server
//! uses: rustls 0.23 with the `ring` crypto provider, TLS 1.3 only, the one cipher suite
//! TLS13_AES_128_GCM_SHA256, the run's certificate. The tokio servers on hyper (axum,
//! hyper) serve them with src/listeners.rs; actix-web hands the configuration to its own
//! rustls listener (servers/_rsactix).
//!
//! Session resumption is rustls's server default, stateful only: a
//! ServerSessionMemoryCache of 256 sessions, 2 TLS 1.3 session tickets sent after each
//! handshake that are ids into that cache (no stateless ticketer: rustls has none unless
//! one is configured), no 0-RTT (max_early_data_size 0).

use std::env;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;

/// The ALPN protocols of a TLS listener, in the server's order of preference (the
/// server's order wins: h2 when the client offers both).
pub const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// The listeners the harness asks for by environment; both absent: none at all, and the
/// server is what it was without them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct OwnProtocols {
    tls: Option<TlsListener>,
    h2c_port: Option<u16>,
}

#[derive(Debug, PartialEq, Eq)]
struct TlsListener {
    port: u16,
    cert: PathBuf,
    key: PathBuf,
}

impl OwnProtocols {
    /// BENCH_TLS_PORT (with BENCH_TLS_CERT and BENCH_TLS_KEY, both then required) and
    /// BENCH_H2C_PORT; unset, empty or 0: that listener is not opened.
    pub fn from_env() -> Result<OwnProtocols, String> {
        Self::from_vars(|name| env::var(name).ok())
    }

    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<OwnProtocols, String> {
        let port = |name: &str| -> Result<Option<u16>, String> {
            match var(name).as_deref().map(str::trim) {
                None | Some("") => Ok(None),
                Some(raw) => match raw.parse::<u16>() {
                    Ok(0) => Ok(None),
                    Ok(port) => Ok(Some(port)),
                    Err(_) => Err(format!("{name}={raw:?} is not a port number")),
                },
            }
        };
        let path = |name: &str| -> Result<PathBuf, String> {
            match var(name) {
                Some(v) if !v.is_empty() => Ok(PathBuf::from(v)),
                _ => Err(format!("BENCH_TLS_PORT is set but {name} is not")),
            }
        };
        let tls = match port("BENCH_TLS_PORT")? {
            None => None,
            Some(port) => Some(TlsListener {
                port,
                cert: path("BENCH_TLS_CERT")?,
                key: path("BENCH_TLS_KEY")?,
            }),
        };
        Ok(OwnProtocols {
            tls,
            h2c_port: port("BENCH_H2C_PORT")?,
        })
    }

    /// Whether no listener is asked for.
    pub fn is_empty(&self) -> bool {
        self.tls.is_none() && self.h2c_port.is_none()
    }

    /// BENCH_TLS_PORT, BENCH_TLS_CERT and BENCH_TLS_KEY, when a TLS listener is asked for.
    pub fn tls(&self) -> Option<(u16, &Path, &Path)> {
        self.tls
            .as_ref()
            .map(|t| (t.port, t.cert.as_path(), t.key.as_path()))
    }

    /// BENCH_H2C_PORT, when an h2c listener is asked for.
    pub fn h2c_port(&self) -> Option<u16> {
        self.h2c_port
    }
}

/// The TLS server configuration: the certificate chain and private key from PEM files,
/// TLS 1.3 only, the one cipher suite TLS13_AES_128_GCM_SHA256 (a CryptoProvider made
/// from ring's default with only that suite; its key exchange groups stay X25519,
/// secp256r1, secp384r1), no client authentication, ALPN `alpn` in that order. Session
/// resumption and everything else: rustls's defaults (see the module's documentation).
pub fn tls_config(cert: &Path, key: &Path, alpn: &[&[u8]]) -> Result<ServerConfig, String> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("BENCH_TLS_CERT {}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!(
            "BENCH_TLS_CERT {}: no certificate in it",
            cert.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("BENCH_TLS_KEY {}: {e}", key.display()))?;
    let provider = CryptoProvider {
        cipher_suites: vec![ring::cipher_suite::TLS13_AES_128_GCM_SHA256],
        ..ring::default_provider()
    };
    let mut config = ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("TLS configuration: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("BENCH_TLS_CERT / BENCH_TLS_KEY: {e}"))?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn from(vars: &[(&str, &str)]) -> Result<OwnProtocols, String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        OwnProtocols::from_vars(|name| vars.get(name).cloned())
    }

    #[test]
    fn no_variables_no_listeners() {
        let own = from(&[]).unwrap();
        assert!(own.is_empty());
        assert!(from(&[("BENCH_TLS_PORT", ""), ("BENCH_H2C_PORT", "0")])
            .unwrap()
            .is_empty());
    }

    #[test]
    fn both_listeners() {
        let own = from(&[
            ("BENCH_TLS_PORT", "8443"),
            ("BENCH_TLS_CERT", "/c.pem"),
            ("BENCH_TLS_KEY", "/k.pem"),
            ("BENCH_H2C_PORT", " 8081 "),
        ])
        .unwrap();
        assert_eq!(
            own.tls,
            Some(TlsListener {
                port: 8443,
                cert: "/c.pem".into(),
                key: "/k.pem".into()
            })
        );
        assert_eq!(own.h2c_port, Some(8081));
    }

    #[test]
    fn a_tls_port_needs_certificate_and_key() {
        let err = from(&[("BENCH_TLS_PORT", "8443"), ("BENCH_TLS_CERT", "/c.pem")]).unwrap_err();
        assert!(err.contains("BENCH_TLS_KEY"), "{err}");
        assert!(from(&[("BENCH_H2C_PORT", "x")]).is_err());
        assert!(from(&[("BENCH_H2C_PORT", "70000")]).is_err());
    }

    #[test]
    fn an_unreadable_certificate_is_an_error_with_its_path() {
        let err = tls_config(
            Path::new("/nonexistent/cert.pem"),
            Path::new("/nonexistent/key.pem"),
            &ALPN,
        )
        .unwrap_err();
        assert!(err.contains("/nonexistent/cert.pem"), "{err}");
    }
}
