//! The KMS plugin client against a fake plugin on a real unix socket.

use crate::util::encrypt::{kms_wrap, EncryptedObject};
use crate::util::kms_plugin::{FakeKms, FakeVersion};
use etcd_inspector::decrypt::config::{KmsProvider, KmsVersion};
use etcd_inspector::decrypt::kms::{parse_encrypted_object, KmsClient, KmsStatus};
use prost::Message;
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

fn client(version: KmsVersion, socket: &Path, timeout: Duration) -> KmsClient {
    KmsClient::new(KmsProvider {
        version,
        name: "myplugin".into(),
        socket: socket.to_path_buf(),
        timeout,
    })
}

/// A started fake and a client of it, the fake's folder kept alive.
fn fake(version: FakeVersion) -> (tempfile::TempDir, FakeKms, KmsClient) {
    let dir = tempfile::tempdir().unwrap();
    let kms = FakeKms::start(dir.path(), version, "key-1");
    let v = match version {
        FakeVersion::V1 => KmsVersion::V1,
        FakeVersion::V2 => KmsVersion::V2,
    };
    let client = client(v, &kms.socket, Duration::from_secs(10));
    (dir, kms, client)
}

fn prefix(kms: &FakeKms) -> String {
    format!("KMS provider \"myplugin\" at {}: ", kms.socket.display())
}

#[test]
fn status_v2() {
    let (_dir, _kms, client) = fake(FakeVersion::V2);
    let status = client.status().unwrap();
    let expected = KmsStatus {
        version: "v2".into(),
        healthz: "ok".into(),
        key_id: "key-1".into(),
    };
    assert_eq!(status, expected);
}

#[test]
fn status_v1_is_the_version_answer() {
    let (_dir, _kms, client) = fake(FakeVersion::V1);
    let status = client.status().unwrap();
    let expected = KmsStatus {
        version: "v1beta1".into(),
        healthz: "ok".into(),
        key_id: String::new(),
    };
    assert_eq!(status, expected);
}

#[test]
fn unhealthy_status_is_refused() {
    let (_dir, kms, client) = fake(FakeVersion::V2);
    kms.set_healthz("bad");
    let err = client.status().unwrap_err().to_string();
    assert_eq!(err, format!("{}Status says healthz \"bad\"", prefix(&kms)));
}

#[test]
fn decrypt_v2_returns_the_plaintext_and_sends_key_id_and_annotations() {
    let (_dir, kms, client) = fake(FakeVersion::V2);
    let annotations = HashMap::from([("a.example.com".to_string(), b"x".to_vec())]);
    let plain = client
        .decrypt(
            &kms_wrap(b"a 32-byte data encryption key!!!"),
            "key-1",
            &annotations,
        )
        .unwrap();
    assert_eq!(plain.as_slice(), b"a 32-byte data encryption key!!!");
    let seen = kms.decrypts_seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].key_id, "key-1");
    assert_eq!(seen[0].annotations, annotations);
    assert!(!seen[0].uid.is_empty());
}

#[test]
fn decrypt_v1() {
    let (_dir, kms, client) = fake(FakeVersion::V1);
    let plain = client
        .decrypt(&kms_wrap(b"old dek"), "", &HashMap::new())
        .unwrap();
    assert_eq!(plain.as_slice(), b"old dek");
    assert_eq!(kms.decrypt_calls(), 1);
}

#[test]
fn decrypt_answers_are_cached_by_ciphertext() {
    let (_dir, kms, client) = fake(FakeVersion::V2);
    let none = HashMap::new();
    let first = client.decrypt(&kms_wrap(b"dek one"), "key-1", &none).unwrap();
    let again = client.decrypt(&kms_wrap(b"dek one"), "key-1", &none).unwrap();
    assert_eq!(first, again);
    assert_eq!(kms.decrypt_calls(), 1);
    let other = client.decrypt(&kms_wrap(b"dek two"), "key-1", &none).unwrap();
    assert_eq!(other.as_slice(), b"dek two");
    assert_eq!(kms.decrypt_calls(), 2);
}

