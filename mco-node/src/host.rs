//! The host's service manager, OS updater and container tool, behind a trait so tests never
//! touch the machine.

use std::process::Command;

use serde::{Deserialize, Serialize};

/// A host command failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{command}: {message}")]
pub struct HostError {
    /// The command line.
    pub command: String,
    /// What went wrong (exit status and output).
    pub message: String,
}

/// The host side effects the agent needs.
pub trait Host {
    /// Runs `systemctl ARGS`.
    fn systemctl(&mut self, args: &[String]) -> Result<(), HostError>;
    /// Runs `rpm-ostree ARGS`.
    fn rpm_ostree(&mut self, args: &[String]) -> Result<(), HostError>;
    /// Runs `rpm-ostree ARGS` and returns its standard output (`rpm-ostree status --json`).
    fn rpm_ostree_output(&mut self, args: &[String]) -> Result<String, HostError>;
    /// Runs `podman ARGS` and returns its standard output (`podman create` prints the
    /// container's id).
    fn podman(&mut self, args: &[String]) -> Result<String, HostError>;
    /// Runs `chcon ARGS` (the SELinux label of extracted extension content).
    fn chcon(&mut self, args: &[String]) -> Result<(), HostError>;
    /// Reboots the host.
    fn reboot(&mut self) -> Result<(), HostError>;
    /// Runs `crictl ARGS` (the container runtime's images: `images -o json`, `pull`,
    /// `inspecti`) and returns its standard output. Hosts without a container runtime refuse.
    fn crictl(&mut self, args: &[String]) -> Result<String, HostError> {
        Err(HostError {
            command: format!("crictl {}", args.join(" ")),
            message: "this host has no container runtime to ask".into(),
        })
    }
    /// The host's CPU architecture, as Rust names it (`x86_64`, `aarch64`): the 64k-pages
    /// kernel exists only on `aarch64`.
    fn arch(&self) -> String {
        std::env::consts::ARCH.to_string()
    }
    /// Whether commands really run, so their output can be read: `false` for a host that only
    /// prints them ([`PrintHost`]), on which the steps that read an output (the OS part of an
    /// update, the booted deployment) are described instead of run.
    fn runs_commands(&self) -> bool {
        true
    }
}

impl<H: Host + ?Sized> Host for Box<H> {
    fn systemctl(&mut self, args: &[String]) -> Result<(), HostError> {
        (**self).systemctl(args)
    }
    fn rpm_ostree(&mut self, args: &[String]) -> Result<(), HostError> {
        (**self).rpm_ostree(args)
    }
    fn rpm_ostree_output(&mut self, args: &[String]) -> Result<String, HostError> {
        (**self).rpm_ostree_output(args)
    }
    fn podman(&mut self, args: &[String]) -> Result<String, HostError> {
        (**self).podman(args)
    }
    fn chcon(&mut self, args: &[String]) -> Result<(), HostError> {
        (**self).chcon(args)
    }
    fn reboot(&mut self) -> Result<(), HostError> {
        (**self).reboot()
    }
    fn crictl(&mut self, args: &[String]) -> Result<String, HostError> {
        (**self).crictl(args)
    }
    fn arch(&self) -> String {
        (**self).arch()
    }
    fn runs_commands(&self) -> bool {
        (**self).runs_commands()
    }
}

/// One host action, serialisable so a journal can hold the ones that undo an update.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "camelCase")]
pub enum HostCall {
    /// `systemctl enable UNITS`.
    Enable {
        /// Units.
        units: Vec<String>,
    },
    /// `systemctl disable UNITS`.
    Disable {
        /// Units.
        units: Vec<String>,
    },
    /// `systemctl preset UNIT` (failures are not errors).
    Preset {
        /// Unit.
        unit: String,
    },
    /// `systemctl daemon-reload`.
    DaemonReload,
    /// `systemctl reload UNIT`.
    Reload {
        /// Unit.
        unit: String,
    },
    /// `systemctl restart UNIT`.
    Restart {
        /// Unit.
        unit: String,
    },
    /// `rpm-ostree kargs ARGS`.
    Kargs {
        /// Arguments (`--delete-if-present=...`, `--append=...`).
        args: Vec<String>,
    },
    /// `rpm-ostree override remove PACKAGES --install P ...`: replace base packages (the
    /// switch to a realtime or 64k-pages kernel).
    OverrideRemove {
        /// Base packages removed.
        remove: Vec<String>,
        /// Packages layered in their place.
        install: Vec<String>,
    },
    /// `rpm-ostree override reset PACKAGES --uninstall P ...`: restore base packages (undo a
    /// kernel switch).
    OverrideReset {
        /// Base packages restored.
        reset: Vec<String>,
        /// Layered packages removed.
        uninstall: Vec<String>,
    },
    /// `rpm-ostree update --install P ... --uninstall P ...` (extensions).
    Update {
        /// Packages to install.
        install: Vec<String>,
        /// Packages to remove.
        uninstall: Vec<String>,
    },
    /// `rpm-ostree rebase --experimental ostree-unverified-registry:IMAGE`.
    Rebase {
        /// Image reference.
        image: String,
    },
    /// `rpm-ostree cleanup -p`: drop a staged, not yet booted deployment.
    CleanupPending,
    /// Reboot.
    Reboot,
}

