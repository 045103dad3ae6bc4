//! Tables as kubectl prints them: aligned columns without borders, one
//! line a row, the columns a person needs by default and every column with
//! `-o wide`, `--no-headers`, the cluster column only when the database
//! holds more than one cluster, and free text cut to a terminal's width.

use crate::util::etcd::TestEtcd;
use crate::util::k8s::config_map;
use crate::util::{runs as runs_json, *};

/// Standard output's lines.
fn lines(db: &std::path::Path, args: &[&str]) -> Vec<String> {
    String::from_utf8(ok(inspector(db, args)).stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Standard output's lines when it is a terminal `columns` wide (a
/// pseudo-terminal `script` makes).
fn terminal_lines(db: &std::path::Path, columns: u16, args: &[&str]) -> Vec<String> {
    let mut command = format!(
        "stty rows 40 cols {columns}; XDG_CONFIG_HOME='{}' '{}' --db '{}'",
        config_home().display(),
        env!("CARGO_BIN_EXE_etcd-inspector"),
        db.display()
    );
    for arg in args {
        command.push_str(&format!(" '{arg}'"));
    }
    let out = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("script (util-linux) runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim_end_matches('\r').to_string())
        .collect()
}

/// The whitespace-separated words of `line`.
fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

#[test]
fn listings_print_plain_columns_narrow_or_wide() {
    let etcd = TestEtcd::start();
    let key = "/registry/configmaps/shop/web";
    let cm = |color: &str| config_map("shop", "web", "u1", &[("app.properties", color)]);
    etcd.put(key, &cm("color=blue"));
    let (_dir, db) = temp_db();
    ok(snapshot(&etcd, &db, &[]));
    etcd.put(key, &cm("color=green"));
    ok(snapshot(&etcd, &db, &[]));

    let runs = lines(&db, &["runs"]);
    assert_eq!(runs.len(), 3, "{runs:#?}");
    assert_eq!(
        words(&runs[0]),
        ["RUN", "STATUS", "STARTED", "SOURCE", "HEAD", "KEYS", "ADDED", "ERROR"]
    );
    // Every row is one line of plain words: `awk '{print $2}'` works.
    for (i, row) in runs[1..].iter().enumerate() {
        let w = words(row);
        assert_eq!(w.len(), 8, "{row}");
        assert_eq!(w[0], (i + 1).to_string());
        assert_eq!(w[1], "complete");
    }
    let all: String = runs.concat();
    assert!(!all.contains(['│', '┆', '─', '═', '╞']), "{all}");
    // Columns line up: each header starts where its cells do.
    let at = runs[0].find("STATUS").unwrap();
    assert!(
        runs[1..].iter().all(|r| r[at..].starts_with("complete")),
        "{runs:#?}"
    );

    let wide = lines(&db, &["runs", "-o", "wide", "--no-headers"]);
    assert_eq!(wide.len(), 2, "no header line: {wide:#?}");
    assert!(words(&wide[0]).len() > 8, "{wide:#?}");
    let first = runs_json(&db)[0]["cluster_id"].as_str().unwrap().to_string();
    assert!(wide[0].contains(&first), "-o wide shows the cluster: {wide:#?}");

    let history = lines(&db, &["history", "configmap/web", "-n", "shop"]);
    assert_eq!(
        words(&history[0]),
        ["MOD", "REV", "VERSION", "CHANGE", "CHANGED", "FIELDS", "WRITTEN", "BY", "WRITTEN", "AT"]
    );
    assert!(history[2].contains(r"data.app\.properties"), "{history:#?}");

    // On a terminal of 90 columns, free text is cut to fit and times are
    // kept whole; piped (above), nothing is cut.
    let on_terminal = terminal_lines(&db, 90, &["history", "configmap/web", "-n", "shop"]);
    assert_eq!(on_terminal.len(), history.len(), "{on_terminal:#?}");
    for (cut, whole) in on_terminal.iter().zip(&history).skip(1) {
        assert!(cut.chars().count() <= 90, "{cut:?} is wider than the terminal");
        let time = whole.split("   ").last().unwrap();
        assert!(cut.ends_with(time), "the time is whole: {cut:?} / {whole:?}");
    }
    assert!(
        on_terminal[2].contains('…') && history[2].chars().count() > 90,
        "{on_terminal:#?}"
    );

    // A second cluster in the same database: the cluster column appears.
    let other = TestEtcd::start();
    other.put(key, &cm("color=red"));
    ok(snapshot(&other, &db, &[]));
    let runs = lines(&db, &["runs"]);
    assert_eq!(words(&runs[0])[..3], ["RUN", "CLUSTER", "STATUS"], "{runs:#?}");
    let one = lines(&db, &["runs", "--cluster", &first]);
    assert_eq!(words(&one[0])[..2], ["RUN", "STATUS"], "{one:#?}");
}
