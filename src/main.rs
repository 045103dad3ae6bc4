//! Entry point: parse arguments, dispatch, turn errors into one line and an
//! exit status (0 ok, 1 error, 2 usage, others per command).

use clap::Parser;
use etcd_inspector::cli::Cli;
use etcd_inspector::cmd;
use std::process::ExitCode;

/// Decoding allocates many small JSON values on several threads; mimalloc
/// is markedly faster at that than the system allocator (see "Memory" in
/// `docs/performance.md`). The `system-allocator` feature leaves it out, for
/// heap profilers that see only malloc (heaptrack, massif).
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc.h.
#[cfg(not(feature = "system-allocator"))]
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> ExitCode {
    // mimalloc keeps freed memory committed for a second by default, and a
    // file run frees as fast as it allocates: on a 1.4 GiB file, 10 ms
    // instead keeps the peak 30 to 50 MiB lower at no measurable cost.
    #[cfg(not(feature = "system-allocator"))]
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: set before any other thread starts, as mimalloc requires.
        unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 10) };
    }
    let cli = Cli::parse();
    cmd::log::init(cli.log_format);
    let result = cmd::dispatch(&cli);
    match result {
        Ok(status) => ExitCode::from(status),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let line = etcd_inspector::error_line::one_line(&e);
            tracing::error!("{}", etcd_inspector::report::escape::terminal(&line));
            match e.is::<cmd::UsageError>() {
                true => ExitCode::from(2),
                false => ExitCode::FAILURE,
            }
        }
    }
}

/// `etcd-inspector ... | head` closing the pipe is not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .is_some_and(|j| j.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe))
    })
}
