//! Load benchmark: the machine-config-server against nginx serving the same bytes as static
//! files, on 127.0.0.1, 64 keep-alive connections per run, bounded in time and count.
//!
//! Three modes, each run for our server and for nginx in turn, round after round (ours,
//! nginx, ours, nginx, ...), so both see the same load on a shared machine:
//! - `plain`: HTTP, no `Accept-Encoding`: the identical plain body;
//! - `gzip`: HTTP with `Accept-Encoding: gzip` (as Go's client, and so Ignition, sends): our
//!   gzip form against nginx's `gzip_static` serving a `.gz` file of the same gzip bytes;
//! - `tls`: HTTPS (TLS 1.3, rustls client) with the same certificate and key for both (made with
//!   rcgen here), plain body.
//!
//! The served config is upstream's baremetal master pool when `../shared/conformance/real` holds
//! it (read at run time, never copied into the project), otherwise a generated pool of about
//! the same size. Our server is the `machine-config-server` binary in a process of its own (2
//! runtime threads here), nginx has 2 worker processes, and both write an access log line per
//! request to /dev/null; the load client is this process, on 2 threads.
//!
//! Run with `cargo bench -p mco-k8s --bench serve_load`. nginx comes from the Debian package
//! (`apt-get install nginx-light`); without it only our server is measured, and the run says
//! so. `MCS_BENCH_ROUNDS` (default 3) and `MCS_BENCH_SECS` (default 5) set the rounds and the
//! length of each run; `MCS_BENCH_MODES` (default `plain,gzip,tls`) the modes;
//! `MCS_BENCH_NGINX` adds directives to nginx's `server` block (to try its settings);
//! `MCS_BENCH_BINARY` names another build of the binary to measure (to compare commits);
//! `MCS_BENCH_LAYOUT=threads` runs our server in this process on 2 threads of its own (no
//! access log, nor nginx's), `MCS_BENCH_LAYOUT=shared` on the client's runtime.

use mco_k8s::mcs::access::{AccessPolicy, Cidr};
use mco_k8s::mcs::metrics::Metrics;
use mco_k8s::mcs::respond::{respond, Request};
use mco_k8s::mcs::served_state::BuildOptions;
use mco_k8s::mcs::server::{self, Config, Running};
use std::io::Read as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls;

const CONNECTIONS: usize = 64;
const MAX_REQUESTS: usize = 2_000_000;
const ACCEPT: &str = "application/vnd.coreos.ignition+json;version=3.4.0";

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The real baremetal master pool, when ../shared has it: writes its objects as JSON
/// manifests and returns the pool's name.
fn write_real_cluster(dir: &Path) -> Option<String> {
    let case = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/conformance/real/real-baremetal-master.json.gz");
    let file = std::fs::File::open(&case).ok()?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .ok()?;
    let case: serde_json::Value = serde_json::from_str(&text).ok()?;
    let mut objects = vec![case["pool"].clone()];
    objects.extend(
        case["machineConfigs"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    );
    objects.push(serde_json::json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "ControllerConfig",
        "metadata": {"name": "machine-config-controller"}, "spec": case["controllerConfig"]
    }));
    for (i, o) in objects.iter().enumerate() {
        std::fs::write(dir.join(format!("{i:03}.json")), o.to_string()).ok()?;
    }
    case["pool"]["metadata"]["name"]
        .as_str()
        .map(str::to_string)
}

/// A generated worker pool whose served config is about 566 KB (the size of the baremetal
/// master's): 170 files of 1 KB of pseudo-random `key=value` lines.
fn write_generated_cluster(dir: &Path) -> String {
    let mut files = String::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..170 {
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
    "worker".to_string()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Plain,
    Gzip,
    Tls,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::Gzip => "gzip",
            Mode::Tls => "tls",
        }
    }
}

/// Where one server listens.
#[derive(Clone, Copy)]
struct Target {
    plain: SocketAddr,
    tls: SocketAddr,
}

