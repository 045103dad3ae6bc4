//! Values encrypted at rest, decrypted with the cluster's
//! EncryptionConfiguration: every local provider against a real etcd, key
//! rotation, the encryption-at-rest detector, bad keys and values, and no
//! plaintext kept.

use crate::util::encrypt::{aescbc, aesgcm, random, secretbox};
use crate::util::etcd::TestEtcd;
use crate::util::k8s::{config_map, secret};
use crate::util::*;
use base64::Engine;
use std::path::{Path, PathBuf};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The keys a test cluster's config holds.
struct Keys {
    gcm: Vec<u8>,
    cbc: Vec<u8>,
    sbox: Vec<u8>,
}

impl Keys {
    fn new() -> Keys {
        Keys {
            gcm: random(32),
            cbc: random(16),
            sbox: random(32),
        }
    }

    /// Secrets are written with aesgcm (a key name with a colon in it) and
    /// read with aescbc, secretbox and identity too; ConfigMaps with aescbc.
    fn config(&self, dir: &Path) -> PathBuf {
        write_config(
            dir,
            "encryption.yaml",
            &format!(
                "  - resources: [secrets]
    providers:
      - aesgcm:
          keys: [{{name: 'key:gcm', secret: '{}'}}]
      - aescbc:
          keys: [{{name: cbc1, secret: '{}'}}]
      - secretbox:
          keys: [{{name: box, secret: '{}'}}]
      - identity: {{}}
  - resources: [configmaps]
    providers:
      - aescbc:
          keys: [{{name: cbc1, secret: '{}'}}]
",
                b64(&self.gcm),
                b64(&self.cbc),
                b64(&self.sbox),
                b64(&self.cbc)
            ),
        )
    }
}

