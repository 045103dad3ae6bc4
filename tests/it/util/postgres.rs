//! A real PostgreSQL server for tests, from Debian's `postgresql` package
//! (the newest `/usr/lib/postgresql/*/bin`): `initdb` into a temporary
//! directory with a superuser and password authentication, on a free
//! loopback port. As root (tests and CI run as root; initdb and postgres
//! refuse it) the server runs as `nobody`.
//!
//! One shared server per test process ([`database`] hands each caller a
//! fresh database on it, [`database_in`] one that is dropped once the
//! test's scratch directory is gone, so that a whole suite's databases do
//! not pile up on disk); [`TestPostgres::start`] starts a private one with
//! extra settings (TLS). A small shell runs initdb and the server and holds
//! the read end of a pipe whose write end only this process has: when the
//! test process ends, however it ends (even SIGKILL, where no destructor
//! runs, or during initdb), the pipe closes and the shell stops postgres and
//! deletes its directory. A private server's drop closes the pipe the same
//! way and waits.

use super::etcd::free_port;
use super::missing;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The superuser `initdb` creates.
pub const USER: &str = "etcdi_test";

/// Its password: with `@`, `:` and `/` so that URIs must percent-encode it,
/// and distinctive enough that finding it in output means it leaked.
pub const PASSWORD: &str = "Pw@etcdi:test/7Qx";

/// [`PASSWORD`] as a URI's userinfo carries it.
pub const PASSWORD_ENCODED: &str = "Pw%40etcdi%3Atest%2F7Qx";

/// Creates the cluster and runs the server until the pipe on its stdin
/// closes, then stops it (immediate shutdown: its data is scratch) and
/// deletes its directory, also when initdb fails or the test process died
/// meanwhile. `$1` is the directory, then the initdb command line, `::`,
/// the postgres command line.
const WATCH: &str = r#"dir=$1; shift
trap 'rm -rf "$dir"' EXIT
initdb=()
while [ "$1" != "::" ]; do initdb+=("$1"); shift; done
shift
"${initdb[@]}" >&2 || { echo "initdb failed" >&2; exit 1; }
rm -f "$dir/pwfile"
"$@" &
pid=$!
cat >/dev/null
# A background job starts with SIGQUIT ignored until postgres sets its
# handler: repeat until it is gone.
while kill -QUIT "$pid" 2>/dev/null; do sleep 0.1; done
wait "$pid""#;

/// A running PostgreSQL server.
pub struct TestPostgres {
    /// The watching shell; its stdin is the pipe that keeps the server up.
    watch: Child,
    /// The server's directory: `data/` and `log`.
    dir: PathBuf,
    pub port: u16,
}

/// Where the server runs as another user (we are root), that user's
/// `uid:gid`: `nobody`'s.
fn run_as() -> Option<(u32, u32)> {
    static RUN_AS: OnceLock<Option<(u32, u32)>> = OnceLock::new();
    *RUN_AS.get_or_init(|| {
        let id = |args: &[&str]| -> u32 {
            let out = Command::new("id").args(args).output().expect("id runs");
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse()
                .expect("id prints a number")
        };
        (id(&["-u"]) == 0).then(|| (id(&["-u", "nobody"]), id(&["-g", "nobody"])))
    })
}

