//! Many clusters in one database: two real etcd servers snapshotted into
//! one database under different names (one by `--cluster`, one by
//! `ETCD_INSPECTOR_CLUSTER`, and a data file of the first by `--file`).
//! Every reading command names the cluster of each row, `--cluster` (a
//! name or etcd's cluster id) keeps exactly that cluster's rows, and
//! `report` without it writes a fleet report whose table counts what
//! `findings` lists.

use crate::util::etcd::TestEtcd;
use crate::util::k8s::{config_map, pod};
use crate::util::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const EU: &str = "prod-eu-1";
const US: &str = "prod-us-2";
const SHARED: &str = "/registry/configmaps/shop/web-config";

/// `etcd-inspector --db DB ARGS...` with `ETCD_INSPECTOR_CLUSTER=name`.
fn inspector_named(db: &Path, name: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_etcd-inspector"))
        .args(["--db", db.to_str().unwrap()])
        .args(args)
        .env("ETCD_INSPECTOR_CLUSTER", name)
        .env("XDG_CONFIG_HOME", config_home())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `ARGS... -o json` (or `--format json`) as a JSON array.
fn rows(db: &Path, args: &[&str]) -> Vec<Value> {
    json(inspector(db, args)).as_array().unwrap().clone()
}

/// The value of `field` in each row.
fn column<'a>(rows: &'a [Value], field: &str) -> Vec<&'a str> {
    rows.iter().map(|r| r[field].as_str().unwrap()).collect()
}

/// Findings (`findings -o json` rows) counted per (cluster, detector).
fn per_detector(findings: &[Value]) -> BTreeMap<(String, String), i64> {
    let mut counts = BTreeMap::new();
    for f in findings {
        let key = (
            f["cluster"].as_str().unwrap().to_string(),
            f["detector"].as_str().unwrap().to_string(),
        );
        *counts.entry(key).or_default() += 1;
    }
    counts
}

/// Cluster EU: two ConfigMaps each written twice byte for byte (two
/// `rewrite` findings) and a Pod deleted and created again (`recreated`).
fn write_eu(etcd: &TestEtcd) {
    let web = config_map("shop", "web-config", "uid-eu-web", &[("mode", "eu")]);
    etcd.put(SHARED, &web);
    etcd.put(SHARED, &web);
    let other = config_map("shop", "other", "uid-eu-other", &[("k", "v")]);
    etcd.put("/registry/configmaps/shop/other", &other);
    etcd.put("/registry/configmaps/shop/other", &other);
    let key = "/registry/pods/shop/web";
    etcd.put(key, &pod("shop", "web", "uid-pod-a", "web:1"));
    etcd.delete(key);
    etcd.put(key, &pod("shop", "web", "uid-pod-b", "web:1"));
}

/// Cluster US: the same ConfigMap key with other content, written twice
/// byte for byte (one `rewrite` finding).
fn write_us(etcd: &TestEtcd) {
    let web = config_map("shop", "web-config", "uid-us-web", &[("mode", "us")]);
    etcd.put(SHARED, &web);
    etcd.put(SHARED, &web);
}

/// Two etcds, EU's and US's contents written to each, and a fresh
/// database (its scratch directory, its `--db`).
fn eu_and_us() -> (TestEtcd, TestEtcd, tempfile::TempDir, PathBuf) {
    let (eu, us) = (TestEtcd::start(), TestEtcd::start());
    let (dir, db) = temp_db();
    write_eu(&eu);
    write_us(&us);
    (eu, us, dir, db)
}