/// Writes an EncryptionConfiguration with these `resources:` entries.
fn write_config(dir: &Path, name: &str, resources: &str) -> PathBuf {
    let path = dir.join(name);
    let text = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n{resources}"
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn key(name: &str) -> String {
    format!("/registry/secrets/shop/{name}")
}

fn password(name: &str) -> String {
    format!("pw-{name}-Zq7xV2")
}

fn stored_secret(name: &str) -> Vec<u8> {
    secret("shop", name, &format!("uid-{name}"), &password(name))
}

/// Exit status 1 and the error: the last line on standard error (`get` and
/// `decode --key` print the key's parts before it).
fn error_line(out: &std::process::Output) -> String {
    assert_exit(out, 1);
    let err = stderr(out);
    assert!(!err.contains("panicked"), "{err}");
    err.trim_end().lines().last().unwrap_or_default().to_string()
}

fn last(rows: &[serde_json::Value]) -> &serde_json::Value {
    rows.last().expect("a stored revision")
}

#[test]
fn every_local_provider_decrypts_and_nothing_leaks() {
    let etcd = TestEtcd::start();
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::new();
    let config = keys.config(dir.path());
    let config = config.to_str().unwrap();

    etcd.put(
        &key("gcm"),
        &aesgcm("key:gcm", &keys.gcm, &key("gcm"), &stored_secret("gcm")),
    );
    etcd.put(&key("cbc"), &aescbc("cbc1", &keys.cbc, &stored_secret("cbc")));
    etcd.put(&key("box"), &secretbox("box", &keys.sbox, &stored_secret("box")));
    etcd.put(&key("plain"), &stored_secret("plain"));
    let colour = "teal-and-secret-9f1";
    etcd.put(
        "/registry/configmaps/shop/settings",
        &aescbc(
            "cbc1",
            &keys.cbc,
            &config_map("shop", "settings", "uid-cm", &[("colour", colour)]),
        ),
    );
    // Bad values: another key under the configured name, a name no key has,
    // a flipped byte, and a value copied from another key (the AAD differs).
    etcd.put(
        &key("wrongkey"),
        &aesgcm(
            "key:gcm",
            &random(32),
            &key("wrongkey"),
            &stored_secret("wrongkey"),
        ),
    );
    etcd.put(
        &key("unknownkey"),
        &aesgcm(
            "key9",
            &keys.gcm,
            &key("unknownkey"),
            &stored_secret("unknownkey"),
        ),
    );
    let mut tampered = aesgcm("key:gcm", &keys.gcm, &key("tampered"), &stored_secret("tampered"));
    let at = tampered.len() - 20;
    tampered[at] ^= 1;
    etcd.put(&key("tampered"), &tampered);
    etcd.put(
        &key("copied"),
        &aesgcm("key:gcm", &keys.gcm, &key("gcm"), &stored_secret("copied")),
    );
    // Rotation: the same Secret re-encrypted under the write key.
    etcd.put(
        &key("cbc"),
        &aesgcm("key:gcm", &keys.gcm, &key("cbc"), &stored_secret("cbc")),
    );

    let (_db_dir, db) = temp_db();
    let out = ok(snapshot(&etcd, &db, &["--encryption-config", config]));
    assert!(stderr(&out).contains("complete"), "{}", stderr(&out));

    for (name, label) in [("gcm", "aesgcm:key:gcm"), ("box", "secretbox:box")] {
        let rows = history(&db, &key(name));
        let r = last(&rows);
        assert_eq!(r["encoding"], "protobuf", "{name}: {r}");
        assert_eq!(r["encryption"], label, "{name}");
        assert_eq!(r["kind"], "Secret", "{name}");
        assert_eq!(r["name"], name);
        assert!(r["decode_error"].is_null(), "{name}: {r}");
    }
    let cm = history(&db, "/registry/configmaps/shop/settings");
    assert_eq!(last(&cm)["kind"], "ConfigMap");
    assert_eq!(last(&cm)["encryption"], "aescbc:cbc1");
    assert!(last(&history(&db, &key("plain")))["encryption"].is_null());

    // The rotation: the same content under another provider and key.
    let rotated = history(&db, &key("cbc"));
    assert_eq!(rotated.len(), 2);
    assert_eq!(rotated[1]["change_class"], "encoding-only", "{}", rotated[1]);
    assert_eq!(rotated[1]["change_cause"], "encryption");
    let encoding_only = findings(&db, "encoding-only");
    let rotation = encoding_only
        .iter()
        .find(|f| f["keys"][0] == key("cbc").as_str())
        .expect("an encoding-only finding for the rotated Secret");
    assert!(
        rotation.to_string().contains("aescbc:cbc1 → aesgcm:key:gcm"),
        "{rotation}"
    );

    // Each bad value is undecodable with the reason; the run went on.
    let reason = |name: &str| {
        let rows = history(&db, &key(name));
        let r = last(&rows);
        assert_eq!(r["encoding"], "encrypted", "{name}: {r}");
        r["decode_error"].as_str().unwrap_or_default().to_string()
    };
    for name in ["wrongkey", "tampered", "copied"] {
        assert_eq!(
            reason(name),
            r#"aesgcm key "key:gcm": authentication failed"#,
            "{name}"
        );
    }
    let unknown = reason("unknownkey");
    assert!(
        unknown.contains("aesgcm:key9") && unknown.contains("encryption.yaml"),
        "{unknown}"
    );

    // encryption-at-rest: the plaintext Secret (medium), the one under a
    // key the config does not have (high: the apiserver cannot read it), and
    // the one under a key other than the write key (low); not the ones under
    // the write key.
    let at_rest = findings(&db, "encryption-at-rest");
    let keys_of = |severity: &str| -> Vec<String> {
        at_rest
            .iter()
            .filter(|f| f["severity"] == severity)
            .flat_map(|f| f["keys"].as_array().unwrap().clone())
            .map(|k| k.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(keys_of("medium"), [key("plain")], "{at_rest:#?}");
    assert_eq!(keys_of("low"), [key("box")], "{at_rest:#?}");
    assert_eq!(keys_of("high"), [key("unknownkey")], "{at_rest:#?}");
    let lost = at_rest.iter().find(|f| f["severity"] == "high").unwrap();
    let lost = lost["summary"].as_str().unwrap();
    assert!(
        lost.contains("stored under aesgcm:key9, a key the encryption config does not have")
            && lost.contains("fix: restore key aesgcm:key9 to the encryption config's secrets providers"),
        "{lost}"
    );
    let plain = at_rest.iter().find(|f| f["severity"] == "medium").unwrap();
    assert!(
        plain["summary"]
            .as_str()
            .unwrap()
            .contains("kubectl get secrets -n shop plain -o json | kubectl replace -f -"),
        "{plain}"
    );

    // No plaintext anywhere: not the Secrets', not the encrypted ConfigMap's.
    let mut secrets: Vec<String> = ["gcm", "cbc", "box", "plain", "wrongkey", "tampered", "copied"]
        .iter()
        .map(|n| password(n))
        .collect();
    secrets.push(colour.to_string());
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
    // Keyed, content never stored: four Secrets (one rotated) and the ConfigMap.
    assert_eq!(assert_secrets_nowhere(&db, &secrets), 5);
    let shown = inspector(&db, &["history", "/registry/configmaps/shop/settings", "--diff"]);
    assert!(!String::from_utf8_lossy(&shown.stdout).contains(colour));

    // The same through a downloaded snapshot, read as a file.
    let (_fetch_dir, fetched) = temp_db();
    ok(snapshot(
        &etcd,
        &fetched,
        &["--fetch", "snapshot", "--encryption-config", config],
    ));
    assert_eq!(
        last(&history(&fetched, &key("box")))["encryption"],
        "secretbox:box"
    );
    assert_eq!(last(&history(&fetched, &key("box")))["kind"], "Secret");

    // Without the config the same values stay `encrypted`, as before.
    let (_plain_dir, bare) = temp_db();
    ok(snapshot(&etcd, &bare, &[]));
    let r = last(&history(&bare, &key("gcm"))).clone();
    assert_eq!(r["encoding"], "encrypted");
    assert_eq!(r["encryption"], "aesgcm:key");
    assert!(r["decode_error"].is_null(), "{r}");
    assert!(findings(&bare, "encryption-at-rest").is_empty());
}

#[test]
fn get_and_decode_decrypt_with_the_config() {
    let etcd = TestEtcd::start();
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::new();
    let config = keys.config(dir.path());
    let config = config.to_str().unwrap();
    let value = aesgcm("key:gcm", &keys.gcm, &key("gcm"), &stored_secret("gcm"));
    etcd.put(&key("gcm"), &value);
    etcd.put(
        &key("wrong"),
        &aesgcm("key:gcm", &random(32), &key("wrong"), &stored_secret("wrong")),
    );
    let endpoint = etcd.endpoint.as_str();

    let get = |k: &str, extra: &[&str]| {
        let mut args = vec!["get", k, "--endpoints", endpoint];
        args.extend_from_slice(extra);
        run_inspector(&args, None)
    };
    let out = ok(get(
        &key("gcm"),
        &["--encryption-config", config, "--show-envelope"],
    ));
    let object: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(object["metadata"]["name"], "gcm");
    assert!(object["data"]["password"]
        .as_str()
        .unwrap()
        .starts_with("<redacted"));
    assert!(
        stderr(&out).contains("encryption: aesgcm:key:gcm"),
        "{}",
        stderr(&out)
    );
    let shown = ok(get(
        &key("gcm"),
        &["--encryption-config", config, "--show-secrets"],
    ));
    let object: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(object["data"]["password"], base64(&password("gcm")));

    let wrong = error_line(&get(&key("wrong"), &["--encryption-config", config]));
    assert!(
        wrong.contains(r#"aesgcm key "key:gcm": authentication failed"#),
        "{wrong}"
    );
    assert_exit(&get(&key("gcm"), &[]), 3);

    // decode: the value from a file, with the key it is stored under.
    let file = dir.path().join("value.bin");
    std::fs::write(&file, &value).unwrap();
    let file = file.to_str().unwrap();
    let decoded = ok(run_inspector(
        &[
            "decode",
            file,
            "--key",
            &key("gcm"),
            "--encryption-config",
            config,
        ],
        None,
    ));
    let object: serde_json::Value = serde_json::from_slice(&decoded.stdout).unwrap();
    assert_eq!(object["kind"], "Secret");
    // Under another key the AAD differs.
    let moved = error_line(&run_inspector(
        &[
            "decode",
            file,
            "--key",
            &key("other"),
            "--encryption-config",
            config,
        ],
        None,
    ));
    assert!(moved.contains("authentication failed"), "{moved}");
    let keyless = one_line_error(&run_inspector(
        &["decode", file, "--encryption-config", config],
        None,
    ));
    assert!(keyless.contains("--key"), "{keyless}");
    assert_exit(&run_inspector(&["decode", file], None), 3);
}

#[test]
fn a_bad_config_is_one_line_naming_the_file_and_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.yaml");
    std::fs::write(
        &path,
        "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aesgcm:
          keys: [{name: key1, secret: 'c2hvcnQ='}]
",
    )
    .unwrap();
    let path = path.to_str().unwrap();
    let (_d, db) = temp_db();
    let out = inspector(
        &db,
        &[
            "snapshot",
            "--endpoints",
            &closed_endpoint(),
            "--encryption-config",
            path,
        ],
    );
    let line = one_line_error(&out);
    assert!(line.contains(path) && line.contains("key1"), "{line}");
    let missing = one_line_error(&run_inspector(
        &["decode", "--encryption-config", "/nonexistent/enc.yaml", "-"],
        Some(b"k8s:enc:aesgcm:v1:key1:xxxx"),
    ));
    assert!(missing.contains("/nonexistent/enc.yaml"), "{missing}");
}

/// A config whose only provider is the KMS plugin `name` at `socket`.
fn kms_config(dir: &Path, version: &str, name: &str, socket: &Path) -> PathBuf {
    let entry = format!(
        "  - resources: [secrets]\n    providers:\n      - kms: {{apiVersion: {version}, name: {name}, endpoint: 'unix://{}', timeout: 2s}}\n",
        socket.display()
    );
    write_config(dir, &format!("kms-{version}.yaml"), &entry)
}

/// The prefix of the KMS v2 value Kubernetes recorded (corpus/encryption).
const KMS_PREFIX: &str = "/43da1478-5e9c-4ef3-a92a-2b19d540c8a5/registry";

#[test]
fn kms_v2_through_the_plugin_with_both_source_types() {
    use crate::util::encrypt::kms_v2;
    use crate::util::kms_plugin::{FakeKms, FakeVersion};
    let etcd = TestEtcd::start();
    let dir = tempfile::tempdir().unwrap();
    // The plugin's current key id is 2; Kubernetes' recorded value has 1.
    let kms = FakeKms::start(dir.path(), FakeVersion::V2, "2");
    // The config names a socket that is not there; --kms-socket points at
    // the real one, as for a socket forwarded from a control-plane node.
    let config = kms_config(
        dir.path(),
        "v2",
        "kms-provider",
        Path::new("/nonexistent/kms.sock"),
    );
    let socket = format!("kms-provider={}", kms.socket.display());

    let corpus = corpus_dir().map(|c| c.join("encryption/kms-v2-aes-gcm-key.bin"));
    let recorded_key = format!("{KMS_PREFIX}/secrets/kms-v2-legacy-data/dek-source-aes-gcm-key");
    let mut expected_calls = 0;
    if let Some(corpus) = &corpus {
        etcd.put(&recorded_key, &std::fs::read(corpus).unwrap());
        expected_calls += 1;
    }
    let seed = random(32);
    let generated = |name: &str, secret: &[u8], seed_form: bool| {
        let key = format!("{KMS_PREFIX}/secrets/kms/{name}");
        let value = kms_v2("kms-provider", "2", secret, seed_form, &key, &stored_named(name));
        etcd.put(&key, &value);
        key
    };
    // Two values under one seed need one Decrypt; the DEK form needs one.
    let seeded = [
        generated("seeded-1", &seed, true),
        generated("seeded-2", &seed, true),
    ];
    let dek = generated("dek", &random(32), false);
    expected_calls += 2;

    let (_db_dir, db) = temp_db();
    let config = config.to_str().unwrap();
    ok(snapshot(
        &etcd,
        &db,
        &[
            "--prefix",
            KMS_PREFIX,
            "--encryption-config",
            config,
            "--kms-socket",
            &socket,
        ],
    ));
    assert_eq!(
        kms.decrypt_calls(),
        expected_calls,
        "one Decrypt per distinct encrypted key"
    );
    for key in seeded.iter().chain([&dek]) {
        let rows = history(&db, key);
        let r = last(&rows);
        assert_eq!(r["kind"], "Secret", "{key}: {r}");
        assert_eq!(r["encryption"], "kms-v2:kms-provider:2", "{key}");
        assert!(r["decode_error"].is_null(), "{key}: {r}");
    }
    let mut secrets: Vec<String> = ["seeded-1", "seeded-2", "dek"]
        .iter()
        .map(|n| password(n))
        .collect();
    let api_key = "086a7ffc-0225-11e8-ba89-0ed5f89f718b";
    match &corpus {
        None => eprintln!("skipping the recorded KMS v2 value: ../shared/corpus is absent"),
        Some(_) => {
            let rows = history(&db, &recorded_key);
            let r = last(&rows);
            assert_eq!(r["kind"], "Secret", "{r}");
            assert_eq!(r["namespace"], "kms-v2-legacy-data");
            assert_eq!(r["encryption"], "kms-v2:kms-provider:1");
            // Not under the plugin's current key: a low finding with the fix.
            let at_rest = findings(&db, "encryption-at-rest");
            assert_eq!(at_rest.len(), 1, "{at_rest:#?}");
            assert_eq!(at_rest[0]["severity"], "low");
            assert_eq!(at_rest[0]["keys"][0], recorded_key.as_str());
            let out = ok(run_inspector(
                &[
                    "get",
                    &recorded_key,
                    "--endpoints",
                    &etcd.endpoint,
                    "--prefix",
                    KMS_PREFIX,
                    "--encryption-config",
                    config,
                    "--kms-socket",
                    &socket,
                    "--show-secrets",
                ],
                None,
            ));
            let object: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(object["data"]["api_key"], base64(api_key));
            secrets.push(api_key.to_string());
        }
    }
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
    assert_secrets_nowhere(&db, &secrets);
}

fn stored_named(name: &str) -> Vec<u8> {
    secret("kms", name, &format!("uid-{name}"), &password(name))
}

#[test]
fn kms_v1_and_a_plugin_that_is_not_there() {
    use crate::util::encrypt::kms_v1;
    use crate::util::kms_plugin::{FakeKms, FakeVersion};
    let mut etcd = TestEtcd::start();
    let dir = tempfile::tempdir().unwrap();
    let kms = FakeKms::start(dir.path(), FakeVersion::V1, "");
    let config = kms_config(dir.path(), "v1", "legacy", &kms.socket);
    let config = config.to_str().unwrap();
    let dek = random(32);
    etcd.put(
        &key("gcm"),
        &kms_v1("legacy", &dek, false, &key("gcm"), &stored_secret("gcm")),
    );
    // Written before Kubernetes 1.25: AES-CBC under the DEK.
    etcd.put(
        &key("cbc"),
        &kms_v1("legacy", &dek, true, &key("cbc"), &stored_secret("cbc")),
    );

    let (_db_dir, db) = temp_db();
    ok(snapshot(&etcd, &db, &["--encryption-config", config]));
    for name in ["gcm", "cbc"] {
        let rows = history(&db, &key(name));
        let r = last(&rows);
        assert_eq!(r["kind"], "Secret", "{name}: {r}");
        assert_eq!(r["encryption"], "kms-v1:legacy");
    }
    assert_eq!(kms.decrypt_calls(), 1);

    // The plugin is gone: a live run fails at its start with one line and is
    // recorded as failed; a file run goes on, each value undecodable.
    drop(kms);
    let (_gone_dir, gone) = temp_db();
    let line = one_line_error(&snapshot(&etcd, &gone, &["--encryption-config", config]));
    assert!(
        line.contains(r#"KMS provider "legacy""#) && line.contains("cannot connect"),
        "{line}"
    );
    assert_eq!(run_statuses(&gone), ["failed"]);
    etcd.stop();
    let file = etcd.db_file();
    let out = ok(inspector(
        &gone,
        &[
            "snapshot",
            "--file",
            file.to_str().unwrap(),
            "--encryption-config",
            config,
        ],
    ));
    assert!(stderr(&out).contains("warning: "), "{}", stderr(&out));
    let rows = history(&gone, &key("gcm"));
    let r = last(&rows);
    assert_eq!(r["encoding"], "encrypted");
    let reason = r["decode_error"].as_str().unwrap();
    assert!(
        reason.contains("legacy") && reason.contains("cannot connect"),
        "{reason}"
    );
}

#[test]
fn follow_decrypts_what_it_receives() {
    let etcd = TestEtcd::start();
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::new();
    let config = keys.config(dir.path());
    let (_db_dir, db) = temp_db();
    let child = spawn_inspector(
        &db,
        &[
            "follow",
            "--endpoints",
            &etcd.endpoint,
            "--commit-every=200ms",
            "--duration=10s",
            "--encryption-config",
            config.to_str().unwrap(),
        ],
    );
    std::thread::sleep(std::time::Duration::from_millis(1500));
    etcd.put(
        &key("live"),
        &aesgcm("key:gcm", &keys.gcm, &key("live"), &stored_secret("live")),
    );
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 0);
    let rows = history(&db, &key("live"));
    let r = last(&rows);
    assert_eq!(
        (r["kind"].as_str(), r["encryption"].as_str()),
        (Some("Secret"), Some("aesgcm:key:gcm")),
        "{r}"
    );
    assert_secrets_nowhere(&db, &[&password("live")]);
}
