//! The storage boundary's contract: what every backend answers through the
//! traits the rest of the tool uses (`RunRecorder`, `HistoryReader`,
//! `FindingsWriter`, and the rows a run's `RevisionWriter` writes). Each
//! case runs on a SQLite file and, where the PostgreSQL server is installed
//! (always in CI), on a PostgreSQL database, through the library, not the
//! command line, and both must answer alike.

use crate::util::k8s::{config_map, secret};
use crate::util::postgres;
use crate::util::undo_typed_runs;
use etcd_inspector::analyze::attribution;
use etcd_inspector::lifecycle::RevisionWriter;
use etcd_inspector::source::{LiveKey, Record, Revision, Sink};
use etcd_inspector::store::audit::AuditRequest;
use etcd_inspector::store::clock::ByClock;
use etcd_inspector::store::cluster::ClusterName;
use etcd_inspector::store::copy::{copy, CopyWhich};
use etcd_inspector::store::finding::{Finding, FindingQuery, Severity};
use etcd_inspector::store::tables::COLUMNS;
use etcd_inspector::store::{
    ClusterId, Gap, RunFact, RunId, RunKind, RunStatus, Scope, ServedBy, Store, StoreError,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The `--db` of a fresh database of each backend this machine has.
fn backends(dir: &Path) -> Vec<PathBuf> {
    let mut dbs = vec![dir.join("contract.sqlite")];
    match postgres::database_in(dir) {
        Some(uri) => dbs.push(PathBuf::from(uri)),
        None => eprintln!("PostgreSQL is not installed: the contract runs on SQLite only"),
    }
    dbs
}

/// Runs `case` on a fresh database of each backend.
fn on_each_backend(case: impl Fn(&Store)) {
    let dir = tempfile::tempdir().unwrap();
    for db in backends(dir.path()) {
        eprintln!(
            "backend: {}",
            if db.extension().is_some() {
                "sqlite"
            } else {
                "postgres"
            }
        );
        case(&Store::open_for_writing(&db).unwrap());
    }
}

/// A run of the cluster `name` begun, reading from `history_from` to
/// `head`, and its writer.
fn begin<'s>(
    store: &'s Store,
    name: &str,
    history_from: i64,
    head: i64,
) -> (ClusterId, RunId, RevisionWriter<'s>) {
    store.load_hash_key(&Default::default()).unwrap();
    let run = store
        .begin_run(RunKind::Live, &format!("contract:{name}"), "/registry/", "")
        .unwrap();
    let (cluster, _) = store.cluster(name, None).unwrap();
    let target = RunFact::Target {
        cluster,
        head: Revision(head),
        compact: Revision(0),
        history_from: Revision(history_from),
    };
    store.record(run, target).unwrap();
    let fields = store.field_config(None, &[]).unwrap();
    let writer = RevisionWriter::unfiltered(&**store, cluster, run, fields).unwrap();
    (cluster, run, writer)
}

fn put(key: &str, mod_revision: i64, create_revision: i64, version: i64, entry: &str) -> Record {
    let name = key.rsplit('/').next().unwrap();
    Record {
        key: key.as_bytes().to_vec(),
        mod_revision: Revision(mod_revision),
        create_revision: Revision(create_revision),
        version,
        lease: 0,
        value: config_map(
            "shop",
            name,
            &format!("uid-{name}-{create_revision}"),
            &[("app.properties", entry)],
        ),
        deleted: false,
    }
}

fn tombstone(key: &str, mod_revision: i64) -> Record {
    Record {
        key: key.as_bytes().to_vec(),
        mod_revision: Revision(mod_revision),
        create_revision: Revision(0),
        version: 0,
        lease: 0,
        value: Vec::new(),
        deleted: true,
    }
}

/// Every revision and object of one cluster.
fn of_cluster(cluster: ClusterId) -> Scope {
    Scope {
        objects: etcd_inspector::store::ObjectFilter {
            cluster: Some(cluster),
            ..Default::default()
        },
        ..Default::default()
    }
}

const WEB: &str = "/registry/configmaps/shop/web.config";
const API: &str = "/registry/configmaps/shop/api.config";

#[test]
fn revisions_written_are_read_back_as_written() {
    on_each_backend(|store| {
        let (cluster, run, mut w) = begin(store, "contract-a", 1, 6);
        w.record(put(WEB, 2, 2, 1, "a=1")).unwrap();
        w.record(put(API, 3, 3, 1, "b=1")).unwrap();
        w.record(put(WEB, 4, 2, 2, "a=2")).unwrap();
        // The same revision again (a source's state and history) is one.
        w.record(put(WEB, 4, 2, 2, "a=2")).unwrap();
        w.record(tombstone(WEB, 5)).unwrap();
        w.record(put(WEB, 6, 6, 1, "a=3")).unwrap();
        w.flush().unwrap();
        assert_eq!(w.added, 5);
        drop(w);
        assert_eq!(store.finish_run(run, RunStatus::Complete, 2, None).unwrap(), 5);

        let rows = store.history(WEB.as_bytes(), Some(cluster)).unwrap();
        let seen: Vec<(i64, i64, bool)> = rows
            .iter()
            .map(|r| (r.mod_revision.0, r.create_revision.0, r.deleted))
            .collect();
        // A file's tombstone learns its generation from the revision before.
        assert_eq!(seen, [(2, 2, false), (4, 2, false), (5, 2, true), (6, 6, false)]);
        assert_eq!(rows[0].kind.as_deref(), Some("ConfigMap"));
        assert_eq!(rows[3].name.as_deref(), Some("web.config"));

        let runs = store.runs().unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!((runs[0].id, runs[0].status), (run, RunStatus::Complete));
        assert_eq!(runs[0].cluster.as_deref(), Some("contract-a"));

        let live: Vec<(String, i64)> = store
            .live_objects(cluster, Revision(6))
            .map(|o| o.map(|o| (o.key, o.mod_revision.0)))
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(live, [(API.to_string(), 3), (WEB.to_string(), 6)]);
        let before_delete: Vec<Revision> = store
            .live_objects(cluster, Revision(4))
            .map(|o| o.unwrap().mod_revision)
            .collect();
        assert_eq!(before_delete, [Revision(3), Revision(4)]);
    });
}