#[test]
fn two_clusters_in_one_database() {
    let (eu, us, dir, db) = eu_and_us();

    // US first without a name: it shows as etcd's cluster id.
    ok(snapshot(&us, &db, &[]));
    let first = runs(&db);
    let us_id = first[0]["cluster_id"].as_str().unwrap().to_string();
    assert_eq!(first[0]["cluster"].as_str(), Some(us_id.as_str()));
    // Named by --cluster, and by the environment (as a CronJob would).
    ok(snapshot(&eu, &db, &["--cluster", EU]));
    ok(inspector_named(
        &db,
        US,
        &["snapshot", "--endpoints", &us.endpoint],
    ));
    // A data file of EU, named again: the same cluster, its name kept.
    let copy = dir.path().join("eu.db");
    std::fs::copy(eu.db_file(), &copy).unwrap();
    ok(inspector(
        &db,
        &["snapshot", "--file", copy.to_str().unwrap(), "--cluster", EU],
    ));

    // runs: every run names its cluster, the unnamed one's too now.
    let all = runs(&db);
    assert_eq!(column(&all, "cluster"), [US, EU, US, EU]);
    let eu_id = all[1]["cluster_id"].as_str().unwrap().to_string();
    assert_ne!(eu_id, us_id, "two etcd clusters");
    assert_eq!(all[3]["cluster_id"].as_str(), Some(eu_id.as_str()));
    let table = String::from_utf8(ok(inspector(&db, &["runs"])).stdout).unwrap();
    assert!(table.contains(EU) && table.contains(US), "{table}");
    let by_name = rows(&db, &["runs", "--cluster", EU, "-o", "json"]);
    assert_eq!(column(&by_name, "cluster"), [EU, EU]);
    let by_id = rows(&db, &["runs", "--cluster", &us_id.to_uppercase(), "-o", "json"]);
    assert_eq!(column(&by_id, "cluster_id"), [us_id.as_str(), us_id.as_str()]);

    // findings: each names its cluster; --cluster keeps exactly its own.
    let findings = rows(&db, &["findings", "-o", "json"]);
    let counts = per_detector(&findings);
    let count = |c: &str, d: &str| counts.get(&(c.to_string(), d.to_string())).copied();
    assert_eq!(count(EU, "rewrite"), Some(2), "{findings:#?}");
    assert_eq!(count(EU, "recreated"), Some(1), "{findings:#?}");
    assert_eq!(count(US, "rewrite"), Some(1), "{findings:#?}");
    assert_eq!(count(US, "recreated"), None);
    for (name, id) in [(EU, &eu_id), (US, &us_id)] {
        let own = rows(&db, &["findings", "--cluster", name, "-o", "json"]);
        let expected: Vec<&Value> = findings.iter().filter(|f| f["cluster"] == name).collect();
        assert_eq!(own.len(), expected.len());
        assert!(own
            .iter()
            .all(|f| f["cluster"] == name && f["cluster_id"] == id.as_str()));
        let by_id = rows(&db, &["findings", "--cluster", id, "-o", "json"]);
        assert_eq!(by_id.len(), own.len());
    }
    let table = String::from_utf8(ok(inspector(&db, &["findings"])).stdout).unwrap();
    assert!(
        table.contains("CLUSTER") && table.contains(EU) && table.contains(US),
        "{table}"
    );

    // history: one key, both clusters, each revision saying whose.
    let both = rows(&db, &["history", SHARED, "-o", "json"]);
    let eu_rows = both.iter().filter(|r| r["cluster"] == EU).count();
    let us_rows = both.iter().filter(|r| r["cluster"] == US).count();
    assert_eq!((eu_rows, us_rows), (2, 2), "{both:#?}");
    let only = rows(&db, &["history", SHARED, "--cluster", US, "-o", "json"]);
    assert_eq!(column(&only, "cluster"), [US, US]);
    let diffs = rows(&db, &["history", SHARED, "--diff", "-o", "json"]);
    let created = diffs.iter().filter(|r| r["change_class"] == "create").count();
    assert_eq!(created, 2, "each cluster's first revision is its own create");

    // stats: every row names its cluster; --cluster counts its own only.
    let stats = json(inspector(&db, &["stats", "-o", "json"]));
    let revisions = |stats: &Value, cluster: &str| -> i64 {
        stats["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["cluster"] == cluster)
            .map(|r| r["revisions"].as_i64().unwrap())
            .sum()
    };
    let (eu_revisions, us_revisions) = (revisions(&stats, EU), revisions(&stats, US));
    assert_eq!(us_revisions, 2);
    assert!(eu_revisions >= 7, "{stats:#}");
    assert_eq!(
        revisions(&stats, EU) + revisions(&stats, US),
        stored_revisions(&db)
    );
    let eu_stats = json(inspector(&db, &["stats", "--cluster", EU, "-o", "json"]));
    assert_eq!(revisions(&eu_stats, EU), eu_revisions);
    assert_eq!(revisions(&eu_stats, US), 0);
    for list in ["resources", "largest", "busiest", "namespaces"] {
        assert!(
            eu_stats[list]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r["cluster"] == EU),
            "{list}"
        );
    }

    // diff: one cluster, named in its output.
    let diff = json(inspector(
        &db,
        &[
            "diff",
            "--cluster",
            EU,
            "--rev-a",
            "1",
            "--rev-b",
            "100",
            "-o",
            "json",
        ],
    ));
    assert_eq!(diff["cluster"], EU);
    let e = one_line_error(&inspector(&db, &["diff", "--rev-a", "1", "--rev-b", "100"]));
    assert!(
        e.contains("several clusters") && e.contains(EU) && e.contains(US),
        "{e}"
    );
    let e = one_line_error(&inspector(&db, &["diff", "1", "2"]));
    assert!(e.contains("different clusters"), "{e}");

    // An unknown cluster: one line listing the known ones.
    for command in ["runs", "findings", "stats", "report"] {
        let e = one_line_error(&inspector(&db, &[command, "--cluster", "prod-ap-3"]));
        assert!(
            e.contains("holds no cluster prod-ap-3")
                && e.contains(&format!("{EU} ({eu_id})"))
                && e.contains(&format!("{US} ({us_id})")),
            "{command}: {e}"
        );
    }
    let e = one_line_error(&inspector(&db, &["history", SHARED, "--cluster", "nope"]));
    assert!(e.contains("holds no cluster nope"), "{e}");

    fleet_report(&db, &findings);

    // analyze: one cluster's detectors.
    let analyzed = ok(inspector(&db, &["analyze", "--cluster", EU]));
    let line = format!(
        "{} findings (",
        findings.iter().filter(|f| f["cluster"] == EU).count()
    );
    assert!(stderr(&analyzed).contains(&line), "{}", stderr(&analyzed));

    // attribute: the logs of one cluster, chosen by name or (the old flag)
    // by etcd's id.
    let log = dir.path().join("audit.log");
    std::fs::write(&log, "").unwrap();
    let log = log.to_str().unwrap();
    let e = one_line_error(&inspector(
        &db,
        &["attribute", "--audit-log", log, "--no-analyze"],
    ));
    assert!(e.contains("several clusters") && e.contains("--cluster"), "{e}");
    let attribute = |flag: &str, cluster: &str| {
        let args = [
            "attribute",
            "--audit-log",
            log,
            "--no-analyze",
            flag,
            cluster,
            "-o",
            "json",
        ];
        json(inspector(&db, &args))["cluster"].clone()
    };
    assert_eq!(attribute("--cluster", EU), EU);
    assert_eq!(attribute("--cluster-id", &us_id), US);

    // A name another etcd cluster has: that cluster restored into a new
    // one, or a mistake; either way the run fails, recorded as a restore.
    let e = one_line_error(&snapshot(&us, &db, &["--cluster", EU]));
    assert!(
        e.contains(&format!("etcd cluster id {us_id} (run ")) && e.contains(&format!(": {eu_id}), head")),
        "{e}"
    );
    assert!(
        e.contains("if it is another cluster, give it another --cluster name"),
        "{e}"
    );
    let failed = runs(&db).last().unwrap().clone();
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["cluster"], EU);
    assert_eq!(
        failed["restored"]["etcd_cluster"],
        json!({"from": eu_id, "to": us_id})
    );
    // Without a name the cluster keeps its own; a new one renames it.
    ok(snapshot(&us, &db, &[]));
    assert_eq!(runs(&db).last().unwrap()["cluster"], US);
    let renamed = ok(snapshot(&us, &db, &["--cluster", "prod-us-3"]));
    assert!(
        stderr(&renamed).contains(&format!(
            "etcd cluster {us_id} was named {US}; it is prod-us-3 now"
        )),
        "{}",
        stderr(&renamed)
    );
    let after = rows(&db, &["findings", "--cluster", "prod-us-3", "-o", "json"]);
    assert_eq!(
        after.len(),
        findings.iter().filter(|f| f["cluster"] == US).count()
    );
    let e = one_line_error(&inspector(&db, &["findings", "--cluster", US]));
    assert!(e.contains("holds no cluster prod-us-2"), "{e}");
    // follow names its cluster as snapshot does.
    ok(inspector(
        &db,
        &[
            "follow",
            "--endpoints",
            &eu.endpoint,
            "--duration",
            "1s",
            "--cluster",
            EU,
        ],
    ));
    let last = runs(&db).pop().unwrap();
    assert_eq!(
        (last["cluster"].as_str(), last["status"].as_str()),
        (Some(EU), Some("complete"))
    );
    let bad = inspector(
        &db,
        &["snapshot", "--endpoints", &us.endpoint, "--cluster", "prod us"],
    );
    assert_exit(&bad, 2);
    assert!(stderr(&bad).contains("is not a cluster name"), "{}", stderr(&bad));
}

