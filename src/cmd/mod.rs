//! One module per subcommand, each with a `run` that returns the exit status.

pub mod decode;

/// Exit status of a finished command that did not fail outright.
pub type Status = std::process::ExitCode;
