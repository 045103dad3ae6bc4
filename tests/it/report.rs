//! `report` end to end on the demo's cluster and incident: every injected
//! anomaly and nothing else, a JSON report that validates against the
//! checked-in schema, Markdown tables, `--fail-on`, and the HTML report
//! rendered by a real browser.

#[path = "../../demo/src/scenario.rs"]
mod scenario;

use crate::util::etcd::TestEtcd;
use crate::util::k8s::{pod, secret};
use crate::util::{
    assert_exit, assert_report_schema, assert_secrets_nowhere, chromium, config_home, db_in, inspector, json,
    ok, runs, snapshot, stderr, stored_revisions, temp_db,
};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The keys the report's timelines show.
fn timeline_keys(report: &Value) -> BTreeSet<&str> {
    report["timelines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].as_str().unwrap())
        .collect()
}

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
    let db = db_in(dir, "db");
    scenario::cluster(&writer);
    ok(snapshot(&etcd, &db, &[]));
    scenario::incident(&writer);
    ok(snapshot(&etcd, &db, &[]));
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
    let involved: BTreeSet<&str> = expected.iter().map(|(_, k)| k.as_str()).collect();
    assert_eq!(involved.len(), 12, "the keys the findings name");
    assert!(
        involved.is_subset(&timeline_keys(&report)),
        "a timeline for every key a finding names"
    );

    // The summary counts what the database holds.
    let summary = &report["summary"];
    let total = |rows: &serde_json::Value| -> i64 {
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| r[1].as_i64().unwrap())
            .sum()
    };
    let stored = stored_revisions(&db);
    assert!(stored > 0);
    assert_eq!(total(&summary["writes_by_class"]), stored);
    assert_eq!(total(&summary["writes_by_resource"]), stored);
    assert_eq!(
        summary["busiest_keys"][0],
        serde_json::json!(["/registry/deployments/shop/web", 8]),
        "the flapping Deployment is written most"
    );

    assert_report_schema(&report);

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
    assert_eq!(
        assert_secrets_nowhere(&db, &["hunter2"]),
        1,
        "the demo's Secret is a keyed hash, its password nowhere"
    );

    // Filters.
    let only_high = json(inspector(
        &db,
        &["report", "--format", "json", "--severity", "high"],
    ));
    // generation-mismatch and the ClusterRoleBinding written around the apiserver.
    assert_eq!(only_high["findings"].as_array().unwrap().len(), 2);
    let pods = json(inspector(
        &db,
        &["report", "--format", "json", "--resource", "pods"],
    ));
    let pod_findings = pods["findings"].as_array().unwrap();
    assert_eq!(
        pod_findings.len(),
        scenario::EXPECTED
            .iter()
            .filter(|(_, k)| k.starts_with("/registry/pods/"))
            .count(),
        "{pod_findings:#?}"
    );
    assert!(pod_findings
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

/// `-o` names the format, as in every command; `--output` the file, whose
/// extension chooses the format when none is named; `-o FILE`, the old
/// spelling, still writes the file, with a warning.
#[test]
fn report_o_is_the_format_and_output_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = demo_database(dir.path());
    let cwd = tempfile::tempdir().unwrap();
    let out = ok(std::process::Command::new(env!("CARGO_BIN_EXE_etcd-inspector"))
        .current_dir(cwd.path())
        .args(["--db", db.to_str().unwrap(), "report", "-o", "json"])
        .env("XDG_CONFIG_HOME", config_home())
        .output()
        .unwrap());
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("JSON on standard output");
    assert_eq!(
        std::fs::read_dir(cwd.path()).unwrap().count(),
        0,
        "no file written"
    );
    let html = dir.path().join("incident.html");
    ok(inspector(&db, &["report", "--output", html.to_str().unwrap()]));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<html lang=\"en\">"),
        "{}",
        &page[..200.min(page.len())]
    );
    let md = dir.path().join("old-spelling.md");
    let old = ok(inspector(&db, &["report", "-o", md.to_str().unwrap()]));
    assert!(
        stderr(&old).contains("-o names the format now"),
        "{}",
        stderr(&old)
    );
    assert!(std::fs::read_to_string(&md).unwrap().starts_with('#'));
    // The old spelling with --format, as scripts wrote it.
    let scripted = dir.path().join("scripted.json");
    let old = ok(inspector(
        &db,
        &["report", "--format", "json", "-o", scripted.to_str().unwrap()],
    ));
    assert!(
        stderr(&old).contains("-o names the format now"),
        "{}",
        stderr(&old)
    );
    let written = std::fs::read_to_string(&scripted).unwrap();
    serde_json::from_str::<serde_json::Value>(&written).unwrap();
    assert_exit(&inspector(&db, &["report", "--format", "md", "-o", "json"]), 1);
    let both = inspector(
        &db,
        &["report", "-o", "nonsense", "--output", md.to_str().unwrap()],
    );
    assert_exit(&both, 1);
    assert!(stderr(&both).contains("not a format"), "{}", stderr(&both));
}

