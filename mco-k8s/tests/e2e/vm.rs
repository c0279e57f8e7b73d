//! Real machines: a Debian VM under QEMU (software emulation) whose only input is a pointer
//! config. Real Ignition 2.14 in its initramfs fetches `/config/worker` from our
//! machine-config-server on the host, the machine boots into the served files and units, and
//! the agent (this workspace's `machine-config-daemon`, on a second disk standing in for
//! upstream's image pull) runs as upstream's does on a new machine: first
//! `firstboot-complete-machineconfig`, then the daemon as a systemd service talking to the
//! in-process API server on the host. Its Node must reach Done.
//!
//! The pointer config is the one a cluster's `worker-user-data-managed` Secret carries
//! (`mco_render::controllers::operator::pointer_config`): it merges
//! `https://10.0.2.100:22623/config/worker` and trusts the CA the test made, which signed the
//! server's certificate; Ignition verifies it before it takes the config.
//!
//! `MCO_VM_KUBECONFIG` (an administrator's kubeconfig of a real kube-apiserver) runs the first
//! test against that API server instead of the in-process one ([`real_api`]).
//!
//! The guest reaches nothing but the project's servers: QEMU's user network with
//! `restrict=on`, one `guestfwd` per server. The image comes from `.ci/vm/build-image` (built
//! once, cached outside the work tree). Expensive (a boot takes 60-100 s on two loaded cores):
//! the tier runs only with `MCO_VM_TESTS=1`, and prints a SKIP line naming why otherwise.

mod pki;
mod real_api;

use crate::support;
use crate::support::apiserver::ApiServer;
use crate::support::cluster::{decode, repo, seed_examples};
use mco_k8s::controller::{self, Options};
use mco_render::api::node::{CURRENT_CONFIG, DESIRED_CONFIG, REASON, STATE};
use mco_render::api::Node;
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The node's name: the Node the test registers, as the kubelet would.
const NODE: &str = "vm-worker";
/// Where the guest reaches the host's servers (QEMU's user network forwards each port).
const GUEST_HOST: &str = "10.0.2.100";
const MCS_PORT: u16 = 22623;
const API_PORT: u16 = 6443;
/// How long one boot may take, to Done included (60-100 s here, much more on a loaded CI).
const BOOT_LIMIT: Duration = Duration::from_secs(900);

/// One machine at a time: two emulated machines on two shared cores would each take twice
/// as long, and the waits would have to grow to match.
static ONE_MACHINE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Why the tier cannot run here, or the image folder and the agent binary.
fn prerequisites() -> Result<(PathBuf, PathBuf), String> {
    if std::env::var("MCO_VM_TESTS").ok().as_deref() != Some("1") {
        return Err(
            "real-machine tier off (MCO_VM_TESTS=1 runs it: QEMU boots, minutes each)".into(),
        );
    }
    for tool in ["qemu-system-x86_64", "nc", "debugfs", "e2fsck", "mkfs.ext4"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !found {
            return Err(format!(
                "{tool} is missing (apt-get install qemu-system-x86 netcat-openbsd e2fsprogs)"
            ));
        }
    }
    let out = Command::new(repo(".ci/vm/build-image"))
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!(".ci/vm/build-image: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "no VM image: .ci/vm/build-image failed ({})",
            out.status
        ));
    }
    let image = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string());
    Ok((image, agent_binary()?))
}