impl HostCall {
    /// Whether a failure of this call is tolerated (upstream ignores failed presets).
    pub fn best_effort(&self) -> bool {
        matches!(self, HostCall::Preset { .. })
    }

    /// The call as a command line, for reports and dry runs.
    pub fn command_line(&self) -> String {
        match self.argv() {
            Some((prog, args)) => std::iter::once(prog.to_string())
                .chain(args)
                .collect::<Vec<_>>()
                .join(" "),
            None => "reboot".into(),
        }
    }

    /// Program and arguments (`None` for a reboot).
    pub fn argv(&self) -> Option<(&'static str, Vec<String>)> {
        let sys = |verb: &str, units: &[String]| {
            let mut a = vec![verb.to_string()];
            a.extend(units.iter().cloned());
            Some(("systemctl", a))
        };
        match self {
            HostCall::Enable { units } => sys("enable", units),
            HostCall::Disable { units } => sys("disable", units),
            HostCall::Preset { unit } => sys("preset", std::slice::from_ref(unit)),
            HostCall::DaemonReload => sys("daemon-reload", &[]),
            HostCall::Reload { unit } => sys("reload", std::slice::from_ref(unit)),
            HostCall::Restart { unit } => sys("restart", std::slice::from_ref(unit)),
            HostCall::Kargs { args } => {
                let mut a = vec!["kargs".to_string()];
                a.extend(args.iter().cloned());
                Some(("rpm-ostree", a))
            }
            HostCall::OverrideRemove { remove, install } => Some((
                "rpm-ostree",
                package_args(&["override", "remove"], remove, "--install", install),
            )),
            HostCall::OverrideReset { reset, uninstall } => Some((
                "rpm-ostree",
                package_args(&["override", "reset"], reset, "--uninstall", uninstall),
            )),
            HostCall::Update { install, uninstall } => {
                let mut a = package_args(&["update"], &[], "--install", install);
                for p in uninstall {
                    a.push("--uninstall".into());
                    a.push(p.clone());
                }
                Some(("rpm-ostree", a))
            }
            HostCall::Rebase { image } => Some((
                "rpm-ostree",
                vec![
                    "rebase".into(),
                    "--experimental".into(),
                    format!("ostree-unverified-registry:{image}"),
                ],
            )),
            HostCall::CleanupPending => Some(("rpm-ostree", vec!["cleanup".into(), "-p".into()])),
            HostCall::Reboot => None,
        }
    }

    /// Runs the call on a host.
    pub fn run(&self, host: &mut dyn Host) -> Result<(), HostError> {
        match self.argv() {
            Some(("systemctl", args)) => host.systemctl(&args),
            Some((_, args)) => host.rpm_ostree(&args),
            None => host.reboot(),
        }
    }
}

/// `VERB... PACKAGES FLAG P1 FLAG P2 ...`: rpm-ostree takes one package per flag, the flag and
/// the package as separate words (as upstream passes them).
fn package_args(verb: &[&str], packages: &[String], flag: &str, flagged: &[String]) -> Vec<String> {
    let mut a: Vec<String> = verb.iter().map(|w| w.to_string()).collect();
    a.extend(packages.iter().cloned());
    for p in flagged {
        a.push(flag.to_string());
        a.push(p.clone());
    }
    a
}

/// The real host: runs the commands with [`std::process::Command`], directly or, from a
/// container, inside the host's namespaces.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SystemHost {
    /// Words run before each command (empty: run it directly).
    prefix: Vec<String>,
}