#[test]
fn refused_decrypt_is_one_line_naming_the_provider_and_is_not_asked_again() {
    let (_dir, kms, client) = fake(FakeVersion::V2);
    let bad = b"%% not base64 %%".to_vec();
    let err = client
        .decrypt(&bad, "key-1", &HashMap::new())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!("{}Decrypt refused: ", prefix(&kms))),
        "{err}"
    );
    assert!(err.contains("ciphertext is not base64"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    let again = client
        .decrypt(&bad, "key-1", &HashMap::new())
        .unwrap_err()
        .to_string();
    assert!(again.starts_with(&err), "{again}");
    assert!(again.contains("not asked for again"), "{again}");
    assert_eq!(again.lines().count(), 1, "{again}");
    assert_eq!(kms.decrypt_calls(), 1);
}

#[test]
fn missing_socket_cannot_connect_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("absent.sock");
    let client = client(KmsVersion::V2, &socket, Duration::from_secs(30));
    let started = Instant::now();
    let err = client.status().unwrap_err().to_string();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    let expected = format!(
        "KMS provider \"myplugin\" at {}: cannot connect: ",
        socket.display()
    );
    assert!(err.starts_with(&expected), "{err}");
    assert!(err.contains("No such file or directory"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn silent_plugin_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let kms = FakeKms::start_silent(dir.path());
    let client = client(KmsVersion::V2, &kms.socket, Duration::from_millis(300));
    let err = client.status().unwrap_err().to_string();
    assert_eq!(err, format!("{}no answer within 300ms", prefix(&kms)));
    let err = client
        .decrypt(&kms_wrap(b"dek"), "key-1", &HashMap::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("no answer within 300ms"), "{err}");
    assert_eq!(kms.decrypt_calls(), 0);
}

#[test]
fn calls_from_eight_threads_at_once_all_succeed() {
    let (_dir, kms, client) = fake(FakeVersion::V2);
    let none = HashMap::new();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (client, none) = (&client, &none);
                scope.spawn(move || {
                    let dek = format!("dek {}", i % 4);
                    let plain = client.decrypt(&kms_wrap(dek.as_bytes()), "key-1", none);
                    assert_eq!(plain.unwrap().as_slice(), dek.as_bytes());
                    client.status().unwrap();
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
    });
    // Askers of the same ciphertext wait for one answer.
    assert_eq!(kms.decrypt_calls(), 4);
}

#[tokio::test]
async fn blocking_calls_work_inside_a_current_thread_runtime() {
    let (_dir, _kms, client) = fake(FakeVersion::V2);
    assert_eq!(client.status().unwrap().key_id, "key-1");
    let plain = client
        .decrypt(&kms_wrap(b"dek"), "key-1", &HashMap::new())
        .unwrap();
    assert_eq!(plain.as_slice(), b"dek");
    drop(client);
}

#[test]
fn parses_an_encrypted_object() {
    let object = EncryptedObject {
        encrypted_data: b"sealed".to_vec(),
        key_id: "key-1".into(),
        encrypted_dek_source: kms_wrap(b"seed"),
        annotations: HashMap::from([("k".to_string(), b"v".to_vec())]),
        encrypted_dek_source_type: 1,
    };
    let parsed = parse_encrypted_object(&object.encode_to_vec()).unwrap();
    assert_eq!(parsed.encrypted_data, b"sealed");
    assert_eq!(parsed.key_id, "key-1");
    assert_eq!(parsed.encrypted_dek_source, kms_wrap(b"seed"));
    assert_eq!(parsed.annotations, object.annotations);
    assert_eq!(parsed.encrypted_dek_source_type, 1);
}

#[test]
fn refuses_garbage_and_incomplete_encrypted_objects() {
    let err = parse_encrypted_object(b"not a protobuf at all").unwrap_err();
    assert!(err.starts_with("not a KMS v2 EncryptedObject: "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    let full = EncryptedObject {
        encrypted_data: b"sealed".to_vec(),
        key_id: "key-1".into(),
        encrypted_dek_source: kms_wrap(b"dek"),
        annotations: HashMap::new(),
        encrypted_dek_source_type: 0,
    };
    type Emptier = fn(&mut EncryptedObject);
    let cases: [(&str, Emptier); 3] = [
        ("encryptedData", |o| o.encrypted_data.clear()),
        ("keyID", |o| o.key_id.clear()),
        ("encryptedDEKSource", |o| o.encrypted_dek_source.clear()),
    ];
    for (field, empty) in cases {
        let mut object = full.clone();
        empty(&mut object);
        let err = parse_encrypted_object(&object.encode_to_vec()).unwrap_err();
        assert_eq!(err, format!("the KMS v2 EncryptedObject has no {field}"));
    }
    assert!(parse_encrypted_object(&full.encode_to_vec()).is_ok());
}

#[test]
fn a_plugin_gone_after_a_first_call_cannot_be_reached() {
    let (_dir, kms, client) = fake(FakeVersion::V2);
    client.status().unwrap();
    let expected = format!("{}cannot connect: ", prefix(&kms));
    drop(kms);
    let err = client
        .decrypt(&kms_wrap(b"dek"), "key-1", &HashMap::new())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with(&expected), "{err}");
}
