//! A real etcd server for tests: the binary named by `ETCD_INSPECTOR_TEST_ETCD`
//! (`.ci/run` runs the live tests once per etcd release this way), else the
//! one from the `etcd-bin-vendored` crate; on free loopback ports, in a
//! temporary data dir, killed on drop.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct TestEtcd {
    child: Child,
    /// `http://127.0.0.1:<port>`
    pub endpoint: String,
    dir: tempfile::TempDir,
    runtime: tokio::runtime::Runtime,
    client_tls: Option<etcd_client::TlsOptions>,
    /// Root credentials once [`TestEtcd::enable_auth`] ran.
    auth: Option<(String, String)>,
}

/// The ports [`free_port`] hands out: below Linux's ephemeral range
/// (32768–60999), so no outgoing connection of a running test can take one
/// between the check and the server binding it, as a port from `bind(0)` can.
const PORTS: std::ops::Range<u16> = 20000..32000;

/// A loopback port nothing listens on, never handed out twice by this
/// process; the start is spread by process id so concurrent test processes
/// mostly pick different ports.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let span = u32::from(PORTS.end - PORTS.start);
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(7919) % span,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    for _ in 0..span {
        let offset = NEXT.fetch_add(1, Ordering::SeqCst) % span;
        let port = PORTS.start + offset as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in {PORTS:?}");
}

/// Server and client certificates for a TLS etcd, as PEM files.
pub struct Tls {
    pub ca: std::path::PathBuf,
    pub server_cert: std::path::PathBuf,
    pub server_key: std::path::PathBuf,
    pub client_cert: std::path::PathBuf,
    pub client_key: std::path::PathBuf,
    /// A CA that signed nothing here.
    pub other_ca: std::path::PathBuf,
}

impl Tls {
    /// A fresh CA, a server certificate for 127.0.0.1 and a client
    /// certificate, written into `dir`.
    pub fn generate(dir: &std::path::Path) -> Tls {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let server_key = KeyPair::generate().unwrap();
        let server = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .unwrap()
            .signed_by(&server_key, &issuer)
            .unwrap();
        let client_key = KeyPair::generate().unwrap();
        let client = CertificateParams::new(vec!["client".to_string()])
            .unwrap()
            .signed_by(&client_key, &issuer)
            .unwrap();
        let other_key = KeyPair::generate().unwrap();
        let mut other_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        other_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let other = other_params.self_signed(&other_key).unwrap();
        let write = |name: &str, pem: String| {
            let path = dir.join(name);
            std::fs::write(&path, pem).unwrap();
            path
        };
        Tls {
            ca: write("ca.crt", ca.pem()),
            server_cert: write("server.crt", server.pem()),
            server_key: write("server.key", server_key.serialize_pem()),
            client_cert: write("client.crt", client.pem()),
            client_key: write("client.key", client_key.serialize_pem()),
            other_ca: write("other-ca.crt", other.pem()),
        }
    }
}

/// The etcd binary the tests run.
pub fn etcd_binary() -> std::path::PathBuf {
    match std::env::var_os("ETCD_INSPECTOR_TEST_ETCD") {
        Some(path) => path.into(),
        None => etcd_bin_vendored::etcd_bin_path()
            .expect("vendored etcd for this platform")
            .to_path_buf(),
    }
}

/// The version the test etcd prints (`etcd --version`'s first line).
pub fn etcd_version() -> String {
    let out = Command::new(etcd_binary())
        .arg("--version")
        .output()
        .expect("etcd --version runs");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .next()
        .and_then(|l| l.strip_prefix("etcd Version: "))
        .expect("etcd --version names the version")
        .trim()
        .to_string()
}

/// The backend quota every test etcd gets unless told otherwise: 8 GiB,
/// etcd's suggested maximum, room for the benchmark's gigabyte-sized
/// keyspaces.
pub const DEFAULT_QUOTA: u64 = 8 << 30;

impl TestEtcd {
    pub fn start() -> TestEtcd {
        Self::start_inner(None, DEFAULT_QUOTA, &[])
    }

