//! The stage between reading and storing: a stored value is decrypted,
//! decoded, canonicalised, hashed and classified into what the store keeps
//! and the detectors read. Runs, `decode` and `get` take values through the
//! same code; nothing here touches a database.

pub mod base;
pub(crate) mod blob;
pub mod foreign;
pub mod open;
pub(crate) mod pipeline;
pub(crate) mod prepare;
mod recall;
pub mod revision;
pub mod workers;
pub mod written;
