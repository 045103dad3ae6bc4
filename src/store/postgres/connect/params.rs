//! A URI's settings as libpq resolves them: the URI's own (its userinfo,
//! hosts, ports, database and query parameters), then libpq's environment
//! variables for what it leaves out, then the password file, then libpq's
//! defaults (and ours: `application_name=etcd-inspector`, a 10 s connect
//! timeout). The TLS parameters `postgres::Config` lacks are taken out of
//! the URI before it parses the rest.

use super::pgpass;
use crate::store::BackendError;
use postgres::config::Host;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// How much of the server's TLS is required and checked: libpq's sslmode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Plain only.
    Disable,
    /// TLS when the server offers it, else plain (libpq's default).
    Prefer,
    /// TLS; the certificate checked only against a root certificate given.
    Require,
    /// TLS; the chain checked against the root certificate, not the name.
    VerifyCa,
    /// TLS; the chain and the host name checked.
    VerifyFull,
}

/// Everything a connection needs.
pub struct Settings {
    pub config: postgres::Config,
    pub ssl_mode: SslMode,
    /// The root certificates (PEM) the server's chain must lead to.
    pub root_cert: Option<PathBuf>,
    /// The client certificate and its key (PEM), when one is given.
    pub client_cert: Option<(PathBuf, PathBuf)>,
}

/// The query parameters taken out of the URI: ours to handle.
const OURS: &[&str] = &["sslmode", "sslrootcert", "sslcert", "sslkey", "passfile"];

/// A URI split into what `postgres::Config` parses and our parameters.
#[derive(Debug, PartialEq, Eq)]
pub struct Split {
    /// The URI without our parameters.
    pub rest: String,
    /// Our parameters, decoded.
    pub ours: Vec<(String, String)>,
    /// Every query parameter's name, decoded.
    pub given: Vec<String>,
}

impl Split {
    fn ours(&self, name: &str) -> Option<&str> {
        self.ours.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn given(&self, name: &str) -> bool {
        self.given.iter().any(|k| k == name)
    }
}

/// Takes our parameters out of `uri`'s query.
pub fn split(uri: &str) -> Split {
    let Some((base, query)) = uri.split_once('?') else {
        return Split {
            rest: uri.to_string(),
            ours: Vec::new(),
            given: Vec::new(),
        };
    };
    let (mut kept, mut ours, mut given) = (Vec::new(), Vec::new(), Vec::new());
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = percent_decode(key);
        if OURS.contains(&key.as_str()) {
            ours.push((key.clone(), percent_decode(value)));
        } else {
            kept.push(pair);
        }
        given.push(key);
    }
    let rest = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Split { rest, ours, given }
}