/// Each row of a fleet report's table holds the findings `counts` has of
/// its cluster, per detector, and their total.
fn assert_table_counts(report: &Value, counts: &BTreeMap<(String, String), i64>) {
    let table = report["fleet"]["clusters"].as_array().unwrap();
    assert_eq!(table.len(), 2);
    for row in table {
        let cluster = row["cluster"].as_str().unwrap();
        let listed: BTreeMap<&str, i64> = counts
            .iter()
            .filter(|((c, _), _)| c == cluster)
            .map(|((_, d), n)| (d.as_str(), *n))
            .collect();
        let tabled: BTreeMap<&str, i64> = row["findings"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(d, n)| (d.as_str(), n.as_i64().unwrap()))
            .collect();
        assert_eq!(tabled, listed, "{cluster}");
        assert_eq!(row["total"].as_i64(), Some(listed.values().sum()));
        assert_eq!(row["anchor"], format!("cluster-{cluster}"));
    }
}

/// The fleet report of the database: its table counts what `findings`
/// lists per cluster and detector, links to a section per cluster, and
/// each section holds its cluster's findings alone; `--cluster` gives one
/// cluster's report.
fn fleet_report(db: &Path, findings: &[Value]) {
    let counts = per_detector(findings);
    let report = json(inspector(db, &["report", "--format", "json"]));
    assert_report_schema(&report);
    let table = report["fleet"]["clusters"].as_array().unwrap();
    assert_eq!(column(table, "cluster"), [US, EU], "in the order first seen");
    let detectors: Vec<&str> = report["fleet"]["detectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert_eq!(
        detectors,
        ["rewrite", "recreated"],
        "those that found anything, in registry order"
    );
    assert_table_counts(&report, &counts);
    // The table counts what the report's object filter keeps, as
    // `findings` does.
    let pods = json(inspector(
        db,
        &["report", "--format", "json", "--resource", "pods"],
    ));
    let pod_findings = rows(db, &["findings", "--resource", "pods", "-o", "json"]);
    assert!(!pod_findings.is_empty() && pod_findings.len() < findings.len());
    assert_table_counts(&pods, &per_detector(&pod_findings));
    let sections = report["clusters"].as_array().unwrap();
    assert_eq!(column(sections, "cluster"), [US, EU]);
    for section in sections {
        let cluster = section["cluster"].as_str().unwrap();
        let own = section["findings"].as_array().unwrap();
        assert_eq!(
            own.len(),
            findings.iter().filter(|f| f["cluster"] == cluster).count()
        );
        assert!(own.iter().all(|f| f["cluster"] == cluster));
        let runs = section["runs"].as_array().unwrap();
        assert!(!runs.is_empty() && runs.iter().all(|r| r["cluster"] == cluster));
        assert!(section["groups"].as_array().unwrap().iter().all(|g| g["command"]
            .as_str()
            .unwrap()
            .contains(&format!("--cluster {cluster}"))));
        assert!(section["timelines"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|t| t["revisions"].as_array().unwrap())
            .all(|r| r["cluster"] == cluster));
    }

    let md = String::from_utf8(ok(inspector(db, &["report", "--format", "md"])).stdout).unwrap();
    for cluster in [EU, US] {
        assert!(
            md.contains(&format!("| [{cluster}](#cluster-{cluster}) |")),
            "{md}"
        );
        assert!(
            md.contains(&format!(
                "<a id=\"cluster-{cluster}\"></a>\n\n## Cluster {cluster}"
            )),
            "{md}"
        );
    }
    let eu = |d: &str| counts[&(EU.to_string(), d.to_string())];
    let eu_row = format!(
        "| [{EU}](#cluster-{EU}) | {} | {} | {} |",
        eu("rewrite"),
        eu("recreated"),
        eu("rewrite") + eu("recreated")
    );
    assert!(md.contains(&eu_row), "{eu_row} in {md}");
    let text = String::from_utf8(ok(inspector(db, &["report"])).stdout).unwrap();
    assert!(text.contains(&format!("== cluster {EU} ==")), "{text}");
    let html = String::from_utf8(ok(inspector(db, &["report", "--format", "html"])).stdout).unwrap();
    assert!(html.contains(&format!("<a href=\"#cluster-{EU}\">{EU}</a>")));
    assert!(html.contains(&format!("<header id=\"cluster-{EU}\">")));
    assert_eq!(html.matches("class=\"report-data\"").count(), 2);

    let text = String::from_utf8(ok(inspector(db, &["report", "--cluster", US])).stdout).unwrap();
    assert!(text.contains(&format!(", cluster {US} (")), "{text}");
    let one = json(inspector(db, &["report", "--format", "json", "--cluster", US]));
    assert_report_schema(&one);
    assert_eq!(one["cluster"], US);
    let own = one["findings"].as_array().unwrap();
    assert_eq!(own.len(), findings.iter().filter(|f| f["cluster"] == US).count());
    assert!(!own.is_empty() && own.iter().all(|f| f["cluster"] == US));
}

