//! A TCP proxy in front of a test server that the test can cut, so a client
//! really loses its connection (and cannot reconnect until restored).

use std::io::copy;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub struct Proxy {
    /// `http://127.0.0.1:<port>` of the proxy.
    pub endpoint: String,
    open: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    /// Forwards a new loopback port to `target` (`http://host:port`).
    pub fn new(target: &str) -> Proxy {
        let target = target.trim_start_matches("http://").to_string();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let open = Arc::new(AtomicBool::new(true));
        let streams: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (accepting, tracked) = (open.clone(), streams.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if !accepting.load(Ordering::SeqCst) {
                    continue; // dropped: the connection is closed at once
                }
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                let mut all = tracked.lock().unwrap();
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server.try_clone().unwrap(), client.try_clone().unwrap()),
                ] {
                    std::thread::spawn(move || {
                        let _ = copy(&mut from, &mut to);
                        let _ = to.shutdown(Shutdown::Both);
                    });
                }
                all.extend([client, server]);
            }
        });
        Proxy {
            endpoint,
            open,
            streams,
        }
    }

    /// Closes every connection and refuses new ones.
    pub fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        for s in self.streams.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Accepts connections again.
    pub fn restore(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}
