//! From a `--db` URI to a connection: the URI as libpq reads it (its
//! environment variables and password file filling in what the URI leaves
//! out, TLS as its sslmode asks), and the URI as messages show it (never
//! with its password).

mod params;
mod pgpass;
mod tls;

use crate::store::{BackendError, StoreError};
use params::{Settings, SslMode};
use postgres::config::Host;
use postgres::{Client, NoTls};
use std::path::PathBuf;
use tokio_postgres_rustls::MakeRustlsConnect;

/// A postgres error with the server's own words, one line.
#[derive(Debug)]
pub struct Described(pub postgres::Error);

impl std::fmt::Display for Described {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.as_db_error() {
            Some(db) => {
                write!(f, "{}: {}", db.severity(), db.message())?;
                if let Some(detail) = db.detail() {
                    write!(f, " ({detail})")?;
                }
                Ok(())
            }
            None => {
                write!(f, "{}", self.0)?;
                let mut source = std::error::Error::source(&self.0);
                while let Some(s) = source {
                    write!(f, ": {s}")?;
                    source = s.source();
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for Described {}

/// `uri` without its password (in its userinfo or a `password` query
/// parameter), as messages and `runs` show it.
pub fn redacted(uri: &str) -> String {
    let Some((scheme, rest)) = uri.split_once("://") else {
        return uri.to_string();
    };
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (rest, None),
    };
    // The last `@` ends the userinfo: a password may hold `@` or `/`
    // unencoded, a host never.
    let rest = match rest.rsplit_once('@') {
        Some((userinfo, hosts)) => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{user}@{hosts}")
        }
        None => rest.to_string(),
    };
    let query = query.map(|q| {
        q.split('&')
            .filter(|pair| params::percent_decode(pair.split('=').next().unwrap_or_default()) != "password")
            .collect::<Vec<_>>()
            .join("&")
    });
    match query {
        Some(q) if !q.is_empty() => format!("{scheme}://{rest}?{q}"),
        _ => format!("{scheme}://{rest}"),
    }
}

/// Connects to the database `uri` names; the connection and how messages
/// name it.
pub fn connect(uri: &str) -> Result<(Client, String), StoreError> {
    let shown = redacted(uri);
    let failed = |source: BackendError| StoreError::Backend {
        path: PathBuf::from(&shown),
        source,
    };
    let settings = params::resolve(uri, &|name| std::env::var(name).ok()).map_err(failed)?;
    let client = open(settings).map_err(failed)?;
    Ok((client, shown))
}

/// Connects with `settings`, over TLS as their sslmode asks.
fn open(mut settings: Settings) -> Result<Client, BackendError> {
    use postgres::config::SslMode as Mode;
    // PostgreSQL has no TLS over Unix sockets; libpq then connects plain.
    let tcp = settings
        .config
        .get_hosts()
        .iter()
        .any(|h| matches!(h, Host::Tcp(_)));
    let mode = if tcp { settings.ssl_mode } else { SslMode::Disable };
    let config = &mut settings.config;
    match mode {
        SslMode::Disable => return Ok(config.ssl_mode(Mode::Disable).connect(NoTls).map_err(Described)?),
        SslMode::Prefer => config.ssl_mode(Mode::Prefer),
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => config.ssl_mode(Mode::Require),
    };
    let tls = tls::client_config(mode, settings.root_cert.as_deref(), settings.client_cert.as_ref())?;
    Ok(config.connect(MakeRustlsConnect::new(tls)).map_err(Described)?)
}

#[cfg(test)]
mod tests {
    use super::redacted;

    #[test]
    fn a_uri_is_shown_without_its_password() {
        for (uri, shown) in [
            ("postgresql://u:secret@h:5432/db", "postgresql://u@h:5432/db"),
            ("postgres://u@h/db", "postgres://u@h/db"),
            ("postgresql://h/db", "postgresql://h/db"),
            ("postgresql://u:p%40ss%3Aw@h/db", "postgresql://u@h/db"),
            ("postgresql://u:p@ss/w@h/db", "postgresql://u@h/db"),
            (
                "postgresql://u:secret@[::1]:5432/db",
                "postgresql://u@[::1]:5432/db",
            ),
            (
                "postgresql://[::1]/db?sslmode=require",
                "postgresql://[::1]/db?sslmode=require",
            ),
            (
                "postgresql://u@h/db?password=secret&sslmode=require",
                "postgresql://u@h/db?sslmode=require",
            ),
            ("postgresql://h/db?pass%77ord=secret", "postgresql://h/db"),
            ("/var/lib/db.sqlite", "/var/lib/db.sqlite"),
        ] {
            assert_eq!(redacted(uri), shown, "{uri}");
        }
    }
}
