//! A real Kubernetes control plane: kube-apiserver,
//! kube-controller-manager (every controller) and kube-scheduler of one
//! release, kwok playing the kubelets of a few nodes, kubectl to drive it,
//! all over an etcd the caller started. The binaries come from a folder
//! `.ci/control-plane` builds from the Go module proxy.
//!
//! Used by the demo's `--control-plane` and by the control-plane test tier
//! (`tests/it/util/mod.rs` includes this file by path, with the etcd of the
//! test matrix), so both play on the same cluster.
//!
//! The apiserver runs as a cluster's would: token authentication (named
//! users and groups), RBAC and the Node authorizer, an audit log
//! (`RequestResponse`, `Metadata` for Secrets, Leases and Events, nothing
//! for reads), Secrets encrypted with aescbc, and a short etcd compaction
//! interval so that a few minutes hold several compactions. Every process
//! is killed on drop; their logs (`<component>.log`), the audit log and
//! the credentials stay in the folder the caller gave.

use anyhow::{bail, ensure, Context, Result};
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The nodes kwok runs.
pub const NODES: [&str; 3] = ["kwok-node-0", "kwok-node-1", "kwok-node-2"];

/// Users of the token file beside the components: (name, groups). Every
/// person is a cluster admin, as on most small clusters.
const PEOPLE: [(&str, &str); 3] = [
    ("admin", "system:masters"),
    ("alice@example.com", "system:masters"),
    ("ci-pipeline", "system:masters"),
];

/// The audit policy: every write in full, Secrets, Leases and Events at
/// `Metadata` (their bodies are secret or too many), no reads.
const AUDIT_POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  verbs: ["get", "list", "watch"]
- level: None
  nonResourceURLs: ["/*"]
- level: Metadata
  resources:
  - group: ""
    resources: ["secrets", "events"]
  - group: "coordination.k8s.io"
    resources: ["leases"]
  - group: "events.k8s.io"
    resources: ["events"]
- level: RequestResponse
"#;

/// What a folder of binaries must hold: the components, kubectl, kwok and
/// kwok's stages (`.ci/control-plane` writes them all).
const BINARIES: [&str; 6] = [
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kwok",
    "kwok-stages.yaml",
];

/// Checks that `dir` holds everything `.ci/control-plane` builds.
pub fn check_binaries(dir: &Path) -> Result<()> {
    for bin in BINARIES {
        ensure!(
            dir.join(bin).is_file(),
            "{} has no {bin}: build the control plane with `.ci/control-plane` (it prints the folder)",
            dir.display()
        );
    }
    Ok(())
}

/// What a control plane is started with.
pub struct Options {
    /// kube-apiserver's `--etcd-compaction-interval`.
    pub compaction_interval: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            compaction_interval: Duration::from_secs(60),
        }
    }
}

/// A running control plane; every process is killed on drop.
pub struct ControlPlane {
    /// Its files: credentials, configs, the audit log, components' logs.
    dir: PathBuf,
    bin: PathBuf,
    /// The apiserver's audit log (JSON lines).
    pub audit_log: PathBuf,
    /// The apiserver's EncryptionConfiguration.
    pub encryption_config: PathBuf,
    /// The release (`kube-apiserver --version`, e.g. `v1.37.2`).
    pub version: String,
    apiserver_args: Vec<String>,
    apiserver: Option<Child>,
    /// The controller manager, the scheduler and kwok, restarted whenever
    /// one exits (as the kubelet restarts static Pods: both components
    /// exit when they lose their leader Lease, e.g. while the apiserver
    /// restarts).
    others: Arc<Mutex<Vec<Supervised>>>,
    supervisor: Option<std::thread::JoinHandle<()>>,
    stopping: Arc<AtomicBool>,
}

/// A component kept running: how to start it, and its process.
struct Supervised {
    name: String,
    args: Vec<String>,
    child: Child,
    restarts: usize,
    /// Stopped on purpose, not to be restarted.
    stopped: bool,
}

