//! The PostgreSQL backend's connection, against a real server whatever
//! `ETCD_INSPECTOR_TEST_BACKEND` says: how a URI is refused, in one line
//! naming the server and never showing its password, and TLS as sslmode
//! asks.

use crate::util::etcd::{free_port, Tls};
use crate::util::postgres::{self, give, TestPostgres, PASSWORD, PASSWORD_ENCODED, USER};
use crate::util::{inspector, one_line_error};
use etcd_inspector::store::postgres::connect::connect;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Asserts that neither `password` nor its URI form is in the output.
fn assert_hidden(out: &Output, password: &str, encoded: &str) {
    for stream in [&out.stdout, &out.stderr] {
        let text = String::from_utf8_lossy(stream);
        assert!(
            !text.contains(password) && !text.contains(encoded),
            "the password is in the output: {text}"
        );
    }
}

#[test]
fn a_fresh_database_holds_no_data_and_its_password_stays_hidden() {
    let Some(uri) = postgres::database() else { return };
    let out = inspector(Path::new(&uri), &["runs"]);
    let err = one_line_error(&out);
    assert!(err.contains("holds no etcd-inspector data"), "{err}");
    assert!(err.contains(&format!("postgresql://{USER}@127.0.0.1:")), "{err}");
    assert_hidden(&out, PASSWORD, PASSWORD_ENCODED);
}

#[test]
fn a_wrong_password_is_one_line_naming_the_server() {
    let Some(server) = postgres::shared() else { return };
    let wrong = "Wr0ng@secret";
    let uri = format!(
        "postgresql://{USER}:Wr0ng%40secret@127.0.0.1:{}/postgres",
        server.port
    );
    let out = inspector(Path::new(&uri), &["runs"]);
    let err = one_line_error(&out);
    assert!(
        err.contains(&format!("postgresql://{USER}@127.0.0.1:{}/postgres", server.port)),
        "{err}"
    );
    assert!(err.contains("password authentication failed"), "{err}");
    assert_hidden(&out, wrong, "Wr0ng%40secret");
}

#[test]
fn an_unreachable_server_is_one_line_naming_it() {
    let port = free_port();
    let uri = format!("postgresql://{USER}:{PASSWORD_ENCODED}@127.0.0.1:{port}/postgres");
    let out = inspector(Path::new(&uri), &["runs"]);
    let err = one_line_error(&out);
    assert!(
        err.contains(&format!("postgresql://{USER}@127.0.0.1:{port}/postgres")),
        "{err}"
    );
    assert_hidden(&out, PASSWORD, PASSWORD_ENCODED);
}

#[test]
fn another_application_s_schema_is_refused() {
    let Some(server) = postgres::shared() else { return };
    let uri = server.create_database();
    let dbname = uri.rsplit('/').next().unwrap();
    server
        .client(dbname)
        .batch_execute("CREATE SCHEMA etcd_inspector; CREATE TABLE etcd_inspector.x (i int)")
        .unwrap();
    for args in [
        &["runs"][..],
        &["snapshot", "--endpoints", &crate::util::closed_endpoint()],
    ] {
        let out = inspector(Path::new(&uri), args);
        let err = one_line_error(&out);
        assert!(err.contains("another application's"), "{args:?}: {err}");
        assert_hidden(&out, PASSWORD, PASSWORD_ENCODED);
    }
}

/// A server serving TLS with `cert` and `key` (in `certs`), and `extra`
/// settings.
fn tls_server(certs: &Path, cert: &Path, key: &Path, extra: &[(&str, &str)]) -> Option<TestPostgres> {
    use std::os::unix::fs::PermissionsExt;
    // The server reads them as its own user, and its key must be private.
    for path in [certs, cert, key] {
        give(path);
    }
    std::fs::set_permissions(key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut settings = vec![
        ("ssl", "on"),
        ("ssl_cert_file", cert.to_str().unwrap()),
        ("ssl_key_file", key.to_str().unwrap()),
    ];
    settings.extend_from_slice(extra);
    TestPostgres::start(&settings)
}

/// Whether the connection to `uri` is encrypted, as the server sees it.
fn encrypted(uri: &str) -> bool {
    let (mut client, _) = connect(uri).unwrap();
    client
        .query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[])
        .unwrap()
        .get(0)
}