/// `s` with `%XX` escapes decoded (and `+` kept, as libpq keeps it).
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `uri` with `ports` (PGPORT's) after each host of its authority that
/// names none: libpq takes the environment's port only for those, and
/// `postgres::Config` would give them 5432.
fn with_ports(uri: &str, ports: &[u16]) -> String {
    let Some((scheme, rest)) = uri.split_once("://").filter(|_| !ports.is_empty()) else {
        return uri.to_string();
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => (format!("{userinfo}@"), hosts),
        None => (String::new(), authority),
    };
    if hosts.is_empty() {
        return uri.to_string();
    }
    let hosts: Vec<String> = hosts
        .split(',')
        .enumerate()
        .map(|(i, host)| {
            let name_end = host.rfind(']').unwrap_or(0);
            if host[name_end..].contains(':') {
                host.to_string()
            } else {
                format!("{host}:{}", ports.get(i).unwrap_or(&ports[0]))
            }
        })
        .collect();
    format!("{scheme}://{userinfo}{}{tail}", hosts.join(","))
}

/// `uri`'s settings, with `env` (libpq's environment variables, and
/// `HOME`) filling in what it leaves out.
pub fn resolve(uri: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Settings, BackendError> {
    let split = split(uri);
    let env_ports = match env("PGPORT") {
        Some(ports) => ports
            .split(',')
            .map(|p| {
                p.parse::<u16>()
                    .map_err(|_| format!("PGPORT={ports} is not a port"))
            })
            .collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    let rest = with_ports(&split.rest, &env_ports);
    let mut config = postgres::Config::from_str(&rest).map_err(super::Described)?;
    let param = |name: &str, var: &str| split.ours(name).map(str::to_string).or_else(|| env(var));
    let home = env("HOME").map(PathBuf::from);
    let in_home = |name: &str| {
        home.as_ref()
            .map(|h| h.join(".postgresql").join(name))
            .filter(|p| p.is_file())
    };

    if config.get_hosts().is_empty() {
        match env("PGHOST") {
            Some(hosts) => hosts.split(',').for_each(|h| {
                config.host(h);
            }),
            None => {
                config.host(default_host());
            }
        }
    }
    if config.get_ports().is_empty() {
        for port in &env_ports {
            config.port(*port);
        }
    }
    if config.get_user().is_none() {
        if let Some(user) = env("PGUSER").or_else(|| env("USER")) {
            config.user(&user);
        }
    }
    if config.get_dbname().is_none() {
        if let Some(dbname) = env("PGDATABASE") {
            config.dbname(&dbname);
        }
    }
    if config.get_application_name().is_none() {
        config.application_name(env("PGAPPNAME").as_deref().unwrap_or("etcd-inspector"));
    }
    if !split.given("connect_timeout") {
        let seconds = match env("PGCONNECT_TIMEOUT") {
            Some(s) => s
                .parse::<u64>()
                .map_err(|_| format!("PGCONNECT_TIMEOUT={s} is not a number of seconds"))?,
            None => 10,
        };
        // As libpq: 0 waits for ever.
        if seconds > 0 {
            config.connect_timeout(Duration::from_secs(seconds));
        }
    }
    if config.get_password().is_none() {
        if let Some(password) = env("PGPASSWORD") {
            config.password(password);
        } else if let Some(file) = param("passfile", "PGPASSFILE")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".pgpass")))
        {
            if let Some(password) = from_pgpass(&config, &file) {
                config.password(password);
            }
        }
    }

    let ssl_mode = match param("sslmode", "PGSSLMODE").as_deref().unwrap_or("prefer") {
        "disable" => SslMode::Disable,
        "prefer" => SslMode::Prefer,
        "require" => SslMode::Require,
        "verify-ca" => SslMode::VerifyCa,
        "verify-full" => SslMode::VerifyFull,
        "allow" => return Err("sslmode=allow is not supported: use disable or prefer".into()),
        other => return Err(format!("invalid sslmode {other:?}").into()),
    };
    let root_cert = param("sslrootcert", "PGSSLROOTCERT")
        .map(PathBuf::from)
        .or_else(|| in_home("root.crt"));
    let client_cert = match (param("sslcert", "PGSSLCERT"), param("sslkey", "PGSSLKEY")) {
        (Some(cert), Some(key)) => Some((cert.into(), key.into())),
        (Some(cert), None) => Some((
            cert.into(),
            in_home("postgresql.key").ok_or("sslcert is given without sslkey")?,
        )),
        (None, Some(_)) => return Err("sslkey is given without sslcert".into()),
        (None, None) => in_home("postgresql.crt").zip(in_home("postgresql.key")),
    };
    Ok(Settings {
        config,
        ssl_mode,
        root_cert,
        client_cert,
    })
}

/// Where libpq connects without a host: Debian's socket directory when it
/// exists, else localhost.
fn default_host() -> &'static str {
    const SOCKETS: &str = "/var/run/postgresql";
    if std::path::Path::new(SOCKETS).is_dir() {
        SOCKETS
    } else {
        "localhost"
    }
}