impl ControlPlane {
    /// Starts the three components and kwok from the binaries in `bin`
    /// against the etcd at `etcd_endpoint`, with their files in `dir`
    /// (which must exist), registers [`NODES`] (each as its own kubelet
    /// would, with its node credentials) and waits until they are Ready.
    pub fn start(bin: &Path, etcd_endpoint: &str, dir: &Path, options: Options) -> Result<ControlPlane> {
        check_binaries(bin)?;
        let d = dir;
        let version = output_text(
            Command::new(bin.join("kube-apiserver")).arg("--version"),
            "kube-apiserver --version",
        )?
        .trim()
        .trim_start_matches("Kubernetes ")
        .to_string();

        // Credentials: one token per user, the service-account signing key,
        // a kubeconfig per identity.
        let port = free_port()?;
        let server = format!("https://127.0.0.1:{port}");
        let mut tokens = String::new();
        let mut identities: Vec<(String, String)> = PEOPLE
            .iter()
            .map(|(u, g)| (u.to_string(), g.to_string()))
            .collect();
        identities.push(("system:kube-controller-manager".into(), String::new()));
        identities.push(("system:kube-scheduler".into(), String::new()));
        identities.push(("kwok-controller".into(), "system:masters".into()));
        for node in NODES {
            identities.push((format!("system:node:{node}"), "system:nodes".into()));
        }
        for (i, (user, groups)) in identities.iter().enumerate() {
            let token = format!("token-{i}-{:x}", rand_u64()?);
            tokens.push_str(&format!("{token},{user},uid-{i},\"{groups}\"\n"));
            write(&d.join(kubeconfig_name(user)), kubeconfig(&server, &token))?;
        }
        write(&d.join("tokens.csv"), tokens)?;
        let (sa_key, sa_pub) = (d.join("sa.key"), d.join("sa.pub"));
        let key_pair = rcgen::KeyPair::generate().context("generating the service-account key")?;
        write(&sa_key, key_pair.serialize_pem())?;
        write(&sa_pub, key_pair.public_key_pem())?;
        write(&d.join("audit-policy.yaml"), AUDIT_POLICY.to_string())?;
        let encryption_config = d.join("encryption.yaml");
        write(
            &encryption_config,
            encryption_config_with(&[("key1", &new_key()?)]),
        )?;
        let audit_log = d.join("audit.log");

        let p = |path: &Path| path.display().to_string();
        let apiserver_args = vec![
            format!("--etcd-servers={etcd_endpoint}"),
            format!(
                "--etcd-compaction-interval={}s",
                options.compaction_interval.as_secs()
            ),
            format!("--secure-port={port}"),
            "--bind-address=127.0.0.1".into(),
            "--advertise-address=127.0.0.1".into(),
            // The `kubernetes` Service's endpoints refuse a loopback address.
            "--endpoint-reconciler-type=none".into(),
            format!("--cert-dir={}", p(&d.join("apiserver-certs"))),
            format!("--token-auth-file={}", p(&d.join("tokens.csv"))),
            "--authorization-mode=Node,RBAC".into(),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
            format!("--service-account-key-file={}", p(&sa_pub)),
            format!("--service-account-signing-key-file={}", p(&sa_key)),
            "--service-cluster-ip-range=10.96.0.0/16".into(),
            format!("--audit-policy-file={}", p(&d.join("audit-policy.yaml"))),
            format!("--audit-log-path={}", p(&audit_log)),
            "--audit-log-maxsize=0".into(),
            format!("--encryption-provider-config={}", p(&encryption_config)),
            "--allow-privileged=true".into(),
            "--v=1".into(),
        ];
        let mut plane = ControlPlane {
            dir: dir.to_path_buf(),
            bin: bin.to_path_buf(),
            audit_log,
            encryption_config,
            version,
            apiserver_args,
            apiserver: None,
            others: Arc::new(Mutex::new(Vec::new())),
            supervisor: None,
            stopping: Arc::new(AtomicBool::new(false)),
        };
        plane.spawn_apiserver()?;
        plane.wait_ready()?;

        let cm = p(&d.join(kubeconfig_name("system:kube-controller-manager")));
        plane.keep_running(
            "kube-controller-manager",
            &[
                &format!("--kubeconfig={cm}"),
                &format!("--authentication-kubeconfig={cm}"),
                &format!("--authorization-kubeconfig={cm}"),
                "--use-service-account-credentials=true",
                &format!("--service-account-private-key-file={}", p(&sa_key)),
                &format!("--root-ca-file={}", p(&d.join("apiserver-certs/apiserver.crt"))),
                "--bind-address=127.0.0.1",
                &format!("--secure-port={}", free_port()?),
                "--v=1",
            ],
        )?;
        let sched = p(&d.join(kubeconfig_name("system:kube-scheduler")));
        plane.keep_running(
            "kube-scheduler",
            &[
                &format!("--kubeconfig={sched}"),
                &format!("--authentication-kubeconfig={sched}"),
                &format!("--authorization-kubeconfig={sched}"),
                "--bind-address=127.0.0.1",
                &format!("--secure-port={}", free_port()?),
                "--v=1",
            ],
        )?;
        let kwok_config = p(&bin.join("kwok-stages.yaml"));
        let kwok = p(&d.join(kubeconfig_name("kwok-controller")));
        plane.keep_running(
            "kwok",
            &[
                &format!("--kubeconfig={kwok}"),
                &format!("--config={kwok_config}"),
                "--manage-all-nodes=true",
                "--node-lease-duration-seconds=40",
                &format!("--server-address=127.0.0.1:{}", free_port()?),
            ],
        )?;
        plane.supervise();

        for node in NODES {
            plane.kubectl_as(
                &format!("system:node:{node}"),
                &["create", "-f", "-"],
                Some(&node_manifest(node)),
            )?;
        }
        plane.wait_for(Duration::from_secs(90), "every node Ready", |cp| {
            let ready = cp.jsonpath(
                &["nodes"],
                "{.items[*].status.conditions[?(@.type==\"Ready\")].status}",
            )?;
            Ok(ready.split_whitespace().filter(|s| *s == "True").count() == NODES.len())
        })?;
        Ok(plane)
    }