/// The newest PostgreSQL's `bin` directory, or `None` (with a message)
/// where none is installed.
#[track_caller]
fn installed() -> Option<PathBuf> {
    let newest = std::fs::read_dir("/usr/lib/postgresql").ok().and_then(|dirs| {
        dirs.filter_map(|e| {
            let path = e.ok()?.path();
            let version: u32 = path.file_name()?.to_str()?.parse().ok()?;
            let bin = path.join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .max()
    });
    match newest {
        Some((_, bin)) => Some(bin),
        None => {
            missing("no PostgreSQL under /usr/lib/postgresql/*/bin (.ci/run installs Debian's postgresql)")
        }
    }
}

/// `program` under `bin`, as the server's user.
fn command(bin: &Path, program: &str) -> Command {
    let program = bin.join(program);
    match run_as() {
        Some((uid, gid)) => {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={uid}"))
                .arg(format!("--regid={gid}"))
                .args(["--clear-groups", "--"])
                .arg(program);
            c
        }
        None => Command::new(program),
    }
}

/// Hands `path` to the server's user when it runs as another one, so that
/// the server can read what a test put there.
pub fn give(path: &Path) {
    if let Some((uid, gid)) = run_as() {
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
    }
}

impl TestPostgres {
    /// A private server with `settings` (`-c name=value`) besides the
    /// defaults, or `None` (with a message) where PostgreSQL is absent.
    /// Files the settings name must be readable by the server (see
    /// [`give`]).
    #[track_caller]
    pub fn start(settings: &[(&str, &str)]) -> Option<TestPostgres> {
        let bin = installed()?;
        Some(Self::launch(&bin, settings))
    }

    fn launch(bin: &Path, settings: &[(&str, &str)]) -> TestPostgres {
        // Another process may bind the port between our check and the
        // server's; then start again on another.
        for _ in 0..3 {
            if let Some(server) = Self::try_start(bin, settings) {
                return server;
            }
        }
        panic!("postgres found no free port in three tries");
    }

    /// Creates a cluster, starts its server on a free port and waits until
    /// it accepts connections; `None` when the port was taken meanwhile.
    fn try_start(bin: &Path, settings: &[(&str, &str)]) -> Option<TestPostgres> {
        // Deleted by the watching shell, not by a TempDir: the server
        // outlives this process's destructors.
        let dir = tempfile::Builder::new()
            .prefix("etcdi-pg-")
            .tempdir()
            .unwrap()
            .keep();
        give(&dir);
        let pwfile = dir.join("pwfile");
        std::fs::write(&pwfile, PASSWORD).unwrap();
        give(&pwfile);
        let initdb = command(bin, "initdb");
        let postgres = command(bin, "postgres");
        let port = free_port();
        let log = std::fs::File::create(dir.join("log")).unwrap();
        let mut watch = Command::new("bash");
        watch
            .args(["-c", WATCH, "bash"])
            .arg(&dir)
            .arg(initdb.get_program())
            .args(initdb.get_args())
            .arg("-D")
            .arg(dir.join("data"))
            .args([
                "-U",
                USER,
                "-A",
                "scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .arg(format!("--pwfile={}", pwfile.display()))
            .arg("::")
            .arg(postgres.get_program())
            .args(postgres.get_args())
            .arg("-D")
            .arg(dir.join("data"))
            .args(["-p", &port.to_string(), "-k"])
            .arg(&dir)
            .args(["-c", "listen_addresses=127.0.0.1"])
            // Scratch data: no waiting for disks, and little WAL kept.
            .args([
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
                "-c",
                "max_wal_size=128MB",
            ]);
        for (name, value) in settings {
            watch.arg("-c").arg(format!("{name}={value}"));
        }
        let watch = watch
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("bash starts");
        let mut server = TestPostgres { watch, dir, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let log = server.log();
            if log.contains("ready to accept connections") {
                return Some(server);
            }
            assert!(
                server.watch.try_wait().unwrap().is_none(),
                "postgres did not start: {log}"
            );
            if log.contains("could not create any TCP/IP sockets") {
                return None;
            }
            assert!(Instant::now() < deadline, "postgres did not start: {log}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `postgresql://USER:PASSWORD@127.0.0.1:PORT/DBNAME`.
    pub fn uri(&self, dbname: &str) -> String {
        format!(
            "postgresql://{USER}:{PASSWORD_ENCODED}@127.0.0.1:{}/{dbname}",
            self.port
        )
    }

    /// A superuser connection to the database `dbname`, for a test's setup.
    pub fn client(&self, dbname: &str) -> postgres::Client {
        postgres::Config::new()
            .host("127.0.0.1")
            .port(self.port)
            .user(USER)
            .password(PASSWORD)
            .dbname(dbname)
            .connect(postgres::NoTls)
            .unwrap()
    }

    /// A fresh, empty database's URI.
    pub fn create_database(&self) -> String {
        let name = self.create_named();
        self.uri(&name)
    }

    /// Creates a fresh, empty database; its name.
    fn create_named(&self) -> String {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "test_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        self.client("postgres")
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        name
    }

    /// The server's log so far, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }
}

impl Drop for TestPostgres {
    /// Closes the pipe and waits for the shell to stop the server and
    /// delete its directory.
    fn drop(&mut self) {
        drop(self.watch.stdin.take());
        let _ = self.watch.wait();
    }
}

/// The server the tests of this process share, started on first use; `None`
/// (with a message) where PostgreSQL is absent.
#[track_caller]
pub fn shared() -> Option<&'static TestPostgres> {
    static SERVER: OnceLock<TestPostgres> = OnceLock::new();
    let bin = installed()?;
    Some(SERVER.get_or_init(|| TestPostgres::launch(&bin, &[])))
}

/// A fresh database on the shared server, as a `--db` URI; `None` (with a
/// message) where PostgreSQL is absent.
#[track_caller]
pub fn database() -> Option<String> {
    shared().map(TestPostgres::create_database)
}

/// A fresh database on the shared server for a test whose scratch
/// directory is `dir`, as a `--db` URI; `None` (with a message) where
/// PostgreSQL is absent. It is dropped on a later call once `dir` is gone
/// (the test has ended), and with the server at the end of the process.
#[track_caller]
pub fn database_in(dir: &Path) -> Option<String> {
    /// Databases handed out, with the directory whose test uses each.
    static HANDED_OUT: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());
    let server = shared()?;
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    let (done, running): (Vec<_>, Vec<_>) = handed_out.drain(..).partition(|(dir, _)| !dir.exists());
    *handed_out = running;
    if !done.is_empty() {
        let mut client = server.client("postgres");
        for (_, name) in done {
            // One statement each (DROP DATABASE refuses a transaction);
            // FORCE ends connections a killed test's children left behind.
            client
                .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .unwrap();
        }
    }
    let name = server.create_named();
    handed_out.push((dir.to_path_buf(), name.clone()));
    Some(server.uri(&name))
}
