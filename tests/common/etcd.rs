//! A real etcd server for tests: the binary from the `etcd-bin-vendored`
//! crate, on free loopback ports, in a temporary data dir, killed on drop.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct TestEtcd {
    child: Child,
    /// `http://127.0.0.1:<port>`
    pub endpoint: String,
    dir: tempfile::TempDir,
    runtime: tokio::runtime::Runtime,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl TestEtcd {
    pub fn start() -> TestEtcd {
        let bin = etcd_bin_vendored::etcd_bin_path().expect("vendored etcd for this platform");
        let dir = tempfile::tempdir().unwrap();
        let (client, peer) = (free_port(), free_port());
        let endpoint = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
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
                "--log-level",
                "error",
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("etcd starts");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let etcd = TestEtcd {
            child,
            endpoint,
            dir,
            runtime,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if etcd.client_result().is_ok() {
                return etcd;
            }
            assert!(Instant::now() < deadline, "etcd did not start: {}", etcd.log());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn client_result(&self) -> Result<etcd_client::Client, etcd_client::Error> {
        self.runtime.block_on(async {
            let mut c = etcd_client::Client::connect([&self.endpoint], None).await?;
            c.status().await?;
            Ok(c)
        })
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