    /// Starts a component the supervisor keeps running.
    fn keep_running(&self, name: &str, args: &[&str]) -> Result<()> {
        let child = spawn(&self.bin, &self.dir, name, args)?;
        self.others
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Supervised {
                name: name.to_string(),
                args: args.iter().map(|a| a.to_string()).collect(),
                child,
                restarts: 0,
                stopped: false,
            });
        Ok(())
    }

    /// Starts the thread that restarts a kept component when it exits.
    fn supervise(&mut self) {
        let (others, stopping) = (self.others.clone(), self.stopping.clone());
        let (bin, dir) = (self.bin.clone(), self.dir.clone());
        self.supervisor = Some(std::thread::spawn(move || {
            while !stopping.load(Ordering::SeqCst) {
                // Two seconds after it exited, as a kubelet's back-off
                // would (a component fails fast while the apiserver is
                // down).
                std::thread::sleep(Duration::from_secs(2));
                for c in others.lock().unwrap_or_else(|e| e.into_inner()).iter_mut() {
                    if !c.stopped
                        && matches!(c.child.try_wait(), Ok(Some(_)))
                        && !stopping.load(Ordering::SeqCst)
                    {
                        let args: Vec<&str> = c.args.iter().map(String::as_str).collect();
                        // A component that cannot start again is tried
                        // again two seconds later, as a kubelet would.
                        if let Ok(child) = spawn(&bin, &dir, &c.name, &args) {
                            c.child = child;
                            c.restarts += 1;
                        }
                    }
                }
            }
        }));
    }

    /// Stops a kept component for good (the controller manager: no garbage
    /// collector runs after it).
    pub fn stop(&self, name: &str) -> Result<()> {
        let mut others = self.others.lock().unwrap_or_else(|e| e.into_inner());
        let Some(c) = others.iter_mut().find(|c| c.name == name) else {
            bail!("no component {name} runs");
        };
        c.stopped = true;
        let _ = c.child.kill();
        let _ = c.child.wait();
        Ok(())
    }

    /// How many times each kept component was restarted, for a message.
    pub fn restarts(&self) -> String {
        let others = self.others.lock().unwrap_or_else(|e| e.into_inner());
        let said: Vec<String> = others
            .iter()
            .map(|c| format!("{} {}", c.name, c.restarts))
            .collect();
        said.join(", ")
    }

    fn spawn_apiserver(&mut self) -> Result<()> {
        let args: Vec<&str> = self.apiserver_args.iter().map(String::as_str).collect();
        self.apiserver = Some(spawn(&self.bin, &self.dir, "kube-apiserver", &args)?);
        Ok(())
    }

    /// Waits until the apiserver answers `/readyz`.
    fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if self
                .kubectl_raw("admin", &["get", "--raw=/readyz"], None)?
                .status
                .success()
            {
                return Ok(());
            }
            if let Some(Ok(Some(status))) = self.apiserver.as_mut().map(Child::try_wait) {
                bail!(
                    "kube-apiserver exited ({status}); the end of {}:\n{}",
                    self.dir.join("kube-apiserver.log").display(),
                    self.log_tail("kube-apiserver")
                );
            }
            ensure!(
                Instant::now() < deadline,
                "kube-apiserver not ready in 120 s; the end of {}:\n{}",
                self.dir.join("kube-apiserver.log").display(),
                self.log_tail("kube-apiserver")
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Stops kube-apiserver and starts it again with the same flags, as a
    /// control-plane upgrade or a node reboot does.
    pub fn restart_apiserver(&mut self) -> Result<()> {
        if let Some(mut child) = self.apiserver.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            // After it stops listening, kube-apiserver waits for open
            // watches up to its `--request-timeout` (a minute); its audit
            // log is closed by then, and a reboot would not wait either.
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(200));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        self.spawn_apiserver()?;
        self.wait_ready()
    }

    /// Rotates the Secrets' encryption key as the Kubernetes documentation
    /// says: a new key first (it writes), the old one kept (it still
    /// reads), and the apiserver restarted to load it. Rewriting every
    /// Secret is the caller's.
    pub fn rotate_encryption_key(&mut self) -> Result<()> {
        let old = std::fs::read_to_string(&self.encryption_config)
            .with_context(|| format!("reading {}", self.encryption_config.display()))?;
        let Some(key1) = old.lines().find_map(|l| l.trim().strip_prefix("secret: ")) else {
            bail!("{} holds no key", self.encryption_config.display());
        };
        let config = encryption_config_with(&[("key2", &new_key()?), ("key1", key1)]);
        write(&self.encryption_config, config)?;
        self.restart_apiserver()
    }

    /// The last lines of a component's log, for error messages.
    pub fn log_tail(&self, name: &str) -> String {
        let text = std::fs::read_to_string(self.dir.join(format!("{name}.log"))).unwrap_or_default();
        // Not the flags every component lists as it starts.
        let lines: Vec<&str> = text.lines().filter(|l| !l.contains("] FLAG: --")).collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    fn kubectl_raw(&self, user: &str, args: &[&str], stdin: Option<&str>) -> Result<Output> {
        let kubeconfig = self.dir.join(kubeconfig_name(user));
        run_with_input(
            Command::new(self.bin.join("kubectl"))
                .arg(format!("--kubeconfig={}", kubeconfig.display()))
                .args(args),
            stdin.map(str::as_bytes),
        )
        .context("running kubectl")
    }

    /// Runs kubectl as `user` (one of the people, a node or a component);
    /// an error unless it succeeds.
    pub fn kubectl_as(&self, user: &str, args: &[&str], stdin: Option<&str>) -> Result<Output> {
        let out = self.kubectl_raw(user, args, stdin)?;
        ensure!(
            out.status.success(),
            "kubectl {} as {user} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Ok(out)
    }

    /// Runs kubectl as `admin`; an error unless it succeeds.
    pub fn kubectl(&self, args: &[&str]) -> Result<Output> {
        self.kubectl_as("admin", args, None)
    }

    /// `kubectl apply -f -` of `manifest` as `user`.
    pub fn apply_as(&self, user: &str, manifest: &str) -> Result<()> {
        self.kubectl_as(user, &["apply", "-f", "-"], Some(manifest))
            .map(drop)
    }

    /// `kubectl apply -f -` of `manifest` as `admin`; whether it worked
    /// (for what may need a moment, such as a resource its CRD just made).
    pub fn try_apply(&self, manifest: &str) -> Result<bool> {
        Ok(self
            .kubectl_raw("admin", &["apply", "-f", "-"], Some(manifest))?
            .status
            .success())
    }

    /// `kubectl apply -f -` of `manifest` as `admin`.
    pub fn apply(&self, manifest: &str) -> Result<()> {
        self.apply_as("admin", manifest)
    }

    /// Polls `done` every second until it holds; an error naming `what`
    /// after `limit`.
    pub fn wait_for(
        &self,
        limit: Duration,
        what: &str,
        mut done: impl FnMut(&ControlPlane) -> Result<bool>,
    ) -> Result<()> {
        let deadline = Instant::now() + limit;
        while !done(self)? {
            ensure!(
                Instant::now() < deadline,
                "not reached in {limit:?}: {what}\nkube-controller-manager: {}\nkwok: {}",
                self.log_tail("kube-controller-manager"),
                self.log_tail("kwok")
            );
            std::thread::sleep(Duration::from_secs(1));
        }
        Ok(())
    }

    /// The output of `kubectl get ARGS -o jsonpath=PATH` as admin.
    pub fn jsonpath(&self, args: &[&str], path: &str) -> Result<String> {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        let path = format!("jsonpath={path}");
        all.extend(["-o", path.as_str()]);
        Ok(String::from_utf8_lossy(&self.kubectl(&all)?.stdout).into_owned())
    }

    /// The folder of its files (and room for copies of etcd's files, the
    /// inspector's databases).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        if let Some(supervisor) = self.supervisor.take() {
            let _ = supervisor.join();
        }
        let mut others = self.others.lock().unwrap_or_else(|e| e.into_inner());
        for child in others
            .iter_mut()
            .map(|c| &mut c.child)
            .chain(self.apiserver.as_mut())
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs `command`, feeding it `stdin`, and returns what it printed.
pub fn run_with_input(command: &mut Command, stdin: Option<&[u8]>) -> std::io::Result<Output> {
    let mut child = command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(input)?;
    }
    child.wait_with_output()
}

