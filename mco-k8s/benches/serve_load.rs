//! Load benchmark: the machine-config-server against nginx serving the same bytes as a static
//! file, on 127.0.0.1, 64 keep-alive connections, bounded in time and count.
//!
//! Run with `cargo bench -p mco-k8s --bench serve_load`. nginx comes from the Debian package
//! (`apt-get install nginx-light`); without it only our server is measured.

use mco_k8s::mcs::access::AccessPolicy;
use mco_k8s::mcs::served_state::BuildOptions;
use mco_k8s::mcs::server::{self, Config};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const CONNECTIONS: usize = 64;
const DURATION: Duration = Duration::from_secs(5);
const MAX_REQUESTS: usize = 2_000_000;

/// Writes a worker pool whose served config is about 200 KB.
fn write_cluster(dir: &Path) {
    let mut files = String::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..62 {
        let mut text = String::new();
        while text.len() < 1000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            text.push_str(&format!("key{}={:x}\\n", x % 97, x));
        }
        files.push_str(&format!(
            "        - path: /etc/bench/file-{i}.conf\n          mode: 420\n          contents:\n            source: \"data:,{}\"\n",
            text.replace('=', "%3D").replace("\\n", "%0A")
        ));
    }
    let manifest = format!(
        "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata:\n  name: worker\nspec:\n  machineConfigSelector:\n    matchLabels:\n      machineconfiguration.openshift.io/role: worker\n---\napiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 50-worker-bench\n  labels:\n    machineconfiguration.openshift.io/role: worker\nspec:\n  config:\n    ignition:\n      version: 3.5.0\n    storage:\n      files:\n{files}"
    );
    std::fs::write(dir.join("cluster.yaml"), manifest).expect("write manifests");
}

struct Outcome {
    requests: usize,
    errors: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
    body_bytes: usize,
}

async fn one_connection(
    addr: SocketAddr,
    path: &'static str,
    deadline: Instant,
    budget: usize,
) -> (usize, usize, Vec<Duration>, usize) {
    let mut lat = Vec::new();
    let mut errors = 0;
    let mut body_len = 0;
    let Ok(mut s) = TcpStream::connect(addr).await else {
        return (0, 1, lat, 0);
    };
    let _ = s.set_nodelay(true);
    let req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/vnd.coreos.ignition+json;version=3.4.0\r\n\r\n");
    let mut buf = vec![0u8; 1 << 20];
    while Instant::now() < deadline && lat.len() < budget {
        let start = Instant::now();
        if s.write_all(req.as_bytes()).await.is_err() {
            errors += 1;
            break;
        }
        // Read the head, then the body by Content-Length.
        let mut have = 0;
        let head_end = loop {
            match s.read(&mut buf[have..]).await {
                Ok(0) | Err(_) => break None,
                Ok(n) => have += n,
            }
            if let Some(p) = buf[..have].windows(4).position(|w| w == b"\r\n\r\n") {
                break Some(p + 4);
            }
        };
        let Some(head_end) = head_end else {
            errors += 1;
            break;
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
        let ok = head.starts_with("http/1.1 200");
        let len: usize = head
            .lines()
            .find_map(|l| {
                l.strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap_or(0))
            })
            .unwrap_or(0);
        while have < head_end + len {
            match s.read(&mut buf[have..]).await {
                Ok(0) | Err(_) => break,
                Ok(n) => have += n,
            }
        }
        if !ok || have != head_end + len {
            errors += 1;
            break;
        }
        body_len = len;
        lat.push(start.elapsed());
    }
    (lat.len(), errors, lat, body_len)
}

async fn load(addr: SocketAddr, path: &'static str) -> Outcome {
    let start = Instant::now();
    let deadline = start + DURATION;
    let per_conn = MAX_REQUESTS / CONNECTIONS;
    let tasks: Vec<_> = (0..CONNECTIONS)
        .map(|_| tokio::spawn(one_connection(addr, path, deadline, per_conn)))
        .collect();
    let mut out = Outcome {
        requests: 0,
        errors: 0,
        elapsed: Duration::ZERO,
        latencies: Vec::new(),
        body_bytes: 0,
    };
    for t in tasks {
        if let Ok((n, e, l, b)) = t.await {
            out.requests += n;
            out.errors += e;
            out.latencies.extend(l);
            out.body_bytes = out.body_bytes.max(b);
        } else {
            out.errors += 1;
        }
    }
    out.elapsed = start.elapsed();
    out.latencies.sort();
    out
}