#[test]
fn html_report_renders_in_a_browser() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = demo_database(dir.path());
    let html = dir.path().join("report.html");
    ok(inspector(
        &db,
        &["report", "--format", "html", "--output", html.to_str().unwrap()],
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
    // The page as a browser lays it out in a window `width` pixels wide.
    let dom_at = |width: u32, url: &str| {
        let out = std::process::Command::new(&browser)
            .args(flags)
            .arg(format!(
                "--user-data-dir={}",
                dir.path().join(format!("profile-dom-{width}")).display()
            ))
            .arg(format!("--window-size={width},2000"))
            .args(["--virtual-time-budget=5000", "--dump-dom", url])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let dom = dom_at(1400, &url);
    assert!(
        dom.contains("data-rendered=\"true\""),
        "the page's script ran: {}",
        &dom[..dom.len().min(500)]
    );
    let report = json(inspector(&db, &["report", "--format", "json"]));
    assert_eq!(
        dom.matches("<tr class=\"group\"").count(),
        report["groups"].as_array().unwrap().len(),
        "one findings-table row per group"
    );
    assert_eq!(
        dom.matches("<div class=\"finding\"").count(),
        scenario::EXPECTED.len(),
        "each of the demo's few findings in its group's sample"
    );
    assert!(
        dom.matches("class=\"timeline\"").count() >= 8,
        "a timeline per key involved"
    );
    assert!(
        dom.contains("class=\"hit\""),
        "finding revisions are highlighted on the timelines"
    );
    assert!(
        dom.contains("time axis: "),
        "timelines the clock places are drawn on a time axis"
    );
    // The page fits the window, wide or narrow; at 700 px the timelines
    // are narrower, so more of their marks gather into clusters, each
    // with its count.
    let narrow = dom_at(700, &url);
    for (width, dom) in [(1400, &dom), (700, &narrow)] {
        assert!(
            dom.contains("data-overflows=\"false\""),
            "the page is wider than a {width} px window"
        );
        assert!(
            !dom.contains("<svg width=\"") || svg_widths(dom).iter().all(|w| *w <= width),
            "a timeline wider than the {width} px window: {:?}",
            svg_widths(dom)
        );
    }
    let clusters = |dom: &str| dom.matches("class=\"cluster\"").count();
    assert!(
        clusters(&narrow) >= clusters(&dom),
        "{} at 700 px, {} at 1400 px",
        clusters(&narrow),
        clusters(&dom)
    );
    assert!(
        clusters(&narrow) > 0,
        "close revisions gather into a cluster at 700 px"
    );
    assert!(
        narrow.contains("data-count=\""),
        "a cluster says how many revisions it holds"
    );
    for width in [1400, 700] {
        let shot = dir.path().join(format!("report-{width}.png"));
        let status = std::process::Command::new(&browser)
            .args(flags)
            .arg(format!(
                "--user-data-dir={}",
                dir.path().join(format!("profile-shot-{width}")).display()
            ))
            .arg(format!("--window-size={width},2000"))
            .arg("--virtual-time-budget=5000")
            .arg(format!("--screenshot={}", shot.display()))
            .arg(&url)
            .output()
            .unwrap();
        assert!(status.status.success());
        assert!(
            std::fs::metadata(&shot).unwrap().len() > 20_000,
            "a screenshot of the rendered page at {width} px"
        );
    }

    // With --local the page shows its times in the zone it was made in
    // (a POSIX rule: UTC+05:30 all year, no time zone database needed).
    let local = dir.path().join("local.html");
    let made = std::process::Command::new(env!("CARGO_BIN_EXE_etcd-inspector"))
        .env("XDG_CONFIG_HOME", config_home())
        .env("TZ", "IST-5:30")
        .args([
            "--db",
            db.to_str().unwrap(),
            "--local",
            "report",
            "--format",
            "html",
        ])
        .args(["--output", local.to_str().unwrap()])
        .output()
        .unwrap();
    assert_exit(&made, 0);
    let dom = dom_at(1400, &format!("file://{}", local.display()));
    let axis = &dom[dom.find("time axis: ").expect("a time axis")..];
    let axis = &axis[..axis.find(" (each mark").unwrap()];
    assert_eq!(axis.matches("+05:30").count(), 2, "{axis}");
    let runs = report["runs"].as_array().unwrap().len();
    assert_eq!(dom.matches("+05:30</td>").count(), runs, "each run's start");
    let runs_table = &dom[dom.find("class=\"runs-body\"").unwrap()..];
    assert!(!runs_table.contains("Z</td>"), "{runs_table}");
}

/// The widths of the timelines' SVGs in a dumped page.
fn svg_widths(dom: &str) -> Vec<u32> {
    dom.split("<svg width=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next()?.parse().ok())
        .collect()
}

/// Values a tenant could write into a ConfigMap to attack whoever reads the
/// report: markup for a wiki or issue, pipes and backticks for Markdown
/// tables and code spans, newlines, and terminal escape sequences (retitle
/// and clear the screen; C1 CSI).
const IMG: &str = "<img src=x onerror=\"alert(1)\">";
const SCRIPT: &str = "<script>alert(1)</script>";
const RETITLE: &str = "\x1b]0;owned\x07\x1b[2J";
const CSI: &str = "\u{9b}31mred";
const MANAGER: &str = "<b>evil|mgr\x1b[2J</b>";

fn hostile_configmap(name: &str, state: usize) -> Vec<u8> {
    let data = if state == 0 {
        serde_json::json!({"html": IMG, "pipe": "a|b", "tick": "`", "fence": "```",
                           "nl": "one\ntwo", "term": RETITLE, "csi": CSI})
    } else {
        serde_json::json!({"html": SCRIPT, "pipe": "x|y|z", "tick": "`edge", "fence": "```sh\nrm -rf /\n```",
                           "nl": "three\nfour", "term": "\x1b[31mred\x1b[0m", "csi": "\u{9b}2J"})
    };
    let mut v = serde_json::to_vec(&serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "evil", "uid": format!("uid-{name}"),
                     "managedFields": [{"manager": MANAGER, "operation": "Update", "apiVersion": "v1",
                                        "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]},
        "data": data
    }))
    .unwrap();
    v.push(b'\n');
    v
}

/// The ConfigMap whose values flap between the two hostile states.
const HOSTILE_KEY: &str = "/registry/configmaps/evil/cm";
/// A key that is itself hostile (etcd takes any bytes).
const HOSTILE_NAME: &str = "x|`y\x1b[2J<script>";

/// A database with two runs around the hostile ConfigMaps' changes.
fn hostile_database(dir: &Path) -> PathBuf {
    let etcd = TestEtcd::start();
    let db = db_in(dir, "db");
    let odd_key = format!("/registry/configmaps/evil/{HOSTILE_NAME}");
    etcd.put(HOSTILE_KEY, &hostile_configmap("cm", 0));
    etcd.put(&odd_key, &hostile_configmap(HOSTILE_NAME, 0));
    ok(snapshot(&etcd, &db, &[]));
    // Flap every value 0 → 1 → 0 → 1 → 0 → 1, and rewrite the odd key byte
    // for byte, so both keys are named by findings.
    for state in [1, 0, 1, 0, 1] {
        etcd.put(HOSTILE_KEY, &hostile_configmap("cm", state));
    }
    etcd.put(&odd_key, &hostile_configmap(HOSTILE_NAME, 0));
    ok(snapshot(&etcd, &db, &[]));
    db
}

/// No terminal control in `out`: no ESC, BEL or C1 CSI, nor any other C0
/// but the line breaks and DEL or C1 character.
fn assert_no_terminal_control(what: &str, out: &[u8]) {
    let text = std::str::from_utf8(out).unwrap_or_else(|e| panic!("{what}: not UTF-8: {e}"));
    let bad: Vec<char> = text.chars().filter(|&c| c.is_control() && c != '\n').collect();
    assert!(
        bad.is_empty(),
        "{what} holds raw control characters {bad:?}:\n{text}"
    );
    assert!(!out.contains(&0x1b) && !out.contains(&0x07), "{what}");
}

/// `line` without its inline code spans (CommonMark: a run of n backticks
/// up to the next run of exactly n).
fn outside_code(line: &str) -> String {
    let b = line.as_bytes();
    let (mut out, mut i) = (String::new(), 0);
    while i < b.len() {
        if b[i] != b'`' {
            let next = line[i..].find('`').map_or(b.len(), |j| i + j);
            out.push_str(&line[i..next]);
            i = next;
            continue;
        }
        let n = b[i..].iter().take_while(|&&c| c == b'`').count();
        let mut j = i + n;
        let close = loop {
            match line[j..].find('`') {
                None => break None,
                Some(k) => {
                    let start = j + k;
                    let m = b[start..].iter().take_while(|&&c| c == b'`').count();
                    if m == n {
                        break Some(start + m);
                    }
                    j = start + m;
                }
            }
        };
        match close {
            Some(end) => i = end,
            None => {
                // An unmatched fence is literal text.
                out.push_str(&line[i..i + n]);
                i += n;
            }
        }
    }
    out
}

/// Cell separators of a GFM table row: `|` not escaped as `\|`.
fn unescaped_pipes(row: &str) -> usize {
    let b = row.as_bytes();
    (0..b.len())
        .filter(|&i| b[i] == b'|' && (i == 0 || b[i - 1] != b'\\'))
        .count()
}

#[test]
fn reports_quote_hostile_values() {
    let dir = tempfile::tempdir().unwrap();
    let db = hostile_database(dir.path());
    let stdout = |args: &[&str]| ok(inspector(&db, args)).stdout;

    // The findings name both keys, so both have timelines with the values.
    let report = json(inspector(&db, &["report", "--format", "json"]));
    let odd_key = format!("/registry/configmaps/evil/{HOSTILE_NAME}");
    let timeline_keys = timeline_keys(&report);
    assert!(
        timeline_keys.contains(HOSTILE_KEY) && timeline_keys.contains(odd_key.as_str()),
        "{timeline_keys:?}"
    );
    // JSON stays raw JSON: the values as they are.
    assert!(serde_json::to_string(&report)
        .unwrap()
        .contains("\\u001b]0;owned\\u0007"));

    // HTML: the embedded report data holds no markup of its own.
    let html = String::from_utf8(stdout(&["report", "--format", "html"])).unwrap();
    assert!(!html.contains("<img") && !html.contains("<script>alert") && !html.contains("<b>evil"));
    assert!(html.contains("\\u003cimg src=x onerror="), "the value, escaped");

    // Markdown: values as code, no markup outside code spans, table rows
    // keep their columns.
    let md_bytes = stdout(&["report", "--format", "md"]);
    assert_no_terminal_control("report --format md", &md_bytes);
    let md = String::from_utf8(md_bytes).unwrap();
    for line in md.lines() {
        let prose = outside_code(line);
        let markup = prose.replace("<br>", "");
        assert!(
            !markup.contains('<') && !markup.contains('>'),
            "markup outside code spans: {line}"
        );
    }
    let mut columns = None;
    let mut rows = 0;
    for line in md.lines() {
        if !line.starts_with('|') {
            columns = None;
            continue;
        }
        let n = unescaped_pipes(line);
        let expected = *columns.get_or_insert(n);
        assert_eq!(n, expected, "a row with other columns than its header: {line}");
        rows += 1;
    }
    assert!(rows > 10, "{md}");
    assert!(md.contains("`<img src=x onerror=\"alert(1)\">`"), "{md}");
    assert!(md.contains("`<script>alert(1)</script>`"), "{md}");
    assert!(md.contains("`\\x1b]0;owned\\x07\\x1b[2J`"), "{md}");
    assert!(md.contains("`\\u{9b}31mred`"), "{md}");
    assert!(md.contains("`one\\ntwo`"), "{md}");
    assert!(md.contains("`a\\|b`"), "{md}");
    assert!(md.contains("`` ` ``"), "a lone backtick in a longer fence: {md}");
    assert!(
        md.contains("```` ``` ````"),
        "a triple backtick in a longer fence: {md}"
    );
    assert!(
        md.contains("&lt;b&gt;evil\\|mgr\\x1b\\[2J&lt;/b&gt;"),
        "the manager as text: {md}"
    );

    // The text report, `history --diff`, `diff`, `findings` and `runs`:
    // nothing a terminal would act on, the values still recognisable.
    let text = stdout(&["report"]);
    assert_no_terminal_control("report", &text);
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("\\u{9b}31mred"), "{text}");

    let history = stdout(&["history", HOSTILE_KEY, "--diff"]);
    assert_no_terminal_control("history --diff", &history);
    let history = String::from_utf8(history).unwrap();
    assert!(
        history.contains("data.term: \\x1b]0;owned\\x07\\x1b[2J → \\x1b[31mred\\x1b[0m"),
        "{history}"
    );
    assert!(
        history.contains("data.csi: \\u{9b}31mred → \\u{9b}2J"),
        "{history}"
    );
    assert!(history.contains("data.nl: one\\ntwo → three\\nfour"), "{history}");
    assert!(history.contains(IMG), "{history}");
    assert!(history.contains("(by <b>evil|mgr\\x1b[2J</b>)"), "{history}");
    let odd_history = stdout(&["history", &odd_key]);
    assert_no_terminal_control("history of the odd key", &odd_history);

    let runs = runs(&db);
    let (a, b) = (runs[0]["id"].to_string(), runs[1]["id"].to_string());
    let diff = stdout(&["diff", &a, &b]);
    assert_no_terminal_control("diff", &diff);
    let diff = String::from_utf8(diff).unwrap();
    assert!(
        diff.contains("data.term: \"\\u001b]0;owned\\u0007\\u001b[2J\""),
        "{diff}"
    );
    assert!(diff.contains("\\u{9b}31mred"), "{diff}");

    let findings = stdout(&["findings"]);
    assert_no_terminal_control("findings", &findings);
    let findings = String::from_utf8(findings).unwrap();
    assert!(findings.contains("x|`y\\x1b[2J<script>"), "{findings}");
    assert!(findings.contains("\\x1b]0;owned\\x07\\x1b[2J"), "{findings}");
    assert_no_terminal_control("runs", &stdout(&["runs"]));
}

/// One object filter means one answer: after a run under a custom prefix,
/// `report`, `findings` and the summary agree on which objects a
/// `--resource` or `--namespace` keeps (the report used to re-read keys
/// with the default prefix and list no findings).
#[test]
fn object_filters_agree_under_a_custom_prefix() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let pod_key = "/custom/pods/shop/web";
    let secret_key = "/custom/secrets/ops/token";
    for (key, value) in [
        (pod_key, pod("shop", "web", "uid-p", "web:1")),
        (secret_key, secret("ops", "token", "uid-s", "hunter2")),
    ] {
        // An identical rewrite: one `rewrite` finding per key.
        etcd.put(key, &value);
        etcd.put(key, &value);
    }
    ok(snapshot(&etcd, &db, &["--prefix", "/custom/"]));
    let keys_of = |findings: &serde_json::Value| -> Vec<String> {
        findings
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["keys"][0].as_str().unwrap().to_string())
            .collect()
    };
    for (flag, value, key, resource) in [
        ("--resource", "pods", pod_key, "pods"),
        ("--resource", "secrets", secret_key, "secrets"),
        ("--namespace", "ops", secret_key, "secrets"),
    ] {
        let report = json(inspector(&db, &["report", "--format", "json", flag, value]));
        assert_eq!(keys_of(&report["findings"]), [key], "report {flag} {value}");
        let summed: i64 = report["summary"]["findings"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|by_severity| by_severity.as_object().unwrap().values())
            .map(|n| n.as_i64().unwrap())
            .sum();
        assert_eq!(summed, 1, "the summary counts what the list shows");
        let by_resource = report["summary"]["writes_by_resource"].as_array().unwrap();
        assert_eq!(by_resource.len(), 1, "{by_resource:?}");
        assert_eq!(by_resource[0][0].as_str(), Some(resource));
        let listed = json(inspector(&db, &["findings", "-o", "json", flag, value]));
        assert_eq!(keys_of(&listed), [key], "findings {flag} {value}");
    }
    let none = json(inspector(
        &db,
        &["findings", "-o", "json", "--resource", "configmaps"],
    ));
    assert_eq!(none.as_array().unwrap().len(), 0);
}

