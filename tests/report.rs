//! `report` end to end on the demo's cluster and incident: every injected
//! anomaly and nothing else, a JSON report that validates against the
//! checked-in schema, Markdown tables, `--fail-on`, and the HTML report
//! rendered by a real browser.

mod common;

#[path = "../examples/demo/scenario.rs"]
mod scenario;

use common::etcd::TestEtcd;
use common::{inspector, json, ok};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A database holding the demo's two runs around its incident.
fn demo_database(dir: &Path) -> PathBuf {
    let etcd = TestEtcd::start();
    let (put, delete, compact) = (
        |k: &str, v: &[u8]| etcd.put(k, v),
        |k: &str| etcd.delete(k),
        |r: i64| etcd.compact(r),
    );
    let writer = scenario::Etcd {
        put: &put,
        delete: &delete,
        compact: &compact,
    };
    let db = dir.join("db.sqlite");
    scenario::cluster(&writer);
    ok(inspector(&db, &["snapshot", "--endpoints", &etcd.endpoint]));
    scenario::incident(&writer);
    ok(inspector(&db, &["snapshot", "--endpoints", &etcd.endpoint]));
    db
}

#[test]
fn reports_every_injected_anomaly_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let db = demo_database(dir.path());
    let report = json(inspector(&db, &["report", "--format", "json"]));

    let found: BTreeSet<(String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["detector"].as_str().unwrap().to_string(),
                f["keys"][0].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: BTreeSet<(String, String)> = scenario::EXPECTED
        .iter()
        .map(|(d, k)| (d.to_string(), k.to_string()))
        .collect();
    assert_eq!(found, expected);
    let timeline_keys: BTreeSet<&str> = report["timelines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].as_str().unwrap())
        .collect();
    assert!(expected.iter().all(|(_, k)| timeline_keys.contains(k.as_str())));

    // The summary counts what the database holds.
    let summary = &report["summary"];
    let total = |rows: &serde_json::Value| -> i64 {
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| r[1].as_i64().unwrap())
            .sum()
    };
    let stored: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT count(*) FROM revisions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(total(&summary["writes_by_class"]), stored);
    assert_eq!(total(&summary["writes_by_resource"]), stored);
    assert_eq!(
        summary["busiest_keys"][0],
        serde_json::json!(["/registry/deployments/shop/web", 8]),
        "the flapping Deployment is written most"
    );

    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schemas/report.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&report)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");

    let md = String::from_utf8(ok(inspector(&db, &["report", "--format", "md"])).stdout).unwrap();
    assert!(
        md.contains("| severity | detector | summary | revisions |\n|---|---|---|---|"),
        "{md}"
    );
    assert!(
        md.contains(
            "| high | generation-mismatch | Deployment shop/api: status.observedGeneration went 3 → 2"
        ),
        "{md}"
    );
    assert!(!md.contains("aHVudGVyMg"), "no Secret value in the report");

    // Filters.
    let only_high = json(inspector(
        &db,
        &["report", "--format", "json", "--severity", "high"],
    ));
    assert_eq!(only_high["findings"].as_array().unwrap().len(), 1);
    let pods = json(inspector(
        &db,
        &["report", "--format", "json", "--resource", "pods"],
    ));
    assert!(pods["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["keys"][0].as_str().unwrap().starts_with("/registry/pods/")));
    let late = json(inspector(
        &db,
        &["report", "--format", "json", "--since", "rev:1000"],
    ));
    assert!(late["findings"].as_array().unwrap().is_empty());

    // --fail-on for CronJobs and CI gates.
    assert_eq!(
        inspector(&db, &["report", "--fail-on", "high"]).status.code(),
        Some(4)
    );
    assert_eq!(
        inspector(&db, &["report", "--fail-on", "critical"]).status.code(),
        Some(0)
    );
    assert_eq!(
        inspector(&db, &["analyze", "--fail-on", "medium"]).status.code(),
        Some(4)
    );
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        })
}

#[test]
fn html_report_renders_in_a_browser() {
    let Some(browser) = chromium() else {
        eprintln!("skipping: no chromium on PATH (.ci/run installs Debian's chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = demo_database(dir.path());
    let html = dir.path().join("report.html");
    ok(inspector(
        &db,
        &["report", "--format", "html", "-o", html.to_str().unwrap()],
    ));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        !page.contains("<script src") && !page.contains("<link") && !page.contains("src=\"http"),
        "the report loads nothing from elsewhere"
    );
    let url = format!("file://{}", html.display());
    let flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ];
    let dom = std::process::Command::new(&browser)
        .args(flags)
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile-dom").display()
        ))
        .args(["--virtual-time-budget=5000", "--dump-dom", &url])
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("data-rendered=\"true\""),
        "the page's script ran: {}",
        &dom[..dom.len().min(500)]
    );
    let rows = dom.matches("<span class=\"sev sev-").count();
    assert_eq!(
        rows,
        scenario::EXPECTED.len(),
        "one findings-table row per finding"
    );
    assert!(
        dom.matches("class=\"timeline\"").count() >= 8,
        "a timeline per key involved"
    );
    assert!(
        dom.contains("class=\"hit\""),
        "finding revisions are highlighted on the timelines"
    );
    let shot = dir.path().join("report.png");
    let status = std::process::Command::new(&browser)
        .args(flags)
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile-shot").display()
        ))
        .args(["--window-size=1400,2000", "--virtual-time-budget=5000"])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .unwrap();
    assert!(status.status.success());
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 20_000,
        "a screenshot of the rendered page"
    );
}
