//! Runs against a real three-member etcd cluster with members failing: one
//! down before the run, the leader or the member being read killed during a
//! long replay, a member paused (SIGSTOP) as a partition would leave it, a
//! member restarted while `follow` records. Each checks that what was
//! stored is what etcd holds (no revision lost or doubled) and what the
//! run records about the members that served it.

use crate::util::cluster::TestCluster;
use crate::util::{
    every_revision, inspector, ok, one_line_error, runs, spawn_inspector, stderr, stored_revisions, temp_db,
    terminate,
};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

const PREFIX: &str = "/registry/configmaps/default/cm-";

/// Timeouts short enough that a failed member costs a test seconds.
const TIMEOUTS: [&str; 4] = ["--dial-timeout", "1s", "--command-timeout", "4s"];

fn snapshot_args<'a>(endpoints: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["snapshot", "--endpoints", endpoints, "--fetch", "watch"];
    args.extend(TIMEOUTS);
    args.extend_from_slice(extra);
    args
}

/// Asserts the database holds every revision etcd holds under [`PREFIX`],
/// each once, and nothing else.
fn assert_stored_equals_written(db: &Path, cluster: &TestCluster) {
    let mut written = cluster.history(PREFIX);
    written.sort();
    let mut stored: Vec<(String, i64, bool)> = every_revision(db)
        .into_iter()
        .filter(|(k, _)| k.starts_with(PREFIX))
        .map(|(k, r)| (k, r.mod_revision.0, r.deleted))
        .collect();
    stored.sort();
    let mut unique = stored.clone();
    unique.dedup();
    assert_eq!(unique.len(), stored.len(), "a revision is stored twice");
    assert!(!written.is_empty());
    assert_eq!(
        stored.len(),
        written.len(),
        "stored {} revisions, etcd holds {}",
        stored.len(),
        written.len()
    );
    assert_eq!(stored, written);
}

