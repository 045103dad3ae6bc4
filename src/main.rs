//! Entry point: parse arguments, dispatch, turn errors into one line and an
//! exit status (0 ok, 1 error, 2 usage, others per command).

use clap::Parser;
use etcd_inspector::cli::Cli;
use etcd_inspector::cmd;
use std::process::ExitCode;

/// Decoding allocates many small JSON values on several threads; mimalloc
/// is markedly faster at that than the system allocator (see the README's
/// performance table).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = cmd::dispatch(&cli);
    match result {
        Ok(status) => ExitCode::from(status),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let line = etcd_inspector::error_line::one_line(&e);
            eprintln!("error: {}", etcd_inspector::report::escape::terminal(&line));
            ExitCode::FAILURE
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