/// This workspace's machine-config-daemon: `MCO_VM_AGENT` when set (CI names the one its
/// `cargo test --workspace` just built), else built here for the test's profile.
fn agent_binary() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("MCO_VM_AGENT") {
        let path = PathBuf::from(path);
        return path
            .is_file()
            .then_some(path.clone())
            .ok_or_else(|| format!("MCO_VM_AGENT={}: no such file", path.display()));
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args([
            "build",
            "-q",
            "-p",
            "mco-node",
            "--bin",
            "machine-config-daemon",
        ])
        .current_dir(repo(""))
        .status()
        .map_err(|e| format!("cargo build: {e}"))?;
    if !status.success() {
        return Err("cargo build -p mco-node --bin machine-config-daemon failed".into());
    }
    // target/debug/deps/e2e-HASH -> target/debug/machine-config-daemon
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("machine-config-daemon"))
        .ok_or("no target folder")?;
    bin.exists()
        .then_some(bin.clone())
        .ok_or_else(|| format!("{} not built", bin.display()))
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One machine: its disk (a copy of the image's), the agent's disk, its console log.
struct Machine {
    dir: tempfile::TempDir,
    image: PathBuf,
    mcs_port: u16,
    api_port: u16,
    qemu: Option<Child>,
    boots: u32,
}

impl Machine {
    /// A machine whose first boot reads `pointer` (a pointer config's bytes).
    fn new(image: &Path, agent: &Path, mcs_port: u16, api_port: u16, pointer: &[u8]) -> Machine {
        let dir = tempfile::tempdir().unwrap();
        run(Command::new("cp")
            .arg("--sparse=always")
            .arg(image.join("root.img"))
            .arg(dir.path().join("root.img")));
        // The agent's disk: what upstream pulls as the machine-config-daemon image.
        let content = dir.path().join("agent");
        std::fs::create_dir(&content).unwrap();
        std::fs::copy(agent, content.join("machine-config-daemon")).unwrap();
        run(Command::new("mkfs.ext4")
            .args(["-q", "-F", "-L", "mco-agent", "-d"])
            .arg(&content)
            .arg(dir.path().join("agent.img"))
            .arg("256M"));
        std::fs::remove_dir_all(&content).unwrap();
        std::fs::write(dir.path().join("pointer.ign"), pointer).unwrap();
        Machine {
            dir,
            image: image.to_path_buf(),
            mcs_port,
            api_port,
            qemu: None,
            boots: 0,
        }
    }

    fn disk(&self) -> PathBuf {
        self.dir.path().join("root.img")
    }

    fn console(&self) -> PathBuf {
        self.dir.path().join(format!("console-{}.log", self.boots))
    }

    /// Powers the machine on; `first` passes `ignition.firstboot` (Ignition runs).
    fn boot(&mut self, first: bool) {
        assert!(self.qemu.is_none(), "already running");
        self.boots += 1;
        let mut append = "console=ttyS0 root=LABEL=root ignition.platform.id=qemu".to_string();
        if first {
            append.push_str(" ignition.firstboot ip=dhcp rd.neednet=1");
        }
        // Only the project's servers: each guest connection is relayed by a fresh nc.
        let netdev = format!(
            "user,id=n0,restrict=on,\
             guestfwd=tcp:{GUEST_HOST}:{MCS_PORT}-cmd:nc 127.0.0.1 {},\
             guestfwd=tcp:{GUEST_HOST}:{API_PORT}-cmd:nc 127.0.0.1 {}",
            self.mcs_port, self.api_port
        );
        let d = self.dir.path();
        let child = Command::new("qemu-system-x86_64")
            .args(["-accel", "tcg,tb-size=128", "-m", "1024", "-smp", "1"])
            .args(["-display", "none", "-monitor", "none", "-no-reboot"])
            .arg("-serial")
            .arg(format!("file:{}", self.console().display()))
            .arg("-kernel")
            .arg(self.image.join("vmlinuz"))
            .arg("-initrd")
            .arg(self.image.join("initrd.img"))
            .args(["-append", &append])
            .arg("-drive")
            .arg(format!(
                "file={},if=virtio,format=raw,cache=none",
                d.join("root.img").display()
            ))
            .arg("-drive")
            .arg(format!(
                "file={},if=virtio,format=raw,readonly=on",
                d.join("agent.img").display()
            ))
            .arg("-fw_cfg")
            .arg(format!(
                "name=opt/com.coreos/config,file={}",
                d.join("pointer.ign").display()
            ))
            .args(["-netdev", &netdev, "-device", "virtio-net-pci,netdev=n0"])
            // ttyS1: the test's command line into the machine (`mco-vm-console`).
            .arg("-serial")
            .arg(format!(
                "unix:{},server=on,wait=off",
                d.join("cmd").display()
            ))
            .arg("-qmp")
            .arg(format!(
                "unix:{},server=on,wait=off",
                d.join("qmp").display()
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(d.join("qemu.err")).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("qemu-system-x86_64: {e}"));
        self.qemu = Some(child);
    }

    /// Whether QEMU has exited (the guest powered off or rebooted: `-no-reboot`).
    fn exited(&mut self) -> bool {
        match self.qemu.as_mut().map(|c| c.try_wait()) {
            Some(Ok(Some(_))) | None => {
                self.qemu = None;
                true
            }
            _ => false,
        }
    }

    /// Waits for QEMU to exit, at most `limit`.
    async fn wait_exit(&mut self, what: &str, limit: Duration) {
        let start = Instant::now();
        while !self.exited() {
            if start.elapsed() > limit {
                panic!(
                    "{what}: QEMU still running after {limit:?}\n{}",
                    self.tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// A power cut: QEMU killed at once.
    fn cut_power(&mut self) {
        if let Some(mut c) = self.qemu.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// An orderly shutdown (the ACPI power button), waited for.
    async fn power_off(&mut self) {
        let qmp = self.dir.path().join("qmp");
        let sent = (|| -> std::io::Result<()> {
            let s = std::os::unix::net::UnixStream::connect(&qmp)?;
            let mut r = BufReader::new(s.try_clone()?);
            let mut w = s;
            let mut line = String::new();
            r.read_line(&mut line)?;
            w.write_all(b"{\"execute\":\"qmp_capabilities\"}\n")?;
            line.clear();
            r.read_line(&mut line)?;
            w.write_all(b"{\"execute\":\"system_powerdown\"}\n")?;
            line.clear();
            r.read_line(&mut line)?;
            Ok(())
        })();
        if let Err(e) = sent {
            panic!("QMP system_powerdown: {e}");
        }
        self.wait_exit("power off", Duration::from_secs(300)).await;
    }

    /// Runs `command` in the machine (as root, through the command line on its second serial
    /// port): its status and output, or why it could not run. Waits for the command line to be
    /// up at most `limit`.
    async fn sh(&self, command: &str, limit: Duration) -> Result<(i32, String), String> {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let run = async {
            let sock = self.dir.path().join("cmd");
            let mut s = tokio::net::UnixStream::connect(&sock)
                .await
                .map_err(|e| format!("{}: {e}", sock.display()))?;
            // A marker first: whatever an earlier, abandoned command left is read past.
            let mark = format!(
                "{:x}",
                std::process::id() as u64 * 1_000_003 + self.boots as u64
            );
            let line = format!("echo ::begin-{mark}; {command}\n");
            s.write_all(line.as_bytes())
                .await
                .map_err(|e| e.to_string())?;
            let mut r = tokio::io::BufReader::new(s);
            let mut out = String::new();
            let mut started = false;
            loop {
                let mut l = String::new();
                if r.read_line(&mut l).await.map_err(|e| e.to_string())? == 0 {
                    return Err("the command line closed".to_string());
                }
                if !started {
                    started = l.trim_end() == format!("::begin-{mark}");
                    continue;
                }
                if let Some(code) = l.trim_end().strip_prefix("::done ") {
                    // The newline printed before the status (the output may end without one).
                    out.pop();
                    return Ok((code.parse().unwrap_or(-1), out));
                }
                out.push_str(&l);
            }
        };
        match tokio::time::timeout(limit, run).await {
            Ok(r) => r,
            Err(_) => Err(format!("{command:?}: no answer in {limit:?}")),
        }
    }

    /// `sh`, retried until the command line answers (it starts late in a boot), and expected
    /// to succeed: its output.
    async fn must(&self, command: &str) -> String {
        let start = Instant::now();
        loop {
            match self.sh(command, Duration::from_secs(60)).await {
                Ok((0, out)) => return out,
                Ok((code, out)) => panic!("{command:?} exited {code}:\n{out}"),
                Err(e) if start.elapsed() > Duration::from_secs(300) => {
                    panic!("{command:?}: {e}\n{}", self.tail())
                }
                Err(_) => tokio::time::sleep(Duration::from_secs(2)).await,
            }
        }
    }

    /// The end of the current boot's console, for failure messages.
    fn tail(&self) -> String {
        let text = std::fs::read_to_string(self.console()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let from = lines.len().saturating_sub(60);
        format!(
            "console ({}), last lines:\n{}",
            self.console().display(),
            lines[from..].join("\n")
        )
    }

    /// A file of the powered-off machine's root file system (`debugfs`), `None` when absent.
    fn read(&self, path: &str) -> Option<String> {
        debugfs_cat(&self.disk(), path)
    }

    /// `e2fsck -fn` of the powered-off disk: its verdict, and whether it found it clean.
    fn fsck(&self) -> (bool, String) {
        let out = Command::new("e2fsck")
            .args(["-f", "-n"])
            .arg(self.disk())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }
}

/// A file of the ext4 file system in `image` (`debugfs`, which reads without replaying the
/// journal), `None` when absent.
fn debugfs_cat(image: &Path, path: &str) -> Option<String> {
    let stat = Command::new("debugfs")
        .args(["-R", &format!("stat {path}")])
        .arg(image)
        .output()
        .unwrap();
    if String::from_utf8_lossy(&stat.stderr).contains("File not found") {
        return None;
    }
    let out = Command::new("debugfs")
        .args(["-R", &format!("cat {path}")])
        .arg(image)
        .output()
        .unwrap();
    Some(String::from_utf8_lossy(&out.stdout).into())
}

impl Drop for Machine {
    fn drop(&mut self) {
        self.cut_power();
        if std::env::var_os("MCO_VM_KEEP").is_some() {
            let kept = self.dir.path().to_path_buf();
            eprintln!("vm: kept {}", kept.display());
            std::mem::forget(std::mem::replace(
                &mut self.dir,
                tempfile::tempdir().unwrap(),
            ));
        }
    }
}

/// The machine's kubeconfig of the in-process API server (plain HTTP, no credentials).
fn local_kubeconfig() -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: vm\n  cluster:\n    server: http://{GUEST_HOST}:{API_PORT}\n\
         users:\n- name: vm\n  user: {{}}\ncontexts:\n- name: vm\n  context:\n    cluster: vm\n    user: vm\n\
         current-context: vm\n"
    )
}

/// What the machine needs of the cluster beyond the example pools' configs: how it reaches
/// the API server (`kubeconfig`), and the agent's units (upstream's image pull, first-boot unit
/// and daemon).
fn agent_machine_config(kubeconfig: &str) -> serde_json::Value {
    let pull = "[Unit]\nDescription=The machine-config-daemon binary from its disk (the image pull)\n\
        ConditionPathExists=!/run/bin/machine-config-daemon\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\n\
        ExecStart=/bin/mkdir -p /run/bin /run/mco-agent\n\
        ExecStart=/bin/mount -o ro LABEL=mco-agent /run/mco-agent\n\
        ExecStart=/bin/cp /run/mco-agent/machine-config-daemon /run/bin/machine-config-daemon\n\
        ExecStart=/bin/umount /run/mco-agent\n";
    let firstboot = "[Unit]\nDescription=Complete the first boot into the machine's rendered config\n\
        ConditionPathExists=/etc/ignition-machine-config-encapsulated.json\n\
        Requires=machine-config-daemon-pull.service\nAfter=machine-config-daemon-pull.service\n\
        Wants=network-online.target\nAfter=network-online.target\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\n\
        ExecStart=/run/bin/machine-config-daemon firstboot-complete-machineconfig --root / --host run\n\n\
        [Install]\nWantedBy=multi-user.target\n";
    let daemon = format!(
        "[Unit]\nDescription=machine-config-daemon\n\
         Requires=machine-config-daemon-pull.service\n\
         After=machine-config-daemon-pull.service machine-config-daemon-firstboot.service network-online.target\n\
         Wants=network-online.target\n\n[Service]\n\
         ExecStart=/run/bin/machine-config-daemon cluster --root / --host run --node-name {NODE} \
         --kubeconfig /etc/mco-vm/kubeconfig --kubelet-healthz-enabled=false --retry-seconds 5\n\
         Restart=always\nRestartSec=2\n\n[Install]\nWantedBy=multi-user.target\n"
    );
    // The test's way in: no SSH through the restricted network, a command line on ttyS1.
    let console = "#!/bin/sh\n# Each line read from the second serial port runs as root; its output and status go back.\n\
        stty -F /dev/ttyS1 raw -echo\nexec </dev/ttyS1 >/dev/ttyS1 2>&1\n\
        while IFS= read -r line; do\n  sh -c \"$line\" </dev/null\n  printf '\\n::done %s\\n' \"$?\"\ndone\n";
    let console_unit = "[Unit]\nDescription=The test's command line on ttyS1\n\n[Service]\n\
        ExecStart=/usr/local/bin/mco-vm-console\nRestart=always\nRestartSec=1\n\n\
        [Install]\nWantedBy=multi-user.target\n";
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": "90-worker-vm-agent",
                     "labels": {"machineconfiguration.openshift.io/role": "worker"}},
        "spec": {"config": {"ignition": {"version": "3.2.0"},
            "storage": {"files": [{"path": "/etc/mco-vm/kubeconfig", "mode": 384,
                "contents": {"source": data_url(kubeconfig)}},
                {"path": "/usr/local/bin/mco-vm-console", "mode": 493,
                 "contents": {"source": data_url(console)}}]},
            "systemd": {"units": [
                {"name": "machine-config-daemon-pull.service", "contents": pull},
                {"name": "machine-config-daemon-firstboot.service", "enabled": true,
                 "contents": firstboot},
                {"name": "machine-config-daemon.service", "enabled": true, "contents": daemon},
                {"name": "mco-vm-console.service", "enabled": true, "contents": console_unit}
            ]}}}
    })
}

fn data_url(text: &str) -> String {
    use base64::Engine as _;
    format!(
        "data:text/plain;charset=utf-8;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(text)
    )
}

/// The API server of the machine's cluster: the in-process one, or a real kube-apiserver
/// (`MCO_VM_KUBECONFIG`).
enum Api {
    Local(ApiServer),
    Real(real_api::RealApi),
}

/// The cluster the machine joins: the example pools and configs, the agent's config, the
/// controller, the machine-config-server in cluster mode over TLS (its certificate signed by
/// the CA the pointer config trusts), and the Node (as the kubelet registers it, no
/// annotations). `pointer` is the worker pool's user-data Secret's pointer config.
struct Cluster {
    api: Api,
    mcs: mco_k8s::mcs::server::Running,
    controller: tokio::task::JoinHandle<()>,
    pointer: Vec<u8>,
    _certs: tempfile::TempDir,
}

/// The worker pool's node selector.
const WORKER_ROLE: &str = "node-role.kubernetes.io/worker";

/// The Node as the kubelet registers it.
fn node_object() -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": NODE, "labels": {
               WORKER_ROLE: "", "kubernetes.io/os": "linux"}},
           "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
}

