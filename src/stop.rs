//! A request to stop, from Ctrl-C or SIGTERM: set by a run's signal
//! watcher, read by the long loops of every stage, which end early so that
//! the run is recorded as interrupted with what it stored kept.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// Whether a signal asked the run to stop.
pub fn requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Asks every stage to stop.
pub fn request() {
    STOP.store(true, Ordering::Relaxed);
}

/// Marks the start of a stage of a run (`download`, `replay`, `read`,
/// `store`, `check`, `analyze`). For testing how each stage honours a
/// signal, `ETCD_INSPECTOR_SIGNAL_AT=STAGE` makes the process send itself
/// SIGTERM there, as etcd's failpoints inject faults, and waits (up to
/// five seconds) for the signal watcher to see it.
pub fn stage(name: &str) {
    static AT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let at = AT.get_or_init(|| std::env::var("ETCD_INSPECTOR_SIGNAL_AT").ok());
    if at.as_deref() != Some(name) {
        return;
    }
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &std::process::id().to_string()])
        .status()
        .is_ok_and(|s| s.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while sent && !requested() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
