//! The Accept-header corpus (`testdata/conformance/accept-headers.json`) through the shipped
//! `machine-config-server`, as a user gets Accept negotiation: the binary in file mode on a copy
//! of `examples/cluster`, plain HTTP on an ephemeral port of 127.0.0.1, one `GET /config/worker`
//! per header sent as raw bytes. The access log line of each request names the version
//! negotiated, which is served (200, the config's `ignition.version`) except 3.0.0: upstream
//! negotiates it but has no conversion from 3.5 down to it and answers 500, as this server does.
//! A header upstream refuses gets 400 with no body, the access log carrying upstream's error.

#[path = "../../mco-render/tests/support/corpus.rs"]
mod corpus;

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Generous bound for the server to start and for its log to show a request: CI machines are
/// shared and slow under load.
const WAIT: Duration = Duration::from_secs(180);

/// The server, its log lines (standard output and error) as they come, and its plain address.
struct Server {
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
    addr: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn follow(stream: impl Read + Send + 'static, log: Arc<Mutex<Vec<String>>>) {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            log.lock().expect("log").push(line);
        }
    });
}

/// Waits (bounded) for a log line `pick` accepts, and returns what it extracts.
fn wait_for<T>(log: &Mutex<Vec<String>>, pick: impl Fn(&str) -> Option<T>) -> Option<T> {
    let start = Instant::now();
    while start.elapsed() < WAIT {
        if let Some(t) = log.lock().expect("log").iter().find_map(|l| pick(l)) {
            return Some(t);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// The `n`th access log line (1-based), once logged (bounded wait).
fn access_line(log: &Mutex<Vec<String>>, n: usize) -> Option<String> {
    let start = Instant::now();
    while start.elapsed() < WAIT {
        let lines = log.lock().expect("log");
        if let Some(l) = lines
            .iter()
            .filter(|l| l.contains("mcs::access"))
            .nth(n - 1)
        {
            return Some(l.clone());
        }
        drop(lines);
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

fn start(dir: &Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_machine-config-server"))
        .arg("--dir")
        .arg(dir)
        .args(["--no-secure", "--insecure-port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("machine-config-server starts");
    let log = Arc::new(Mutex::new(Vec::new()));
    follow(child.stdout.take().expect("stdout"), log.clone());
    follow(child.stderr.take().expect("stderr"), log.clone());
    // `serving plain HTTP addr=127.0.0.1:PORT`
    let addr = wait_for(&log, |l| {
        let rest = l.split("serving plain HTTP").nth(1)?;
        rest.split_whitespace()
            .find_map(|w| w.strip_prefix("addr="))?
            .parse()
            .ok()
    });
    let Some(addr) = addr else {
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "no plain HTTP address logged: {:?}",
            log.lock().expect("log")
        );
    };
    Server { child, log, addr }
}

/// One request on a new connection, the Accept value sent as given: status and body.
fn get(addr: SocketAddr, accept: &str) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(WAIT)).expect("timeout");
    let mut req =
        b"GET /config/worker HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n".to_vec();
    req.extend_from_slice(b"Accept: ");
    req.extend_from_slice(accept.as_bytes());
    req.extend_from_slice(b"\r\n\r\n");
    s.write_all(&req).expect("send");
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).expect("response");
    let head_end = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&resp[..head_end]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status code");
    (status, resp[head_end + 4..].to_vec())
}

/// A copy of the example cluster (its worker pool is served).
fn cluster_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cluster");
    for e in std::fs::read_dir(example).expect("example cluster") {
        let p = e.expect("entry").path();
        if let Some(n) = p.file_name() {
            std::fs::copy(&p, dir.path().join(n)).expect("copy manifest");
        }
    }
    dir
}

#[test]
fn accept_headers_through_the_server_binary() {
    let started = Instant::now();
    let table: Vec<Value> = serde_json::from_slice(
        &std::fs::read(corpus::testdata("accept-headers.json")).expect("the corpus"),
    )
    .expect("corpus JSON");
    assert_eq!(table.len(), 200, "the corpus holds 200 headers");
    let dir = cluster_dir();
    let server = start(dir.path());
    // The pools render before the listener opens; a first request proves it.
    assert_eq!(get(server.addr, "").0, 200, "the worker pool is served");
    let mut requests = 1;
    let mut failures = Vec::new();
    for entry in &table {
        let header = entry["header"].as_str().unwrap_or("");
        let expected = &entry["expected"];
        let (status, body) = get(server.addr, header);
        requests += 1;
        // The request's access log line (one a request, in order).
        let line = access_line(&server.log, requests);
        match expected["error"].as_str() {
            Some(error) => {
                let logged = format!("error={error:?}");
                let in_log = line.as_deref().is_some_and(|l| l.contains(&logged));
                if !(status == 400 && body.is_empty() && in_log) {
                    failures.push(format!(
                        "{header:?}: {status}, {} body bytes, logged {line:?}; want 400 and {logged}",
                        body.len()
                    ));
                }
            }
            None => {
                let want = expected["version"].as_str().unwrap_or("");
                let negotiated = line
                    .as_deref()
                    .is_some_and(|l| l.contains(&format!("version={want:?}")));
                let served: Option<String> = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| v.pointer("/ignition/version")?.as_str().map(str::to_string));
                // Upstream negotiates 3.0.0 but has no conversion from 3.5 down to it: 500.
                let (status_ok, body_ok) = if want == "3.0.0" {
                    (status == 500, body.is_empty())
                } else {
                    (status == 200, served.as_deref() == Some(want))
                };
                if !(negotiated && status_ok && body_ok) {
                    failures.push(format!(
                        "{header:?}: {status}, served {served:?}, logged {line:?}; want {want}"
                    ));
                }
            }
        }
    }
    drop(server);
    eprintln!(
        "accept headers through machine-config-server: {}/{} ({:.1} s)",
        table.len() - failures.len(),
        table.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
