//! The demo's etcd: the binary the `etcd-bin-vendored` crate ships, on free
//! loopback ports, with its data under the demo's directory; killed on drop.
//! (The tests have a fuller harness in `tests/it/util/etcd.rs`, with TLS and
//! auth; the demo needs only plain puts, deletes and a compaction.)

use anyhow::{bail, Context, Result};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Etcd {
    child: Child,
    /// `http://127.0.0.1:<port>`
    pub endpoint: String,
    dir: PathBuf,
    runtime: tokio::runtime::Runtime,
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl Etcd {
    /// Starts etcd with a fresh data directory `dir` (removed first if it
    /// exists) and waits until it answers.
    pub fn start(dir: &Path) -> Result<Etcd> {
        let bin = etcd_bin_vendored::etcd_bin_path().context("no vendored etcd for this platform")?;
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let (client, peer) = (free_port()?, free_port()?);
        let endpoint = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let log = std::fs::File::create(dir.join("etcd.log"))?;
        let child = Command::new(bin)
            .args(["--name", "demo", "--data-dir"])
            .arg(dir.join("data"))
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
            .args(["--initial-cluster", &format!("demo={peer_url}")])
            .args(["--logger", "zap", "--log-level", "error"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let etcd = Etcd {
            child,
            endpoint,
            dir: dir.to_path_buf(),
            runtime,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while etcd.client().is_err() {
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(dir.join("etcd.log")).unwrap_or_default();
                bail!("etcd did not start within 30 s: {log}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(etcd)
    }

    fn client(&self) -> Result<etcd_client::Client, etcd_client::Error> {
        self.runtime.block_on(async {
            let mut c = etcd_client::Client::connect([&self.endpoint], None).await?;
            c.status().await?;
            Ok(c)
        })
    }

    /// Writes a key (as kube-apiserver would) and returns its mod_revision.
    pub fn put(&self, key: &str, value: &[u8]) -> i64 {
        let mut c = self.client().expect("etcd answers");
        self.runtime.block_on(async {
            let resp = c.put(key, value, None).await.expect("etcd put");
            resp.header().expect("a response header").revision()
        })
    }

    /// Deletes a key and returns the revision of the delete.
    pub fn delete(&self, key: &str) -> i64 {
        let mut c = self.client().expect("etcd answers");
        self.runtime.block_on(async {
            let resp = c.delete(key, None).await.expect("etcd delete");
            resp.header().expect("a response header").revision()
        })
    }

    /// Compacts etcd's history at `revision`, as kube-apiserver does.
    pub fn compact(&self, revision: i64) {
        let mut c = self.client().expect("etcd answers");
        self.runtime.block_on(async {
            let opts = etcd_client::CompactionOptions::new().with_physical();
            c.compact(revision, Some(opts)).await.expect("etcd compact");
        });
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