/// The bytes of a hash shown as hex.
fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// More rows than the writer holds before they go in (5,000), in a new
/// cluster, then a run that repeats them all and adds to them: each
/// revision is stored once, new keys of a cluster written before get rows,
/// and a later content is read back through the base the first run stored.
#[test]
fn a_run_of_more_than_a_page_and_one_adding_to_it_store_each_revision_once() {
    const KEYS: i64 = 6_000;
    let key = |i: i64| format!("/registry/configmaps/shop/cm-{i}.config");
    on_each_backend(|store| {
        let (cluster, run, mut w) = begin(store, "contract-pages", 1, KEYS + 1);
        for i in 0..KEYS {
            w.record(put(&key(i), i + 2, i + 2, 1, "a=1")).unwrap();
        }
        w.flush().unwrap();
        assert_eq!(w.added, KEYS);
        drop(w);
        store.finish_run(run, RunStatus::Complete, 2, None).unwrap();

        let head = KEYS + 1 + KEYS / 10 + 10;
        let (_, run, mut w) = begin(store, "contract-pages", 1, head);
        for i in 0..KEYS {
            w.record(put(&key(i), i + 2, i + 2, 1, "a=1")).unwrap();
        }
        // What etcd would say of each key at the head.
        let mut live: Vec<LiveKey> = (0..KEYS)
            .map(|i| LiveKey {
                key: key(i).into_bytes(),
                create_revision: Revision(i + 2),
                mod_revision: Revision(i + 2),
                version: 1,
            })
            .collect();
        let mut revision = KEYS + 1;
        for i in (0..KEYS).step_by(10) {
            revision += 1;
            w.record(put(&key(i), revision, i + 2, 2, &format!("a=2,{i}")))
                .unwrap();
            (live[i as usize].mod_revision, live[i as usize].version) = (Revision(revision), 2);
        }
        for i in KEYS..KEYS + 10 {
            revision += 1;
            w.record(put(&key(i), revision, revision, 1, "a=1")).unwrap();
            live.push(LiveKey {
                key: key(i).into_bytes(),
                create_revision: Revision(revision),
                mod_revision: Revision(revision),
                version: 1,
            });
        }
        w.flush().unwrap();
        assert_eq!(w.added, KEYS / 10 + 10, "only what the first run did not store");
        drop(w);
        store.finish_run(run, RunStatus::Complete, 2, None).unwrap();

        for i in [0, 4_990, 5_990] {
            let rows = store.history(key(i).as_bytes(), Some(cluster)).unwrap();
            let seen: Vec<(i64, i64)> = rows
                .iter()
                .map(|r| (r.mod_revision.0, r.create_revision.0))
                .collect();
            assert_eq!(seen.len(), 2, "{}: {seen:?}", key(i));
            assert_eq!(seen[0], (i + 2, i + 2));
            let later = rows[1].semantic_sha256.as_deref().unwrap();
            let object = store.canonical_value(&unhex(later)).unwrap().unwrap();
            assert_eq!(object["data"]["app.properties"], format!("a=2,{i}"));
        }
        let newest = store.history(key(KEYS + 9).as_bytes(), Some(cluster)).unwrap();
        assert_eq!(
            newest.iter().map(|r| r.mod_revision).collect::<Vec<_>>(),
            [Revision(head)]
        );
        assert_eq!(store.live_objects(cluster, Revision(head)).count(), live.len());
        // The completeness check, pages of keys at a time, finds all of it
        // and then a revision missing from one key of the last page.
        assert_eq!(
            store
                .history_shortfall(cluster, Revision(1), &live, &|_| true)
                .unwrap(),
            None
        );
        live[5_990].version = 3;
        live[5_990].mod_revision = Revision(head + 1);
        let short = store
            .history_shortfall(cluster, Revision(1), &live, &|_| true)
            .unwrap()
            .unwrap();
        assert_eq!((short.keys, short.key, short.stored), (1, key(5_990), 2));
    });
}

#[test]
fn limits_page_and_order_alike() {
    on_each_backend(|store| {
        let (cluster, run, mut w) = begin(store, "contract-b", 1, 4);
        w.record(put(WEB, 2, 2, 1, "a=1")).unwrap();
        w.record(put(API, 3, 3, 1, "b=1")).unwrap();
        w.record(put(WEB, 4, 2, 2, "a=2")).unwrap();
        w.flush().unwrap();
        drop(w);
        store.finish_run(run, RunStatus::Complete, 2, None).unwrap();

        let named = |limit| {
            store
                .keys_named("", "configmaps", Some("shop"), None, limit)
                .unwrap()
                .into_iter()
                .map(|k| k.key)
                .collect::<Vec<_>>()
        };
        assert_eq!(named(None), [API, WEB], "key order");
        assert_eq!(named(Some(1)), [API]);
        let scope = of_cluster(cluster);
        let busiest = store.busiest_keys(&scope, None).unwrap();
        assert_eq!(busiest, [(WEB.to_string(), 2), (API.to_string(), 1)]);
        assert_eq!(store.busiest_keys(&scope, Some(1)).unwrap().len(), 1);
        let usage = store.usage(&scope, 1).unwrap();
        assert_eq!(usage.largest.len(), 1);
    });
}

/// Keys are bytes: a prefix scopes by its UTF-8, whatever the letters (a
/// key written around kube-apiserver need not be ASCII).
#[test]
fn a_key_prefix_scopes_by_its_bytes() {
    const GROSS: &str = "/registry/configmaps/shop/größe.config";
    on_each_backend(|store| {
        let (cluster, run, mut w) = begin(store, "contract-prefix", 1, 3);
        w.record(put(GROSS, 2, 2, 1, "a=1")).unwrap();
        w.record(put(WEB, 3, 3, 1, "b=1")).unwrap();
        w.flush().unwrap();
        drop(w);
        store.finish_run(run, RunStatus::Complete, 2, None).unwrap();
        let mut scope = of_cluster(cluster);
        scope.objects.key_prefix = Some("/registry/configmaps/shop/grö".into());
        assert_eq!(
            store.busiest_keys(&scope, None).unwrap(),
            [(GROSS.to_string(), 1)]
        );
        let usage = store.usage(&scope, 10).unwrap();
        assert_eq!(usage.largest.len(), 1, "{usage:?}");
    });
}

#[test]
fn a_writer_dropped_before_flushing_leaves_nothing() {
    on_each_backend(|store| {
        let (cluster, run, mut w) = begin(store, "contract-c", 1, 40);
        for revision in 2..40 {
            w.record(put(WEB, revision, 2, revision - 1, &format!("a={revision}")))
                .unwrap();
        }
        drop(w);
        store
            .finish_run(run, RunStatus::Failed, 1, Some("stopped"))
            .unwrap();
        assert!(store.history(WEB.as_bytes(), Some(cluster)).unwrap().is_empty());
        assert_eq!(store.runs().unwrap()[0].status, RunStatus::Failed);
    });
}

fn finding(detector: &'static str, severity: Severity, n: usize) -> Finding {
    Finding {
        detector,
        severity,
        keys: vec![format!("/registry/configmaps/shop/cm-{n:04}.properties")],
        revisions: vec![Revision(n as i64 + 2)],
        summary: format!("finding {n}"),
        details: serde_json::json!({ "n": n }),
    }
}

/// Each stored finding of the cluster: id, detector, severity and summary.
fn stored(store: &Store, cluster: ClusterId) -> Vec<(i64, String, Severity, String)> {
    let query = FindingQuery {
        objects: of_cluster(cluster).objects,
        ..Default::default()
    };
    store
        .findings(&query)
        .map(|f| f.map(|f| (f.id, f.detector, f.severity, f.summary)))
        .collect::<Result<_, StoreError>>()
        .unwrap()
}