/// What the load client needs for a run.
#[derive(Clone)]
struct Load {
    path: String,
    tls: Arc<rustls::ClientConfig>,
    secs: Duration,
}

#[derive(Default)]
struct Outcome {
    requests: usize,
    errors: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
    body_bytes: usize,
    head_bytes: usize,
    error: Option<String>,
    /// The server process's CPU time (user + system) per request, when it is a process.
    cpu_us_per_request: Option<f64>,
}

/// Keep-alive GETs on one connection until the deadline or the budget; every answer must be a
/// 200 with its whole body (and `Content-Encoding: gzip` when gzip was asked for).
async fn drive<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    req: &[u8],
    gzip: bool,
    deadline: Instant,
    budget: usize,
    out: &mut Outcome,
) {
    let mut buf = vec![0u8; 1 << 20];
    while Instant::now() < deadline && out.latencies.len() < budget {
        let start = Instant::now();
        if let Err(e) = s.write_all(req).await {
            out.errors += 1;
            out.error = Some(format!("write: {e}"));
            return;
        }
        let mut have = 0;
        let head_end = loop {
            match s.read(&mut buf[have..]).await {
                Ok(0) => break None,
                Err(e) => {
                    out.error = Some(format!("read: {e}"));
                    break None;
                }
                Ok(n) => have += n,
            }
            if let Some(p) = buf[..have].windows(4).position(|w| w == b"\r\n\r\n") {
                break Some(p + 4);
            }
        };
        let Some(head_end) = head_end else {
            out.errors += 1;
            return;
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
        let ok = head.starts_with("http/1.1 200")
            && (!gzip || head.contains("\r\ncontent-encoding: gzip\r\n"));
        let len: usize = head
            .lines()
            .find_map(|l| {
                l.strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap_or(0))
            })
            .unwrap_or(0);
        if head_end + len > buf.len() {
            buf.resize(head_end + len, 0);
        }
        while have < head_end + len {
            match s.read(&mut buf[have..]).await {
                Ok(0) | Err(_) => break,
                Ok(n) => have += n,
            }
        }
        if !ok || have != head_end + len {
            out.errors += 1;
            out.error = Some(format!(
                "unexpected answer: {}",
                head.lines().next().unwrap_or("")
            ));
            return;
        }
        out.body_bytes = len;
        out.head_bytes = head_end;
        out.latencies.push(start.elapsed());
    }
}

async fn one_connection(target: Target, mode: Mode, load: Load, deadline: Instant) -> Outcome {
    let mut out = Outcome::default();
    let budget = MAX_REQUESTS / CONNECTIONS;
    let coding = if mode == Mode::Gzip {
        "Accept-Encoding: gzip\r\n"
    } else {
        ""
    };
    let req = format!(
        "GET {} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: Ignition/2.20.0\r\nAccept: {ACCEPT}\r\n{coding}\r\n",
        load.path
    );
    let addr = if mode == Mode::Tls {
        target.tls
    } else {
        target.plain
    };
    let tcp = match TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(e) => {
            out.errors += 1;
            out.error = Some(format!("connect: {e}"));
            return out;
        }
    };
    let _ = tcp.set_nodelay(true);
    if mode == Mode::Tls {
        let connector = tokio_rustls::TlsConnector::from(load.tls.clone());
        let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
        match connector.connect(name, tcp).await {
            Ok(s) => drive(s, req.as_bytes(), false, deadline, budget, &mut out).await,
            Err(e) => {
                out.errors += 1;
                out.error = Some(format!("handshake: {e}"));
            }
        }
    } else {
        drive(
            tcp,
            req.as_bytes(),
            mode == Mode::Gzip,
            deadline,
            budget,
            &mut out,
        )
        .await;
    }
    out
}