/// The members the last run recorded as serving it, in order.
fn served(db: &Path) -> Vec<Value> {
    let all = runs(db);
    all.last().unwrap()["members"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Freezes `child` while the database shows it has stored more than
/// `baseline` revisions, so the test acts in the middle of its run; the
/// caller lets it go on with [`resume`].
fn pause_mid_run(child: &mut Child, db: &Path, baseline: i64) {
    loop {
        signal(child, "-STOP");
        if stored_revisions(db) > baseline {
            return;
        }
        signal(child, "-CONT");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before the test could act in its middle"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn resume(child: &Child) {
    signal(child, "-CONT");
}

#[test]
fn a_member_down_before_the_run_is_skipped_with_one_warning() {
    let mut cluster = TestCluster::start(3);
    cluster.write(PREFIX, 50, 300);
    // A follower, first in the list: the others keep their leader, so
    // nothing but the dead member can disturb the run.
    let leader = cluster.leader();
    let (down, next) = ((leader + 1) % 3, (leader + 2) % 3);
    cluster.kill(down);
    let (_dir, db) = temp_db();
    let endpoints = cluster.endpoints_of(&[down, next, leader]);
    let out = ok(inspector(&db, &snapshot_args(&endpoints, &[])));
    let err = stderr(&out);
    // (Old releases add a warning of their own about progress notifications.)
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("warning:") && cluster.members.iter().any(|m| l.contains(&m.endpoint)))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    let skipped = format!("skipping etcd endpoint {}", cluster.members[down].endpoint);
    assert!(warnings[0].contains(&skipped), "{err}");
    let served = served(&db);
    assert_eq!(served.len(), 1, "{served:?}");
    assert_eq!(served[0]["endpoint"], cluster.members[next].endpoint.as_str());
    assert_eq!(served[0]["member_id"], cluster.member_id(next).as_str());
    assert_eq!(runs(&db)[0]["status"], "complete");
    assert_stored_equals_written(&db, &cluster);
}

#[test]
fn no_usable_member_is_one_line_naming_each() {
    let mut cluster = TestCluster::start(3);
    // Two of three down: the last one has no leader.
    cluster.kill(0);
    cluster.kill(1);
    while cluster.has_leader(2) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_dir, db) = temp_db();
    let endpoints = cluster.endpoints();
    let err = one_line_error(&inspector(&db, &snapshot_args(&endpoints, &[])));
    assert!(err.contains("no etcd member is usable"), "{err}");
    for m in &cluster.members {
        assert!(err.contains(&m.endpoint), "{err}");
    }
    assert!(err.contains("no leader") || err.contains("no answer"), "{err}");
}

/// How a test names the members to the inspector.
#[derive(Clone, Copy)]
enum Given {
    /// Every member, the one to serve first.
    All,
    /// Only the one to serve, with --endpoints-from-members.
    OneAndMemberList,
}

/// A second run's long replay, during which `act` does something to the
/// cluster while the inspector is frozen; the run must end complete with
/// everything etcd holds, having moved away from `serving`.
fn replay_through(
    cluster: &mut TestCluster,
    serving: usize,
    given: Given,
    act: impl FnOnce(&mut TestCluster),
) {
    let (_dir, db) = temp_db();
    cluster.write(PREFIX, 20, 200);
    let mut order = vec![serving];
    order.extend((0..3).filter(|&i| i != serving));
    let (endpoints, extra) = match given {
        Given::All => (cluster.endpoints_of(&order), vec![]),
        Given::OneAndMemberList => (cluster.endpoints_of(&[serving]), vec!["--endpoints-from-members"]),
    };
    ok(inspector(&db, &snapshot_args(&endpoints, &extra)));
    let baseline = stored_revisions(&db);
    // 2 kB values, sent twice (each event carries the value it replaced):
    // some 50 MB, more than the connection's windows and socket buffers
    // hold, so the member still has most of it to send when it fails.
    cluster.write_padded(PREFIX, 200, 12_000, 2048);
    let mut child = spawn_inspector(&db, &snapshot_args(&endpoints, &extra));
    pause_mid_run(&mut child, &db, baseline);
    act(cluster);
    resume(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run = runs(&db).last().cloned().unwrap();
    assert_eq!(run["status"], "complete", "{run}");
    // One move away from the member acted on; a member still settling
    // after an election may answer with an error and move the run again,
    // but never back to the one acted on.
    let served = served(&db);
    assert!(served.len() >= 2, "{served:?}\n{}", stderr(&out));
    assert_eq!(served[0]["endpoint"], cluster.members[serving].endpoint.as_str());
    for later in &served[1..] {
        assert_ne!(later["endpoint"], served[0]["endpoint"], "{served:?}");
        assert!(later["moved_because"].is_string(), "{served:?}");
    }
    let why = served[1]["moved_because"].as_str().unwrap();
    assert!(why.contains(&cluster.members[serving].endpoint), "{why}");
    assert!(stderr(&out).contains("reading from"), "{}", stderr(&out));
    assert_stored_equals_written(&db, cluster);
}

#[test]
fn the_leader_killed_during_a_long_replay_moves_the_run() {
    let mut cluster = TestCluster::start(3);
    let leader = cluster.leader();
    replay_through(&mut cluster, leader, Given::All, |c| {
        c.kill(leader);
        c.wait_for_leader();
    });
}

#[test]
fn the_member_being_read_killed_moves_the_run() {
    let mut cluster = TestCluster::start(3);
    let follower = (cluster.leader() + 1) % 3;
    replay_through(&mut cluster, follower, Given::All, |c| c.kill(follower));
}

#[test]
fn members_found_with_member_list_take_over_from_the_only_one_given() {
    let mut cluster = TestCluster::start(3);
    let follower = (cluster.leader() + 1) % 3;
    replay_through(&mut cluster, follower, Given::OneAndMemberList, |c| {
        c.kill(follower)
    });
}

#[test]
fn a_paused_member_is_left_for_one_that_answers() {
    let mut cluster = TestCluster::start(3);
    let follower = (cluster.leader() + 1) % 3;
    replay_through(&mut cluster, follower, Given::All, |c| c.pause(follower));
    cluster.resume(follower);
}

#[test]
fn follow_goes_on_while_the_member_it_reads_restarts() {
    let mut cluster = TestCluster::start(3);
    cluster.write(PREFIX, 20, 100);
    let (_dir, db) = temp_db();
    let serving = (cluster.leader() + 1) % 3;
    let mut order = vec![serving];
    order.extend((0..3).filter(|&i| i != serving));
    let endpoints = cluster.endpoints_of(&order);
    let mut args = vec!["follow", "--endpoints", &endpoints, "--commit-every", "200ms"];
    args.extend(TIMEOUTS);
    let child = spawn_inspector(&db, &args);
    // Poll until the follower stored the first writes.
    while stored_revisions(&db) < 100 {
        std::thread::sleep(Duration::from_millis(50));
    }
    cluster.restart(serving);
    cluster.write(PREFIX, 20, 500);
    let written = cluster.history(PREFIX).len() as i64;
    while stored_revisions(&db) < written {
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = terminate(child);
    let run = runs(&db)[0].clone();
    assert_eq!(run["status"], "interrupted", "{run}\n{}", stderr(&out));
    let served = served(&db);
    assert!(served.len() >= 2, "{served:?}\n{}", stderr(&out));
    assert_eq!(served[0]["endpoint"], cluster.members[serving].endpoint.as_str());
    assert!(served[1]["moved_because"].is_string(), "{served:?}");
    assert_ne!(served[1]["endpoint"], served[0]["endpoint"]);
    assert_stored_equals_written(&db, &cluster);
}

/// The value of the gauge `name` in the metrics file at `path`, once written.
fn gauge(path: &Path, name: &str) -> Option<i64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("etcd_inspector_{name}{{")))?;
    line.rsplit(' ').next()?.parse().ok()
}

