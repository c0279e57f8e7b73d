//! Crash-trial runner: SIGKILLs the real `machine-config-daemon` at seeded random instants of
//! an update from config A to config B (anywhere from before it starts to after it ends), runs
//! recovery (itself SIGKILLed in one trial of four, then run again), and checks that every part of the host (the whole root tree: contents, modes,
//! owners, links; plus the simulated systemctl and rpm-ostree state) is exactly A or exactly B,
//! the part agreeing with `currentconfig`, with no temporary file left. The certificate
//! writer, which has no transaction, is held to its own promise: each file is whole old or
//! whole new, and the next pass (for either ControllerConfig) brings the disk exactly there.
//!
//! Host commands run through [`fake`] stand-ins first on `PATH` (`--host run`), never the
//! machine's. A trial's root is a copy of a template root on which A was applied once.
#![allow(dead_code)]

pub mod fake;
pub mod scenario;
pub mod tree;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use scenario::Kind;
use tree::{copy_tree, diff, snapshot, Snapshot};

/// How trials are run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The `machine-config-daemon` binary.
    pub bin: PathBuf,
    /// Trials in all, spread over `kinds` in turn.
    pub trials: usize,
    /// Seed of the kill instants.
    pub seed: u64,
    /// The kinds to run.
    pub kinds: Vec<Kind>,
    /// Trials stop starting after this long (the report says how many ran).
    pub time_limit: Duration,
}

/// A small deterministic generator (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    /// The next value.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Figures of one kind.
#[derive(Debug, Clone, Default)]
pub struct KindReport {
    /// Trials run.
    pub trials: usize,
    /// Ended at A (rolled back or killed before starting).
    pub old: usize,
    /// Ended at B (killed after the commit, or the run finished).
    pub new: usize,
    /// Certificates only: some files new, some old at the kill (each whole).
    pub mixed: usize,
    /// OS kinds: trials killed after the rebase to B was staged.
    pub killed_staged: usize,
    /// Trials whose recovery was SIGKILLed too (then run again).
    pub recovery_killed: usize,
    /// Time of an unkilled update A -> B.
    pub full_run: Duration,
    /// Time spent in this kind's trials.
    pub time: Duration,
}

/// What the trials found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Figures by kind.
    pub kinds: BTreeMap<Kind, KindReport>,
    /// Every inconsistency, naming the trial, its kind and kill delay.
    pub inconsistencies: Vec<String>,
    /// Wall time of all trials (setup included).
    pub elapsed: Duration,
}

impl Report {
    /// Trials run in all.
    pub fn trials(&self) -> usize {
        self.kinds.values().map(|k| k.trials).sum()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "| kind | trials | old | new | mixed | killed after staging | recovery killed | full update | per trial |"
        )?;
        writeln!(f, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")?;
        for (k, r) in &self.kinds {
            let per = r
                .time
                .checked_div(r.trials.max(1) as u32)
                .unwrap_or_default();
            writeln!(
                f,
                "| {} | {} | {} | {} | {} | {} | {} | {:.1} ms | {:.1} ms |",
                k.name(),
                r.trials,
                r.old,
                r.new,
                r.mixed,
                r.killed_staged,
                r.recovery_killed,
                r.full_run.as_secs_f64() * 1e3,
                per.as_secs_f64() * 1e3
            )?;
        }
        writeln!(
            f,
            "{} trials in {:.1} s, {} inconsistencies",
            self.trials(),
            self.elapsed.as_secs_f64(),
            self.inconsistencies.len()
        )?;
        for i in &self.inconsistencies {
            writeln!(f, "INCONSISTENT: {i}")?;
        }
        Ok(())
    }
}

/// Agent state that reports rather than configures (the last run's status), and the pull
/// secret link the OS step makes outside the transaction in `/run` (a tmpfs; it points at the
/// cluster's pull secret whatever the config).
fn keep_in_root(rel: &str) -> bool {
    rel != "etc/machine-config-daemon/state.json"
        && rel != "run/ostree"
        && rel != "run/ostree/auth.json"
}

/// One trial kind, set up: the template root at A, the configs, and the expected trees.
pub struct Scenario {
    /// The kind.
    pub kind: Kind,
    bin: PathBuf,
    work: PathBuf,
    fake_bin: PathBuf,
    /// Root and fake state of the template (A applied).
    template: (PathBuf, PathBuf),
    /// Files naming config A and B (a MachineConfig, or a ControllerConfig and a CA bundle).
    inputs: [(PathBuf, PathBuf); 2],
    /// Expected root and fake state at A and at B.
    want: [(Snapshot, Snapshot); 2],
    /// Time of an unkilled update A -> B (the slowest of three).
    pub full_run: Duration,
}