async fn load(target: Target, mode: Mode, l: &Load) -> Outcome {
    let start = Instant::now();
    let deadline = start + l.secs;
    let tasks: Vec<_> = (0..CONNECTIONS)
        .map(|_| tokio::spawn(one_connection(target, mode, l.clone(), deadline)))
        .collect();
    let mut out = Outcome::default();
    for t in tasks {
        match t.await {
            Ok(o) => {
                out.requests += o.latencies.len();
                out.errors += o.errors;
                out.latencies.extend(o.latencies);
                out.body_bytes = out.body_bytes.max(o.body_bytes);
                out.head_bytes = out.head_bytes.max(o.head_bytes);
                out.error = out.error.or(o.error);
            }
            Err(e) => {
                out.errors += 1;
                out.error = Some(e.to_string());
            }
        }
    }
    out.elapsed = start.elapsed();
    out.latencies.sort();
    out
}

fn rps(o: &Outcome) -> f64 {
    o.requests as f64 / o.elapsed.as_secs_f64()
}

/// The state, parent and CPU time (user + system, in clock ticks) in /proc/PID/stat.
fn proc_stat(pid: u32) -> Option<(u32, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ppid = f.get(1)?.parse().ok()?;
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some((ppid, ticks))
}

/// CPU time used so far by a process and its children (nginx's master and its workers), in
/// clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let mut total = proc_stat(pid).map_or(0, |s| s.1);
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Some(child) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if let Some((ppid, ticks)) = proc_stat(child) {
                if ppid == pid {
                    total += ticks;
                }
            }
        }
    }
    total
}

/// Clock ticks per second (`getconf CLK_TCK`, 100 when it cannot say).
fn clock_ticks() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

fn report(round: usize, mode: Mode, name: &str, o: &Outcome) {
    let p = |q: f64| {
        o.latencies
            .get(((o.latencies.len() as f64 * q) as usize).min(o.latencies.len().saturating_sub(1)))
            .map(|d| d.as_secs_f64() * 1000.0)
            .unwrap_or(0.0)
    };
    println!(
        "round {round} {:<5} {name:<22} {:>8.0} req/s  p50 {:>6.2} ms  p99 {:>6.2} ms  {} requests, {} errors, body {} B, head {} B{}",
        mode.name(),
        rps(o),
        p(0.50),
        p(0.99),
        o.requests,
        o.errors,
        o.body_bytes,
        o.head_bytes,
        o.error.as_deref().map(|e| format!("  ({e})")).unwrap_or_default(),
    );
    if let Some(us) = o.cpu_us_per_request {
        println!("        server CPU {us:.1} µs per request");
    }
}