/// Many findings of one cause are one group: 60 ConfigMaps in two
/// namespaces each rewritten with identical bytes make one `rewrite` group
/// for every ConfigMap, with its exact count, a sample and the command for
/// the rest, which lists exactly the others; a namespace where only some
/// were rewritten is a group of its own. Every format says so; `-o json`
/// and `findings -o json` still carry every finding.
#[test]
fn findings_of_one_cause_are_one_group_with_a_sample() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let rewritten = 60;
    for ns in ["a", "b"] {
        for i in 0..rewritten / 2 {
            let key = format!("/registry/configmaps/{ns}/cm-{i}");
            let value = crate::util::k8s::config_map(
                ns,
                &format!("cm-{i}"),
                &format!("{ns}-{i}"),
                &[("app.properties", "a=1")],
            );
            etcd.put(&key, &value);
            etcd.put(&key, &value);
        }
    }
    ok(snapshot(&etcd, &db, &[]));
    let report = json(inspector(&db, &["report", "--format", "json"]));
    let groups = report["groups"].as_array().unwrap();
    let rewrite: Vec<&Value> = groups.iter().filter(|g| g["detector"] == "rewrite").collect();
    assert_eq!(rewrite.len(), 1, "{groups:#?}");
    let g = rewrite[0];
    assert_eq!(g["every_object"], true, "{g:#}");
    assert_eq!(g["resource"], "configmaps");
    assert_eq!(g["namespace"], Value::Null);
    assert_eq!(g["count"], rewritten);
    assert_eq!(g["sample"].as_array().unwrap().len(), 3);
    assert_eq!(g["command"], "findings --detector rewrite --resource configmaps");
    let all = report["findings"].as_array().unwrap();
    assert_eq!(
        all.iter().filter(|f| f["detector"] == "rewrite").count(),
        rewritten
    );
    assert_eq!(
        report["timelines"].as_array().unwrap().len(),
        3,
        "timelines of the sample only"
    );

    // The group's command lists the whole group.
    let args: Vec<&str> = g["command"].as_str().unwrap().split(' ').collect();
    let listed = json(inspector(&db, &[args.as_slice(), &["-o", "json"]].concat()));
    assert_eq!(listed.as_array().unwrap().len(), rewritten);

    let text = String::from_utf8(ok(inspector(&db, &["report"])).stdout).unwrap();
    assert!(
        text.contains("[low] rewrite · every configmaps object: 60 (revisions")
            && text.contains("and 57 more: findings --detector rewrite --resource configmaps"),
        "{text}"
    );
    let md = String::from_utf8(ok(inspector(&db, &["report", "--format", "md"])).stdout).unwrap();
    assert!(
        md.contains("| low | rewrite · every configmaps object | 60 |"),
        "{md}"
    );
    assert!(
        md.contains("and 57 more: `findings --detector rewrite --resource configmaps`"),
        "{md}"
    );

    // Another namespace where only some were rewritten: no longer every
    // object, so one group per namespace.
    for i in 0..4 {
        let value = crate::util::k8s::config_map("c", &format!("cm-{i}"), &format!("c-{i}"), &[]);
        etcd.put(&format!("/registry/configmaps/c/cm-{i}"), &value);
    }
    let value = crate::util::k8s::config_map("c", "cm-0", "c-0", &[]);
    etcd.put("/registry/configmaps/c/cm-0", &value);
    ok(snapshot(&etcd, &db, &[]));
    let report = json(inspector(&db, &["report", "--format", "json"]));
    let by_ns: Vec<(Value, Value, Value)> = report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["detector"] == "rewrite")
        .map(|g| {
            (
                g["namespace"].clone(),
                g["count"].clone(),
                g["every_object"].clone(),
            )
        })
        .collect();
    assert_eq!(
        by_ns,
        [
            (Value::from("a"), Value::from(30), Value::from(false)),
            (Value::from("b"), Value::from(30), Value::from(false)),
            (Value::from("c"), Value::from(1), Value::from(false)),
        ]
    );
}