#[test]
fn findings_are_replaced_keep_their_ids_and_read_in_pages() {
    on_each_backend(|store| {
        let (cluster, run, w) = begin(store, "contract-d", 1, 1);
        drop(w);
        store.finish_run(run, RunStatus::Complete, 0, None).unwrap();
        // More than a page of the reading iterator (500).
        let mut writer = store.findings_writer(cluster, &["flapping", "orphans"]).unwrap();
        for n in 0..1200 {
            let severity = if n % 3 == 0 { Severity::High } else { Severity::Low };
            writer.put(&finding("flapping", severity, n)).unwrap();
        }
        writer.put(&finding("orphans", Severity::Critical, 5000)).unwrap();
        writer.commit().unwrap();
        let first = stored(store, cluster);
        assert_eq!(first.len(), 1201);
        assert_eq!(first[0].2, Severity::Critical, "most severe first");
        assert_eq!(first.iter().filter(|f| f.2 == Severity::High).count(), 400);
        let order: Vec<Severity> = first.iter().map(|f| f.2).collect();
        assert!(order.windows(2).all(|p| p[0] >= p[1]), "by severity");
        let highs: Vec<i64> = first
            .iter()
            .filter(|f| f.2 == Severity::High)
            .map(|f| f.0)
            .collect();
        assert!(highs.windows(2).all(|p| p[0] < p[1]), "then oldest first");
        // A filter on keys keeps the findings of the keys it keeps, over
        // pages of findings most of which it drops.
        let query = FindingQuery {
            objects: etcd_inspector::store::ObjectFilter {
                key_prefix: Some("/registry/configmaps/shop/cm-00".into()),
                ..of_cluster(cluster).objects
            },
            ..Default::default()
        };
        let kept: Vec<String> = store.findings(&query).map(|f| f.unwrap().summary).collect();
        assert_eq!(kept.len(), 100, "{kept:?}");
        assert!(kept.contains(&"finding 99".to_string()), "{kept:?}");

        // A writer dropped without committing changes nothing.
        let mut abandoned = store.findings_writer(cluster, &["flapping"]).unwrap();
        abandoned.put(&finding("flapping", Severity::Low, 9999)).unwrap();
        drop(abandoned);
        assert_eq!(stored(store, cluster), first);

        // Put again, a finding keeps its id; one not put again goes; the
        // detectors not named keep theirs.
        let mut again = store.findings_writer(cluster, &["flapping"]).unwrap();
        again.put(&finding("flapping", Severity::High, 3)).unwrap();
        again.put(&finding("flapping", Severity::Low, 7777)).unwrap();
        again.commit().unwrap();
        let now = stored(store, cluster);
        let id_of = |list: &[(i64, String, Severity, String)], summary: &str| {
            list.iter().find(|f| f.3 == summary).map(|f| f.0)
        };
        assert_eq!(now.len(), 3, "{now:?}");
        assert_eq!(id_of(&now, "finding 3"), id_of(&first, "finding 3"));
        assert_eq!(id_of(&now, "finding 5000"), id_of(&first, "finding 5000"));
        assert!(id_of(&now, "finding 7777").is_some());
    });
}

#[test]
fn prune_keeps_the_newest_run_and_what_it_reads() {
    on_each_backend(|store| {
        let (cluster, first, mut w) = begin(store, "contract-e", 1, 3);
        w.record(put(WEB, 2, 2, 1, "a=1")).unwrap();
        w.record(put(WEB, 3, 2, 2, "a=2")).unwrap();
        w.flush().unwrap();
        drop(w);
        store.finish_run(first, RunStatus::Complete, 1, None).unwrap();
        let (_, second, mut w) = begin(store, "contract-e", 4, 4);
        w.record(put(WEB, 4, 2, 3, "a=3")).unwrap();
        w.flush().unwrap();
        drop(w);
        store.finish_run(second, RunStatus::Complete, 1, None).unwrap();

        let pruned = store.prune(None, Some(1)).unwrap();
        assert_eq!(
            (pruned.runs, pruned.revisions, pruned.keys),
            (1, 1, 0),
            "{pruned:?}"
        );
        let runs: Vec<RunId> = store.runs().unwrap().iter().map(|r| r.id).collect();
        assert_eq!(runs, [second]);
        let left: Vec<Revision> = store
            .history(WEB.as_bytes(), Some(cluster))
            .unwrap()
            .iter()
            .map(|r| r.mod_revision)
            .collect();
        assert_eq!(
            left,
            [Revision(3), Revision(4)],
            "the state before the kept run, and its revision"
        );
    });
}

/// Runs `sql` on the database `db` as another program would (no foreign
/// keys checked on SQLite).
fn raw_sql(db: &Path, sql: &str) {
    if db.extension().is_some() {
        let conn = rusqlite::Connection::open(db).unwrap();
        conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        conn.execute_batch(sql).unwrap();
    } else {
        let mut client = ::postgres::Client::connect(db.to_str().unwrap(), ::postgres::NoTls).unwrap();
        client
            .batch_execute(&format!("SET search_path = etcd_inspector; {sql}"))
            .unwrap();
    }
}

/// Runs `case` on a fresh database of each backend, with its `--db`.
fn on_each_database(case: impl Fn(&Path)) {
    let dir = tempfile::tempdir().unwrap();
    for db in backends(dir.path()) {
        case(&db);
    }
}

/// A complete run of the cluster `name` that stored nothing, and one
/// finding of that cluster: the cluster's row id.
fn a_run_and_a_finding(store: &Store, name: &str) -> ClusterId {
    let (cluster, run, w) = begin(store, name, 1, 1);
    drop(w);
    store.finish_run(run, RunStatus::Complete, 0, None).unwrap();
    let mut writer = store.findings_writer(cluster, &["flapping"]).unwrap();
    writer.put(&finding("flapping", Severity::High, 1)).unwrap();
    writer.commit().unwrap();
    cluster
}

#[test]
fn a_stored_value_no_type_knows_is_a_damaged_database_naming_its_column() {
    on_each_database(|db| {
        let store = Store::open_for_writing(db).unwrap();
        a_run_and_a_finding(&store, "contract-f");
        drop(store);

        raw_sql(
            db,
            "UPDATE findings SET keys = '{\"not\": 1'; UPDATE runs SET salvage = '[1'",
        );
        let store = Store::open_for_writing(db).unwrap();
        let findings: Vec<_> = store.findings(&FindingQuery::default()).collect();
        let error = findings
            .into_iter()
            .find_map(Result::err)
            .expect("the finding does not read");
        let said = error.to_string();
        assert!(matches!(error, StoreError::Damaged { .. }), "{said}");
        assert!(
            said.contains("findings.keys") && said.contains("is not JSON"),
            "{said}"
        );
        let said = store.runs().unwrap_err().to_string();
        assert!(said.contains("is damaged: runs.salvage"), "{said}");
    });
}