/// What `command` printed, as text; an error naming `what` unless it
/// succeeded.
fn output_text(command: &mut Command, what: &str) -> Result<String> {
    let out = run_with_input(command, None).with_context(|| format!("running {what}"))?;
    ensure!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A free loopback port.
fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn write(path: &Path, text: String) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Starts `bin/name` with `args`, its output appended to `dir/name.log`.
fn spawn(bin: &Path, dir: &Path, name: &str, args: &[&str]) -> Result<Child> {
    let path = dir.join(format!("{name}.log"));
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    Command::new(bin.join(name))
        .args(args)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", bin.join(name).display()))
}

fn kubeconfig_name(user: &str) -> String {
    format!("{}.kubeconfig", user.replace([':', '@'], "_"))
}

/// A kubeconfig for the apiserver at `server` with a bearer `token`.
fn kubeconfig(server: &str, token: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: {server}\n    \
         insecure-skip-tls-verify: true\nusers:\n- name: user\n  user:\n    token: {token}\n\
         contexts:\n- name: local\n  context:\n    cluster: local\n    user: user\ncurrent-context: local\n"
    )
}

/// A fresh aescbc key, base64.
fn new_key() -> Result<String> {
    use base64::Engine;
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| anyhow::anyhow!("no randomness for a key: {e}"))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(key))
}

/// An EncryptionConfiguration encrypting Secrets with aescbc under `keys`
/// (name, base64 secret), the first writing.
fn encryption_config_with(keys: &[(&str, &str)]) -> String {
    let keys: String = keys
        .iter()
        .map(|(name, secret)| format!("      - name: {name}\n        secret: {secret}\n"))
        .collect();
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  \
         providers:\n  - aescbc:\n      keys:\n{keys}  - identity: {{}}\n"
    )
}

/// A Node as a kubelet registers it, marked for kwok.
fn node_manifest(name: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Node
metadata:
  name: {name}
  annotations:
    node.alpha.kubernetes.io/ttl: "0"
    kwok.x-k8s.io/node: fake
  labels:
    kubernetes.io/hostname: {name}
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
status:
  allocatable: {{cpu: "32", memory: 256Gi, pods: "110"}}
  capacity: {{cpu: "32", memory: 256Gi, pods: "110"}}
"#
    )
}

fn rand_u64() -> Result<u64> {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).map_err(|e| anyhow::anyhow!("no randomness for a token: {e}"))?;
    Ok(u64::from_le_bytes(b))
}
