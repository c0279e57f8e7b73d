//! `mco-render validate` and `render` on folders holding symbolic links: a cycle is skipped
//! with a warning naming the link (and the command finishes), a link to a folder or file
//! already read adds nothing, a link that cannot be followed is a read error naming it.
#![cfg(unix)]

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one run may take: a few hundred milliseconds are needed; without the cycle
/// check the walk below never ends.
const BOUND: Duration = Duration::from_secs(60);

/// Runs `mco-render` in `dir`, killed if it has not exited within [`BOUND`] (a failure):
/// exit code, stdout, stderr.
fn run_bounded(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_mco-render"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => panic!("run mco-render: {e}"),
    };
    let start = Instant::now();
    // Its output is read after it exits: these runs print a few lines, far below a pipe's
    // buffer.
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() > BOUND => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("mco-render {args:?} still running after {BOUND:?}: killed");
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("wait for mco-render: {e}"),
        }
    }
    let out = match child.wait_with_output() {
        Ok(o) => o,
        Err(e) => panic!("mco-render output: {e}"),
    };
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A temporary folder with `m/`: examples/cluster's pools and worker kernel arguments.
fn fixture() -> tempfile::TempDir {
    let Ok(tmp) = tempfile::tempdir() else {
        panic!("temp dir");
    };
    let m = tmp.path().join("m");
    if let Err(e) = std::fs::create_dir(&m) {
        panic!("{e}");
    }
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cluster");
    for f in ["00-pools.yaml", "30-worker-kargs.yaml"] {
        if let Err(e) = std::fs::copy(examples.join(f), m.join(f)) {
            panic!("{f}: {e}");
        }
    }
    tmp
}

fn link(target: &str, link: &Path) {
    if let Err(e) = symlink(target, link) {
        panic!("{}: {e}", link.display());
    }
}

/// `render --pool worker m` on the fixture before any link is added.
fn plain_render(dir: &Path) -> String {
    let (code, stdout, stderr) = run_bounded(dir, &["render", "--pool", "worker", "m"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    stdout
}

#[test]
fn a_link_cycle_ends_with_a_warning_naming_the_link() {
    let tmp = fixture();
    let dir = tmp.path();
    let plain = plain_render(dir);
    // Two links back up: each level of the walk would double the paths to read.
    link(".", &dir.join("m/loop"));
    link("../m", &dir.join("m/again"));
    let (code, stdout, stderr) = run_bounded(dir, &["validate", "m"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "1 MachineConfigs checked: 0 errors, 0 warnings\n");
    insta::assert_snapshot!("cycle_warnings", stderr);
    let (code, stdout, render_stderr) = run_bounded(dir, &["render", "--pool", "worker", "m"]);
    assert_eq!(code, 0, "{render_stderr}");
    assert_eq!(render_stderr, stderr);
    assert_eq!(stdout, plain);
}

#[test]
fn a_self_link_reads_each_file_once() {
    let tmp = fixture();
    let dir = tmp.path();
    let plain = plain_render(dir);
    // Without the cycle check, m/self/self/... was read 41 levels deep (the kernel's limit
    // on links in one path), each MachineConfig 41 times.
    link(".", &dir.join("m/self"));
    let (code, stdout, stderr) = run_bounded(dir, &["validate", "m"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "1 MachineConfigs checked: 0 errors, 0 warnings\n");
    assert_eq!(
        stderr,
        "warning: m/self: a link to m, a folder already being read (a cycle); not followed\n"
    );
    let (code, stdout, _) = run_bounded(dir, &["render", "--pool", "worker", "m"]);
    assert_eq!(code, 0);
    assert_eq!(stdout, plain);
}

#[test]
fn a_linked_duplicate_counts_once() {
    let tmp = fixture();
    let dir = tmp.path();
    let plain = plain_render(dir);
    // A link to a file already in the tree, and a second folder linking to the same one.
    link("30-worker-kargs.yaml", &dir.join("m/31-copy.yaml"));
    link("m", &dir.join("m2"));
    let (code, stdout, stderr) = run_bounded(dir, &["validate", "m", "m2"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert_eq!(stdout, "1 MachineConfigs checked: 0 errors, 0 warnings\n");
    let (code, stdout, stderr) = run_bounded(dir, &["render", "--pool", "worker", "m", "m2"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert_eq!(stdout, plain);
    // The file is read under its first path: an error in it names that one.
    if let Err(e) = std::fs::write(dir.join("m/30-worker-kargs.yaml"), "kind: [") {
        panic!("{e}");
    }
    // `validate` reports a file that does not read as an error finding (exit 1).
    let (code, _, stderr) = run_bounded(dir, &["validate", "m"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.starts_with("error: m/30-worker-kargs.yaml:"),
        "{stderr}"
    );
    assert!(!stderr.contains("31-copy"), "{stderr}");
}

#[test]
fn a_broken_link_is_a_read_error_naming_it() {
    let tmp = fixture();
    let dir = tmp.path();
    link("missing.yaml", &dir.join("m/40-gone.yaml"));
    let (code, stdout, stderr) = run_bounded(dir, &["validate", "m"]);
    assert_eq!((code, stdout.as_str()), (2, ""));
    insta::assert_snapshot!("broken_link", stderr);
    let (code, _, render_stderr) = run_bounded(dir, &["render", "m"]);
    assert_eq!(code, 2);
    assert_eq!(render_stderr, stderr);
    // A broken link under a name no manifest has (it may have named a folder): a warning.
    if let Err(e) = std::fs::remove_file(dir.join("m/40-gone.yaml")) {
        panic!("{e}");
    }
    link("../shared", &dir.join("m/shared"));
    let (code, _, stderr) = run_bounded(dir, &["validate", "m"]);
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!("broken_link_to_a_folder", stderr);
}