#[test]
fn a_database_from_before_typed_run_columns_reads_the_same_after_its_upgrade() {
    on_each_database(|db| {
        let store = Store::open_for_writing(db).unwrap();
        let cluster = a_run_and_a_finding(&store, "contract-u");
        for (kind, source) in [
            (RunKind::File, "/backup/etcd.db"),
            (RunKind::Follow, "https://10.0.0.1:2379"),
            (RunKind::FetchSnapshot, "https://10.0.0.2:2379"),
        ] {
            let run = store.begin_run(kind, source, "/registry/", "").unwrap();
            let by = ServedBy {
                at: jiff::Timestamp::now(),
                endpoint: source.to_string(),
                member_id: "8e9e05c52164694d".into(),
                moved_because: None,
            };
            store.record(run, RunFact::Served(&by)).unwrap();
            store
                .finish_run(run, RunStatus::Failed, 0, Some("stopped"))
                .unwrap();
        }
        drop(store);
        // The previous release wrote its times to the second.
        raw_sql(
            db,
            "UPDATE runs SET started_at = started_at / 1000000 * 1000000, \
               finished_at = finished_at / 1000000 * 1000000; \
             UPDATE run_members SET at = at / 1000000 * 1000000; \
             UPDATE findings SET analyzed_at = analyzed_at / 1000000 * 1000000",
        );
        let read = |store: &Store| {
            let runs = serde_json::to_value(store.runs().unwrap()).unwrap();
            let findings: Vec<_> = store
                .findings(&FindingQuery::default())
                .map(Result::unwrap)
                .collect();
            let at = store.run_times(cluster).unwrap()[0].started_at;
            let by_time = store.revision_at_time(Some(cluster), at).unwrap();
            (runs, serde_json::to_value(findings).unwrap(), by_time)
        };
        let before = read(&Store::open_for_writing(db).unwrap());
        let kinds: Vec<_> = before
            .0
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["kind"].clone())
            .collect();
        assert_eq!(kinds, ["live", "file", "follow", "fetch-snapshot"]);
        assert_eq!(before.0[1]["members"][0]["member_id"], "8e9e05c52164694d");
        assert_eq!(before.2, Some(Revision(1)));

        undo_typed_runs(db);
        let store = Store::open_for_writing(db).unwrap();
        assert_eq!(read(&store), before);
        store.load_hash_key(&Default::default()).unwrap();
        let run = store
            .begin_run(RunKind::File, "/backup/later.db", "/registry/", "")
            .unwrap();
        store.finish_run(run, RunStatus::Complete, 0, None).unwrap();
        assert_eq!(store.runs().unwrap().len(), 5, "and the next run goes on from it");
    });
}

#[test]
fn gaps_and_cluster_names_read_back() {
    on_each_backend(|store| {
        let (cluster, run, w) = begin(store, "contract-g", 1, 90);
        drop(w);
        let gap = Gap {
            from_revision: Revision(10),
            to_revision: Revision(40),
        };
        store.record(run, RunFact::Gap { cluster, gap }).unwrap();
        store.finish_run(run, RunStatus::Complete, 0, None).unwrap();
        let gaps: Vec<String> = store.gaps(cluster).unwrap().iter().map(Gap::to_string).collect();
        assert_eq!(gaps, ["10-40"]);

        let name = |n: &str| ClusterName::parse(n).unwrap();
        let (other, _) = store.cluster("a1b2c3", Some(&name("prod-eu-1"))).unwrap();
        assert_ne!(other, cluster);
        // A name another cluster has is refused; renaming says the old name.
        let refused = store.cluster("contract-g", Some(&name("prod-eu-1"))).unwrap_err();
        assert!(matches!(refused, StoreError::Conflict { .. }), "{refused}");
        let (again, replaced) = store.cluster("a1b2c3", Some(&name("prod-eu-2"))).unwrap();
        assert_eq!((again, replaced), (other, Some(name("prod-eu-1"))));
        let names: Vec<Option<String>> = store
            .clusters()
            .unwrap()
            .into_iter()
            .map(|c| c.name.map(|n| n.to_string()))
            .collect();
        assert!(names.contains(&Some("prod-eu-2".to_string())), "{names:?}");
    });
}

#[test]
fn a_second_writer_of_a_cluster_is_refused_until_the_first_ends() {
    on_each_database(|db| {
        let first = Store::open_for_writing(db).unwrap();
        let (_, run, w) = begin(&first, "contract-h", 1, 1);
        // SQLite refuses a second writer of the file, PostgreSQL a second
        // writer of the cluster.
        let second = Store::open_for_writing(db).and_then(|s| s.cluster("contract-h", None).map(|_| s));
        let said = second.err().expect("two writers of one cluster").to_string();
        assert!(said.contains("is being written"), "{said}");
        drop(w);
        first.finish_run(run, RunStatus::Complete, 0, None).unwrap();
        drop(first);
        let second = Store::open_for_writing(db).unwrap();
        second.cluster("contract-h", None).unwrap();
    });
}

#[test]
fn a_finding_keeps_its_id_when_its_wording_changes() {
    on_each_backend(|store| {
        let (cluster, run, w) = begin(store, "contract-i", 1, 1);
        drop(w);
        store.finish_run(run, RunStatus::Complete, 0, None).unwrap();
        let on_field = |field: &str, times: usize| Finding {
            summary: format!("{field} changed {times} times"),
            details: serde_json::json!({ "field": field, "times": times }),
            ..finding("flapping", Severity::Medium, 1)
        };
        let mut writer = store.findings_writer(cluster, &["flapping"]).unwrap();
        // Two findings of one key at the same revisions, told apart only
        // by what they say.
        writer.put(&on_field("spec.replicas", 4)).unwrap();
        writer.put(&on_field("data.app\\.properties", 4)).unwrap();
        writer.commit().unwrap();
        let first = stored(store, cluster);
        assert_eq!(first.len(), 2);

        let mut writer = store.findings_writer(cluster, &["flapping"]).unwrap();
        writer.put(&on_field("spec.replicas", 5)).unwrap();
        writer
            .put(&Finding {
                severity: Severity::High,
                ..on_field("data.app\\.properties", 6)
            })
            .unwrap();
        writer.commit().unwrap();
        let now = stored(store, cluster);
        let ids = |list: &[(i64, String, Severity, String)]| {
            let mut ids: Vec<i64> = list.iter().map(|f| f.0).collect();
            ids.sort_unstable();
            ids
        };
        assert_eq!(ids(&now), ids(&first), "the same findings, reworded");
        let said: Vec<(Severity, &str)> = now.iter().map(|f| (f.2, f.3.as_str())).collect();
        assert_eq!(
            said,
            [
                (Severity::High, "data.app\\.properties changed 6 times"),
                (Severity::Medium, "spec.replicas changed 5 times")
            ]
        );

        // One of them gone: one row left, none stale.
        let mut writer = store.findings_writer(cluster, &["flapping"]).unwrap();
        writer.put(&on_field("spec.replicas", 5)).unwrap();
        writer.commit().unwrap();
        let last = stored(store, cluster);
        assert_eq!(last.len(), 1, "{last:?}");
        assert_eq!(last[0].3, "spec.replicas changed 5 times");
    });
}

