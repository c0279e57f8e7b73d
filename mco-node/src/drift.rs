//! Drift: on-disk files and units that no longer match the current config, with what differs.

use std::collections::BTreeSet;
use std::fmt;

use mco_ignition::model::Config;

use crate::apply::files::desired_file;
use crate::apply::units::{dropin_path, unit_path, DEV_NULL};
use crate::root::{Entry, HostRoot};

/// While this file exists, drift is not reported and the next update skips its drift check
/// (upstream's force file; `/run` does not survive a reboot).
pub const FORCE_FILE: &str = "/run/machine-config-daemon-force";

/// Longest excerpt of a line shown in a report.
const EXCERPT: usize = 120;

/// What differs at one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriftKind {
    /// Nothing is there.
    Missing,
    /// Something other than a regular file is there.
    NotAFile {
        /// What is there.
        found: String,
    },
    /// The bytes differ; the first differing line (1-based) with both versions.
    Content {
        /// Line number.
        line: usize,
        /// Expected line (or `<end of file>`).
        expected: String,
        /// Actual line (or `<end of file>`).
        actual: String,
    },
    /// Permission bits differ.
    Mode {
        /// Expected bits.
        expected: u32,
        /// Actual bits.
        actual: u32,
    },
    /// Owner or group differ.
    Owner {
        /// Expected uid and gid.
        expected: (u32, u32),
        /// Actual uid and gid.
        actual: (u32, u32),
    },
    /// A masked unit is not a symlink to /dev/null.
    NotMasked {
        /// What is there.
        found: String,
    },
    /// The file could not be checked (undecodable contents, unresolvable owner, I/O error).
    Unchecked {
        /// Why.
        cause: String,
    },
}

/// One drifted path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    /// Host path.
    pub path: String,
    /// What differs.
    pub kind: DriftKind,
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.path;
        match &self.kind {
            DriftKind::Missing => write!(f, "{p}: expected a file, found nothing"),
            DriftKind::NotAFile { found } => write!(f, "{p}: expected a regular file, found {found}"),
            DriftKind::Content {
                line,
                expected,
                actual,
            } => write!(
                f,
                "content mismatch for file {p}: line {line}: expected {expected:?}, found {actual:?}"
            ),
            DriftKind::Mode { expected, actual } => write!(
                f,
                "mode mismatch for file {p}: expected {expected:04o}, found {actual:04o}"
            ),
            DriftKind::Owner { expected, actual } => write!(
                f,
                "owner mismatch for file {p}: expected {}:{}, found {}:{}",
                expected.0, expected.1, actual.0, actual.1
            ),
            DriftKind::NotMasked { found } => {
                write!(f, "{p}: expected a symlink to {DEV_NULL} (masked), found {found}")
            }
            DriftKind::Unchecked { cause } => write!(f, "{p}: could not check: {cause}"),
        }
    }
}

fn excerpt(line: Option<&str>) -> String {
    match line {
        None => "<end of file>".into(),
        Some(l) if l.chars().count() > EXCERPT => {
            format!("{}…", l.chars().take(EXCERPT).collect::<String>())
        }
        Some(l) => l.to_string(),
    }
}

/// The first line (1-based) where two byte strings differ, with both lines.
pub fn first_difference(expected: &[u8], actual: &[u8]) -> Option<DriftKind> {
    if expected == actual {
        return None;
    }
    let e = String::from_utf8_lossy(expected);
    let a = String::from_utf8_lossy(actual);
    let (el, al): (Vec<&str>, Vec<&str>) = (e.split('\n').collect(), a.split('\n').collect());
    let n = el.len().max(al.len());
    for i in 0..n {
        if el.get(i) != al.get(i) {
            return Some(DriftKind::Content {
                line: i + 1,
                expected: excerpt(el.get(i).copied()),
                actual: excerpt(al.get(i).copied()),
            });
        }
    }
    // Same text after lossy decoding: the bytes differ in invalid UTF-8.
    Some(DriftKind::Content {
        line: 1,
        expected: "<binary>".into(),
        actual: "<binary, different>".into(),
    })
}

fn describe(e: &Entry) -> String {
    match e {
        Entry::Absent => "nothing".into(),
        Entry::File { .. } => "a regular file".into(),
        Entry::Symlink { target } => format!("a symlink to {}", target.display()),
        Entry::Directory => "a directory".into(),
        Entry::Other => "a special file".into(),
    }
}

fn check_bytes(
    root: &HostRoot,
    path: &str,
    want: &[u8],
    mode: u32,
    owner: Option<(u32, u32)>,
) -> Option<DriftKind> {
    match root.entry(path) {
        Err(e) => Some(DriftKind::Unchecked {
            cause: e.to_string(),
        }),
        Ok(Entry::Absent) => Some(DriftKind::Missing),
        Ok(Entry::File {
            data,
            mode: m,
            uid,
            gid,
        }) => first_difference(want, &data)
            .or_else(|| {
                (m != mode).then_some(DriftKind::Mode {
                    expected: mode,
                    actual: m,
                })
            })
            .or_else(|| {
                owner
                    .filter(|o| *o != (uid, gid))
                    .map(|o| DriftKind::Owner {
                        expected: o,
                        actual: (uid, gid),
                    })
            }),
        Ok(other) => Some(DriftKind::NotAFile {
            found: describe(&other),
        }),
    }
}