/// Enters the namespaces of the host's PID 1 (a privileged container with `hostPID`).
const NSENTER: &[&str] = &[
    "nsenter", "--target", "1", "--mount", "--uts", "--ipc", "--net", "--pid", "--",
];

impl SystemHost {
    /// Runs commands in the agent's own namespaces (the agent runs on the host).
    pub fn direct() -> Self {
        SystemHost::default()
    }

    /// Runs commands in the host's namespaces through `nsenter`, for an agent in a
    /// privileged container with the host's PID namespace and the host's files under a root
    /// such as `/rootfs`.
    pub fn in_host_namespaces() -> Self {
        SystemHost {
            prefix: NSENTER.iter().map(|w| w.to_string()).collect(),
        }
    }

    /// The argv run for `prog ARGS`.
    pub fn argv(&self, prog: &str, args: &[String]) -> Vec<String> {
        self.prefix
            .iter()
            .cloned()
            .chain(std::iter::once(prog.to_string()))
            .chain(args.iter().cloned())
            .collect()
    }

    fn run(&self, prog: &str, args: &[String]) -> Result<String, HostError> {
        let argv = self.argv(prog, args);
        let command = argv.join(" ");
        let (first, rest) = argv.split_first().unwrap_or((&command, &[]));
        let out = Command::new(first)
            .args(rest)
            .output()
            .map_err(|e| HostError {
                command: command.clone(),
                message: e.to_string(),
            })?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let mut message = out.status.to_string();
        let text = String::from_utf8_lossy(&out.stderr);
        let text = text.trim();
        if !text.is_empty() {
            message = format!("{message}: {text}");
        }
        Err(HostError { command, message })
    }
}

impl Host for SystemHost {
    fn systemctl(&mut self, args: &[String]) -> Result<(), HostError> {
        self.run("systemctl", args).map(drop)
    }
    fn rpm_ostree(&mut self, args: &[String]) -> Result<(), HostError> {
        self.run("rpm-ostree", args).map(drop)
    }
    fn rpm_ostree_output(&mut self, args: &[String]) -> Result<String, HostError> {
        self.run("rpm-ostree", args)
    }
    fn podman(&mut self, args: &[String]) -> Result<String, HostError> {
        self.run("podman", args)
    }
    fn chcon(&mut self, args: &[String]) -> Result<(), HostError> {
        self.run("chcon", args).map(drop)
    }
    fn reboot(&mut self) -> Result<(), HostError> {
        self.run("systemctl", &["reboot".to_string()]).map(drop)
    }
    fn crictl(&mut self, args: &[String]) -> Result<String, HostError> {
        self.run("crictl", args)
    }
}

/// What a [`RecordingHost`] without a canned `rpm-ostree status --json` reports: a freshly
/// installed host (booted from `booted_image`, by default no image, nothing layered) and,
/// once rpm-ostree changes were asked for, a staged deployment carrying them (rebase, layered
/// packages, overrides), dropped again by `rpm-ostree cleanup -p` and booted by a reboot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimulatedOstree {
    /// The booted deployment's image reference (`None`: not deployed from an image).
    pub booted_image: Option<String>,
    /// A staged deployment exists.
    pub staged: bool,
    /// The staged deployment's image reference (from `rpm-ostree rebase`).
    pub image: Option<String>,
    /// The staged deployment's layered packages.
    pub packages: std::collections::BTreeSet<String>,
    /// The staged deployment's base package removals.
    pub removals: std::collections::BTreeSet<String>,
}