/// A server in a process of its own (nginx, or our binary); stopped with SIGTERM when
/// dropped (for nginx a fast shutdown of the master and its workers; SIGKILL would orphan
/// them).
struct Nginx {
    child: std::process::Child,
    target: Target,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

fn free_port() -> Option<u16> {
    Some(
        std::net::TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port(),
    )
}

/// The two ways nginx serves a static file, each its best on some machines: the kernel's
/// `sendfile` (nginx's usual static setting), or read into a buffer and written.
const NGINX_VARIANTS: [(&str, &str); 2] = [
    ("nginx sendfile", "sendfile on; tcp_nopush on;"),
    ("nginx read+write", "sendfile off; output_buffers 1 1m;"),
];

#[allow(clippy::too_many_arguments)]
fn start_nginx(
    dir: &Path,
    variant: &str,
    access_log: &str,
    path: &str,
    body: &[u8],
    gz: &[u8],
    cert: &Path,
    key: &Path,
) -> Result<Nginx, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .ok_or("nginx not found: `apt-get install nginx-light` to compare")?;
    let (plain, tls) = (
        free_port().ok_or("no free port")?,
        free_port().ok_or("no free port")?,
    );
    let root = dir.join("www");
    let file = root.join(path.trim_start_matches('/'));
    let parent = file.parent().ok_or("path")?;
    std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    std::fs::write(&file, body).map_err(|e| e.to_string())?;
    std::fs::write(file.with_extension("gz"), gz).map_err(|e| e.to_string())?;
    let conf = format!(
        "worker_processes 2;\ndaemon off;\npid {pid};\nerror_log {err} error;\nevents {{ worker_connections 1024; }}\nhttp {{\n  access_log {access_log};\n  keepalive_requests 1000000;\n  default_type application/json;\n  gzip_static on;\n  ssl_protocols TLSv1.2 TLSv1.3;\n  client_body_temp_path {tmp};\n  proxy_temp_path {tmp};\n  fastcgi_temp_path {tmp};\n  uwsgi_temp_path {tmp};\n  scgi_temp_path {tmp};\n  server {{\n    listen 127.0.0.1:{plain} reuseport;\n    listen 127.0.0.1:{tls} ssl reuseport;\n    ssl_certificate {cert};\n    ssl_certificate_key {key};\n    root {root};\n    {variant}\n    {extra}\n  }}\n}}\n",
        pid = dir.join("nginx.pid").display(),
        err = dir.join("nginx.err").display(),
        tmp = dir.display(),
        root = root.display(),
        cert = cert.display(),
        key = key.display(),
        access_log = access_log,
        extra = std::env::var("MCS_BENCH_NGINX").unwrap_or_default(),
    );
    let conf_path = dir.join("nginx.conf");
    std::fs::write(&conf_path, conf).map_err(|e| e.to_string())?;
    let child = std::process::Command::new(nginx)
        .args([
            "-c",
            &conf_path.display().to_string(),
            "-p",
            &dir.display().to_string(),
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("{nginx}: {e}"))?;
    let target = Target {
        plain: SocketAddr::from(([127, 0, 0, 1], plain)),
        tls: SocketAddr::from(([127, 0, 0, 1], tls)),
    };
    let n = Nginx { child, target };
    for _ in 0..100 {
        if std::net::TcpStream::connect(target.plain).is_ok()
            && std::net::TcpStream::connect(target.tls).is_ok()
        {
            return Ok(n);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!(
        "nginx did not start: {}",
        std::fs::read_to_string(dir.join("nginx.err")).unwrap_or_default()
    ))
}

/// One request's head and body (plain HTTP, its own connection).
async fn fetch(addr: SocketAddr, path: &str, extra: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAccept: {ACCEPT}\r\n{extra}\r\n");
    s.write_all(req.as_bytes()).await.expect("write");
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).await.expect("read");
    let split = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| p + 4)
        .unwrap_or(0);
    let head = String::from_utf8_lossy(&resp[..split]).into_owned();
    (head, resp[split..].to_vec())
}

fn gunzip(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = flate2::read::GzDecoder::new(b).read_to_end(&mut out);
    out
}