/// The Degraded reason for drift from `config`: upstream's opening ("unexpected on-disk state
/// validating against ...") followed by every drifted path with what was expected and found.
pub fn reason(config: &str, found: &[Drift]) -> String {
    let each: Vec<String> = found.iter().map(Drift::to_string).collect();
    format!(
        "unexpected on-disk state validating against {config}: {}",
        each.join("; ")
    )
}

/// What one checked path must hold.
enum Expected<'a> {
    /// A config file (contents, mode and owner as the update writes them).
    File(&'a mco_ignition::model::File),
    /// A unit or drop-in with these contents (mode 0644).
    Unit(&'a str),
    /// A masked unit: a symlink to /dev/null.
    Masked,
}

/// Every path [`check`] compares, with what it must hold: the config's files (except the CA
/// bundles the certificate writer rewrites, [`crate::certs::DRIFT_IGNORED`], upstream's
/// getFilesToIgnore), its units' non-empty drop-ins, and its masked or non-empty units.
fn expected(config: &Config) -> Vec<(String, Expected<'_>)> {
    let mut out: Vec<(String, Expected<'_>)> = config
        .storage
        .files
        .iter()
        .filter(|f| !crate::certs::DRIFT_IGNORED.contains(&f.path.as_str()))
        .map(|f| (f.path.clone(), Expected::File(f)))
        .collect();
    for u in &config.systemd.units {
        for d in &u.dropins {
            if let Some(c) = non_empty(&d.contents) {
                out.push((dropin_path(&u.name, &d.name), Expected::Unit(c)));
            }
        }
        if u.mask == Some(true) {
            out.push((unit_path(&u.name), Expected::Masked));
        } else if let Some(c) = non_empty(&u.contents) {
            out.push((unit_path(&u.name), Expected::Unit(c)));
        }
    }
    out
}

fn non_empty(c: &Option<String>) -> Option<&str> {
    c.as_deref().filter(|c| !c.is_empty())
}

/// Every path [`check`] compares for `config`.
pub fn checked_paths(config: &Config) -> BTreeSet<String> {
    expected(config).into_iter().map(|(p, _)| p).collect()
}

/// Compares the files and units of `config` with the disk.
pub fn check(root: &HostRoot, config: &Config) -> Vec<Drift> {
    let unchecked = |e: &dyn std::fmt::Display| {
        Some(DriftKind::Unchecked {
            cause: e.to_string(),
        })
    };
    expected(config)
        .into_iter()
        .filter_map(|(path, want)| {
            let kind = match want {
                Expected::File(f) => match desired_file(root, f) {
                    Ok(w) => check_bytes(root, &path, &w.data, w.mode, Some(w.owner)),
                    Err(e) => unchecked(&e),
                },
                Expected::Unit(c) => check_bytes(root, &path, c.as_bytes(), 0o644, None),
                Expected::Masked => match root.entry(&path) {
                    Ok(Entry::Symlink { target }) if target.as_os_str() == DEV_NULL => None,
                    Ok(e) => Some(DriftKind::NotMasked {
                        found: describe(&e),
                    }),
                    Err(e) => unchecked(&e),
                },
            };
            kind.map(|kind| Drift { path, kind })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_line_that_differs() {
        let d = first_difference(b"a\nb\nc\n", b"a\nB\nc\n").unwrap();
        assert_eq!(
            d,
            DriftKind::Content {
                line: 2,
                expected: "b".into(),
                actual: "B".into()
            }
        );
        let d = first_difference(b"a\n", b"a\nextra").unwrap();
        assert_eq!(
            d,
            DriftKind::Content {
                line: 2,
                expected: "".into(),
                actual: "extra".into()
            }
        );
        assert!(first_difference(b"x", b"x").is_none());
    }

    #[test]
    fn the_certificate_writers_files_are_not_drift() {
        let ign = serde_json::json!({"ignition": {"version": "3.5.0"}, "storage": {"files": [
            {"path": "/etc/kubernetes/kubelet-ca.crt", "contents": {"source": "data:,old-ca"}},
            {"path": "/etc/motd", "contents": {"source": "data:,hello"}}]}});
        let bytes = serde_json::to_vec(&ign).unwrap_or_default();
        let config =
            crate::DesiredConfig::from_bytes(&bytes, "c").unwrap_or_else(|e| panic!("{e}"));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(dir.path().join("etc/kubernetes")).unwrap_or_default();
        std::fs::write(
            dir.path().join("etc/kubernetes/kubelet-ca.crt"),
            "rotated-ca",
        )
        .unwrap_or_default();
        std::fs::write(dir.path().join("etc/motd"), "changed").unwrap_or_default();
        let root = HostRoot::new(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let paths: Vec<String> = check(&root, &config.input.config)
            .into_iter()
            .map(|d| d.path)
            .collect();
        assert_eq!(paths, vec!["/etc/motd".to_string()]);
    }
}