#[test]
fn analyze_of_one_cluster_classifies_that_cluster_only() {
    let (eu, us, _dir, db) = eu_and_us();
    ok(snapshot(&eu, &db, &["--cluster", EU, "--no-analyze"]));
    ok(snapshot(&us, &db, &["--cluster", US, "--no-analyze"]));
    let classified = |args: &[&str]| {
        let out = ok(inspector(&db, args));
        let err = stderr(&out);
        let at = err
            .find(" revisions classified")
            .unwrap_or_else(|| panic!("{err}"));
        let digits = err[..at].rsplit(|c: char| !c.is_ascii_digit()).next().unwrap();
        digits.parse::<i64>().unwrap()
    };
    let stored = stored_revisions(&db);
    let eu_classified = classified(&["analyze", "--cluster", EU]);
    assert_eq!(eu_classified, stored - 2, "EU's own, not US's two");
    assert_eq!(classified(&["analyze", "--cluster", US]), 2);
    assert_eq!(classified(&["analyze"]), 0);
}

/// Revisions whose cluster is not their key's, or unknown.
const OFF_CLUSTER: &str = "SELECT count(*) FROM revisions r JOIN keys k ON k.id = r.key_id \
     WHERE r.cluster_id IS NULL OR r.cluster_id <> k.cluster_id";