/// Polls until `done` holds, or gives up after long enough to be sure it
/// never will (a hang guard, not a timing assertion): then `child` is
/// stopped and the test fails with its output.
fn poll(what: &str, child: &mut Option<Child>, mut done: impl FnMut() -> bool) {
    let give_up = std::time::Instant::now() + Duration::from_secs(90);
    while !done() {
        if std::time::Instant::now() > give_up {
            let out = terminate(child.take().unwrap());
            panic!("never: {what}\n{}", stderr(&out));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_member_cut_off_from_its_leader_ends_the_watch_and_follow_reports_the_stall() {
    let mut cluster = TestCluster::start(3);
    cluster.write(PREFIX, 20, 50);
    let (dir, db) = temp_db();
    let metrics = dir.path().join("follow.prom");
    // Only the member that will be cut off: nothing else to move to.
    let endpoint = cluster.members[2].endpoint.clone();
    let mut args = vec!["follow", "--endpoints", &endpoint, "--commit-every", "200ms"];
    args.extend(["--metrics-file", metrics.to_str().unwrap()]);
    args.extend(TIMEOUTS);
    let mut child = Some(spawn_inspector(&db, &args));
    poll("follow records", &mut child, || {
        gauge(&metrics, "follow_stalled") == Some(0)
    });
    // Its peers gone, the member keeps its client port open but has no
    // leader: the watch must end ("no leader"), not stay open and silent.
    cluster.kill(0);
    cluster.kill(1);
    poll("follow reports the stall", &mut child, || {
        gauge(&metrics, "follow_stalled") == Some(1)
    });
    cluster.restart(0);
    cluster.restart(1);
    cluster.write(PREFIX, 20, 50);
    let written = cluster.history(PREFIX).len() as i64;
    poll("follow records again", &mut child, || {
        gauge(&metrics, "follow_stalled") == Some(0) && stored_revisions(&db) >= written
    });
    let out = terminate(child.unwrap());
    assert!(stderr(&out).contains("no leader"), "{}", stderr(&out));
    assert_eq!(runs(&db)[0]["status"], "interrupted");
    assert_stored_equals_written(&db, &cluster);
}

#[test]
fn a_snapshot_download_cut_midway_starts_again_from_another_member() {
    let cluster = TestCluster::start(3);
    cluster.write(PREFIX, 200, 5_000);
    // The first member is reached through a proxy that cuts every
    // connection once the member has sent 200 kB: its answers to the probe
    // and the pin are a few hundred bytes, its snapshot of 5,000 revisions
    // some megabytes, so the cut comes in the middle of the download.
    let proxy = crate::util::proxy::Proxy::new(&cluster.members[0].endpoint);
    proxy.cut_after(200_000);
    let endpoints = format!("{},{}", proxy.endpoint, cluster.endpoints_of(&[1, 2]));
    let (_dir, db) = temp_db();
    let mut args = snapshot_args(&endpoints, &[]);
    args[4] = "snapshot";
    let out = ok(inspector(&db, &args));
    let run = runs(&db)[0].clone();
    assert_eq!(
        (run["status"].as_str(), run["fetched"].as_str()),
        (Some("complete"), Some("snapshot")),
        "{run}"
    );
    let served = served(&db);
    assert_eq!(served.len(), 2, "{served:?}\n{}", stderr(&out));
    assert_eq!(served[0]["endpoint"], proxy.endpoint.as_str());
    assert_eq!(served[1]["endpoint"], cluster.members[1].endpoint.as_str());
    assert_stored_equals_written(&db, &cluster);
}
