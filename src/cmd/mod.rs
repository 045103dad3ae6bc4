//! One module per subcommand, each with a `run` that returns the exit status.

pub mod decode;
pub mod get;
pub mod history;
mod output;
pub mod runs;
pub mod snapshot;

/// Exit status of a command that finished: 0 for success, or a documented
/// per-command status (errors are returned as `Err` and exit with 1).
pub type Status = u8;
