//! A real multi-member etcd cluster for tests: several processes of the
//! test etcd binary (see [`super::etcd::etcd_binary`]) on free loopback
//! ports, formed with `--initial-cluster`, each of which the test may kill,
//! restart, pause (SIGSTOP) and resume; every process is killed on drop.
//! Elections are quick (50 ms heartbeats, 500 ms election timeout) so a
//! test that kills the leader waits little.

use super::etcd::{etcd_binary, free_port};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One member: its process (while running), URLs and data directory.
pub struct ClusterMember {
    pub name: String,
    /// `http://127.0.0.1:<port>`
    pub endpoint: String,
    peer_url: String,
    child: Option<Child>,
    paused: bool,
}

pub struct TestCluster {
    pub members: Vec<ClusterMember>,
    dir: tempfile::TempDir,
    initial_cluster: String,
    runtime: tokio::runtime::Runtime,
}

impl TestCluster {
    /// Starts `n` members and waits until the cluster has a leader.
    pub fn start(n: usize) -> TestCluster {
        let dir = tempfile::tempdir().unwrap();
        let members: Vec<ClusterMember> = (0..n)
            .map(|i| ClusterMember {
                name: format!("m{i}"),
                endpoint: format!("http://127.0.0.1:{}", free_port()),
                peer_url: format!("http://127.0.0.1:{}", free_port()),
                child: None,
                paused: false,
            })
            .collect();
        let initial_cluster = members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url))
            .collect::<Vec<_>>()
            .join(",");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut cluster = TestCluster {
            members,
            dir,
            initial_cluster,
            runtime,
        };
        for i in 0..n {
            cluster.spawn(i);
        }
        cluster.wait_for_leader();
        cluster
    }

    fn spawn(&mut self, i: usize) {
        let data = self.dir.path().join(&self.members[i].name);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(format!("{}.log", self.members[i].name)))
            .unwrap();
        let m = &self.members[i];
        let child = Command::new(etcd_binary())
            .args(["--name", &m.name, "--data-dir"])
            .arg(&data)
            .args([
                "--listen-client-urls",
                &m.endpoint,
                "--advertise-client-urls",
                &m.endpoint,
            ])
            .args([
                "--listen-peer-urls",
                &m.peer_url,
                "--initial-advertise-peer-urls",
                &m.peer_url,
            ])
            .args([
                "--initial-cluster",
                &self.initial_cluster,
                "--initial-cluster-state",
                "new",
            ])
            .args(["--initial-cluster-token", "etcd-inspector-test"])
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            // 3.4 logs through capnslog unless told otherwise.
            .args(["--logger", "zap", "--log-level", "error"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("etcd starts");
        self.members[i].child = Some(child);
        self.members[i].paused = false;
    }

    /// Every member's client URL, comma-separated, in order.
    pub fn endpoints(&self) -> String {
        self.members
            .iter()
            .map(|m| m.endpoint.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Client URLs of the members `order` names, comma-separated.
    pub fn endpoints_of(&self, order: &[usize]) -> String {
        order
            .iter()
            .map(|&i| self.members[i].endpoint.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    fn running(&self) -> Vec<usize> {
        (0..self.members.len())
            .filter(|&i| self.members[i].child.is_some() && !self.members[i].paused)
            .collect()
    }

    /// A client of the running members (one that answers), or the error.
    fn client(&self) -> Result<etcd_client::Client, etcd_client::Error> {
        let mut last = None;
        for i in self.running() {
            let endpoint = self.members[i].endpoint.clone();
            let tried = self.runtime.block_on(async {
                let opts = etcd_client::ConnectOptions::new()
                    .with_connect_timeout(Duration::from_secs(1))
                    .with_timeout(Duration::from_secs(5));
                let mut c = etcd_client::Client::connect([endpoint], Some(opts)).await?;
                let status = c.status().await?;
                match status.leader() {
                    0 => Err(etcd_client::Error::InvalidArgs("no leader".into())),
                    _ => Ok(c),
                }
            });
            match tried {
                Ok(c) => return Ok(c),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| etcd_client::Error::InvalidArgs("no member runs".into())))
    }

    /// Waits (polling) until a running member answers with a leader.
    pub fn wait_for_leader(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while let Err(e) = self.client() {
            assert!(
                Instant::now() < deadline,
                "the cluster has no leader: {e}; {}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether member `i` answers and knows a leader.
    pub fn has_leader(&self, i: usize) -> bool {
        let endpoint = self.members[i].endpoint.clone();
        self.runtime.block_on(async {
            let opts = etcd_client::ConnectOptions::new().with_timeout(Duration::from_secs(2));
            let Ok(mut c) = etcd_client::Client::connect([endpoint], Some(opts)).await else {
                return false;
            };
            c.status().await.is_ok_and(|s| s.leader() != 0)
        })
    }

    /// The index of the current leader.
    pub fn leader(&self) -> usize {
        let mut c = self.client().unwrap();
        let leader = self.runtime.block_on(c.status()).unwrap().leader();
        self.members
            .iter()
            .position(|m| self.member_id_at(&m.endpoint) == Some(leader))
            .expect("the leader is a member")
    }

    /// etcd's id of member `i`, hex, as `runs` shows it.
    pub fn member_id(&self, i: usize) -> String {
        format!("{:x}", self.member_id_at(&self.members[i].endpoint).unwrap())
    }

    fn member_id_at(&self, endpoint: &str) -> Option<u64> {
        let mut c = self.client().ok()?;
        let list = self.runtime.block_on(c.member_list()).ok()?;
        list.members()
            .iter()
            .find(|m| m.client_urls().iter().any(|u| u == endpoint))
            .map(|m| m.id())
    }

    /// Kills member `i` (SIGKILL); its data stays for a restart.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts member `i` again on its data, and waits for a leader.
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        self.spawn(i);
        self.wait_for_leader();
    }

    fn signal(&self, i: usize, signal: &str) {
        let pid = self.members[i].child.as_ref().expect("member runs").id();
        let status = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill {signal} {pid}");
    }

    /// Freezes member `i` (SIGSTOP): its sockets stay open and nothing
    /// answers, as with a member cut off by the network.
    pub fn pause(&mut self, i: usize) {
        self.signal(i, "-STOP");
        self.members[i].paused = true;
    }

    /// Lets member `i` go on (SIGCONT).
    pub fn resume(&mut self, i: usize) {
        self.signal(i, "-CONT");
        self.members[i].paused = false;
    }

    /// Writes `count` revisions under `prefix` (keys `prefix<n % keys>`),
    /// 64 in flight.
    pub fn write(&self, prefix: &str, keys: usize, count: usize) {
        self.write_padded(prefix, keys, count, 0);
    }

    /// [`TestCluster::write`] with `pad` more bytes in each value.
    pub fn write_padded(&self, prefix: &str, keys: usize, count: usize, pad: usize) {
        let padding = "x".repeat(pad);
        let c = self.client().unwrap();
        self.runtime.block_on(async {
            for chunk in (0..count).collect::<Vec<_>>().chunks(64) {
                let mut writes = tokio::task::JoinSet::new();
                for &n in chunk {
                    let mut kv = c.kv_client();
                    let key = format!("{prefix}{}", n % keys.max(1));
                    let n = n.to_string();
                    let value =
                        super::k8s::config_map("default", &key, "uid", &[("n", &n), ("pad", &padding)]);
                    writes.spawn(async move { kv.put(key, value, None).await.map(|_| ()) });
                }
                while let Some(done) = writes.join_next().await {
                    done.unwrap().unwrap();
                }
            }
        });
    }

    /// Every revision etcd holds under `prefix`, as `(key, mod_revision,
    /// deleted)`, oldest first: what was written, by etcd's own account.
    pub fn history(&self, prefix: &str) -> Vec<(String, i64, bool)> {
        let mut c = self.client().unwrap();
        self.runtime.block_on(async {
            let head = c.get(prefix, None).await.unwrap().header().unwrap().revision();
            let opts = etcd_client::WatchOptions::new()
                .with_prefix()
                .with_start_revision(1);
            let mut stream = c.watch(prefix, Some(opts)).await.unwrap();
            let mut seen = Vec::new();
            let mut newest = 0;
            while newest < head {
                let resp = stream.message().await.unwrap().expect("watch open");
                for ev in resp.events() {
                    let kv = ev.kv().unwrap();
                    newest = newest.max(kv.mod_revision());
                    seen.push((
                        String::from_utf8_lossy(kv.key()).into_owned(),
                        kv.mod_revision(),
                        ev.event_type() == etcd_client::EventType::Delete,
                    ));
                }
            }
            seen
        })
    }

    /// The members' logs so far, for failure messages.
    pub fn logs(&self) -> String {
        self.members
            .iter()
            .map(|m| {
                let log = std::fs::read_to_string(self.dir.path().join(format!("{}.log", m.name)))
                    .unwrap_or_default();
                format!(
                    "--- {}:\n{}",
                    m.name,
                    log.lines().rev().take(10).collect::<Vec<_>>().join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            if self.members[i].paused {
                self.resume(i);
            }
            self.kill(i);
        }
    }
}