/// The machine-config-server in cluster mode, reading through `client`, on an ephemeral TLS
/// port of 127.0.0.1 with the certificate and key `tls`.
async fn start_mcs(
    client: &kube::Client,
    tls: (PathBuf, PathBuf),
) -> mco_k8s::mcs::server::Running {
    use mco_k8s::mcs::server::{self, Source};
    server::start(server::Config {
        source: Source::Cluster(client.clone()),
        listen: "127.0.0.1".parse().unwrap(),
        secure_port: Some(0),
        insecure_port: None,
        tls: Some(tls),
        build: mco_k8s::mcs::served_state::BuildOptions::default(),
        access: mco_k8s::mcs::access::AccessPolicy::default(),
        poll_interval: Duration::from_millis(100),
        limits: mco_k8s::limits::ConnLimits::default(),
        bootstrap: None,
    })
    .await
    .unwrap()
}

impl Cluster {
    /// The cluster, with the `extra` worker MachineConfigs stored before the controller renders
    /// (so the machine joins on a config holding them).
    async fn start(extra: Vec<serde_json::Value>) -> Cluster {
        let pki = pki::Pki::new("machine-config-server-ca");
        let certs = tempfile::tempdir().unwrap();
        let tls = pki.serving(certs.path(), &[GUEST_HOST]);
        let (api, client) = match real_api::kubeconfig() {
            None => {
                let server = ApiServer::start().await.unwrap();
                seed_examples(&server);
                let configs = std::iter::once(agent_machine_config(&local_kubeconfig()));
                for mc in configs.chain(extra) {
                    server
                        .store
                        .create(
                            support::apiserver::resource("machineconfigs").unwrap(),
                            "",
                            mc,
                        )
                        .unwrap();
                }
                let client = server.client_as("machine-config-controller");
                (Api::Local(server), client)
            }
            Some(path) => {
                let real = real_api::RealApi::connect(&path).await;
                let names: Vec<String> = std::iter::once(agent_machine_config(""))
                    .chain(extra.iter().cloned())
                    .chain([update_machine_config(), generation_machine_config(0)])
                    .map(|mc| mc["metadata"]["name"].as_str().unwrap().to_string())
                    .collect();
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                real.install(&names, NODE).await;
                // The Node first, outside the pool: the agent's token is bound to it, and its
                // config holds the token.
                let node = real.register_node(&node_object(), WORKER_ROLE).await;
                let token = real.agent_token(&node).await;
                let configs = std::iter::once(agent_machine_config(&real.guest_kubeconfig(&token)));
                for mc in configs.chain(extra) {
                    real.create("machineconfigs", &mc).await;
                }
                let client = real.client.clone();
                (Api::Real(real), client)
            }
        };
        let opts = Options {
            debounce: Duration::from_millis(20),
            resync: Duration::from_secs(1),
            ..Options::default()
        };
        let controller_client = client.clone();
        let controller = tokio::spawn(async move {
            let _ = controller::run(controller_client, opts).await;
        });
        let mcs_client = match &api {
            Api::Local(server) => server.client_as("machine-config-server"),
            Api::Real(_) => client,
        };
        let mcs = start_mcs(&mcs_client, tls).await;
        let mut cluster = Cluster {
            api,
            mcs,
            controller,
            pointer: Vec::new(),
            _certs: certs,
        };
        // The machine joins a settled pool, as on a running cluster: the server serves the
        // pool's current config (`status.configuration`), which a fresh pool has only once its
        // machines are all updated; a Node counted in the pool before that would leave it
        // without one. Then the Node enters the pool.
        support::eventually_within("the worker pool settled", support::PATIENCE, || {
            cluster
                .get("machineconfigpools", "worker")
                .and_then(|p| {
                    p["status"]["configuration"]["name"]
                        .as_str()
                        .map(str::to_string)
                })
                .filter(|n| !n.is_empty())
        })
        .await;
        match &cluster.api {
            Api::Local(server) => {
                server
                    .store
                    .create(
                        support::apiserver::resource("nodes").unwrap(),
                        "",
                        node_object(),
                    )
                    .unwrap();
            }
            Api::Real(real) => real.label(NODE, WORKER_ROLE).await,
        }
        let pool_uid = cluster
            .get("machineconfigpools", "worker")
            .and_then(|p| p["metadata"]["uid"].as_str().map(str::to_string))
            .unwrap_or_default();
        cluster.pointer = pki::user_data_bytes(&pki::worker_user_data(&pki.ca_pem(), &pool_uid));
        cluster
    }

