//! Worker threads that run the stage over chunks of records while the
//! caller's thread goes on (reading the source, writing earlier chunks), so
//! decoding runs on every core. Chunks come back in the order sent; a
//! worker that panics gives that chunk's panic message, never a lost chunk.

use std::collections::BTreeMap;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A finished chunk, or what its worker panicked with.
pub type Done<R> = Result<R, String>;

/// Workers running one function over chunks, and the chunks in flight.
pub struct Workers<J: Send + 'static, R: Send + 'static> {
    jobs: Option<Sender<(u64, J)>>,
    results: Receiver<(u64, Done<R>)>,
    threads: Vec<JoinHandle<()>>,
    sent: u64,
    returned: u64,
    early: BTreeMap<u64, Done<R>>,
}

fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

impl<J: Send + 'static, R: Send + 'static> Workers<J, R> {
    /// Starts one worker per core (at most 8), each running `work`.
    pub fn new(work: impl Fn(J) -> R + Send + Sync + 'static) -> Workers<J, R> {
        let count = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
        let (jobs, job_rx) = channel::<(u64, J)>();
        let (result_tx, results) = channel();
        let job_rx = Arc::new(Mutex::new(job_rx));
        let work = Arc::new(work);
        let threads = (0..count)
            .map(|i| {
                let (jobs, results, work) = (job_rx.clone(), result_tx.clone(), work.clone());
                std::thread::Builder::new()
                    .name(format!("decode-{i}"))
                    .spawn(move || loop {
                        let job = jobs
                            .lock()
                            .map_err(|_| ())
                            .and_then(|rx| rx.recv().map_err(|_| ()));
                        let Ok((id, chunk)) = job else { return };
                        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(chunk)))
                            .map_err(panic_message);
                        if results.send((id, done)).is_err() {
                            return;
                        }
                    })
                    .expect("spawning a decode thread")
            })
            .collect();
        Workers {
            jobs: Some(jobs),
            results,
            threads,
            sent: 0,
            returned: 0,
            early: BTreeMap::new(),
        }
    }

    /// Chunks sent and not yet returned.
    pub fn in_flight(&self) -> u64 {
        self.sent - self.returned
    }

    /// Most chunks worth having in flight: enough to keep every worker busy.
    pub fn capacity(&self) -> u64 {
        2 * self.threads.len() as u64
    }

    /// Queues a chunk for the workers.
    pub fn send(&mut self, chunk: J) {
        if let Some(jobs) = &self.jobs {
            // The workers outlive the sender; a send fails only if all
            // panicked, which `next` reports.
            let _ = jobs.send((self.sent, chunk));
        }
        self.sent += 1;
    }

    /// The next chunk in order: waits for it when `wait`, else only returns
    /// one that is ready. `None` when nothing (ready) is in flight.
    pub fn next(&mut self, wait: bool) -> Option<Done<R>> {
        while self.in_flight() > 0 {
            if let Some(done) = self.early.remove(&self.returned) {
                self.returned += 1;
                return Some(done);
            }
            let received = if wait {
                self.results.recv().map_err(|_| true)
            } else {
                self.results
                    .try_recv()
                    .map_err(|e| e == std::sync::mpsc::TryRecvError::Disconnected)
            };
            match received {
                Ok((id, done)) => {
                    self.early.insert(id, done);
                }
                Err(false) => return None,
                Err(true) => {
                    self.returned = self.sent;
                    return Some(Err("every decode thread stopped".into()));
                }
            }
        }
        None
    }

    /// Waits for the chunks in flight and drops them.
    pub fn discard(&mut self) {
        while self.next(true).is_some() {}
        self.early.clear();
    }
}

impl<J: Send + 'static, R: Send + 'static> Drop for Workers<J, R> {
    fn drop(&mut self) {
        self.jobs = None;
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_come_back_in_order_and_a_panic_is_its_chunk_s_error() {
        let mut w = Workers::new(|n: u64| {
            std::thread::sleep(std::time::Duration::from_millis((10 - n % 10) * 2));
            assert_ne!(n, 7, "seven is refused");
            n * 2
        });
        (0..20).for_each(|n| w.send(n));
        let got: Vec<Done<u64>> = std::iter::from_fn(|| w.next(true)).collect();
        assert_eq!(got.len(), 20);
        for (n, done) in got.into_iter().enumerate() {
            match (n, done) {
                (7, Err(message)) => assert!(message.contains("seven is refused"), "{message}"),
                (n, done) => assert_eq!(done, Ok(n as u64 * 2)),
            }
        }
        assert_eq!(w.in_flight(), 0);
    }
}
