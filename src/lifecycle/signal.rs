//! Ctrl-C and SIGTERM: a flag the readers check at every record, and a
//! notification for whatever is waiting.

use anyhow::{Context, Result};
use std::sync::Arc;

/// Whether a signal asked the run to stop (see [`crate::stop`]).
pub(super) fn stopping() -> bool {
    crate::stop::requested()
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// A runtime with one worker that sets the stop flag on SIGTERM or Ctrl-C,
/// and the notification it sends then.
pub(super) fn runtime() -> Result<(tokio::runtime::Runtime, Arc<tokio::sync::Notify>)> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let signalled = Arc::new(tokio::sync::Notify::new());
    let notify = signalled.clone();
    runtime.spawn(async move {
        shutdown_signal().await;
        crate::stop::request();
        notify.notify_one();
    });
    Ok((runtime, signalled))
}
