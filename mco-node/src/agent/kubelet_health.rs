//! The kubelet health monitor, as upstream's daemon runs it: every [`INTERVAL`] a GET of the
//! kubelet's healthz endpoint; a request that gets no answer (refused, timed out, cut off)
//! is a failure, and `mcd_kubelet_state` holds the failures in a row (an answer resets it).
//! Any answer counts as one, as upstream's: a body other than `ok` is only logged.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use super::metrics::AgentMetrics;

/// The kubelet's healthz endpoint (upstream's default; the kubelet serves it on the host's
/// loopback).
pub const DEFAULT_ENDPOINT: &str = "http://localhost:10248/healthz";
/// Time between checks (upstream's).
pub const INTERVAL: Duration = Duration::from_secs(30);
/// Time one check may take (upstream's).
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of an answer read at most.
const MAX_ANSWER: u64 = 64 * 1024;

/// Where a check is sent: host, port and path of a plain `http://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    host: String,
    port: u16,
    path: String,
}

impl Endpoint {
    /// Parses `http://HOST[:PORT][/PATH]` (IPv6 hosts in brackets); the error names the URL.
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let bad = |why: &str| format!("kubelet healthz endpoint {url:?}: {why}");
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| bad("only http:// URLs are supported"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(':') && (!h.starts_with('[') || h.ends_with(']')) => {
                (h, p.parse().map_err(|_| bad("the port is not a number"))?)
            }
            _ => (authority, 80),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(bad("no host"));
        }
        Ok(Endpoint {
            host: host.to_string(),
            port,
            path: path.to_string(),
        })
    }

    /// One check: the answer's body, or why there was none within `timeout`.
    pub fn check(&self, timeout: Duration) -> Result<String, String> {
        let addrs: Vec<_> = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| format!("resolving {}: {e}", self.host))?
            .collect();
        let mut last = format!("{} has no address", self.host);
        for addr in addrs {
            match self.check_at(addr, timeout) {
                Ok(body) => return Ok(body),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn check_at(&self, addr: std::net::SocketAddr, timeout: Duration) -> Result<String, String> {
        let fail = |e: std::io::Error| format!("GET http://{addr}{}: {e}", self.path);
        let mut conn = TcpStream::connect_timeout(&addr, timeout).map_err(fail)?;
        conn.set_read_timeout(Some(timeout)).map_err(fail)?;
        conn.set_write_timeout(Some(timeout)).map_err(fail)?;
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {host}:{}\r\nConnection: close\r\n\r\n",
            self.path, self.port
        );
        conn.write_all(request.as_bytes()).map_err(fail)?;
        let mut answer = Vec::new();
        conn.take(MAX_ANSWER)
            .read_to_end(&mut answer)
            .map_err(fail)?;
        let text = String::from_utf8_lossy(&answer);
        if !text.starts_with("HTTP/") {
            return Err(format!(
                "GET http://{addr}{}: the answer is not HTTP",
                self.path
            ));
        }
        Ok(text
            .split_once("\r\n\r\n")
            .map_or("", |(_, body)| body)
            .to_string())
    }
}