/// The password `file` holds for the first host (`localhost` for a
/// socket, as libpq), its port, the database (the user's name when none is
/// given) and the user.
fn from_pgpass(config: &postgres::Config, file: &std::path::Path) -> Option<String> {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.as_str(),
        _ => "localhost",
    };
    let port = config.get_ports().first().copied().unwrap_or(5432).to_string();
    let user = config.get_user().unwrap_or_default();
    let target = pgpass::Target {
        host,
        port: &port,
        database: config.get_dbname().unwrap_or(user),
        user,
    };
    pgpass::lookup(file, &target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// `uri` resolved with only `vars` set.
    fn resolved(uri: &str, vars: &[(&str, &str)]) -> Settings {
        let vars: HashMap<String, String> =
            vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        resolve(uri, &|name| vars.get(name).cloned()).unwrap()
    }

    fn hosts(config: &postgres::Config) -> Vec<String> {
        config
            .get_hosts()
            .iter()
            .map(|h| match h {
                Host::Tcp(h) => h.clone(),
                Host::Unix(p) => p.display().to_string(),
            })
            .collect()
    }

    #[test]
    fn our_parameters_leave_the_uri_and_the_rest_stay_as_written() {
        let s = split(
            "postgresql://u@h/db?sslmode=verify-full&application_name=a%20b&sslrootcert=%2Ftmp%2Fca.pem",
        );
        assert_eq!(s.rest, "postgresql://u@h/db?application_name=a%20b");
        assert_eq!(
            s.ours,
            [
                ("sslmode".to_string(), "verify-full".to_string()),
                ("sslrootcert".to_string(), "/tmp/ca.pem".to_string())
            ]
        );
        assert_eq!(s.given, ["sslmode", "application_name", "sslrootcert"]);
        assert_eq!(split("postgres://h/db?sslmode=disable").rest, "postgres://h/db");
        assert_eq!(split("postgres://h/db").rest, "postgres://h/db");
    }

    #[test]
    fn percent_escapes_decode_and_a_stray_percent_stays() {
        assert_eq!(percent_decode("p%40ss%3Aw%2Frd"), "p@ss:w/rd");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz+"), "%zz+");
    }

    #[test]
    fn the_uri_gives_everything_it_names() {
        let s = resolved(
            "postgresql://fleet:p%40ss@db.example.com:6432/history?sslmode=verify-full&sslrootcert=/ca.pem&application_name=mine&connect_timeout=0",
            &[("PGHOST", "other"), ("PGUSER", "other"), ("PGPASSWORD", "other"), ("PGSSLMODE", "disable")],
        );
        assert_eq!(hosts(&s.config), ["db.example.com"]);
        assert_eq!(s.config.get_ports(), [6432]);
        assert_eq!(s.config.get_user(), Some("fleet"));
        assert_eq!(s.config.get_password(), Some(&b"p@ss"[..]));
        assert_eq!(s.config.get_dbname(), Some("history"));
        assert_eq!(s.config.get_application_name(), Some("mine"));
        assert_eq!(s.config.get_connect_timeout(), None, "0 waits for ever");
        assert_eq!(s.ssl_mode, SslMode::VerifyFull);
        assert_eq!(s.root_cert, Some(PathBuf::from("/ca.pem")));
        assert_eq!(s.client_cert, None);
    }

    #[test]
    fn ipv6_hosts_and_several_hosts() {
        let s = resolved("postgresql://u@[::1]:5433,db2:5434/d", &[]);
        assert_eq!(hosts(&s.config), ["::1", "db2"]);
        assert_eq!(s.config.get_ports(), [5433, 5434]);
    }

    #[test]
    fn pgport_is_the_port_of_hosts_that_name_none() {
        let s = resolved("postgresql://u:p@a,b:5433,[::1]/d", &[("PGPORT", "6432")]);
        assert_eq!(hosts(&s.config), ["a", "b", "::1"]);
        assert_eq!(s.config.get_ports(), [6432, 5433, 6432]);
        let s = resolved("postgresql:///d?host=h", &[("PGPORT", "6432")]);
        assert_eq!(s.config.get_ports(), [6432]);
        assert_eq!(resolved("postgresql://h/d", &[]).config.get_ports(), [5432]);
    }

    #[test]
    fn the_environment_fills_in_what_the_uri_leaves_out() {
        let s = resolved(
            "postgresql://",
            &[
                ("PGHOST", "db.example.com"),
                ("PGPORT", "6432"),
                ("PGUSER", "fleet"),
                ("PGPASSWORD", "secret"),
                ("PGDATABASE", "history"),
                ("PGAPPNAME", "cron"),
                ("PGCONNECT_TIMEOUT", "3"),
                ("PGSSLMODE", "verify-ca"),
                ("PGSSLROOTCERT", "/ca.pem"),
                ("PGSSLCERT", "/client.pem"),
                ("PGSSLKEY", "/client.key"),
            ],
        );
        assert_eq!(hosts(&s.config), ["db.example.com"]);
        assert_eq!(s.config.get_ports(), [6432]);
        assert_eq!(s.config.get_user(), Some("fleet"));
        assert_eq!(s.config.get_password(), Some(&b"secret"[..]));
        assert_eq!(s.config.get_dbname(), Some("history"));
        assert_eq!(s.config.get_application_name(), Some("cron"));
        assert_eq!(s.config.get_connect_timeout(), Some(&Duration::from_secs(3)));
        assert_eq!(s.ssl_mode, SslMode::VerifyCa);
        assert_eq!(s.root_cert, Some(PathBuf::from("/ca.pem")));
        assert_eq!(
            s.client_cert,
            Some((PathBuf::from("/client.pem"), PathBuf::from("/client.key")))
        );
    }

    #[test]
    fn the_defaults_are_libpq_s_and_ours() {
        let s = resolved("postgres://h", &[("USER", "me")]);
        assert_eq!(s.config.get_user(), Some("me"));
        assert_eq!(s.config.get_application_name(), Some("etcd-inspector"));
        assert_eq!(s.config.get_connect_timeout(), Some(&Duration::from_secs(10)));
        assert_eq!(s.ssl_mode, SslMode::Prefer);
        assert_eq!(s.config.get_password(), None);
    }

    #[test]
    fn the_password_file_answers_when_nothing_else_does() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let write = |path: &std::path::Path, text: &str| {
            std::fs::write(path, text).unwrap();
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
        };
        write(
            &home.path().join(".pgpass"),
            "h:5432:u:u:from-home\nh:*:d:u:home-d\n",
        );
        let named = home.path().join("named");
        write(&named, "h:5432:*:u:from-named\n");
        let home_var = ("HOME", home.path().to_str().unwrap());
        // The database defaults to the user's name.
        let s = resolved("postgresql://u@h", &[home_var]);
        assert_eq!(s.config.get_password(), Some(&b"from-home"[..]));
        let s = resolved("postgresql://u@h:7/d", &[home_var]);
        assert_eq!(s.config.get_password(), Some(&b"home-d"[..]));
        let s = resolved(
            "postgresql://u@h/d",
            &[home_var, ("PGPASSFILE", named.to_str().unwrap())],
        );
        assert_eq!(s.config.get_password(), Some(&b"from-named"[..]));
        let passfile = format!("postgresql://u@h/d?passfile={}", named.display());
        assert_eq!(
            resolved(&passfile, &[]).config.get_password(),
            Some(&b"from-named"[..])
        );
        let s = resolved("postgresql://u@h/d", &[home_var, ("PGPASSWORD", "from-env")]);
        assert_eq!(s.config.get_password(), Some(&b"from-env"[..]));
        let s = resolved("postgresql://u:given@h/d", &[home_var]);
        assert_eq!(s.config.get_password(), Some(&b"given"[..]));
    }

    #[test]
    fn bad_values_are_refused() {
        let fails = |uri: &str, vars: &[(&str, &str)]| {
            let vars: HashMap<String, String> =
                vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            resolve(uri, &|name| vars.get(name).cloned())
                .err()
                .unwrap_or_else(|| panic!("{uri} resolved"))
                .to_string()
        };
        assert_eq!(
            fails("postgresql://h?sslmode=sometimes", &[]),
            "invalid sslmode \"sometimes\""
        );
        assert!(fails("postgresql://h", &[("PGSSLMODE", "allow")]).contains("not supported"));
        assert_eq!(
            fails("postgresql://h", &[("PGPORT", "x")]),
            "PGPORT=x is not a port"
        );
        assert_eq!(
            fails("postgresql://h?sslkey=/k", &[]),
            "sslkey is given without sslcert"
        );
    }
}