fn report(name: &str, o: &Outcome) -> f64 {
    let rps = o.requests as f64 / o.elapsed.as_secs_f64();
    let p = |q: f64| {
        o.latencies
            .get(((o.latencies.len() as f64 * q) as usize).min(o.latencies.len().saturating_sub(1)))
            .map(|d| d.as_secs_f64() * 1000.0)
            .unwrap_or(0.0)
    };
    println!(
        "{name:<22} {rps:>10.0} req/s  p50 {:>6.2} ms  p99 {:>6.2} ms  {} requests, {} errors, body {} bytes",
        p(0.50),
        p(0.99),
        o.requests,
        o.errors,
        o.body_bytes
    );
    rps
}

fn start_nginx(dir: &Path, body: &[u8]) -> Option<(std::process::Child, SocketAddr)> {
    let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .find(|p| Path::new(p).exists())?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let root = dir.join("www");
    std::fs::create_dir_all(root.join("config")).ok()?;
    std::fs::write(root.join("config/worker"), body).ok()?;
    let conf = format!(
        "worker_processes 2;\ndaemon off;\npid {pid};\nerror_log {err} error;\nevents {{ worker_connections 1024; }}\nhttp {{\n  access_log off;\n  sendfile on;\n  tcp_nopush on;\n  keepalive_requests 1000000;\n  default_type application/json;\n  client_body_temp_path {tmp};\n  proxy_temp_path {tmp};\n  fastcgi_temp_path {tmp};\n  uwsgi_temp_path {tmp};\n  scgi_temp_path {tmp};\n  server {{\n    listen 127.0.0.1:{port};\n    root {root};\n  }}\n}}\n",
        pid = dir.join("nginx.pid").display(),
        err = dir.join("nginx.err").display(),
        tmp = dir.display(),
        root = root.display(),
    );
    let conf_path = dir.join("nginx.conf");
    std::fs::write(&conf_path, conf).ok()?;
    let child = std::process::Command::new(nginx)
        .args([
            "-c",
            &conf_path.display().to_string(),
            "-p",
            &dir.display().to_string(),
        ])
        .spawn()
        .ok()?;
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().ok()?;
    for _ in 0..100 {
        if std::net::TcpStream::connect(addr).is_ok() {
            return Some((child, addr));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn main() {
    let dir = std::env::temp_dir().join(format!("mcs-load-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("manifests")).expect("temp dir");
    write_cluster(&dir.join("manifests"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let cfg = Config {
            source: mco_k8s::mcs::server::Source::Dir(dir.join("manifests")),
            listen: "127.0.0.1".parse().expect("loopback"),
            secure_port: None,
            insecure_port: Some(0),
            tls: None,
            build: BuildOptions::default(),
            access: AccessPolicy::default(),
            poll_interval: Duration::from_secs(3600),
            limits: mco_k8s::limits::ConnLimits::default(),
            bootstrap: None,
        };
        let running = server::start(cfg).await.expect("server starts");
        let addr = running.insecure_addr.expect("plain port");
        // Warm up and capture the served bytes for nginx.
        let mut s = TcpStream::connect(addr).await.expect("connect");
        s.write_all(b"GET /config/worker HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAccept: application/vnd.coreos.ignition+json;version=3.4.0\r\n\r\n").await.expect("write");
        let mut resp = Vec::new();
        s.read_to_end(&mut resp).await.expect("read");
        let split = resp.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4).unwrap_or(0);
        let body = resp[split..].to_vec();
        println!("served config: {} bytes; {CONNECTIONS} connections, {} s each run", body.len(), DURATION.as_secs());
        let ours = load(addr, "/config/worker").await;
        let ours_rps = report("machine-config-server", &ours);
        match start_nginx(&dir, &body) {
            Some((mut child, naddr)) => {
                let theirs = load(naddr, "/config/worker").await;
                let nginx_rps = report("nginx (static file)", &theirs);
                println!("ratio: {:.0}% of nginx", 100.0 * ours_rps / nginx_rps.max(1.0));
                let _ = child.kill();
                let _ = child.wait();
            }
            None => println!("nginx not found: install nginx-light to compare"),
        }
        running.stop().await;
    });
    let _ = std::fs::remove_dir_all(&dir);
}
