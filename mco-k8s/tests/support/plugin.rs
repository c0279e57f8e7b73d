//! Running `kubectl-mco`, the kubectl plugin, as a user runs it: a process reading the
//! in-process API server through a kubeconfig; and its output with the clock taken out, for
//! snapshots of states that end-to-end runs produce at whatever time they run.

use super::apiserver::ApiServer;
use super::PATIENCE;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Writes a kubeconfig for `server` into `dir`.
pub fn kubeconfig(dir: &Path, server: &ApiServer) -> PathBuf {
    let path = dir.join("kubeconfig");
    server.write_kubeconfig(&path).unwrap();
    path
}

/// Runs the plugin with `args` and `stdin`; exit status, stdout, stderr.
pub async fn plugin(kubeconfig: &Path, args: &[&str], stdin: &str) -> (i32, String, String) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (kc, input) = (kubeconfig.to_path_buf(), stdin.to_string());
    let out = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-mco"))
            .args(&args)
            .env("KUBECONFIG", &kc)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(mut i) = child.stdin.take() {
            let _ = i.write_all(input.as_bytes());
        }
        child.wait_with_output().unwrap()
    });
    let out = tokio::time::timeout(PATIENCE, out)
        .await
        .expect("the plugin did not finish")
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `kubectl mco status [args]` on `server`, as a user types it: exit status and stdout;
/// panics with its stderr when it fails otherwise than by finding a pool stuck (exit 1).
pub async fn status(server: &ApiServer, args: &[&str]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let kc = kubeconfig(dir.path(), server);
    let mut all = vec!["status"];
    all.extend_from_slice(args);
    let (code, out, err) = plugin(&kc, &all, "").await;
    assert!(
        code == 0 || code == 1,
        "kubectl mco status failed ({code}): {err}"
    );
    (code, out)
}

/// `text` with the clock taken out, for a snapshot: instants (`2026-03-04T10:00:00Z`) read
/// `<time>`, durations (`3s`, `1h2m`, `+15m`) `<dur>`, times of day (`13:49`) `<hh:mm>`, and
/// runs of spaces (a table's padding, which the replaced values' widths decide) two spaces.
pub fn without_clock(text: &str) -> String {
    let word = |c: char| c.is_ascii_alphanumeric() || matches!(c, ':' | '.' | '-' | '+');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if word(c) {
            let end = rest.find(|c: char| !word(c)).unwrap_or(rest.len());
            // A word's trailing colon or full stop is punctuation, a leading sign not the value.
            let raw = &rest[..end];
            let w = raw.trim_end_matches([':', '.']);
            let (sign, bare) = match w.strip_prefix(['+', '-']) {
                Some(b) => (&w[..1], b),
                None => ("", w),
            };
            if is_instant(w) {
                out.push_str("<time>");
            } else if is_duration(bare) {
                out.push_str(sign);
                out.push_str("<dur>");
            } else if is_clock(w) {
                out.push_str("<hh:mm>");
            } else {
                out.push_str(w);
            }
            out.push_str(&raw[w.len()..]);
            rest = &rest[end..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out.lines()
        .map(|l| {
            let mut line = String::new();
            let mut spaces = 0;
            for c in l.trim_end().chars() {
                if c == ' ' {
                    spaces += 1;
                    continue;
                }
                line.push_str(&" ".repeat(spaces.min(2)));
                spaces = 0;
                line.push(c);
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_clock(w: &str) -> bool {
    let parts: Vec<&str> = w.split(':').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_digit()))
}

fn is_instant(w: &str) -> bool {
    let b = w.as_bytes();
    b.len() >= 20
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[10] == b'T'
        && (w.ends_with('Z') || w.contains('+'))
}

/// A Go duration as `time.Duration.String` prints it, or `jiff`'s friendly one: numbers each
/// followed by a unit.
fn is_duration(w: &str) -> bool {
    let mut rest = w;
    let mut parts = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        let unit = ["ms", "µs", "us", "ns", "h", "m", "s", "d"]
            .into_iter()
            .find(|u| rest.starts_with(u));
        let Some(u) = unit else { return false };
        rest = &rest[u.len()..];
        parts += 1;
    }
    parts > 0
}