impl SimulatedOstree {
    /// Applies a successful `rpm-ostree ARGS`.
    pub fn run(&mut self, args: &[String]) {
        let words: Vec<&str> = args.iter().map(String::as_str).collect();
        let flagged = |flag: &str| -> Vec<String> {
            words
                .windows(2)
                .filter(|w| w[0] == flag)
                .map(|w| w[1].to_string())
                .collect()
        };
        let bare = |skip: usize| -> Vec<String> {
            let mut out = Vec::new();
            let mut it = words.iter().skip(skip);
            while let Some(w) = it.next() {
                if w.starts_with("--") {
                    it.next();
                } else {
                    out.push(w.to_string());
                }
            }
            out
        };
        match words.as_slice() {
            ["cleanup", "-p"] => {
                *self = SimulatedOstree {
                    booted_image: self.booted_image.take(),
                    ..SimulatedOstree::default()
                }
            }
            ["rebase", .., image] => {
                self.image = Some(image.to_string());
                self.staged = true;
            }
            ["update", ..] => {
                self.packages.extend(flagged("--install"));
                for p in flagged("--uninstall") {
                    self.packages.remove(&p);
                }
                self.staged = true;
            }
            ["override", "remove", ..] => {
                self.removals.extend(bare(2));
                self.packages.extend(flagged("--install"));
                self.staged = true;
            }
            ["override", "reset", ..] => {
                for p in bare(2) {
                    self.removals.remove(&p);
                }
                for p in flagged("--uninstall") {
                    self.packages.remove(&p);
                }
                self.staged = true;
            }
            ["kargs", ..] => self.staged = true,
            _ => {}
        }
    }

    /// A reboot: the staged deployment, if any, becomes the booted one (its image, when it
    /// was rebased; its packages are not tracked once booted).
    pub fn boot(&mut self) {
        if self.staged {
            *self = SimulatedOstree {
                booted_image: self.image.take().or(self.booted_image.take()),
                ..SimulatedOstree::default()
            };
        }
    }

    /// `rpm-ostree status --json` of the simulated host.
    pub fn status_json(&self) -> String {
        let booted = serde_json::json!({
            "id": "rhcos-0.0", "osname": "rhcos", "checksum": "0", "booted": true,
            "staged": false, "requested-packages": [], "requested-base-removals": [],
            "container-image-reference": self.booted_image,
        });
        let mut deployments = Vec::new();
        if self.staged {
            deployments.push(serde_json::json!({
                "id": "rhcos-1.0", "osname": "rhcos", "checksum": "1", "booted": false,
                "staged": true, "container-image-reference": self.image,
                "requested-packages": self.packages, "requested-base-removals": self.removals,
            }));
        }
        deployments.push(booted);
        serde_json::json!({"deployments": deployments, "transaction": null}).to_string()
    }
}

/// The container runtime of a [`RecordingHost`]: the images it holds and a registry to pull
/// from, answering `crictl images -o json`, `crictl pull`, `crictl inspecti` and, for the
/// registry's images, `podman manifest ... inspect ... IMAGE` as the real tools do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimulatedCri {
    /// The references of the images held.
    pub held: std::collections::BTreeSet<String>,
    /// The registry's images and their compressed sizes in bytes (one layer each); pulling an
    /// image it does not list succeeds as a 0-byte image.
    pub registry: std::collections::BTreeMap<String, i64>,
    /// Images whose pull fails, with the error the runtime reports.
    pub pull_failures: std::collections::BTreeMap<String, String>,
}

impl SimulatedCri {
    /// The image's id in the listing.
    fn id(image: &str) -> String {
        use sha2::Digest;
        format!(
            "sha256:{}",
            hex::encode(sha2::Sha256::digest(image.as_bytes()))
        )
    }

    fn listed(&self, image: &str) -> serde_json::Value {
        let size = self.registry.get(image).copied().unwrap_or(0);
        let (digests, tags): (Vec<&str>, Vec<&str>) = if image.contains('@') {
            (vec![image], vec![])
        } else {
            (vec![], vec![image])
        };
        serde_json::json!({"id": Self::id(image), "repoTags": tags, "repoDigests": digests,
                           "size": size.to_string(), "uid": null, "username": "",
                           "spec": null, "pinned": false})
    }

    /// Answers `crictl ARGS`.
    pub fn crictl(&mut self, args: &[String]) -> Result<String, String> {
        let words: Vec<&str> = args.iter().map(String::as_str).collect();
        match words.as_slice() {
            ["images", "-o", "json"] => {
                let images: Vec<_> = self.held.iter().map(|i| self.listed(i)).collect();
                Ok(serde_json::json!({ "images": images }).to_string())
            }
            ["pull", image] => match self.pull_failures.get(*image) {
                Some(e) => Err(e.clone()),
                None => {
                    self.held.insert(image.to_string());
                    Ok(format!("Image is up to date for {}\n", Self::id(image)))
                }
            },
            ["inspecti", "-o", "json", image] if self.held.contains(*image) => {
                Ok(serde_json::json!({"status": self.listed(image)}).to_string())
            }
            ["inspecti", ..] => Err("no such image".into()),
            _ => Ok(String::new()),
        }
    }