/// Checks `endpoint` every `interval` until the task is dropped, keeping
/// `mcd_kubelet_state` at the failures in a row.
pub async fn run(
    endpoint: Endpoint,
    interval: Duration,
    timeout: Duration,
    metrics: Arc<AgentMetrics>,
) {
    let mut failures: u32 = 0;
    metrics.set_kubelet_failures(0);
    loop {
        tokio::time::sleep(interval).await;
        let e = endpoint.clone();
        let result = tokio::task::spawn_blocking(move || e.check(timeout))
            .await
            .unwrap_or_else(|e| Err(format!("the check did not finish: {e}")));
        match result {
            Ok(body) => {
                if body.trim() != "ok" {
                    tracing::warn!("kubelet healthz endpoint answered {:?}", body.trim());
                }
                if failures > 0 {
                    tracing::info!("kubelet health check passes again after {failures} failures");
                }
                failures = 0;
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                // The first failure and every tenth after it: a kubelet out of reach for
                // hours does not fill the log.
                if failures % 10 == 1 {
                    tracing::warn!("kubelet health check has failed {failures} times: {e}");
                } else {
                    tracing::debug!("kubelet health check has failed {failures} times: {e}");
                }
            }
        }
        metrics.set_kubelet_failures(failures);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::time::Instant;

    /// A healthz endpoint on 127.0.0.1 answering every request with `body` until dropped.
    fn answering(body: &'static str) -> (TcpListener, String) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/healthz", l.local_addr().unwrap());
        let server = l.try_clone().unwrap();
        std::thread::spawn(move || {
            for conn in server.incoming() {
                let Ok(mut c) = conn else { return };
                let mut buf = [0u8; 1024];
                let _ = c.read(&mut buf);
                let _ = write!(
                    c,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        (l, url)
    }

    /// A URL nothing listens on.
    fn refused() -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/healthz", l.local_addr().unwrap())
    }

    #[test]
    fn parses_plain_http_urls() {
        let e = Endpoint::parse(DEFAULT_ENDPOINT).unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.path.as_str()),
            ("localhost", 10248, "/healthz")
        );
        let e = Endpoint::parse("http://[::1]:10248").unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.path.as_str()),
            ("::1", 10248, "/")
        );
        let e = Endpoint::parse("http://kubelet/healthz").unwrap();
        assert_eq!(e.port, 80);
        for bad in [
            "https://localhost:10248/healthz",
            "http://:1/",
            "http://h:x/",
        ] {
            let err = Endpoint::parse(bad).unwrap_err();
            assert!(err.contains(bad), "{err}");
        }
    }

    #[test]
    fn an_answer_passes_and_no_answer_fails() {
        let (_l, url) = answering("ok");
        let e = Endpoint::parse(&url).unwrap();
        assert_eq!(e.check(Duration::from_secs(60)).unwrap(), "ok");
        let e = Endpoint::parse(&refused()).unwrap();
        assert!(e.check(Duration::from_secs(60)).is_err());
    }

    #[test]
    fn a_silent_endpoint_times_out() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let e = Endpoint::parse(&format!("http://{}/healthz", l.local_addr().unwrap())).unwrap();
        let err = e.check(Duration::from_millis(200)).unwrap_err();
        assert!(err.contains("/healthz"), "{err}");
    }

    /// The gauge's value now.
    fn state(m: &AgentMetrics) -> i64 {
        let text = m.render();
        text.lines()
            .find_map(|l| l.strip_prefix("mcd_kubelet_state "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no mcd_kubelet_state: {text}"))
    }

    /// Waits (bounded generously) until the gauge satisfies `ok`.
    async fn wait_for(m: &AgentMetrics, what: &str, ok: impl Fn(i64) -> bool) {
        let start = Instant::now();
        while !ok(state(m)) {
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "mcd_kubelet_state never {what}: {}",
                m.render()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn the_gauge_counts_failures_in_a_row_and_resets() {
        use std::sync::atomic::{AtomicBool, Ordering};
        // An endpoint that hangs up without answering until `healthy` is set.
        let healthy = Arc::new(AtomicBool::new(false));
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/healthz", l.local_addr().unwrap());
        let flag = healthy.clone();
        std::thread::spawn(move || {
            for conn in l.incoming() {
                let Ok(mut c) = conn else { return };
                let mut buf = [0u8; 1024];
                let _ = c.read(&mut buf);
                if flag.load(Ordering::SeqCst) {
                    let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                }
            }
        });
        let m = AgentMetrics::new();
        let task = tokio::spawn(run(
            Endpoint::parse(&url).unwrap(),
            Duration::from_millis(5),
            Duration::from_secs(60),
            m.clone(),
        ));
        wait_for(&m, "reached 3", |v| v >= 3).await;
        healthy.store(true, Ordering::SeqCst);
        wait_for(&m, "went back to 0", |v| v == 0).await;
        task.abort();
    }
}