    /// The cluster-scoped object `plural`/`name`.
    fn get(&self, plural: &str, name: &str) -> Option<serde_json::Value> {
        match &self.api {
            Api::Local(server) => server.store.get(plural, "", name),
            Api::Real(real) => tokio::task::block_in_place(|| {
                tokio::runtime::Handle::current().block_on(real.get(plural, name))
            }),
        }
    }

    async fn create(&self, plural: &str, obj: serde_json::Value) {
        match &self.api {
            Api::Local(server) => {
                server
                    .store
                    .create(support::apiserver::resource(plural).unwrap(), "", obj)
                    .unwrap();
            }
            Api::Real(real) => {
                real.create(plural, &obj).await;
            }
        }
    }

    async fn edit(&self, plural: &str, name: &str, f: impl Fn(&mut serde_json::Value)) {
        match &self.api {
            Api::Local(server) => support::edit(&server.store, plural, "", name, false, f),
            Api::Real(real) => real.edit(plural, name, f).await,
        }
    }

    /// The port of 127.0.0.1 the API server listens on.
    fn api_port(&self) -> u16 {
        match &self.api {
            Api::Local(server) => server.addr.port(),
            Api::Real(real) => real.port,
        }
    }

    /// A machine booting from this cluster's pointer config.
    fn machine(&self, image: &Path, agent: &Path) -> Machine {
        Machine::new(
            image,
            agent,
            self.mcs.secure_addr.unwrap().port(),
            self.api_port(),
            &self.pointer,
        )
    }