    /// etcd on a copy of the data dir `data` (as [`TestEtcd::copy_data_dir`]
    /// made it), as after a volume restore: the same cluster and member, on
    /// new ports (`--force-new-cluster` lets the member move to them).
    pub fn start_on(data: &std::path::Path) -> TestEtcd {
        for _ in 0..3 {
            if let Some(etcd) = Self::try_start_on(None, DEFAULT_QUOTA, &["--force-new-cluster"], Some(data))
            {
                return etcd;
            }
        }
        panic!("etcd found no free ports in three tries");
    }

    /// etcd with a backend quota of `bytes` (`--quota-backend-bytes`), for
    /// keyspaces above [`DEFAULT_QUOTA`] (the benchmark's large case).
    #[allow(dead_code, reason = "only examples/bench.rs needs it")]
    pub fn start_with_quota(bytes: u64) -> TestEtcd {
        Self::start_inner(None, bytes, &[])
    }

    /// etcd serving TLS and requiring client certificates signed by `tls.ca`.
    pub fn start_tls(tls: &Tls) -> TestEtcd {
        Self::start_inner(Some(tls), DEFAULT_QUOTA, &[])
    }

    /// etcd with more flags, e.g. `--snapshot-count`.
    pub fn start_with_flags(flags: &[&str]) -> TestEtcd {
        Self::start_inner(None, DEFAULT_QUOTA, flags)
    }

    fn start_inner(tls: Option<&Tls>, quota: u64, flags: &[&str]) -> TestEtcd {
        // Another process may still bind a port between our check and
        // etcd's; then start again on other ports.
        for _ in 0..3 {
            if let Some(etcd) = Self::try_start_on(tls, quota, flags, None) {
                return etcd;
            }
        }
        panic!("etcd found no free ports in three tries");
    }