    /// The manifest `podman manifest ... inspect ... IMAGE` prints (one layer of the image's
    /// size in [`Self::registry`], 0 bytes for an image it does not list).
    pub fn manifest(&self, image: &str) -> Option<String> {
        let size = self.registry.get(image).copied().unwrap_or(0);
        Some(
            serde_json::json!({"schemaVersion": 2,
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "layers": [{"digest": Self::id(&format!("layer of {image}")), "size": size}]})
            .to_string(),
        )
    }
}

/// A host that records command lines instead of running them; commands containing one of
/// `fail_on` fail, and commands whose output is read answer from `outputs`.
#[derive(Debug, Clone)]
pub struct RecordingHost {
    /// Every command line asked for, in order (failed ones included).
    pub calls: Vec<String>,
    /// Substrings that make a command fail.
    pub fail_on: Vec<String>,
    /// Canned standard outputs: a command line starting with the first string answers with
    /// the front of the queue, which is popped while more than one answer is left (the last
    /// one keeps answering). Commands with no canned output print nothing, except
    /// `rpm-ostree status --json`, which answers from `ostree`.
    pub outputs: Vec<(String, std::collections::VecDeque<String>)>,
    /// What [`Host::arch`] answers (default: this machine's).
    pub arch: String,
    /// The deployments the rpm-ostree commands so far would have left.
    pub ostree: SimulatedOstree,
    /// The container runtime `crictl` asks.
    pub cri: SimulatedCri,
}

impl Default for RecordingHost {
    fn default() -> Self {
        RecordingHost {
            calls: Vec::new(),
            fail_on: Vec::new(),
            outputs: Vec::new(),
            arch: std::env::consts::ARCH.to_string(),
            ostree: SimulatedOstree::default(),
            cri: SimulatedCri::default(),
        }
    }
}

impl RecordingHost {
    /// A host where every command succeeds.
    pub fn new() -> Self {
        Self::default()
    }

    /// A host where commands containing `needle` fail.
    pub fn failing_on(needle: &str) -> Self {
        RecordingHost {
            fail_on: vec![needle.to_string()],
            ..Self::default()
        }
    }

    /// Queues `output` as the answer of the next command line starting with `prefix` (e.g.
    /// `rpm-ostree status --json`).
    pub fn respond(&mut self, prefix: &str, output: &str) -> &mut Self {
        match self.outputs.iter_mut().find(|(p, _)| p == prefix) {
            Some((_, q)) => q.push_back(output.to_string()),
            None => self
                .outputs
                .push((prefix.to_string(), [output.to_string()].into())),
        }
        self
    }

    fn record(&mut self, line: String) -> Result<(), HostError> {
        let fail = self.fail_on.iter().any(|n| line.contains(n.as_str()));
        self.calls.push(line.clone());
        if fail {
            return Err(HostError {
                command: line,
                message: "exit status: 1 (injected failure)".into(),
            });
        }
        Ok(())
    }

    fn record_output(&mut self, line: String) -> Result<String, HostError> {
        self.record(line.clone())?;
        let Some((_, queue)) = self
            .outputs
            .iter_mut()
            .find(|(p, _)| line.starts_with(p.as_str()))
        else {
            if line == "rpm-ostree status --json" {
                return Ok(self.ostree.status_json());
            }
            return Ok(String::new());
        };
        let answer = if queue.len() > 1 {
            queue.pop_front()
        } else {
            queue.front().cloned()
        };
        Ok(answer.unwrap_or_default())
    }
}