/// `stats --cluster NAME -o json` of each of EU and US.
fn stats_of_both(db: &Path) -> Vec<Value> {
    [EU, US]
        .iter()
        .map(|c| json(inspector(db, &["stats", "--cluster", c, "-o", "json"])))
        .collect()
}

#[test]
fn a_database_from_before_revisions_named_their_cluster_is_upgraded_in_place() {
    let (eu, us, _dir, db) = eu_and_us();
    ok(snapshot(&eu, &db, &["--cluster", EU]));
    ok(snapshot(&us, &db, &["--cluster", US]));
    assert_eq!(
        query_int(&db, OFF_CLUSTER),
        0,
        "the writer names each revision's cluster"
    );
    let before = stats_of_both(&db);
    undo_revision_clusters(&db);
    // A reader upgrades it, and reads the same.
    assert_eq!(stats_of_both(&db), before);
    assert_eq!(
        query_int(&db, OFF_CLUSTER),
        0,
        "stored revisions learnt their key's cluster"
    );
    let us_revisions = "SELECT count(*) FROM revisions WHERE cluster_id = (SELECT id FROM clusters WHERE name = 'prod-us-2')";
    assert_eq!(query_int(&db, us_revisions), 2);
    // And the next run goes on from it.
    us.put(
        SHARED,
        &config_map("shop", "web-config", "uid-us-web", &[("mode", "us2")]),
    );
    ok(snapshot(&us, &db, &["--cluster", US]));
    assert_eq!(query_int(&db, us_revisions), 3);
    assert_eq!(query_int(&db, OFF_CLUSTER), 0);
}

#[test]
fn prune_gives_each_clusters_kept_revisions_to_a_run_of_that_cluster() {
    let (eu, us, _dir, db) = eu_and_us();
    for round in 0..3 {
        for (etcd, name) in [(&eu, EU), (&us, US)] {
            let mode = format!("{name}-{round}");
            etcd.put(
                "/registry/configmaps/shop/rounds",
                &config_map("shop", "rounds", "uid-rounds", &[("mode", &mode)]),
            );
            ok(snapshot(etcd, &db, &["--cluster", name, "--no-analyze"]));
        }
    }
    let stored = stored_revisions(&db);
    ok(inspector(&db, &["prune", "--keep-runs", "1"]));
    assert_eq!(runs(&db).len(), 2, "the newest run of each cluster");
    assert!(stored_revisions(&db) < stored, "the older rounds' revisions went");
    let off_run =
        "SELECT count(*) FROM revisions r JOIN runs n ON n.id = r.run_id WHERE n.cluster_id <> r.cluster_id";
    assert_eq!(
        query_int(&db, off_run),
        0,
        "no revision moved to another cluster's run"
    );
    for name in [EU, US] {
        let own = rows(
            &db,
            &[
                "history",
                "--cluster",
                name,
                "/registry/configmaps/shop/rounds",
                "-o",
                "json",
            ],
        );
        // The revision before the kept run's view, and the kept run's own.
        assert_eq!(own.len(), 2, "{name}: {own:?}");
        assert!(own.iter().all(|h| h["cluster"] == name), "{own:?}");
    }
}