#[test]
fn classes_contents_and_run_heads_read_alike() {
    on_each_backend(|store| {
        let (cluster, run, mut w) = begin(store, "contract-j", 1, 5);
        w.record(put(WEB, 2, 2, 1, "a=1")).unwrap();
        w.record(put(API, 3, 3, 1, "b=1")).unwrap();
        // The same object written again: a rewrite.
        w.record(put(WEB, 4, 2, 2, "a=1")).unwrap();
        w.record(tombstone(WEB, 5)).unwrap();
        w.flush().unwrap();
        drop(w);
        store.finish_run(run, RunStatus::Complete, 2, None).unwrap();
        assert_eq!(store.classify_pending(Some(cluster)).unwrap().classified, 4);
        assert_eq!(
            store.classify_pending(Some(cluster)).unwrap().classified,
            0,
            "once"
        );

        let scope = of_cluster(cluster);
        let mut classes = store.writes_by_class(&scope).unwrap();
        classes.sort();
        let class = |name: &str| classes.iter().find(|(c, _)| c == name).map(|(_, n)| *n);
        assert_eq!(
            (class("create"), class("rewrite"), class("delete")),
            (Some(2), Some(1), Some(1)),
            "{classes:?}"
        );
        let resources = store.writes_by_resource(&scope).unwrap();
        assert_eq!(resources.len(), 1, "{resources:?}");
        assert!(
            resources[0].0.contains("configmaps") && resources[0].1 == 4,
            "{resources:?}"
        );

        assert!(store.uid_live("uid-api.config-3").unwrap());
        assert!(
            !store.uid_live("uid-web.config-2").unwrap(),
            "deleted at the head"
        );
        let contents = store.contents_of(cluster, "", "configmaps").unwrap();
        let values: Vec<Vec<(i64, Option<String>)>> = contents
            .iter()
            .map(|key| {
                key.iter()
                    .map(|(rev, v)| {
                        let entry = v.as_ref().map(|v| v["data"]["app.properties"].to_string());
                        (rev.0, entry)
                    })
                    .collect()
            })
            .collect();
        let a1 = Some("\"a=1\"".to_string());
        assert!(
            values.contains(&vec![(3, Some("\"b=1\"".to_string()))]),
            "{values:?}"
        );
        assert!(
            values.contains(&vec![(2, a1.clone()), (4, a1), (5, None)]),
            "{values:?}"
        );
        assert_eq!(store.run_cluster(run).unwrap(), Some(cluster));
        assert_eq!(store.run_head(run).unwrap(), Some((cluster, Revision(5))));
        assert_eq!(
            store
                .revision_at_time(Some(cluster), "2999-01-01T00:00:00Z".parse().unwrap())
                .unwrap(),
            Some(Revision(5))
        );
        assert_eq!(
            store
                .revision_at_time(Some(cluster), "2000-01-01T00:00:00Z".parse().unwrap())
                .unwrap(),
            None
        );
        let now = jiff::Timestamp::now();
        assert_eq!(
            store.revision_by_clock(Some(cluster), now, true).unwrap(),
            ByClock::NoClock,
            "never analyzed"
        );
    });
}

fn request(id: &str, verb: &str, code: u16, revision: Option<i64>, time: &str) -> AuditRequest {
    AuditRequest {
        audit_id: id.to_string(),
        verb: verb.to_string(),
        api_group: String::new(),
        resource: "configmaps".to_string(),
        namespace: Some("shop".to_string()),
        name: Some("web.config".to_string()),
        subresource: None,
        user: "alice@example.com".to_string(),
        groups: vec!["system:authenticated".to_string()],
        impersonated_user: None,
        user_agent: Some("kubectl/v1.34.4".to_string()),
        source_ips: vec!["10.0.0.7".to_string()],
        code: Some(code),
        level: "RequestResponse".to_string(),
        response_revision: revision.map(Revision),
        precondition_revision: None,
        time: time.to_string(),
        log: "audit.log".to_string(),
    }
}

/// The join takes keys in groups (256 at a time): each key of every group,
/// the last partial one too, is still joined to its own requests alone.
#[test]
fn an_audit_join_of_more_keys_than_a_group_attributes_each_key_alone() {
    on_each_backend(|store| {
        const KEYS: i64 = 600;
        let key = |i: i64| format!("/registry/configmaps/shop/cm-{i:03}.config");
        let (cluster, run, mut w) = begin(store, "contract-groups", 1, KEYS + 1);
        for i in 0..KEYS {
            w.record(put(&key(i), i + 2, i + 2, 1, "a=1")).unwrap();
        }
        w.flush().unwrap();
        drop(w);
        store.finish_run(run, RunStatus::Complete, 1, None).unwrap();

        let mut stage = store.stage_audit(cluster).unwrap();
        for i in 0..KEYS {
            let time = format!("2026-12-06T10:{:02}:{:02}.000001Z", i / 60, i % 60);
            let mut r = request(&format!("c-{i}"), "create", 201, Some(i + 2), &time);
            r.name = Some(format!("cm-{i:03}.config"));
            stage.push(&r).unwrap();
        }
        assert_eq!(stage.staged().unwrap(), KEYS as u64);
        stage.finish().unwrap();
        let join = |revisions: &[_], requests: &[_]| attribution::join(revisions, requests, None);
        let joined = store.join_audit(cluster, &join).unwrap();
        assert_eq!(
            (joined.requests, joined.exact, joined.unmatched),
            (KEYS as u64, KEYS as u64, 0),
            "{joined:?}"
        );
        for i in 0..KEYS {
            let writers: Vec<Option<String>> = store
                .history(key(i).as_bytes(), Some(cluster))
                .unwrap()
                .into_iter()
                .map(|r| r.written_by.map(|w| w.audit_id))
                .collect();
            assert_eq!(writers, [Some(format!("c-{i}"))], "key {i}");
        }
    });
}

#[test]
fn audit_requests_stage_join_and_join_again_alike() {
    on_each_backend(|store| {
        let (cluster, run, mut w) = begin(store, "contract-k", 1, 4);
        w.record(put(WEB, 2, 2, 1, "a=1")).unwrap();
        w.record(put(WEB, 4, 2, 2, "a=2")).unwrap();
        w.flush().unwrap();
        drop(w);
        store.finish_run(run, RunStatus::Complete, 1, None).unwrap();

        let mut stage = store.stage_audit(cluster).unwrap();
        for r in [
            request("a-1", "create", 201, Some(2), "2026-12-06T10:00:01.000001Z"),
            request("a-2", "update", 409, None, "2026-12-06T10:00:02.000001Z"),
            request("a-3", "update", 200, Some(4), "2026-12-06T10:00:03.000001Z"),
        ] {
            stage.push(&r).unwrap();
        }
        // The same event read from a second copy of the log is one request.
        stage
            .push(&request(
                "a-1",
                "create",
                201,
                Some(2),
                "2026-12-06T10:00:01.000001Z",
            ))
            .unwrap();
        assert_eq!(stage.staged().unwrap(), 3);
        stage.finish().unwrap();
        let join = |revisions: &[_], requests: &[_]| attribution::join(revisions, requests, None);
        let joined = store.join_audit(cluster, &join).unwrap();
        assert_eq!(
            (joined.requests, joined.exact, joined.failed, joined.unmatched),
            (3, 2, 1, 0),
            "{joined:?}"
        );
        let again = store.join_audit(cluster, &join).unwrap();
        assert_eq!(again, joined, "a second join replaces the first");

        let writers: Vec<(i64, Option<String>)> = store
            .history(WEB.as_bytes(), Some(cluster))
            .unwrap()
            .into_iter()
            .map(|r| (r.mod_revision.0, r.written_by.map(|w| w.audit_id)))
            .collect();
        assert_eq!(
            writers,
            [(2, Some("a-1".to_string())), (4, Some("a-3".to_string()))]
        );
        let mut seen = Vec::new();
        store
            .audited_requests(cluster, &mut |object, requests| {
                seen.push((object.key.clone(), requests.len()));
            })
            .unwrap();
        assert_eq!(seen, [(Some(WEB.to_string()), 3)], "{seen:?}");
        let usage = store.usage(&of_cluster(cluster), 5).unwrap();
        let alice: Vec<(i64, i64, i64)> = usage
            .users
            .iter()
            .map(|u| (u.writes, u.conflicts, u.failed))
            .collect();
        assert_eq!(alice, [(2, 1, 1)]);
    });
}

