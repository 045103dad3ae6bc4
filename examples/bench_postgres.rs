//! What the PostgreSQL backend costs against SQLite, measured in the same
//! run: a file run (`snapshot --file FILE --no-analyze`) into a fresh SQLite
//! database and into a fresh PostgreSQL database on a local server (Debian's
//! postgresql, started here as the tests start it), alternately, then
//! `analyze`, `findings -o json` and `report --format json` on each.
//! Prints wall times, the ratio PostgreSQL/SQLite, and whether both stored
//! the same (`runs`, `findings` and `stats` as JSON, ids and times aside).
//!
//! Run: `cargo build --release && cargo run --release --example
//! bench_postgres -- FILE [REPEATS]` (default 3). FILE is an etcd db file,
//! e.g. the one `BENCH_DIR=/tmp/b cargo run --release --example bench`
//! keeps (`/tmp/b/etcd.db`). Asserts nothing: it measures.

#[path = "../tests/it/util/etcd.rs"]
#[allow(dead_code)]
mod etcd;
#[path = "../tests/it/util/postgres.rs"]
#[allow(dead_code)]
mod postgres;

use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// What the test harness calls when a tool is absent.
fn missing<T>(what: impl std::fmt::Display) -> Option<T> {
    eprintln!("{what}");
    None
}

fn binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the example's path");
    exe.parent()
        .and_then(Path::parent)
        .map(|release| release.join("etcd-inspector"))
        .expect("target/<profile>/etcd-inspector")
}

/// Runs `etcd-inspector --db DB ARGS` and returns its wall time and stdout.
fn timed(db: &str, args: &[&str], key: &Path) -> Result<(Duration, Vec<u8>)> {
    let started = Instant::now();
    let out = Command::new(binary())
        .args(["--db", db])
        .env("ETCD_INSPECTOR_HASH_KEY_FILE", key)
        .args(args)
        .output()
        .context("running etcd-inspector")?;
    let took = started.elapsed();
    if !out.status.success() {
        bail!("{args:?} on {db}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok((took, out.stdout))
}

/// JSON output with what differs between databases (ids, times) removed.
fn comparable(stdout: &[u8]) -> Result<Value> {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for k in [
                    "id",
                    "run",
                    "run_id",
                    "started_at",
                    "finished_at",
                    "analyzed_at",
                    "database",
                    "generated_at",
                ] {
                    m.remove(k);
                }
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v: Value = serde_json::from_slice(stdout)?;
    strip(&mut v);
    Ok(v)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let file = PathBuf::from(args.first().context("usage: bench_postgres FILE [REPEATS]")?);
    let repeats: usize = args.get(1).map(|r| r.parse()).transpose()?.unwrap_or(3);
    let server = postgres::shared().context("PostgreSQL is not installed (apt-get install postgresql)")?;
    let dir = tempfile::tempdir()?;
    // One key for both, so keyed hashes compare.
    let key = dir.path().join("hash.key");
    std::fs::write(&key, "5a".repeat(32))?;
    let file_arg = format!("{}", file.display());
    let steps: [(&str, &[&str]); 4] = [
        (
            "snapshot --file",
            &["snapshot", "--file", &file_arg, "--no-analyze"],
        ),
        ("analyze", &["analyze"]),
        ("findings -o json", &["findings", "-o", "json"]),
        ("report --format json", &["report", "--format", "json"]),
    ];
    let mut times = vec![[Vec::new(), Vec::new()]; steps.len()];
    let mut same = true;
    for round in 0..repeats {
        let sqlite = dir.path().join(format!("r{round}.sqlite")).display().to_string();
        let pg = server.create_database();
        let mut outputs: [Vec<Value>; 2] = [Vec::new(), Vec::new()];
        // Alternate which goes first, so neither always meets a warm cache.
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for (s, (_, step)) in steps.iter().enumerate() {
            for &b in &order {
                let db = if b == 0 { &sqlite } else { &pg };
                let (took, out) = timed(db, step, &key)?;
                times[s][b].push(took);
                if s >= 2 {
                    outputs[b].push(comparable(&out)?);
                }
            }
        }
        for query in [&["runs", "-o", "json"][..], &["stats", "-o", "json"]] {
            for (b, db) in [&sqlite, &pg].into_iter().enumerate() {
                outputs[b].push(comparable(&timed(db, query, &key)?.1)?);
            }
        }
        same &= outputs[0] == outputs[1];
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    println!(
        "{} ({} bytes), {repeats} rounds, median wall time",
        file.display(),
        std::fs::metadata(&file)?.len()
    );
    println!("| step | SQLite | PostgreSQL | PostgreSQL / SQLite |");
    println!("|---|---|---|---|");
    for (s, (name, _)) in steps.iter().enumerate() {
        let (a, b) = (median(&mut times[s][0]), median(&mut times[s][1]));
        println!(
            "| `{name}` | {:.2} s | {:.2} s | {:.2}× |",
            a.as_secs_f64(),
            b.as_secs_f64(),
            b.as_secs_f64() / a.as_secs_f64()
        );
    }
    println!("same findings, report, runs and stats on both: {same}");
    Ok(())
}