impl Host for RecordingHost {
    fn systemctl(&mut self, args: &[String]) -> Result<(), HostError> {
        self.record(format!("systemctl {}", args.join(" ")))
    }
    fn rpm_ostree(&mut self, args: &[String]) -> Result<(), HostError> {
        self.record(format!("rpm-ostree {}", args.join(" ")))?;
        self.ostree.run(args);
        Ok(())
    }
    fn rpm_ostree_output(&mut self, args: &[String]) -> Result<String, HostError> {
        self.record_output(format!("rpm-ostree {}", args.join(" ")))
    }
    fn podman(&mut self, args: &[String]) -> Result<String, HostError> {
        let line = format!("podman {}", args.join(" "));
        let canned = self
            .outputs
            .iter()
            .any(|(p, _)| line.starts_with(p.as_str()));
        if !canned && args.first().is_some_and(|a| a == "manifest") {
            if let Some(m) = args.last().and_then(|i| self.cri.manifest(i)) {
                self.record(line)?;
                return Ok(m);
            }
        }
        self.record_output(line)
    }
    fn chcon(&mut self, args: &[String]) -> Result<(), HostError> {
        self.record(format!("chcon {}", args.join(" ")))
    }
    fn reboot(&mut self) -> Result<(), HostError> {
        self.record("reboot".into())?;
        self.ostree.boot();
        Ok(())
    }
    fn crictl(&mut self, args: &[String]) -> Result<String, HostError> {
        let line = format!("crictl {}", args.join(" "));
        if self
            .outputs
            .iter()
            .any(|(p, _)| line.starts_with(p.as_str()))
        {
            return self.record_output(line);
        }
        self.record(line.clone())?;
        self.cri.crictl(args).map_err(|message| HostError {
            command: line,
            message,
        })
    }
    fn arch(&self) -> String {
        self.arch.clone()
    }
}

/// A host that prints the commands it would run (used for roots other than `/`). It says so
/// ([`Host::runs_commands`] is `false`), so the agent never asks it for a command whose output
/// it reads (`rpm-ostree status --json`, `podman create`): the OS part of an update is printed
/// as steps instead ([`crate::apply::os::run`]). Asked anyway, those commands fail rather than
/// fake an answer.
#[derive(Debug, Default)]
pub struct PrintHost;

impl PrintHost {
    fn not_run(prog: &str, args: &[String]) -> HostError {
        HostError {
            command: format!("{prog} {}", args.join(" ")),
            message: "not run: this host only prints commands, and this one's output is needed"
                .into(),
        }
    }
}