#[test]
fn a_secret_is_kept_as_hashes_and_a_redacted_form_only() {
    const PASSWORD: &str = "contract-pass-8812";
    on_each_database(|db| {
        let store = Store::open_for_writing(db).unwrap();
        let (cluster, run, mut w) = begin(&store, "contract-l", 1, 2);
        let key = "/registry/secrets/shop/db.credentials";
        w.record(Record {
            key: key.as_bytes().to_vec(),
            mod_revision: Revision(2),
            create_revision: Revision(2),
            version: 1,
            lease: 0,
            value: secret("shop", "db.credentials", "uid-s", PASSWORD),
            deleted: false,
        })
        .unwrap();
        w.flush().unwrap();
        drop(w);
        store.finish_run(run, RunStatus::Complete, 1, None).unwrap();

        let rows = store.history(key.as_bytes(), Some(cluster)).unwrap();
        let said = serde_json::to_string(&rows).unwrap();
        assert!(!said.contains(PASSWORD), "{said}");
        let hash = rows[0].semantic_sha256.as_deref().expect("a semantic hash");
        let hash = etcd_inspector::hex::unhex(hash).unwrap();
        assert_eq!(store.canonical_value(&hash).unwrap(), None, "never stored");
        let redacted = store.redacted_form(&hash).unwrap().expect("a redacted form");
        assert!(!redacted.to_string().contains(PASSWORD), "{redacted}");
        assert_eq!(redacted["metadata"]["name"], "db.credentials");
        let fields = store.semantic_fields(&hash).unwrap();
        assert!(
            fields.keys().any(|p| p.to_string().starts_with("data.")),
            "{fields:?}"
        );
        drop(store);
        if db.extension().is_some() {
            let bytes = std::fs::read(db).unwrap();
            assert!(!bytes.windows(PASSWORD.len()).any(|w| w == PASSWORD.as_bytes()));
        }
    });
}

#[test]
fn the_completeness_checks_answer_alike() {
    on_each_backend(|store| {
        let (cluster, run, mut w) = begin(store, "contract-m", 1, 6);
        w.record(put(WEB, 2, 2, 1, "a=1")).unwrap();
        w.record(put(API, 3, 3, 1, "b=1")).unwrap();
        w.record(put(WEB, 4, 2, 2, "a=2")).unwrap();
        // API's second write (revision 5) never reached the store.
        w.record(put(WEB, 6, 2, 3, "a=3")).unwrap();
        w.flush().unwrap();
        drop(w);
        let live = |key: &str, create, modified, version| LiveKey {
            key: key.as_bytes().to_vec(),
            create_revision: Revision(create),
            mod_revision: Revision(modified),
            version,
        };
        let etcd = [live(API, 3, 5, 2), live(WEB, 2, 6, 3)];
        let short = store
            .history_shortfall(cluster, Revision(1), &etcd, &|_| true)
            .unwrap()
            .expect("API lacks a revision");
        assert_eq!(
            (short.keys, short.key.as_str(), short.stored, short.expected),
            (1, API, 1, 2)
        );
        assert_eq!(
            store
                .history_shortfall(cluster, Revision(1), &etcd, &|k| k != API.as_bytes())
                .unwrap(),
            None,
            "a key the run does not record is not checked"
        );
        assert_eq!(
            store
                .history_shortfall(cluster, Revision(4), &etcd, &|_| true)
                .unwrap(),
            None,
            "nor one created before the history the run covers"
        );
        assert_eq!(
            store
                .live_keys(cluster, b"/registry/configmaps/", Revision(6))
                .unwrap(),
            2
        );
        store.finish_run(run, RunStatus::Complete, 2, None).unwrap();
        let previous = store
            .previous_head(cluster, "/registry/", "", "everything")
            .unwrap()
            .expect("a complete run");
        assert_eq!((previous.run, previous.head), (run, Revision(6)));
        assert_eq!(
            store.previous_head(cluster, "/other/", "", "everything").unwrap(),
            None
        );
    });
}

/// The tables of `db`'s migrated schema, each with its columns.
fn schema(db: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut tables: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    if db.extension().is_some() {
        let conn = rusqlite::Connection::open(db).unwrap();
        let mut stmt = conn
            .prepare(
                "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p \
                 WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'",
            )
            .unwrap();
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .unwrap();
        for row in rows {
            let (table, column) = row.unwrap();
            tables.entry(table).or_default().insert(column);
        }
    } else {
        let mut client = ::postgres::Client::connect(db.to_str().unwrap(), ::postgres::NoTls).unwrap();
        let rows = client
            .query(
                "SELECT c.table_name::text, c.column_name::text FROM information_schema.columns c \
                 JOIN information_schema.tables t USING (table_schema, table_name) \
                 WHERE c.table_schema = 'etcd_inspector' AND t.table_type = 'BASE TABLE'",
                &[],
            )
            .unwrap();
        for row in rows {
            tables.entry(row.get(0)).or_default().insert(row.get(1));
        }
        // Which migrations ran (SQLite keeps it in `user_version`).
        tables.remove("schema_version");
    }
    tables
}

#[test]
fn every_table_holds_the_columns_declared_once() {
    on_each_database(|db| {
        drop(Store::open_for_writing(db).unwrap());
        let migrated = schema(db);
        let declared: BTreeMap<String, BTreeSet<String>> = COLUMNS
            .iter()
            .map(|(table, columns)| {
                let mut columns: BTreeSet<String> = columns.iter().map(|c| c.to_string()).collect();
                if migrated.get(*table).is_some_and(|m| m.contains("id")) {
                    columns.insert("id".to_string());
                }
                (table.to_string(), columns)
            })
            .collect();
        assert_eq!(
            migrated,
            declared,
            "{}: the migrations and store::tables::COLUMNS disagree",
            if db.extension().is_some() {
                "SQLite"
            } else {
                "PostgreSQL"
            }
        );
    });
}

