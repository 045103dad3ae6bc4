//! The PostgreSQL backend's connection, against a real server whatever
//! `ETCD_INSPECTOR_TEST_BACKEND` says: how a URI is refused, in one line
//! naming the server and never showing its password, and TLS as sslmode
//! asks.

use crate::util::etcd::{free_port, Tls};
use crate::util::postgres::{self, give, TestPostgres, PASSWORD, PASSWORD_ENCODED, USER};
use crate::util::{inspector, one_line_error};
use etcd_inspector::store::postgres::connect::connect;
use std::path::Path;
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

/// A server serving TLS with a certificate for 127.0.0.1 from `tls.ca`.
fn tls_server(certs: &Path) -> Option<(TestPostgres, Tls)> {
    use std::os::unix::fs::PermissionsExt;
    let tls = Tls::generate(certs);
    // The server reads them as its own user, and its key must be private.
    for path in [certs, &tls.server_cert, &tls.server_key] {
        give(path);
    }
    std::fs::set_permissions(&tls.server_key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let server = TestPostgres::start(&[
        ("ssl", "on"),
        ("ssl_cert_file", tls.server_cert.to_str().unwrap()),
        ("ssl_key_file", tls.server_key.to_str().unwrap()),
    ])?;
    Some((server, tls))
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
    let Some((server, tls)) = tls_server(certs.path()) else {
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