    /// Starts etcd (on a copy of the data dir `data` when given) and waits
    /// until it answers; `None` when it exited because a port was taken
    /// meanwhile.
    fn try_start_on(
        tls: Option<&Tls>,
        quota: u64,
        flags: &[&str],
        data: Option<&std::path::Path>,
    ) -> Option<TestEtcd> {
        let bin = etcd_binary();
        let dir = tempfile::tempdir().unwrap();
        if let Some(data) = data {
            copy_tree(data, &dir.path().join("data"));
        }
        let (client, peer) = (free_port(), free_port());
        let scheme = if tls.is_some() { "https" } else { "http" };
        let endpoint = format!("{scheme}://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let mut tls_args: Vec<std::ffi::OsString> = Vec::new();
        if let Some(t) = tls {
            for (flag, path) in [
                ("--cert-file", &t.server_cert),
                ("--key-file", &t.server_key),
                ("--trusted-ca-file", &t.ca),
            ] {
                tls_args.push(flag.into());
                tls_args.push(path.into());
            }
            tls_args.push("--client-cert-auth".into());
        }
        let log = std::fs::File::create(dir.path().join("etcd.log")).unwrap();
        let child = Command::new(bin)
            .args(["--name", "test", "--data-dir"])
            .arg(dir.path().join("data"))
            .args([
                "--listen-client-urls",
                &endpoint,
                "--advertise-client-urls",
                &endpoint,
            ])
            .args([
                "--listen-peer-urls",
                &peer_url,
                "--initial-advertise-peer-urls",
                &peer_url,
            ])
            .args([
                "--initial-cluster",
                &format!("test={peer_url}"),
                // 3.4 logs through capnslog unless told otherwise.
                "--logger",
                "zap",
                "--log-level",
                "error",
                "--quota-backend-bytes",
                &quota.to_string(),
            ])
            .args(&tls_args)
            .args(flags)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("etcd starts");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client_tls = tls.map(|t| {
            etcd_client::TlsOptions::new()
                .ca_certificate(etcd_client::Certificate::from_pem(std::fs::read(&t.ca).unwrap()))
                .identity(etcd_client::Identity::from_pem(
                    std::fs::read(&t.client_cert).unwrap(),
                    std::fs::read(&t.client_key).unwrap(),
                ))
        });
        let mut etcd = TestEtcd {
            child,
            endpoint,
            dir,
            runtime,
            client_tls,
            auth: None,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if etcd.client_result().is_ok() {
                return Some(etcd);
            }
            if matches!(etcd.child.try_wait(), Ok(Some(_))) && etcd.log().contains("address already in use") {
                return None;
            }
            assert!(Instant::now() < deadline, "etcd did not start: {}", etcd.log());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn client_result(&self) -> Result<etcd_client::Client, etcd_client::Error> {
        let mut opts = etcd_client::ConnectOptions::new();
        if let Some(tls) = &self.client_tls {
            opts = opts.with_tls(tls.clone());
        }
        if let Some((user, password)) = &self.auth {
            opts = opts.with_user(user.clone(), password.clone());
        }
        self.runtime.block_on(async {
            let mut c = etcd_client::Client::connect([&self.endpoint], Some(opts)).await?;
            c.status().await?;
            Ok(c)
        })
    }

    /// Turns on authentication with a `root` user (password `root_password`)
    /// and a `reader` user (password `reader_password`) that has no roles.
    pub fn enable_auth(&mut self, root_password: &str, reader_password: &str) {
        let mut c = self.client_result().unwrap();
        self.runtime.block_on(async {
            c.user_add("root", root_password, None).await.unwrap();
            c.user_grant_role("root", "root").await.unwrap();
            c.user_add("reader", reader_password, None).await.unwrap();
            c.auth_enable().await.unwrap();
        });
        self.auth = Some(("root".into(), root_password.into()));
    }

    /// Adds `user` (password `password`) who may read only the keys under
    /// `prefix` and the keys in `keys`. Call before [`TestEtcd::enable_auth`].
    pub fn add_prefix_reader(&self, user: &str, password: &str, prefix: &str, keys: &[&str]) {
        use etcd_client::Permission;
        let mut c = self.client_result().unwrap();
        self.runtime.block_on(async {
            c.role_add(user).await.unwrap();
            c.role_grant_permission(user, Permission::read(prefix).with_prefix())
                .await
                .unwrap();
            for key in keys {
                c.role_grant_permission(user, Permission::read(*key))
                    .await
                    .unwrap();
            }
            c.user_add(user, password, None).await.unwrap();
            c.user_grant_role(user, user).await.unwrap();
        });
    }

    /// Adds `user` (password `password`) who may read every key but is not
    /// root. Call before [`TestEtcd::enable_auth`].
    pub fn add_full_reader(&self, user: &str, password: &str) {
        use etcd_client::Permission;
        let mut c = self.client_result().unwrap();
        self.runtime.block_on(async {
            c.role_add(user).await.unwrap();
            c.role_grant_permission(user, Permission::read(vec![0u8]).with_from_key())
                .await
                .unwrap();
            c.user_add(user, password, None).await.unwrap();
            c.user_grant_role(user, user).await.unwrap();
        });
    }

    /// Whether the server answers `Status` to `user` (3.4.45 answers it to
    /// root only).
    pub fn status_answers(&self, user: &str, password: &str) -> bool {
        let opts = etcd_client::ConnectOptions::new().with_user(user, password);
        self.runtime.block_on(async {
            match etcd_client::Client::connect([&self.endpoint], Some(opts)).await {
                Ok(mut c) => c.status().await.is_ok(),
                Err(_) => false,
            }
        })
    }

    /// Compacts etcd's history at `revision`, as kube-apiserver does.
    pub fn compact(&self, revision: i64) {
        let mut c = self.client_result().unwrap();
        self.runtime.block_on(async {
            c.compact(
                revision,
                Some(etcd_client::CompactionOptions::new().with_physical()),
            )
            .await
            .unwrap()
        });
    }

    /// Writes many values one put at a time (each its own revision, so the
    /// same key may appear many times).
    pub fn put_many_sequential(&self, items: &[(String, Vec<u8>)]) {
        let mut c = self.client_result().unwrap();
        self.runtime.block_on(async {
            for (k, v) in items {
                c.put(k.as_str(), v.clone(), None).await.unwrap();
            }
        });
    }

    /// Writes many keys quickly: one key per revision, as kube-apiserver
    /// writes, with 64 writes in flight.
    pub fn put_many(&self, items: &[(String, Vec<u8>)]) {
        let c = self.client_result().unwrap();
        self.runtime.block_on(async {
            for chunk in items.chunks(64) {
                let mut writes = tokio::task::JoinSet::new();
                for (k, v) in chunk {
                    let mut kv = c.kv_client();
                    let (k, v) = (k.clone(), v.clone());
                    writes.spawn(async move { kv.put(k, v, None).await.map(|_| ()) });
                }
                while let Some(done) = writes.join_next().await {
                    done.unwrap().unwrap();
                }
            }
        });
    }

    /// The server's data dir (`--data-dir`).
    pub fn data_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("data")
    }

    /// Copies the data dir to `to` as docs/snapshot.md says to copy a running
    /// member's: the db first, then the WAL segments (not the preallocated
    /// `*.tmp`).
    pub fn copy_data_dir(&self, to: &std::path::Path) {
        self.copy_db(to);
        self.copy_wal(to);
    }

    /// Copies the member's `member/snap/db` into the data dir `to`.
    pub fn copy_db(&self, to: &std::path::Path) {
        std::fs::create_dir_all(to.join("member/snap")).unwrap();
        std::fs::copy(self.db_file(), to.join("member/snap/db")).unwrap();
    }

    /// Copies the member's WAL segments into the data dir `to`.
    pub fn copy_wal(&self, to: &std::path::Path) {
        let from = self.data_dir();
        std::fs::create_dir_all(to.join("member/wal")).unwrap();
        for entry in std::fs::read_dir(from.join("member/wal")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "wal") {
                std::fs::copy(&path, to.join("member/wal").join(path.file_name().unwrap())).unwrap();
            }
        }
    }

    /// The server's bbolt file, `<data-dir>/member/snap/db`.
    pub fn db_file(&self) -> std::path::PathBuf {
        self.data_dir().join("member/snap/db")
    }

    /// Stops the server (its data stays until drop).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The server's log so far, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default()
    }