/// The negotiated protocol and cipher suite on a TLS port.
async fn tls_suite(addr: SocketAddr, cfg: Arc<rustls::ClientConfig>) -> String {
    let Ok(tcp) = TcpStream::connect(addr).await else {
        return "connect failed".into();
    };
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    match tokio_rustls::TlsConnector::from(cfg)
        .connect(name, tcp)
        .await
    {
        Ok(s) => {
            let c = s.get_ref().1;
            format!(
                "{:?} {:?}",
                c.protocol_version(),
                c.negotiated_cipher_suite().map(|s| s.suite())
            )
        }
        Err(e) => format!("handshake failed: {e}"),
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn spread(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(0.0, f64::max);
    format!("{lo:.0}-{hi:.0}")
}

/// Our `machine-config-server` binary as a child process (2 runtime threads on this
/// machine, as nginx has 2 workers), its access log (one line per request, as deployed) sent
/// to /dev/null.
fn start_binary(dir: &Path, cert: &Path, key: &Path) -> Result<Nginx, String> {
    let (plain, tls) = (
        free_port().ok_or("no free port")?,
        free_port().ok_or("no free port")?,
    );
    let bin = std::env::var("MCS_BENCH_BINARY")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_machine-config-server").to_string());
    let child = std::process::Command::new(&bin)
        .arg("--dir")
        .arg(dir.join("manifests"))
        .args(["--listen", "127.0.0.1", "--poll-seconds", "3600"])
        .args(["--insecure-port", &plain.to_string()])
        .args(["--secure-port", &tls.to_string()])
        .arg("--cert")
        .arg(cert)
        .arg("--key")
        .arg(key)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("{bin}: {e}"))?;
    let target = Target {
        plain: SocketAddr::from(([127, 0, 0, 1], plain)),
        tls: SocketAddr::from(([127, 0, 0, 1], tls)),
    };
    let n = Nginx { child, target };
    for _ in 0..600 {
        if std::net::TcpStream::connect(target.plain).is_ok()
            && std::net::TcpStream::connect(target.tls).is_ok()
        {
            return Ok(n);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err("machine-config-server did not start".into())
}

/// The per-request decision (`respond`: routing, access checks, Accept and Accept-Encoding
/// negotiation, the cached body and its headers), timed alone, as each request runs it
/// besides hyper's parsing and writing and the kernel's work.
fn time_respond(running: &Running, path: &str) {
    let state = running.shared.state();
    let metrics = Metrics::default();
    let open = AccessPolicy::default();
    let guarded = AccessPolicy {
        token: Some("s3cret".into()),
        allow: vec!["127.0.0.0/8".parse::<Cidr>().expect("cidr")],
    };
    let cases = [
        ("plain", &open, None),
        ("gzip", &open, Some("gzip")),
        ("token and CIDR", &guarded, None),
    ];
    let mut line = String::from("respond() per request:");
    for (what, policy, coding) in cases {
        let req = Request {
            method: "GET",
            path,
            accept: Some(ACCEPT),
            accept_encoding: coding,
            authorization: Some("Bearer s3cret"),
            client: Some(std::net::IpAddr::from([127, 0, 0, 1])),
            ..Request::default()
        };
        let n = 200_000u32;
        let t = Instant::now();
        for _ in 0..n {
            let r = respond(std::hint::black_box(&req), &state, policy, &metrics);
            assert_eq!(r.status, 200);
            std::hint::black_box(r);
        }
        line.push_str(&format!(
            " {what} {:.0} ns;",
            t.elapsed().as_nanos() as f64 / f64::from(n)
        ));
    }
    println!("{line}");
}

/// Starts our server on `rt`, or on a runtime of its own (2 threads named `mcs-server`).
fn start_ours(
    dir: &Path,
    cert: PathBuf,
    key: PathBuf,
    rt: Option<&tokio::runtime::Runtime>,
) -> (Option<tokio::runtime::Runtime>, Running) {
    let own = match rt {
        Some(_) => None,
        None => Some(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("mcs-server")
                .enable_all()
                .build()
                .expect("server runtime"),
        ),
    };
    let cfg = Config {
        source: mco_k8s::mcs::server::Source::Dir(dir.join("manifests")),
        listen: "127.0.0.1".parse().expect("loopback"),
        secure_port: Some(0),
        insecure_port: Some(0),
        tls: Some((cert, key)),
        build: BuildOptions::default(),
        access: AccessPolicy::default(),
        poll_interval: Duration::from_secs(3600),
        limits: mco_k8s::limits::ConnLimits::default(),
        bootstrap: None,
    };
    let running = rt
        .or(own.as_ref())
        .expect("a runtime")
        .block_on(server::start(cfg))
        .expect("server starts");
    (own, running)
}

fn main() {
    let rounds: usize = env_or("MCS_BENCH_ROUNDS", 3);
    let secs = Duration::from_secs(env_or("MCS_BENCH_SECS", 5));
    let modes: Vec<Mode> = std::env::var("MCS_BENCH_MODES")
        .unwrap_or_else(|_| "plain,gzip,tls".into())
        .split(',')
        .filter_map(|m| match m.trim() {
            "plain" => Some(Mode::Plain),
            "gzip" => Some(Mode::Gzip),
            "tls" => Some(Mode::Tls),
            _ => None,
        })
        .collect();
    let dir = std::env::temp_dir().join(format!("mcs-load-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("manifests")).expect("temp dir");
    let (pool, source) = match write_real_cluster(&dir.join("manifests")) {
        Some(p) => (
            p,
            "upstream's baremetal master pool (../shared/conformance/real)",
        ),
        None => (
            write_generated_cluster(&dir.join("manifests")),
            "a generated pool (../shared/conformance/real not present)",
        ),
    };
    let path = format!("/config/{pool}");
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("cert");
    let (cert, key) = (dir.join("tls.crt"), dir.join("tls.key"));
    std::fs::write(&cert, ck.cert.pem()).expect("write cert");
    std::fs::write(&key, ck.key_pair.serialize_pem()).expect("write key");
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ck.cert.der().clone()).expect("root");
    let tls = Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth(),
    );

    let before = loadavg();
    let client = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("load-client")
        .enable_all()
        .build()
        .expect("client runtime");
    // Where our server runs: `process` (default), the binary in a process of its own, as
    // nginx; `threads`, in this process on a runtime of its own (2 threads named
    // `mcs-server`, for profiles); `shared`, on the client's runtime (this bench's earlier
    // layout, where the server and the client took turns on the same 2 threads).
    let layout = std::env::var("MCS_BENCH_LAYOUT").unwrap_or_else(|_| "process".into());
    let shared = layout == "shared";
    let (server_rt, running) =
        start_ours(&dir, cert.clone(), key.clone(), shared.then_some(&client));
    let in_process = Target {
        plain: running.insecure_addr.expect("plain port"),
        tls: running.secure_addr.expect("tls port"),
    };
    let binary = match layout.as_str() {
        "threads" | "shared" => None,
        _ => Some(start_binary(&dir, &cert, &key).expect("the machine-config-server binary")),
    };
    let ours = binary.as_ref().map_or(in_process, |b| b.target);
    // nginx logs each request as our binary does; with our server in this process (no log
    // subscriber) neither logs.
    let nginx_log = if binary.is_some() { "/dev/null" } else { "off" };
    let l = Load {
        path: path.clone(),
        tls: tls.clone(),
        secs,
    };
    client.block_on(async {
        let (_, body) = fetch(in_process.plain, &path, "").await;
        let t = Instant::now();
        let (zhead, gz) = fetch(ours.plain, &path, "Accept-Encoding: gzip\r\n").await;
        let (_, ours_body) = fetch(ours.plain, &path, "").await;
        assert_eq!(ours_body, body, "the binary serves what the library serves");
        let first_gzip = t.elapsed();
        assert!(
            zhead.to_ascii_lowercase().contains("content-encoding: gzip"),
            "{zhead}"
        );
        assert_eq!(gunzip(&gz), body, "the gzip body decompresses to the plain one");
        println!("served: {path}, {source}");
        println!(
            "body: {} B plain, {} B gzip ({:.1}x smaller; the first gzip request, which compressed it, took {:.0} ms)",
            body.len(),
            gz.len(),
            body.len() as f64 / gz.len().max(1) as f64,
            first_gzip.as_secs_f64() * 1000.0
        );
        println!(
            "{CONNECTIONS} keep-alive connections, {} s per run, {rounds} rounds, our server {}, nginx access_log {nginx_log}, load average before: {before}",
            secs.as_secs(),
            match (&binary, shared) {
                (Some(_), _) => "the binary in its own process (access log to /dev/null)",
                (None, true) => "on the client's runtime",
                (None, false) => "on its own 2 threads in this process",
            }
        );
        let mut servers: Vec<(String, Target, Option<Nginx>)> =
            vec![("machine-config-server".into(), ours, None)];
        let tick = clock_ticks();
        for (i, (name, variant)) in NGINX_VARIANTS.iter().enumerate() {
            let prefix = dir.join(format!("nginx-{i}"));
            match start_nginx(&prefix, variant, nginx_log, &path, &body, &gz, &cert, &key) {
                Ok(n) => {
                    let (nhead, nbody) = fetch(n.target.plain, &path, "").await;
                    let (nzhead, ngz) =
                        fetch(n.target.plain, &path, "Accept-Encoding: gzip\r\n").await;
                    assert!(nhead.starts_with("HTTP/1.1 200"), "{nhead}");
                    assert_eq!(nbody, body, "nginx serves the same plain bytes");
                    assert!(
                        nzhead.to_ascii_lowercase().contains("content-encoding: gzip"),
                        "{nzhead}"
                    );
                    assert_eq!(ngz, gz, "nginx serves the same gzip bytes");
                    println!("{name} ({variant}) TLS: {}", tls_suite(n.target.tls, tls.clone()).await);
                    servers.push((name.to_string(), n.target, Some(n)));
                }
                Err(e) => {
                    println!("{e}");
                    break;
                }
            }
        }
        println!("ours TLS: {}", tls_suite(ours.tls, tls.clone()).await);
        time_respond(&running, &path);
        // rps[mode][server] over the rounds, and the body bytes each server sent.
        let mut rps_by: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); servers.len()]; modes.len()];
        let mut bytes_by: Vec<Vec<usize>> = vec![vec![0; servers.len()]; modes.len()];
        let mut cpu_by: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); servers.len()]; modes.len()];
        for round in 1..=rounds {
            for (m, mode) in modes.iter().enumerate() {
                for (i, (name, target, proc_)) in servers.iter().enumerate() {
                    let pid = proc_
                        .as_ref()
                        .or(if i == 0 { binary.as_ref() } else { None })
                        .map(|p| p.child.id());
                    let cpu_before = pid.map(cpu_ticks);
                    let mut o = load(*target, *mode, &l).await;
                    if let (Some(pid), Some(b)) = (pid, cpu_before) {
                        let used = cpu_ticks(pid).saturating_sub(b) as f64 / tick;
                        o.cpu_us_per_request = Some(used * 1e6 / o.requests.max(1) as f64);
                    }
                    report(round, *mode, name, &o);
                    rps_by[m][i].push(rps(&o));
                    cpu_by[m][i].extend(o.cpu_us_per_request);
                    bytes_by[m][i] = o.body_bytes;
                }
            }
        }
        println!("load average after: {}", loadavg());
        println!("\nmedian req/s over {rounds} rounds (spread), body bytes per boot, server CPU per request (median, spread; our binary's process, nginx's master and workers), and ours / the better nginx of each round in req/s:");
        for (m, mode) in modes.iter().enumerate() {
            let mut line = format!("{:<6}", mode.name());
            for (i, (name, _, _)) in servers.iter().enumerate() {
                let mut v = rps_by[m][i].clone();
                let spread = spread(&v);
                line.push_str(&format!(
                    "  {name} {:.0} ({spread}), {} B/boot",
                    median(&mut v),
                    bytes_by[m][i]
                ));
                let mut c = cpu_by[m][i].clone();
                if !c.is_empty() {
                    let spread = format!(
                        "{:.1}-{:.1}",
                        c.iter().copied().fold(f64::INFINITY, f64::min),
                        c.iter().copied().fold(0.0, f64::max)
                    );
                    line.push_str(&format!(", CPU {:.1} ({spread}) µs/req", median(&mut c)));
                }
                line.push(';');
            }
            if servers.len() > 1 {
                let ratios: Vec<f64> = (0..rounds)
                    .map(|r| {
                        let best = (1..servers.len())
                            .map(|i| rps_by[m][i][r])
                            .fold(1.0, f64::max);
                        rps_by[m][0][r] / best
                    })
                    .collect();
                let mut sorted = ratios.clone();
                line.push_str(&format!(
                    "  ratio {:.2} ({})",
                    median(&mut sorted),
                    ratios.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>().join(", ")
                ));
            }
            println!("{line}");
        }
        drop(servers);
        drop(binary);
    });
    server_rt
        .as_ref()
        .unwrap_or(&client)
        .block_on(running.stop());
    let _ = std::fs::remove_dir_all(&dir);
}