#[test]
fn tls_is_used_and_checked_as_sslmode_asks() {
    let certs = tempfile::tempdir().unwrap();
    let tls = Tls::generate(certs.path());
    let Some(server) = tls_server(certs.path(), &tls.server_cert, &tls.server_key, &[]) else {
        return;
    };
    let uri = |query: &str| format!("{}?{query}", server.uri("postgres"));
    let ca = format!("sslrootcert={}", tls.ca.display());
    let other_ca = format!("sslrootcert={}", tls.other_ca.display());

    assert!(encrypted(&uri(&format!("sslmode=verify-full&{ca}"))));
    assert!(encrypted(&uri(&format!("sslmode=verify-ca&{ca}"))));
    // Without a root certificate: encrypted, not checked (libpq's require).
    assert!(encrypted(&uri("sslmode=require")));
    assert!(
        encrypted(&server.uri("postgres")),
        "prefer, the default, takes TLS"
    );
    assert!(!encrypted(&uri("sslmode=disable")));

    // Through the CLI: verified, then our own refusal of an empty database.
    let out = inspector(Path::new(&uri(&format!("sslmode=verify-full&{ca}"))), &["runs"]);
    let err = one_line_error(&out);
    assert!(err.contains("holds no etcd-inspector data"), "{err}");

    // Another CA's root: refused in one line naming the server.
    for mode in ["verify-full", "verify-ca", "require"] {
        let out = inspector(Path::new(&uri(&format!("sslmode={mode}&{other_ca}"))), &["runs"]);
        let err = one_line_error(&out);
        assert!(
            err.contains(&format!("postgresql://{USER}@127.0.0.1:{}/postgres", server.port))
                && err.contains("invalid peer certificate"),
            "{mode}: {err}"
        );
        assert_hidden(&out, PASSWORD, PASSWORD_ENCODED);
    }
    let err = one_line_error(&inspector(Path::new(&uri("sslmode=verify-full")), &["runs"]));
    assert!(err.contains("needs a root certificate"), "{err}");
}

#[test]
fn require_refuses_a_server_without_tls() {
    let Some(server) = postgres::shared() else { return };
    let uri = format!("{}?sslmode=require", server.uri("postgres"));
    let err = one_line_error(&inspector(Path::new(&uri), &["runs"]));
    assert!(err.contains("server does not support TLS"), "{err}");
    let prefer = format!("{}?sslmode=prefer", server.uri("postgres"));
    assert!(!encrypted(&prefer), "prefer falls back to plain");
}

/// A CA and what it signed, as PEM files.
struct Certificates {
    ca: PathBuf,
    server_cert: PathBuf,
    server_key: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
}

/// A CA, a server certificate for `name` only and a client certificate,
/// written into `dir`; each with its own subject, as OpenSSL (the server's
/// side) needs to tell a certificate from its issuer.
fn certificates(dir: &Path, name: &str) -> Certificates {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let params = |names: Vec<String>, subject: &str| {
        let mut p = CertificateParams::new(names).unwrap();
        p.distinguished_name.push(DnType::CommonName, subject);
        p
    };
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = params(Vec::new(), "etcd-inspector test CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let write = |file: &str, pem: String| {
        let path = dir.join(file);
        std::fs::write(&path, pem).unwrap();
        path
    };
    let server_key = KeyPair::generate().unwrap();
    let server = params(vec![name.to_string()], name)
        .signed_by(&server_key, &issuer)
        .unwrap();
    let client_key = KeyPair::generate().unwrap();
    let client = params(Vec::new(), USER).signed_by(&client_key, &issuer).unwrap();
    Certificates {
        ca: write("ca.crt", ca.pem()),
        server_cert: write("server.crt", server.pem()),
        server_key: write("server.key", server_key.serialize_pem()),
        client_cert: write("client.crt", client.pem()),
        client_key: write("client.key", client_key.serialize_pem()),
    }
}

#[test]
fn verify_ca_checks_the_chain_and_verify_full_the_name_too() {
    let certs = tempfile::tempdir().unwrap();
    let tls = certificates(certs.path(), "db.elsewhere.example");
    let Some(server) = tls_server(certs.path(), &tls.server_cert, &tls.server_key, &[]) else {
        return;
    };
    let uri = |mode: &str| {
        format!(
            "{}?sslmode={mode}&sslrootcert={}",
            server.uri("postgres"),
            tls.ca.display()
        )
    };
    assert!(
        encrypted(&uri("verify-ca")),
        "the chain is good; the name is not checked"
    );
    let err = one_line_error(&inspector(Path::new(&uri("verify-full")), &["runs"]));
    assert!(
        err.contains("invalid peer certificate") && err.contains(&format!("127.0.0.1:{}", server.port)),
        "{err}"
    );
}

#[test]
fn a_client_certificate_is_presented_when_given() {
    let certs = tempfile::tempdir().unwrap();
    let tls = certificates(certs.path(), "127.0.0.1");
    // TLS only, and only with a certificate from the CA.
    let hba = certs.path().join("pg_hba.conf");
    std::fs::write(
        &hba,
        "hostssl all all 127.0.0.1/32 scram-sha-256 clientcert=verify-ca\n\
         host all all 127.0.0.1/32 reject\n",
    )
    .unwrap();
    give(&hba);
    give(&tls.ca);
    let Some(server) = tls_server(
        certs.path(),
        &tls.server_cert,
        &tls.server_key,
        &[
            ("ssl_ca_file", tls.ca.to_str().unwrap()),
            ("hba_file", hba.to_str().unwrap()),
        ],
    ) else {
        return;
    };
    let base = format!(
        "{}?sslmode=verify-full&sslrootcert={}",
        server.uri("postgres"),
        tls.ca.display()
    );
    let with_cert = format!(
        "{base}&sslcert={}&sslkey={}",
        tls.client_cert.display(),
        tls.client_key.display()
    );
    assert!(encrypted(&with_cert));
    let out = inspector(Path::new(&base), &["runs"]);
    let err = one_line_error(&out);
    assert!(err.contains(&format!("127.0.0.1:{}", server.port)), "{err}");
    assert_hidden(&out, PASSWORD, PASSWORD_ENCODED);
}