fn io<T>(what: &str, r: std::io::Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

fn run_to_end(mut cmd: Command, what: &str) -> Result<(), String> {
    let out = io(what, cmd.output())?;
    if !out.status.success() {
        return Err(format!(
            "{what}: {}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

impl Scenario {
    /// Seeds the template root under `work`, applies A to it and measures an update to B.
    pub fn new(kind: Kind, bin: &Path, work: &Path) -> Result<Scenario, String> {
        let work = work.join(kind.name());
        let tmpl = work.join("template");
        let (root, fake) = (tmpl.join("root"), tmpl.join("fake"));
        io("template", std::fs::create_dir_all(&root))?;
        io("template", std::fs::create_dir_all(&fake))?;
        io("seed", scenario::seed(kind, &root))?;
        io(
            "fake",
            std::fs::write(fake.join("booted-image"), scenario::IMAGE_A),
        )?;
        let fake_bin = work.join("bin");
        io("fake", fake::install(&fake_bin))?;
        let mut inputs = Vec::new();
        for tag in ["A", "B"] {
            let (main, extra) = (
                work.join(format!("{tag}.json")),
                work.join(format!("{tag}.ca")),
            );
            let v = match kind {
                Kind::Certs => scenario::controller_config(tag),
                _ => scenario::machine_config(kind, tag),
            };
            io("config", std::fs::write(&main, v.to_string()))?;
            io(
                "config",
                std::fs::write(&extra, scenario::kubeconfig_ca(tag)),
            )?;
            inputs.push((main, extra));
        }
        let inputs: [(PathBuf, PathBuf); 2] = [inputs[0].clone(), inputs[1].clone()];
        let mut s = Scenario {
            kind,
            bin: bin.to_path_buf(),
            work: work.clone(),
            fake_bin,
            template: (root.clone(), fake.clone()),
            inputs,
            want: Default::default(),
            full_run: Duration::ZERO,
        };
        run_to_end(s.command(0, &root, &fake), "applying A to the template")?;
        // The node rebooted into A: nothing is staged any more.
        let _ = std::fs::remove_file(fake.join("staged"));
        let _ = std::fs::remove_file(fake.join("log"));
        s.want[0] = s.snap(&root, &fake)?;
        // Three unkilled updates: the expected tree at B and the length of an update.
        let mut runs = Vec::new();
        for n in 0..3 {
            let (r, f) = s.fresh(&format!("calibrate{n}"))?;
            let start = Instant::now();
            run_to_end(s.command(1, &r, &f), "updating to B")?;
            runs.push(start.elapsed());
            let got = s.snap(&r, &f)?;
            if n == 0 {
                s.want[1] = got;
            } else if got != s.want[1] {
                return Err(format!("{}: two updates to B differ", kind.name()));
            }
            s.check_fake_log(&f)?;
            io("cleanup", std::fs::remove_dir_all(r.parent().unwrap_or(&r)))?;
        }
        runs.sort();
        s.full_run = runs[2];
        if s.want[0] == s.want[1] {
            return Err(format!("{}: A and B leave the same tree", kind.name()));
        }
        if matches!(kind, Kind::Units | Kind::Os) && s.want[0].1 == s.want[1].1 {
            return Err(format!("{}: the fake host commands never ran", kind.name()));
        }
        Ok(s)
    }

    /// The stand-ins logged no call they do not know.
    fn check_fake_log(&self, fake: &Path) -> Result<(), String> {
        let log = std::fs::read_to_string(fake.join("log")).unwrap_or_default();
        match log.lines().find(|l| l.starts_with("unexpected")) {
            Some(l) => Err(format!("{}: {l}", self.kind.name())),
            None => Ok(()),
        }
    }

    /// The agent run that takes the root to config `to` (0: A, 1: B).
    fn command(&self, to: usize, root: &Path, fake: &Path) -> Command {
        let mut c = Command::new(&self.bin);
        let (main, extra) = &self.inputs[to];
        match self.kind {
            Kind::Certs => {
                c.arg("certs-from")
                    .arg(main)
                    .arg("--kubeconfig-ca")
                    .arg(extra);
            }
            _ => {
                c.arg("once-from").arg(main).arg("--no-reboot");
            }
        }
        c.arg("--root").arg(root).args(["--host", "run"]);
        self.env(&mut c, fake);
        c
    }

    fn env(&self, c: &mut Command, fake: &Path) {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![self.fake_bin.clone()];
        paths.extend(std::env::split_paths(&path));
        c.env("PATH", std::env::join_paths(paths).unwrap_or_default())
            .env("FAKE_STATE", fake)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
    }

    /// Root and fake state snapshots.
    pub fn snap(&self, root: &Path, fake: &Path) -> Result<(Snapshot, Snapshot), String> {
        Ok((
            io("snapshot", snapshot(root, &keep_in_root))?,
            io("snapshot", snapshot(fake, &fake::is_state))?,
        ))
    }

    /// A fresh copy of the template under `work/<name>`.
    pub fn fresh(&self, name: &str) -> Result<(PathBuf, PathBuf), String> {
        let dir = self.work.join(name);
        if dir.exists() {
            io("cleanup", std::fs::remove_dir_all(&dir))?;
        }
        io("trial dir", std::fs::create_dir_all(&dir))?;
        let (root, fake) = (dir.join("root"), dir.join("fake"));
        io("copy", copy_tree(&self.template.0, &root))?;
        io("copy", copy_tree(&self.template.1, &fake))?;
        Ok((root, fake))
    }

    /// Checks a root after recovery from an interrupted update: exactly A or exactly B in
    /// every part, matching `currentconfig`. Returns 0 (A) or 1 (B).
    pub fn check_config(&self, root: &Path, fake: &Path) -> Result<usize, String> {
        let got = self.snap(root, fake)?;
        let current = std::fs::read_to_string(root.join("etc/machine-config-daemon/currentconfig"))
            .unwrap_or_default();
        let at = if current.contains(&scenario::config_name(self.kind, "B")) {
            1
        } else {
            0
        };
        let mut d = diff(&self.want[at].0, &got.0);
        d.extend(
            diff(&self.want[at].1, &got.1)
                .into_iter()
                .map(|l| format!("(simulated host) {l}")),
        );
        if d.is_empty() {
            return Ok(at);
        }
        let total = d.len();
        d.truncate(6);
        Err(format!(
            "currentconfig is {}, but {total} entries differ from it: {}",
            ["A", "B"][at],
            d.join("; ")
        ))
    }

    /// Checks the certificate files after a kill: every entry is whole A or whole B (temp
    /// files aside, the next pass's business). Returns how many entries are at B and how many
    /// differ between A and B.
    pub fn check_certs_torn(&self, root: &Path) -> Result<(usize, usize), String> {
        let got = io(
            "snapshot",
            snapshot(root, &|r| keep_in_root(r) && !r.ends_with(".mcd-tmp")),
        )?;
        let (a, b) = (&self.want[0].0, &self.want[1].0);
        let mut bad = Vec::new();
        let (mut at_b, mut differing) = (0, 0);
        let paths: std::collections::BTreeSet<&String> =
            a.keys().chain(b.keys()).chain(got.keys()).collect();
        for p in paths {
            let (wa, wb, g) = (a.get(p), b.get(p), got.get(p));
            if wa != wb {
                differing += 1;
                if g == wb {
                    at_b += 1;
                }
            }
            if g != wa && g != wb {
                bad.push(format!("{p}: neither A nor B ({g:?})"));
            }
        }
        if bad.is_empty() {
            Ok((at_b, differing))
        } else {
            bad.truncate(6);
            Err(bad.join("; "))
        }
    }

    /// Runs one trial: kill after `delay`, recover, check. `pass_to` picks the
    /// ControllerConfig of the certificate writer's next pass (0: A, 1: B); `kill_recovery`,
    /// when set, SIGKILLs the first recovery after that long (the second runs to its end).
    pub fn trial(
        &self,
        delay: Duration,
        pass_to: usize,
        kill_recovery: Option<Duration>,
        report: &mut KindReport,
    ) -> Result<(), String> {
        let (root, fake) = self.fresh("trial")?;
        let mut cmd = self.command(1, &root, &fake);
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = io("spawn", cmd.spawn())?;
        std::thread::sleep(delay);
        kill_all(child)?;
        if self.kind.has(Kind::Os)
            && std::fs::read_to_string(fake.join("staged"))
                .is_ok_and(|s| s.contains(scenario::IMAGE_B))
        {
            report.killed_staged += 1;
        }
        if self.kind == Kind::Certs {
            let (at_b, differing) = self.check_certs_torn(&root)?;
            match at_b {
                0 => report.old += 1,
                n if n == differing => report.new += 1,
                _ => report.mixed += 1,
            }
            // The next pass, from the ControllerConfig as it is then (either one).
            run_to_end(
                self.command(pass_to, &root, &fake),
                "the next certificate pass",
            )?;
            let got = self.snap(&root, &fake)?;
            let d = diff(&self.want[pass_to].0, &got.0);
            if !d.is_empty() {
                return Err(format!(
                    "after the next pass to {}: {}",
                    ["A", "B"][pass_to],
                    d.join("; ")
                ));
            }
        } else {
            let recover = || {
                let mut rec = Command::new(&self.bin);
                rec.arg("recover")
                    .arg("--root")
                    .arg(&root)
                    .args(["--host", "run"]);
                self.env(&mut rec, &fake);
                rec
            };
            if let Some(d) = kill_recovery {
                let mut rec = recover();
                rec.stdout(Stdio::null()).stderr(Stdio::null());
                std::os::unix::process::CommandExt::process_group(&mut rec, 0);
                let child = io("spawn", rec.spawn())?;
                std::thread::sleep(d);
                kill_all(child)?;
                report.recovery_killed += 1;
            }
            run_to_end(recover(), "recover")?;
            match self.check_config(&root, &fake)? {
                0 => report.old += 1,
                _ => report.new += 1,
            }
            self.check_fake_log(&fake)?;
        }
        Ok(())
    }
}

/// SIGKILLs the agent, then every process of its group (the host commands it started), and
/// waits until none is left running.
fn kill_all(mut child: Child) -> Result<(), String> {
    let pgid = child.id();
    let _ = child.kill();
    let _ = child.wait();
    for _ in 0..1000 {
        if !group_running(pgid) {
            return Ok(());
        }
        // The shell's builtin `kill`: no procps needed.
        let _ = Command::new("sh")
            .args(["-c", &format!("kill -s KILL -- -{pgid}")])
            .stderr(Stdio::null())
            .status();
        std::thread::sleep(Duration::from_millis(2));
    }
    Err(format!("process group {pgid} still running after 2 s"))
}

/// Whether a process of group `pgid` is still running (zombies waiting for whoever reaps
/// orphans do not count), from `/proc/<pid>/stat`.
fn group_running(pgid: u32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|e| {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            return false;
        };
        // pid (comm) state ppid pgrp ...
        let rest = stat.rsplit_once(") ").map(|(_, r)| r).unwrap_or_default();
        let mut f = rest.split(' ');
        let (state, _ppid, pgrp) = (f.next(), f.next(), f.next());
        state != Some("Z") && pgrp == Some(pgid.to_string().as_str())
    })
}

/// Runs the trials under `work` (a fresh directory).
pub fn run(opts: &Options, work: &Path) -> Result<Report, String> {
    let start = Instant::now();
    let mut report = Report::default();
    let mut scenarios = Vec::new();
    for &k in &opts.kinds {
        let s = Scenario::new(k, &opts.bin, work)?;
        report.kinds.insert(
            k,
            KindReport {
                full_run: s.full_run,
                ..Default::default()
            },
        );
        scenarios.push(s);
    }
    let mut rng = Rng(opts.seed.max(1));
    for n in 0..opts.trials {
        if start.elapsed() >= opts.time_limit {
            break;
        }
        let s = &scenarios[n % scenarios.len()];
        // The slowest unkilled update and half as much again (a trial's run is often slower
        // than the calibration's, on a loaded machine): some kills land after it finished.
        let span = (s.full_run.as_micros() as u64).max(1000) * 3 / 2;
        let delay = Duration::from_micros(rng.next() % span);
        let pass_to = (rng.next() % 2) as usize;
        // One trial in four crashes again during recovery, somewhere in the first half of
        // an update's length (a rollback is shorter than the update it undoes).
        let kill_recovery = rng
            .next()
            .is_multiple_of(4)
            .then(|| Duration::from_micros(rng.next() % (span / 2)));
        let kr = report.kinds.entry(s.kind).or_default();
        let t = Instant::now();
        let r = s.trial(delay, pass_to, kill_recovery, kr);
        kr.time += t.elapsed();
        kr.trials += 1;
        if let Err(e) = r {
            report.inconsistencies.push(format!(
                "trial {n} ({}, killed after {delay:?}): {e}",
                s.kind.name()
            ));
        }
    }
    let _ = std::fs::remove_dir_all(work);
    report.elapsed = start.elapsed();
    Ok(report)
}
