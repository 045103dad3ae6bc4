//! From a `--db` URI to a connection: the URI as libpq reads it, and the
//! URI as messages show it (never with its password).

use crate::store::StoreError;
use postgres::{Client, NoTls};
use std::path::PathBuf;
use std::str::FromStr;

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

/// `uri` without its password, as messages and `runs` show it.
pub fn redacted(uri: &str) -> String {
    let Some((scheme, rest)) = uri.split_once("://") else {
        return uri.to_string();
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}@{host}{tail}")
        }
        None => uri.to_string(),
    }
}

/// Connects to the database `uri` names; the connection and how messages
/// name it.
pub fn connect(uri: &str) -> Result<(Client, String), StoreError> {
    let shown = redacted(uri);
    let config = postgres::Config::from_str(uri).map_err(|e| StoreError::Backend {
        path: PathBuf::from(&shown),
        source: Box::new(Described(e)),
    })?;
    let client = config.connect(NoTls).map_err(|e| StoreError::Backend {
        path: PathBuf::from(&shown),
        source: Box::new(Described(e)),
    })?;
    Ok((client, shown))
}