    /// Writes a key (as kube-apiserver would) and returns its mod_revision.
    pub fn put(&self, key: &str, value: &[u8]) -> i64 {
        let mut c = self.client_result().unwrap();
        self.runtime.block_on(async {
            c.put(key, value, None)
                .await
                .unwrap()
                .header()
                .unwrap()
                .revision()
        })
    }

    /// Runs a transaction; whether its compares held.
    pub fn txn(&self, txn: etcd_client::Txn) -> bool {
        let mut c = self.client_result().unwrap();
        self.runtime
            .block_on(async { c.txn(txn).await.unwrap().succeeded() })
    }

    /// Runs a transaction; whether its compares held, and the revision it
    /// left the store at (its own, when it wrote).
    pub fn txn_at(&self, txn: etcd_client::Txn) -> (bool, i64) {
        let mut c = self.client_result().unwrap();
        self.runtime.block_on(async {
            let resp = c.txn(txn).await.unwrap();
            (resp.succeeded(), resp.header().unwrap().revision())
        })
    }

    /// The store's current revision.
    pub fn head(&self) -> i64 {
        let mut c = self.client_result().unwrap();
        self.runtime
            .block_on(async { c.get("head", None).await.unwrap().header().unwrap().revision() })
    }

    /// Grants a lease of `ttl` seconds; its id.
    pub fn grant(&self, ttl: i64) -> i64 {
        let mut c = self.client_result().unwrap();
        self.runtime
            .block_on(async { c.lease_grant(ttl, None).await.unwrap().id() })
    }

    /// Revokes lease `id`, deleting the keys attached to it.
    pub fn revoke(&self, id: i64) {
        let mut c = self.client_result().unwrap();
        self.runtime.block_on(async { c.lease_revoke(id).await.unwrap() });
    }

    /// The member's write-ahead log, `<data-dir>/member/wal`.
    pub fn wal_dir(&self) -> std::path::PathBuf {
        self.data_dir().join("member/wal")
    }

    /// Deletes a key and returns the revision of the delete.
    pub fn delete(&self, key: &str) -> i64 {
        let mut c = self.client_result().unwrap();
        self.runtime
            .block_on(async { c.delete(key, None).await.unwrap().header().unwrap().revision() })
    }
}

impl Drop for TestEtcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Copies the directory `from` to `to`, files and folders.
fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let dest = to.join(path.file_name().unwrap());
        match path.is_dir() {
            true => copy_tree(&path, &dest),
            false => {
                std::fs::copy(&path, &dest).unwrap();
            }
        }
    }
}