/// PostgreSQL plans what follows a run (`analyze` at once) from its
/// statistics: a run that adds a tenth or more of `revisions` leaves the
/// planner counting what it wrote, not the empty table autovacuum last
/// saw, as does a copy into it; a small run leaves them to autovacuum.
/// (SQLite plans without gathered statistics.)
#[test]
fn a_large_run_leaves_postgresql_planning_for_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let Some(uri) = postgres::database_in(dir.path()) else {
        eprintln!("PostgreSQL is not installed: nothing to check");
        return;
    };
    let store = Store::open_for_writing(Path::new(&uri)).unwrap();
    let mut client = ::postgres::Client::connect(&uri, ::postgres::NoTls).unwrap();
    let mut planned = || -> f32 {
        client
            .query_one(
                "SELECT reltuples FROM pg_class WHERE oid = 'etcd_inspector.revisions'::regclass",
                &[],
            )
            .unwrap()
            .get(0)
    };
    assert!(planned() <= 0.0, "a new table was never analyzed");
    let (_, run, mut w) = begin(&store, "contract-stats", 1, 31);
    for i in 0..30 {
        let key = format!("/registry/configmaps/shop/app.kubernetes.io-{i}");
        w.record(put(&key, i + 2, i + 2, 1, "a=1")).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    assert_eq!(store.finish_run(run, RunStatus::Complete, 30, None).unwrap(), 30);
    assert_eq!(planned(), 30.0, "the run's revisions are what the planner counts");
    let (_, run, mut w) = begin(&store, "contract-stats", 1, 32);
    w.record(put(WEB, 32, 32, 1, "a=2")).unwrap();
    w.flush().unwrap();
    drop(w);
    assert_eq!(store.finish_run(run, RunStatus::Complete, 1, None).unwrap(), 1);
    assert_eq!(planned(), 30.0, "one revision more is left to autovacuum");

    // A copy into PostgreSQL is a bulk load too.
    let laptop = dir.path().join("laptop.sqlite");
    let source = Store::open_for_writing(&laptop).unwrap();
    let (_, run, mut w) = begin(&source, "contract-copied", 1, 41);
    for i in 0..40 {
        let key = format!("/registry/configmaps/ops/app.kubernetes.io-{i}");
        w.record(put(&key, i + 2, i + 2, 1, "b=1")).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    source.finish_run(run, RunStatus::Complete, 40, None).unwrap();
    let copied = copy(&*source, &*store, &CopyWhich::default()).unwrap();
    assert_eq!(copied.revisions, 40);
    assert_eq!(planned(), 71.0, "what the copy added is what the planner counts");
}

/// What `analyze` reads of a cluster: its key histories (with classes),
/// the diffs `history --diff` shows, the runs' times, the encryption
/// policy and restores runs recorded, usage per resource and findings
/// counted per detector.
#[test]
fn what_analyze_reads_reads_alike() {
    on_each_backend(|store| {
        let (cluster, run, mut w) = begin(store, "contract-n", 1, 5);
        w.record(put(WEB, 2, 2, 1, "a=1")).unwrap();
        w.record(put(API, 3, 3, 1, "b=1")).unwrap();
        w.record(put(WEB, 4, 2, 2, "a=2")).unwrap();
        w.record(tombstone(API, 5)).unwrap();
        w.flush().unwrap();
        drop(w);
        let policy = etcd_inspector::decrypt::policy::Policy {
            rules: vec![etcd_inspector::decrypt::policy::PolicyRule {
                resources: vec!["secrets".into()],
                write: "aescbc:key1".into(),
                reads: Some(vec!["aescbc:key1".into(), "identity".into()]),
            }],
        };
        store.record(run, RunFact::EncryptionPolicy(&policy)).unwrap();
        let restore = etcd_inspector::store::restore::Restore {
            previous_run: 7,
            prefix: "/registry/".into(),
            previous_head: Revision(90),
            previous_compact: Some(Revision(40)),
            head: Revision(5),
            compact: Revision(0),
            diverged: None,
            etcd_cluster: None,
        };
        store.record(run, RunFact::Restored(&restore)).unwrap();
        store.finish_run(run, RunStatus::Complete, 2, None).unwrap();
        store.classify_pending(Some(cluster)).unwrap();

        let mut histories = Vec::new();
        store
            .key_histories(cluster, &mut |h| {
                histories.push(
                    h.iter()
                        .map(|r| (r.key.clone(), r.mod_revision.0, r.version, r.class))
                        .collect::<Vec<_>>(),
                )
            })
            .unwrap();
        use etcd_inspector::canon::change::ChangeClass::{Create, Delete, Spec};
        assert_eq!(
            histories,
            [
                vec![
                    (API.to_string(), 3, 1, Some(Create)),
                    (API.to_string(), 5, 0, Some(Delete))
                ],
                vec![
                    (WEB.to_string(), 2, 1, Some(Create)),
                    (WEB.to_string(), 4, 2, Some(Spec))
                ],
            ],
            "key by key, oldest first"
        );

        let mut rows = store.history(WEB.as_bytes(), Some(cluster)).unwrap();
        store.add_diffs(&mut rows).unwrap();
        let changed: Vec<(String, String, String)> = rows[1]
            .diff
            .iter()
            .flatten()
            .map(|c| (c.path.to_string(), c.old.to_string(), c.new.to_string()))
            .collect();
        assert!(
            changed.contains(&(
                "data.app\\.properties".to_string(),
                "\"a=1\"".to_string(),
                "\"a=2\"".to_string()
            )),
            "{changed:?}"
        );

        let times = store.run_times(cluster).unwrap();
        assert_eq!(times.len(), 1);
        assert_eq!((times[0].head, times[0].kind), (Revision(5), RunKind::Live));
        assert!(times[0].finished_at.is_some_and(|f| f >= times[0].started_at));
        assert_eq!(
            store.encryption_policy(cluster).unwrap(),
            Some((policy, Revision(5)))
        );
        assert_eq!(store.restores(cluster).unwrap(), [(run, restore)]);

        let resources = store.resource_usage(&of_cluster(cluster)).unwrap();
        let seen: Vec<(&str, i64, i64)> = resources
            .iter()
            .map(|r| (r.resource.as_str(), r.objects, r.revisions))
            .collect();
        assert_eq!(seen, [("configmaps", 1, 4)], "API deleted at the head");
        assert_eq!(resources[0].writes.get("create"), Some(&2), "{resources:?}");

        let mut writer = store.findings_writer(cluster, &["flapping", "orphans"]).unwrap();
        writer.put(&finding("flapping", Severity::High, 1)).unwrap();
        writer.put(&finding("flapping", Severity::Low, 2)).unwrap();
        writer.put(&finding("orphans", Severity::Medium, 3)).unwrap();
        writer.commit().unwrap();
        let counts = |severity| {
            let mut counts: Vec<(String, i64)> = store
                .finding_counts(&of_cluster(cluster), severity)
                .unwrap()
                .into_iter()
                .inspect(|c| assert_eq!(c.cluster, cluster))
                .map(|c| (c.detector, c.count))
                .collect();
            counts.sort();
            counts
        };
        assert_eq!(counts(None), [("flapping".into(), 2), ("orphans".into(), 1)]);
        assert_eq!(
            counts(Some(Severity::Medium)),
            [("flapping".into(), 1), ("orphans".into(), 1)]
        );
    });
}

/// A revision two keys hold (a txn no apiserver sent) and a create no
/// audited request explains, inside the span a log covered.
#[test]
fn shared_revisions_and_unaudited_creates_read_alike() {
    const ODD: &str = "/registry/configmaps/shop/odd.config";
    on_each_backend(|store| {
        let (cluster, run, mut w) = begin(store, "contract-o", 1, 6);
        w.record(put(WEB, 2, 2, 1, "a=1")).unwrap();
        // One revision, two keys, both live: one txn wrote both.
        w.record(put(API, 3, 3, 1, "b=1")).unwrap();
        w.record(put(ODD, 3, 3, 1, "c=1")).unwrap();
        w.record(put(WEB, 6, 2, 2, "a=2")).unwrap();
        w.flush().unwrap();
        drop(w);
        store.finish_run(run, RunStatus::Complete, 3, None).unwrap();

        let shared = store.shared_revisions(cluster, 10).unwrap();
        assert_eq!(shared.total, 1);
        let rows: Vec<(Revision, Vec<&str>)> = shared
            .listed
            .iter()
            .map(|s| (s.revision, s.rows.iter().map(|r| r.key.as_str()).collect()))
            .collect();
        assert_eq!(rows, [(Revision(3), vec![API, ODD])], "in key order");
        assert_eq!(store.shared_revisions(cluster, 0).unwrap().listed.len(), 0);

        // The log's requests wrote revisions 2 and 6: it covers 3, where
        // API's create has its request and ODD's has none.
        let mut stage = store.stage_audit(cluster).unwrap();
        let mut api = request("b-2", "create", 201, Some(3), "2026-12-06T10:00:02.000001Z");
        api.name = Some("api.config".into());
        for r in [
            request("b-1", "create", 201, Some(2), "2026-12-06T10:00:01.000001Z"),
            api,
            request("b-3", "update", 200, Some(6), "2026-12-06T10:00:03.000001Z"),
        ] {
            stage.push(&r).unwrap();
        }
        stage.finish().unwrap();
        let join = |revisions: &[_], requests: &[_]| attribution::join(revisions, requests, None);
        store.join_audit(cluster, &join).unwrap();
        let mut unexplained = Vec::new();
        store
            .unaudited_creates(cluster, &mut |c| {
                unexplained.push((c.key, c.revision.0, c.from.0, c.to.0))
            })
            .unwrap();
        assert_eq!(unexplained, [(ODD.to_string(), 3, 2, 6)]);
    });
}

/// A key an earlier run stored live that a later run no longer finds gets
/// a tombstone the later run infers; prune's space is given back.
#[test]
fn stored_keys_run_heads_and_inferred_deletes_alike() {
    on_each_backend(|store| {
        let (cluster, first, mut w) = begin(store, "contract-p", 1, 6);
        w.record(put(WEB, 2, 2, 1, "a=1")).unwrap();
        w.record(put(API, 3, 3, 1, "b=1")).unwrap();
        w.record(put(WEB, 4, 2, 2, "a=2")).unwrap();
        w.record(tombstone(API, 5)).unwrap();
        w.record(put(API, 6, 6, 1, "b=2")).unwrap();
        w.flush().unwrap();
        drop(w);
        store.finish_run(first, RunStatus::Complete, 2, None).unwrap();
        let (_, second, w) = begin(store, "contract-p", 20, 30);
        drop(w);

        let heads = store.run_heads(cluster, second).unwrap();
        let heads: Vec<(Revision, &[u8])> = heads.iter().map(|h| (h.head, h.prefix.as_slice())).collect();
        assert_eq!(heads, [(Revision(6), b"/registry/".as_slice())]);
        let prefix = b"/registry/configmaps/";
        let page = |head, after: Option<&[u8]>, limit| {
            store
                .stored_keys(cluster, prefix, Revision(head), after, limit)
                .unwrap()
        };
        let all = page(6, None, 10);
        let keys: Vec<&[u8]> = all.iter().map(|k| k.key.as_slice()).collect();
        assert_eq!(keys, [API.as_bytes(), WEB.as_bytes()]);
        let (api, web) = (&all[0], &all[1]);
        let facts = |r: &etcd_inspector::store::vanished::StoredRevision| {
            (r.mod_revision.0, r.create_revision.0, r.deleted)
        };
        assert_eq!(facts(&web.newest), (4, 2, false));
        assert_eq!(web.before, None, "its generation is the key's first");
        assert_eq!(facts(&api.newest), (6, 6, false));
        assert_eq!(
            api.before.as_ref().map(facts),
            Some((5, 3, true)),
            "the generation it followed"
        );
        // As an older head saw them, and a page after a key.
        assert_eq!(facts(&page(4, None, 10)[0].newest), (3, 3, false));
        let second_page = page(6, Some(API.as_bytes()), 1);
        assert_eq!(second_page.len(), 1);
        assert_eq!(second_page[0].key, WEB.as_bytes());
        assert!(page(1, None, 10).is_empty(), "nothing stored by revision 1");

        // WEB is gone by the later run's head: deleted at some revision
        // after 4 and by 20.
        let delete = etcd_inspector::store::vanished::InferredDelete {
            key_id: web.key_id,
            create_revision: Revision(2),
            mod_revision: Revision(20),
            after: Revision(4),
        };
        store.store_inferred_deletes(cluster, second, &[delete]).unwrap();
        store.finish_run(second, RunStatus::Complete, 1, None).unwrap();
        let rows = store.history(WEB.as_bytes(), Some(cluster)).unwrap();
        let seen: Vec<(i64, bool)> = rows.iter().map(|r| (r.mod_revision.0, r.deleted)).collect();
        assert_eq!(seen, [(2, false), (4, false), (20, true)]);
        let newest = store
            .stored_keys(cluster, prefix, Revision(30), None, 10)
            .unwrap();
        assert!(newest[1].newest.deleted, "{newest:?}");

        store.prune(None, Some(1)).unwrap();
        store.vacuum().unwrap();
        assert_eq!(store.runs().unwrap().len(), 1);
    });
}

/// The clock `analyze` rebuilds from anchors places a time between the
/// revisions that bound it.
#[test]
fn the_clock_rebuilt_from_anchors_places_times_alike() {
    use etcd_inspector::store::clock::Anchor;
    on_each_backend(|store| {
        let (cluster, run, mut w) = begin(store, "contract-q", 1, 30);
        for revision in [10, 20, 30] {
            w.record(put(WEB, revision, 10, revision / 10, "a=1")).unwrap();
        }
        w.flush().unwrap();
        drop(w);
        store.finish_run(run, RunStatus::Complete, 1, None).unwrap();
        let at = |s: &str| -> jiff::Timestamp { s.parse().unwrap() };
        let left_out = store
            .rebuild_clock(cluster, &mut |sink| {
                for (revision, time) in [(10, "2026-12-06T10:00:00Z"), (20, "2026-12-06T11:00:00Z")] {
                    sink(Anchor {
                        revision: Revision(revision),
                        earliest: Some(at(time)),
                        latest: Some(at(time)),
                    })?;
                }
                Ok(())
            })
            .unwrap();
        assert_eq!(left_out, 0);
        let by = |time, after| store.revision_by_clock(Some(cluster), at(time), after).unwrap();
        assert_eq!(by("2026-12-06T10:30:00Z", true), ByClock::Revision(Revision(11)));
        assert_eq!(by("2026-12-06T10:30:00Z", false), ByClock::Revision(Revision(19)));
        // Nothing bounds what came before the first anchor.
        assert_eq!(by("2026-12-06T09:00:00Z", false), ByClock::Revision(Revision(9)));
        assert_eq!(by("2026-12-06T09:00:00Z", true), ByClock::Unbounded);
    });
}