    fn target(&self) -> Option<String> {
        let p = self.get("machineconfigpools", "worker")?;
        p["spec"]["configuration"]["name"]
            .as_str()
            .filter(|n| !n.is_empty())
            .map(str::to_string)
    }

    fn node(&self) -> Node {
        decode(&self.get("nodes", NODE).unwrap())
    }

    fn annotations(&self) -> String {
        let n = self.node();
        format!(
            "current {:?} desired {:?} state {:?} reason {:?}",
            n.annotation(CURRENT_CONFIG),
            n.annotation(DESIRED_CONFIG),
            n.annotation(STATE),
            n.annotation(REASON)
        )
    }

    /// Waits until the Node is Done on `target` (true) or the machine goes down (false: it
    /// rebooted).
    async fn done_or_down(&self, m: &mut Machine, target: &str) -> bool {
        let start = Instant::now();
        loop {
            if self.node().is_done_on(target) {
                return true;
            }
            if m.exited() {
                return false;
            }
            if start.elapsed() > BOOT_LIMIT {
                panic!(
                    "not Done on {target} after {BOOT_LIMIT:?} ({})\n{}",
                    self.annotations(),
                    m.tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Waits until the Node is Done on `target` while the machine runs.
    async fn done_on(&self, m: &mut Machine, target: &str, what: &str) -> Duration {
        let start = Instant::now();
        loop {
            if self.node().is_done_on(target) {
                return start.elapsed();
            }
            if m.exited() {
                panic!(
                    "{what}: the machine went down before Done ({})\n{}",
                    self.annotations(),
                    m.tail()
                );
            }
            if start.elapsed() > BOOT_LIMIT {
                panic!(
                    "{what}: not Done on {target} after {BOOT_LIMIT:?} ({})\n{}",
                    self.annotations(),
                    m.tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

/// From `journalctl -o short-monotonic` lines of the agent's unit: the time from its first
/// line naming `target` to systemd stopping the unit (the reboot).
fn agent_share(log: &str, target: &str) -> Option<Duration> {
    let at = |l: &str| -> Option<f64> {
        let t = l.trim_start().strip_prefix('[')?.split(']').next()?;
        t.trim().parse().ok()
    };
    let start = log.lines().find(|l| l.contains(target)).and_then(at)?;
    let stop = log
        .lines()
        .find(|l| l.contains("Stopping") || l.contains("Deactivated"))
        .and_then(at)?;
    (stop >= start).then(|| Duration::from_secs_f64(stop - start))
}

/// What an update of the test brings: a file, a unit with an `[Install]` section (enabled), a
/// unit without one, a drop-in (read by the enabled unit, so that it ran with it is seen), a
/// masked unit, an SSH key and a password hash for `core`.
fn update_machine_config() -> serde_json::Value {
    let ran = "[Unit]\nDescription=Records that it ran, with its drop-in\n\n[Service]\nType=oneshot\n\
        RemainAfterExit=yes\nExecStart=/bin/sh -c 'echo \"$$MCO_VM_FROM $$(cat /proc/sys/kernel/random/boot_id)\" >> /var/lib/mco-vm-ran'\n\n\
        [Install]\nWantedBy=multi-user.target\n";
    let plain =
        "[Unit]\nDescription=A unit without an [Install] section\n\n[Service]\nType=oneshot\n\
        ExecStart=/bin/true\n";
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": "95-worker-vm-update",
                     "labels": {"machineconfiguration.openshift.io/role": "worker"}},
        "spec": {"config": {"ignition": {"version": "3.2.0"},
            "passwd": {"users": [{"name": "core",
                "sshAuthorizedKeys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMcoVmUpdAtEdKeyOfTheVmTierXXXXXXXXXXXXXXXX vm-update"],
                "passwordHash": "$6$vmtier$0Yc0nfMZb9ENLRzK0zrqPKkTyKUK3S0Md6sH1F0Hq6PgP5u3r8y0dFq1dP5nEx9mS3u3Kc3pJcZbsWJ0H8w1/"}]},
            "storage": {"files": [{"path": "/etc/mco-vm/updated.conf", "mode": 420,
                "contents": {"source": data_url("updated = true\n")}}]},
            "systemd": {"units": [
                {"name": "mco-vm-ran.service", "enabled": true, "contents": ran,
                 "dropins": [{"name": "10-from.conf",
                              "contents": "[Service]\nEnvironment=MCO_VM_FROM=drop-in\n"}]},
                {"name": "mco-vm-plain.service", "contents": plain},
                {"name": "e2scrub_reap.service", "mask": true}
            ]}}}
    })
}

/// A machine boots from our server with real Ignition (its only input the pointer config),
/// its agent completes the first boot and its Node reaches Done on the served rendered config.
/// Then it takes an update with a real reboot: the agent writes through real systemctl,
/// reboots, and is Done after the boot; the new unit ran with its drop-in, the masked unit is
/// masked, the key and the password hash are in place. Then drift: a managed file edited
/// inside the machine is Degraded, restored it is Done again. Powered off, fsck finds the disk
/// clean and it holds what both configs wrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_machine_joins_takes_an_update_with_a_reboot_and_reports_drift() {
    let (image, agent) = match prerequisites() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("SKIP: vm::a_real_machine_joins_takes_an_update_with_a_reboot: {why}");
            return;
        }
    };
    let _one = ONE_MACHINE.lock().await;
    let cluster = Cluster::start(Vec::new()).await;
    let first = support::eventually_within("a rendered worker config", support::PATIENCE, || {
        cluster.target()
    })
    .await;
    let mut m = cluster.machine(&image, &agent);
    let started = Instant::now();
    m.boot(true);
    cluster.done_on(&mut m, &first, "first boot").await;
    eprintln!(
        "vm: first boot to Done on {first}: {:.1?}",
        started.elapsed()
    );
    m.must("systemctl is-active machine-config-daemon.service")
        .await;
    // Ignition fetched its config over TLS from the pointer's https source, having verified the
    // server's certificate against the pointer's CA (an unverified one fails the fetch, and the
    // boot with it).
    let fetch = m
        .must("journalctl -b -o cat --no-pager -t ignition | grep -E 'GET |fetched' || true")
        .await;
    eprintln!("vm: Ignition's fetch:\n{fetch}");
    assert!(
        fetch.contains(&format!(
            "GET https://{GUEST_HOST}:{MCS_PORT}/config/worker"
        )) && fetch.contains("GET result: OK"),
        "Ignition's journal shows no verified https fetch:\n{fetch}"
    );
    // Ignition's work: core's key where Ignition writes keys; the encapsulated config
    // consumed by the first-boot unit, which ran.
    let keys = m
        .must("cat /home/core/.ssh/authorized_keys.d/ignition")
        .await;
    assert!(keys.contains("ssh-"), "{keys}");
    m.must("! test -e /etc/ignition-machine-config-encapsulated.json")
        .await;
    m.must("systemctl is-active machine-config-daemon-firstboot.service")
        .await;
    // The network is restricted: the API server through its forwarded address, but not the
    // host's loopback directly (which QEMU's unrestricted user network would reach).
    m.must(&format!(
        "timeout 20 bash -c '</dev/tcp/{GUEST_HOST}/{API_PORT}'"
    ))
    .await;
    let direct = m
        .sh(
            &format!(
                "timeout 20 bash -c '</dev/tcp/10.0.2.2/{}'",
                cluster.api_port()
            ),
            Duration::from_secs(60),
        )
        .await;
    assert!(
        matches!(direct, Ok((code, _)) if code != 0),
        "the guest reached the host's loopback directly: {direct:?}"
    );
    let first_files: Vec<String> = {
        let mc: mco_render::api::MachineConfig =
            decode(&cluster.get("machineconfigs", &first).unwrap());
        let rendered = mco_node::desired_config::rendered_input(&mc).unwrap();
        rendered
            .config
            .storage
            .files
            .iter()
            .map(|f| f.path.clone())
            .collect()
    };

    // The update.
    cluster
        .create("machineconfigs", update_machine_config())
        .await;
    let second = support::eventually_within("the updated worker config", support::PATIENCE, || {
        cluster.target().filter(|t| *t != first)
    })
    .await;
    let update_started = Instant::now();
    m.wait_exit("the update's reboot", BOOT_LIMIT).await;
    let to_reboot = update_started.elapsed();
    m.boot(false);
    cluster
        .done_on(&mut m, &second, "the boot after the update")
        .await;
    let update = update_started.elapsed();
    eprintln!(
        "vm: update to {second}: {to_reboot:.1?} to the reboot, {update:.1?} to Done after it"
    );

    // The agent's own share of the update, from the previous boot's journal: its first line
    // naming the new config to systemd stopping it for the reboot.
    let log = m
        .must("journalctl -b -1 -o short-monotonic --no-pager -u machine-config-daemon.service")
        .await;
    match agent_share(&log, &second) {
        Some(share) => eprintln!("vm: the agent's share of the update: {share:.1?}"),
        None => eprintln!("vm: the agent's share not found in its journal:\n{log}"),
    }

    let ran = m.must("cat /var/lib/mco-vm-ran").await;
    let boot_id = m.must("cat /proc/sys/kernel/random/boot_id").await;
    assert!(
        ran.contains(&format!("drop-in {}", boot_id.trim())),
        "the unit ran with its drop-in in this boot: {ran:?} (boot {boot_id})"
    );
    assert_eq!(
        m.must("systemctl is-enabled mco-vm-ran.service")
            .await
            .trim(),
        "enabled"
    );
    assert_eq!(
        m.must("readlink /etc/systemd/system/e2scrub_reap.service")
            .await
            .trim(),
        "/dev/null"
    );
    assert_eq!(
        m.must("cat /etc/mco-vm/updated.conf").await,
        "updated = true\n"
    );
    let keys = m
        .must("cat /home/core/.ssh/authorized_keys.d/ignition")
        .await;
    assert!(keys.contains("vm-update"), "{keys}");
    let shadow = m.must("grep '^core:' /etc/shadow").await;
    assert!(shadow.starts_with("core:$6$vmtier$"), "{shadow}");

    // Drift: a managed file edited by hand inside the machine.
    let drift_started = Instant::now();
    m.must("echo 'edited = by hand' > /etc/mco-vm/updated.conf.new && mv /etc/mco-vm/updated.conf.new /etc/mco-vm/updated.conf")
        .await;
    let reason = support::eventually_within("the drift reported", Duration::from_secs(120), || {
        let n = cluster.node();
        (n.annotation(STATE) == Some("Degraded"))
            .then(|| n.annotation(REASON).unwrap_or("").to_string())
    })
    .await;
    eprintln!("vm: drift Degraded after {:.1?}", drift_started.elapsed());
    assert!(reason.contains("/etc/mco-vm/updated.conf"), "{reason}");
    m.must("echo 'updated = true' > /etc/mco-vm/updated.conf.new && mv /etc/mco-vm/updated.conf.new /etc/mco-vm/updated.conf")
        .await;
    support::eventually_within("Done once restored", Duration::from_secs(120), || {
        cluster.node().is_done_on(&second).then_some(())
    })
    .await;

    m.power_off().await;
    let (clean, fsck) = m.fsck();
    assert!(clean, "fsck after power off:\n{fsck}");
    let current = m
        .read("/etc/machine-config-daemon/currentconfig")
        .expect("the agent's currentconfig");
    assert!(current.contains(&second), "{current}");
    for f in &first_files {
        assert!(m.read(f).is_some(), "{f} missing on the disk");
    }
    assert_eq!(
        m.read("/etc/mco-vm/updated.conf").as_deref(),
        Some("updated = true\n")
    );
    cluster.mcs.stop().await;
    cluster.controller.abort();
}

/// The repairs `e2fsck -f -y` made beyond replaying the journal: each question it answered,
/// with the problem it named (the line before). The superblock's free block and inode counts
/// are not repairs: ext4 does not keep them on disk while mounted (it sums the groups' at
/// mount), so fsck corrects them after every unclean stop.
fn repairs(fsck: &str) -> Vec<String> {
    let lines: Vec<&str> = fsck.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if !(l.contains("Fix?") || l.contains("Clear?") || l.contains("Salvage?")) {
            continue;
        }
        let problem = if i > 0 { lines[i - 1] } else { "" };
        let benign = problem.starts_with("Free blocks count wrong (")
            || problem.starts_with("Free inodes count wrong (");
        if !benign {
            out.push(format!("{problem} {l}"));
        }
    }
    out
}

/// The files each power-cut round rewrites: generation `g` of each.
const CUT_FILES: usize = 24;

fn generation_machine_config(generation: usize) -> serde_json::Value {
    let files: Vec<serde_json::Value> = (0..CUT_FILES)
        .map(|i| {
            json!({"path": format!("/etc/mco-vm/gen/f{i:02}"), "mode": 420,
                   "contents": {"source": data_url(&format!("generation {generation}\n"))}})
        })
        .collect();
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": "96-worker-vm-generation",
                     "labels": {"machineconfiguration.openshift.io/role": "worker"}},
        "spec": {"config": {"ignition": {"version": "3.2.0"}, "storage": {"files": files}}}
    })
}