impl Host for PrintHost {
    fn systemctl(&mut self, args: &[String]) -> Result<(), HostError> {
        eprintln!("host (not run): systemctl {}", args.join(" "));
        Ok(())
    }
    fn rpm_ostree(&mut self, args: &[String]) -> Result<(), HostError> {
        eprintln!("host (not run): rpm-ostree {}", args.join(" "));
        Ok(())
    }
    fn rpm_ostree_output(&mut self, args: &[String]) -> Result<String, HostError> {
        Err(Self::not_run("rpm-ostree", args))
    }
    fn podman(&mut self, args: &[String]) -> Result<String, HostError> {
        Err(Self::not_run("podman", args))
    }
    fn chcon(&mut self, args: &[String]) -> Result<(), HostError> {
        eprintln!("host (not run): chcon {}", args.join(" "));
        Ok(())
    }
    fn reboot(&mut self) -> Result<(), HostError> {
        eprintln!("host (not run): reboot");
        Ok(())
    }
    fn crictl(&mut self, args: &[String]) -> Result<String, HostError> {
        Err(Self::not_run("crictl", args))
    }
    fn runs_commands(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_enter_the_host_namespaces_when_asked() {
        let args = vec!["reload".to_string(), "crio.service".to_string()];
        assert_eq!(
            SystemHost::direct().argv("systemctl", &args),
            ["systemctl", "reload", "crio.service"]
        );
        assert_eq!(
            SystemHost::in_host_namespaces()
                .argv("systemctl", &args)
                .join(" "),
            "nsenter --target 1 --mount --uts --ipc --net --pid -- systemctl reload crio.service"
        );
    }

    #[test]
    fn canned_outputs_answer_in_order_and_the_last_one_repeats() {
        let mut h = RecordingHost::new();
        let status = vec!["status".to_string(), "--json".to_string()];
        let fresh = h
            .rpm_ostree_output(&status)
            .map(|t| crate::rpm_ostree::parse_status(&t));
        assert!(matches!(fresh, Ok(Ok(ref s)) if s.staged().is_none() && s.booted().is_ok()));
        h.respond("rpm-ostree status", "one")
            .respond("rpm-ostree status", "two");
        let answers: Vec<_> = (0..3).map(|_| h.rpm_ostree_output(&status)).collect();
        assert_eq!(
            answers,
            [Ok("one".into()), Ok("two".into()), Ok("two".into())]
        );
        assert_eq!(h.podman(&["ps".to_string()]), Ok(String::new()));
        assert_eq!(h.calls.len(), 5);
    }

    #[test]
    fn the_simulated_host_stages_what_rpm_ostree_was_asked_for() {
        let mut h = RecordingHost::new();
        let run = |h: &mut RecordingHost, line: &str| {
            let args: Vec<String> = line.split(' ').map(String::from).collect();
            assert!(h.rpm_ostree(&args).is_ok());
        };
        run(
            &mut h,
            "rebase --experimental ostree-unverified-registry:quay.io/os@sha256:1",
        );
        run(
            &mut h,
            "override remove kernel kernel-core --install kernel-rt-core",
        );
        run(
            &mut h,
            "update --install usbguard --install sysstat --uninstall sysstat",
        );
        let text = h.rpm_ostree_output(&crate::rpm_ostree::status_args());
        let Ok(Ok(status)) = text.map(|t| crate::rpm_ostree::parse_status(&t)) else {
            panic!("status");
        };
        let Some(staged) = status.staged() else {
            panic!("no staged deployment");
        };
        assert_eq!(staged.requested_packages, ["kernel-rt-core", "usbguard"]);
        assert_eq!(staged.requested_base_removals, ["kernel", "kernel-core"]);
        assert_eq!(staged.image(), Ok(Some("quay.io/os@sha256:1".to_string())));
        run(&mut h, "cleanup -p");
        assert_eq!(h.ostree, SimulatedOstree::default());
        // A reboot boots the staged image.
        run(
            &mut h,
            "rebase --experimental ostree-unverified-registry:quay.io/os@sha256:2",
        );
        assert!(h.reboot().is_ok());
        let text = h.rpm_ostree_output(&crate::rpm_ostree::status_args());
        let Ok(Ok(status)) = text.map(|t| crate::rpm_ostree::parse_status(&t)) else {
            panic!("status");
        };
        assert!(status.staged().is_none());
        assert_eq!(
            status.booted().and_then(|b| b.image()),
            Ok(Some("quay.io/os@sha256:2".to_string()))
        );
    }

    #[test]
    fn the_simulated_runtime_pulls_lists_and_inspects() {
        let words = |l: &str| -> Vec<String> { l.split(' ').map(String::from).collect() };
        let mut h = RecordingHost::new();
        h.cri.registry.insert("quay.io/a@sha256:1".into(), 100);
        h.cri.pull_failures.insert(
            "quay.io/b@sha256:2".into(),
            "no space left on device".into(),
        );
        assert!(h
            .crictl(&words("inspecti -o json quay.io/a@sha256:1"))
            .is_err());
        assert!(h.crictl(&words("pull quay.io/a@sha256:1")).is_ok());
        let err = h.crictl(&words("pull quay.io/b@sha256:2"));
        assert_eq!(
            err.map_err(|e| e.message),
            Err("no space left on device".to_string())
        );
        let listed = h.crictl(&words("images -o json")).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&listed).unwrap_or_default();
        assert_eq!(v["images"][0]["repoDigests"][0], "quay.io/a@sha256:1");
        assert_eq!(v["images"][0]["size"], "100");
        assert!(h
            .crictl(&words("inspecti -o json quay.io/a@sha256:1"))
            .is_ok());
        let manifest = h
            .podman(&words("manifest inspect quay.io/a@sha256:1"))
            .unwrap_or_default();
        assert!(manifest.contains("\"size\":100"), "{manifest}");
        assert_eq!(h.calls.len(), 6);
        assert!(PrintHost.crictl(&words("images -o json")).is_err());
    }

    #[test]
    fn package_flags_and_packages_are_separate_words() {
        let call = HostCall::Update {
            install: vec!["a".into(), "b".into()],
            uninstall: vec!["c".into()],
        };
        assert_eq!(
            call.argv().map(|(_, a)| a),
            Some(
                vec![
                    "update",
                    "--install",
                    "a",
                    "--install",
                    "b",
                    "--uninstall",
                    "c"
                ]
                .into_iter()
                .map(String::from)
                .collect()
            )
        );
    }

    #[test]
    fn a_missing_program_is_an_error_naming_the_command() {
        let host = SystemHost {
            prefix: vec!["/nonexistent/mco-test-wrapper".into()],
        };
        let err = host.run("systemctl", &["status".into()]);
        assert_eq!(
            err.map_err(|e| e.command),
            Err("/nonexistent/mco-test-wrapper systemctl status".to_string())
        );
    }
}
