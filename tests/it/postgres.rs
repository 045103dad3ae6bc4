//! The PostgreSQL backend's connection, against a real server whatever
//! `ETCD_INSPECTOR_TEST_BACKEND` says: how a URI is refused, in one line
//! naming the server and never showing its password.

use crate::util::etcd::free_port;
use crate::util::postgres::{self, PASSWORD, PASSWORD_ENCODED, USER};
use crate::util::{inspector, one_line_error};
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