/// When a round's power cut falls: a delay after the Node turns Working (the agent's first
/// step of the update), or the first line of the shutdown on the console (the reboot).
#[derive(Clone, Copy, Debug)]
enum Instant_ {
    AfterWorking(Duration),
    DuringReboot,
}

/// Power cuts: each round changes every managed file of one MachineConfig, then QEMU is
/// killed at a recorded instant of the update. Before the machine boots again the cut disk,
/// its journal replayed on a copy, holds each file all old or all new; then the machine boots,
/// the agent recovers its journal, finishes the update (rebooting again when it must) and the
/// Node is Done on the new config with every file new. At the end fsck finds the disk clean.
/// `MCO_VM_CUTS` rounds (default 5).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_machine_survives_power_cuts_during_updates() {
    let (image, agent) = match prerequisites() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("SKIP: vm::a_real_machine_survives_power_cuts: {why}");
            return;
        }
    };
    let _one = ONE_MACHINE.lock().await;
    let rounds: usize = std::env::var("MCO_VM_CUTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let cluster = Cluster::start(vec![generation_machine_config(0)]).await;
    let mut target =
        support::eventually_within("a rendered worker config", support::PATIENCE, || {
            cluster.target()
        })
        .await;
    let mut m = cluster.machine(&image, &agent);
    m.boot(true);
    cluster.done_on(&mut m, &target, "first boot").await;
    // Spread over the update as this machine runs it: the writes fall 1.5-4 s after the Node
    // turns Working (the drain first), the reboot's shutdown a few seconds later.
    let instants = [
        Instant_::AfterWorking(Duration::ZERO),
        Instant_::AfterWorking(Duration::from_millis(2000)),
        Instant_::DuringReboot,
        Instant_::AfterWorking(Duration::from_millis(2500)),
        Instant_::AfterWorking(Duration::from_millis(3000)),
        Instant_::AfterWorking(Duration::from_millis(3500)),
        Instant_::AfterWorking(Duration::from_millis(1500)),
        Instant_::AfterWorking(Duration::from_millis(2250)),
        Instant_::AfterWorking(Duration::from_millis(2750)),
        Instant_::AfterWorking(Duration::from_secs(8)),
    ];
    let mut passed = 0;
    for round in 1..=rounds {
        let instant = instants[(round - 1) % instants.len()];
        let old = target.clone();
        // Every round rewrites every file: the MachineConfig replaced.
        cluster
            .edit("machineconfigs", "96-worker-vm-generation", |mc| {
                mc["spec"] = generation_machine_config(round)["spec"].clone();
            })
            .await;
        target =
            support::eventually_within("the round's rendered config", support::PATIENCE, || {
                cluster.target().filter(|t| *t != old)
            })
            .await;
        let asked = Instant::now();
        // Wait for the instant, then cut.
        let console_path = m.console();
        let console_len = || {
            std::fs::metadata(&console_path)
                .map(|md| md.len())
                .unwrap_or(0)
        };
        let mut working_at: Option<u64> = None;
        let seen = loop {
            if m.exited() {
                break "the machine rebooted before the instant".to_string();
            }
            if working_at.is_none() && cluster.node().annotation(STATE) == Some("Working") {
                working_at = Some(console_len());
            }
            match (instant, working_at) {
                (Instant_::AfterWorking(d), Some(_)) => {
                    tokio::time::sleep(d).await;
                    break format!("{d:?} after Working");
                }
                (Instant_::DuringReboot, Some(from)) => {
                    let console = std::fs::read(m.console()).unwrap_or_default();
                    let after =
                        String::from_utf8_lossy(console.get(from as usize..).unwrap_or(&[]))
                            .into_owned();
                    if after.contains("Stopp") || after.contains("reboot") {
                        break "the reboot's shutdown (its first console line)".to_string();
                    }
                }
                _ => {}
            }
            assert!(
                asked.elapsed() < BOOT_LIMIT,
                "round {round}: the instant never came\n{}",
                m.tail()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let at = asked.elapsed();
        m.cut_power();

        // The cut disk as the next boot finds it: the journal replayed on a copy.
        let copy = m.dir.path().join("cut.img");
        run(Command::new("cp")
            .arg("--sparse=always")
            .arg(m.disk())
            .arg(&copy));
        let replay = Command::new("e2fsck")
            .args(["-f", "-y"])
            .arg(&copy)
            .output()
            .unwrap();
        let replay_text = String::from_utf8_lossy(&replay.stdout).into_owned();
        let code = replay.status.code().unwrap_or(-1);
        assert!(
            code <= 1,
            "round {round}: e2fsck of the cut disk exited {code}:\n{replay_text}"
        );
        let repaired = repairs(&replay_text);
        assert!(
            repaired.is_empty(),
            "round {round}: the cut disk needed repairs:\n{replay_text}"
        );
        let gens: Vec<Option<String>> = (0..CUT_FILES)
            .map(|i| debugfs_cat(&copy, &format!("/etc/mco-vm/gen/f{i:02}")))
            .collect();
        let old_text = format!("generation {}\n", round - 1);
        let new_text = format!("generation {round}\n");
        let all_old = gens.iter().all(|g| g.as_deref() == Some(old_text.as_str()));
        let all_new = gens.iter().all(|g| g.as_deref() == Some(new_text.as_str()));
        let journal = debugfs_cat(&copy, mco_node::journal::JOURNAL).is_some();
        std::fs::remove_file(&copy).unwrap();
        // All old, all new, or an update's journal left to roll the files back on boot.
        assert!(
            all_old || all_new || journal,
            "round {round}: files neither all old nor all new, and no journal, after the cut at {seen}: {gens:?}"
        );

        // Boot again: recovered, updated, Done on the new config.
        let recovery = Instant::now();
        let mut boots = 0;
        loop {
            m.boot(false);
            boots += 1;
            match cluster.done_or_down(&mut m, &target).await {
                true => break,
                false => assert!(
                    boots < 4,
                    "round {round}: {boots} boots without Done\n{}",
                    m.tail()
                ),
            }
        }
        let files = m.must("cat /etc/mco-vm/gen/f*").await;
        assert_eq!(files, new_text.repeat(CUT_FILES), "round {round}");
        m.must(&format!("! test -e {}", mco_node::journal::JOURNAL))
            .await;
        eprintln!(
            "vm: cut {round}/{rounds} at {seen} ({at:.1?} after the new config): files {}{}, \
             Done on the new config after {boots} boot(s) in {:.1?}",
            if all_new {
                "all new"
            } else if all_old {
                "all old"
            } else {
                "mixed, journal pending"
            },
            if journal {
                ", journal left (rolled back)"
            } else {
                ""
            },
            recovery.elapsed()
        );
        passed += 1;
    }
    m.power_off().await;
    let (clean, fsck) = m.fsck();
    assert!(clean, "fsck after the cuts:\n{fsck}");
    eprintln!("vm: {passed} power cuts passed");
    cluster.mcs.stop().await;
    cluster.controller.abort();
}
