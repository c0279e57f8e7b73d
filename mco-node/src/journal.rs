//! Crash safety: every update is a transaction recorded in a journal before anything changes.
//!
//! Layout under the root, in `/etc/machine-config-daemon/txn/`:
//! `backup/<n>` holds the previous bytes of each regular file the update will touch, and
//! `journal.json` names the transaction (old and new rendered config), every path it touches with
//! what was there before (file with its backup, mode and owner; symlink with its target; nothing),
//! the directories it will create, and the host calls that undo its host side effects.
//!
//! Sequence: stage backups (each synced), write the journal (temp file, sync, rename, sync the
//! directory) — only then touch the host; apply each change atomically; write `currentconfig`
//! last; sync the touched directories; delete the journal (the commit point); drop the backups.
//!
//! Recovery rule: **roll back**. A journal found at startup means the transaction did not
//! commit, so every journaled path is put back exactly as the backups say, directories it created
//! are removed when empty, the recorded undo host calls run (best effort, only when host calls
//! had started), and the journal is deleted. Rolling back needs nothing but what the journal
//! staged, so it works even when the new config is what crashed the agent; the node ends up at
//! its `currentconfig` and the next run applies the update again from a known state. Recovery is
//! idempotent: a crash during recovery leaves the journal in place and the next start repeats it.
//! A `txn/` directory without a journal is an update that never started and is simply deleted.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::host::{Host, HostCall};
use crate::root::{sync_dirs, Entry, HostRoot, RootError};

/// Where transactions live.
pub const TXN_DIR: &str = "/etc/machine-config-daemon/txn";
/// The journal file.
pub const JOURNAL: &str = "/etc/machine-config-daemon/txn/journal.json";
const BACKUP_DIR: &str = "/etc/machine-config-daemon/txn/backup";

/// A transaction could not be recorded, applied or undone.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// A path could not be touched.
    #[error(transparent)]
    Root(#[from] RootError),
    /// The journal is unreadable.
    #[error("journal {JOURNAL}: {0}")]
    Corrupt(String),
    /// A path the update would touch is a directory or special file.
    #[error("{0}: is not a regular file or symlink; refusing to replace it")]
    NotAFile(String),
    /// Syncing directories failed.
    #[error("syncing directories: {0}")]
    Sync(io::Error),
}

/// One change to the filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FsOp {
    /// Atomically write a regular file.
    Write {
        /// Host path.
        path: String,
        /// Contents.
        data: Vec<u8>,
        /// Permission bits.
        mode: u32,
        /// Owner and group (`None`: leave as created).
        owner: Option<(u32, u32)>,
        /// Mode of parent directories created on the way.
        dir_mode: u32,
        /// Replace a symlink at the path (units); files refuse.
        replace_link: bool,
    },
    /// Atomically make a symlink.
    Symlink {
        /// Host path.
        path: String,
        /// Link target.
        target: String,
    },
    /// Remove a file or symlink.
    Remove {
        /// Host path.
        path: String,
    },
    /// Make sure a directory exists with this mode and owner (a new one is removed again on
    /// rollback when empty; an existing one keeps its metadata on rollback).
    Dir {
        /// Host path.
        path: String,
        /// Permission bits.
        mode: u32,
        /// Owner and group.
        owner: Option<(u32, u32)>,
    },
}

impl FsOp {
    /// The host path the change touches.
    pub fn path(&self) -> &str {
        match self {
            FsOp::Write { path, .. }
            | FsOp::Symlink { path, .. }
            | FsOp::Remove { path }
            | FsOp::Dir { path, .. } => path,
        }
    }

    /// One line for reports and dry runs.
    pub fn describe(&self) -> String {
        match self {
            FsOp::Write {
                path,
                data,
                mode,
                owner,
                ..
            } => {
                let own = owner
                    .map(|(u, g)| format!(", owner {u}:{g}"))
                    .unwrap_or_default();
                format!("write {path} ({} bytes, mode {mode:04o}{own})", data.len())
            }
            FsOp::Symlink { path, target } => format!("symlink {path} -> {target}"),
            FsOp::Remove { path } => format!("remove {path}"),
            FsOp::Dir { path, mode, .. } => format!("ensure directory {path} (mode {mode:04o})"),
        }
    }
}

/// What was at a path before the transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Prior {
    /// A regular file, its bytes in `backup/<backup>`.
    File {
        /// Backup file name.
        backup: String,
        /// Permission bits.
        mode: u32,
        /// Owner.
        uid: u32,
        /// Group.
        gid: u32,
    },
    /// A symlink.
    Symlink {
        /// Its target.
        target: String,
    },
    /// Nothing.
    Absent,
}

/// One journaled path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// Host path.
    pub path: String,
    /// What was there.
    pub prior: Prior,
}

/// The journal of one transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Journal {
    /// Rendered config the node was on.
    pub old: String,
    /// Rendered config being applied.
    pub new: String,
    /// Every path touched, with its previous state.
    pub entries: Vec<JournalEntry>,
    /// Directories the transaction may create (removed again when empty on rollback).
    pub created_dirs: Vec<String>,
    /// Host calls that undo the update's host side effects.
    pub host_undo: Vec<HostCall>,
    /// Host calls have started (so undo calls are needed on rollback).
    pub host_started: bool,
}

/// What a rollback did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RollbackReport {
    /// The transaction's old config.
    pub old: String,
    /// The transaction's new config.
    pub new: String,
    /// Paths restored.
    pub restored: usize,
    /// Undo host calls that failed (best effort).
    pub host_errors: Vec<String>,
}

/// An open transaction.
#[derive(Debug)]
pub struct Transaction<'r> {
    root: &'r HostRoot,
    journal: Journal,
    dirty: BTreeSet<PathBuf>,
}

fn write_journal(root: &HostRoot, j: &Journal) -> Result<(), JournalError> {
    let bytes = serde_json::to_vec_pretty(j).map_err(|e| JournalError::Corrupt(e.to_string()))?;
    let mut dirty = BTreeSet::new();
    root.write_atomic(JOURNAL, &bytes, 0o600, None, 0o700, false, &mut dirty)?;
    sync_dirs(&dirty).map_err(JournalError::Sync)
}

fn backup_path(name: &str) -> String {
    format!("{BACKUP_DIR}/{name}")
}

/// Reads the journal, if there is one.
pub fn read_journal(root: &HostRoot) -> Result<Option<Journal>, JournalError> {
    match root.entry(JOURNAL)? {
        Entry::Absent => Ok(None),
        Entry::File { data, .. } => serde_json::from_slice(&data)
            .map(Some)
            .map_err(|e| JournalError::Corrupt(e.to_string())),
        _ => Err(JournalError::Corrupt("not a regular file".into())),
    }
}

/// Ancestors of `path` (host paths, nearest last) that do not exist yet.
fn missing_ancestors(root: &HostRoot, path: &str) -> Result<Vec<String>, JournalError> {
    let mut out = Vec::new();
    let mut cur = Path::new(path).parent();
    while let Some(p) = cur {
        let s = p.to_string_lossy().to_string();
        if s == "/" || s.is_empty() {
            break;
        }
        if root.exists(&s)? {
            break;
        }
        out.push(s);
        cur = p.parent();
    }
    Ok(out)
}

impl<'r> Transaction<'r> {
    /// Records a transaction touching `paths` and stages backups of what is there now. Nothing
    /// outside the transaction directory changes before this returns.
    pub fn begin(
        root: &'r HostRoot,
        old: &str,
        new: &str,
        ops: &[FsOp],
        host_undo: Vec<HostCall>,
    ) -> Result<Transaction<'r>, JournalError> {
        // A leftover directory without a journal is an update that never started.
        let txn = root.resolve(TXN_DIR)?;
        if read_journal(root)?.is_some() {
            return Err(JournalError::Corrupt(
                "a previous transaction is still open; recover first".into(),
            ));
        }
        if txn.exists() {
            fs::remove_dir_all(&txn).map_err(|e| RootError::Io {
                path: TXN_DIR.into(),
                source: e,
            })?;
        }
        root.mkdir_all(BACKUP_DIR, 0o700)?;
        let mut entries = Vec::new();
        let mut created: BTreeSet<String> = BTreeSet::new();
        let mut seen = BTreeSet::new();
        let mut dirty = BTreeSet::new();
        for (n, op) in ops.iter().enumerate() {
            let path = &op.path().to_string();
            if let FsOp::Dir { .. } = op {
                if !root.exists(path)? {
                    created.extend(missing_ancestors(root, path)?);
                    created.insert(path.clone());
                }
                continue;
            }
            if !seen.insert(path.clone()) {
                continue;
            }
            let prior = match root.entry(path)? {
                Entry::Absent => {
                    created.extend(missing_ancestors(root, path)?);
                    Prior::Absent
                }
                Entry::Symlink { target } => Prior::Symlink {
                    target: target.to_string_lossy().into_owned(),
                },
                Entry::File {
                    data,
                    mode,
                    uid,
                    gid,
                } => {
                    let name = format!("{n:06}");
                    root.write_atomic(
                        &backup_path(&name),
                        &data,
                        0o600,
                        None,
                        0o700,
                        false,
                        &mut dirty,
                    )?;
                    Prior::File {
                        backup: name,
                        mode,
                        uid,
                        gid,
                    }
                }
                Entry::Directory | Entry::Other => {
                    return Err(JournalError::NotAFile(path.clone()))
                }
            };
            entries.push(JournalEntry {
                path: path.clone(),
                prior,
            });
        }
        sync_dirs(&dirty).map_err(JournalError::Sync)?;
        let journal = Journal {
            old: old.into(),
            new: new.into(),
            entries,
            created_dirs: created.into_iter().collect(),
            host_undo,
            host_started: false,
        };
        write_journal(root, &journal)?;
        Ok(Transaction {
            root,
            journal,
            dirty: BTreeSet::new(),
        })
    }

    /// The journal being run.
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// Applies one change; it must have been passed to [`Transaction::begin`].
    pub fn apply(&mut self, op: &FsOp) -> Result<(), JournalError> {
        match op {
            FsOp::Write {
                path,
                data,
                mode,
                owner,
                dir_mode,
                replace_link,
            } => self.root.write_atomic(
                path,
                data,
                *mode,
                *owner,
                *dir_mode,
                *replace_link,
                &mut self.dirty,
            )?,
            FsOp::Symlink { path, target } => {
                self.root
                    .symlink_atomic(path, Path::new(target), &mut self.dirty)?
            }
            FsOp::Remove { path } => self.root.remove(path, &mut self.dirty)?,
            FsOp::Dir { path, mode, owner } => self.root.ensure_dir(path, *mode, *owner)?,
        }
        Ok(())
    }

    /// Records that host calls are about to run (so a rollback runs the undo calls).
    pub fn mark_host_started(&mut self) -> Result<(), JournalError> {
        if !self.journal.host_started {
            self.journal.host_started = true;
            write_journal(self.root, &self.journal)?;
        }
        Ok(())
    }

    /// Makes every change durable, then deletes the journal: the update is done.
    pub fn commit(self) -> Result<(), JournalError> {
        sync_dirs(&self.dirty).map_err(JournalError::Sync)?;
        finish(self.root)
    }

    /// Undoes every change (files and, when host calls started, the host undo calls).
    pub fn rollback(self, host: &mut dyn Host) -> Result<RollbackReport, JournalError> {
        roll_back(self.root, &self.journal, host)
    }
}

/// Deletes the journal (synced) and then the staged backups.
fn finish(root: &HostRoot) -> Result<(), JournalError> {
    let mut dirty = BTreeSet::new();
    root.remove(JOURNAL, &mut dirty)?;
    sync_dirs(&dirty).map_err(JournalError::Sync)?;
    let txn = root.resolve(TXN_DIR)?;
    fs::remove_dir_all(&txn).map_err(|e| RootError::Io {
        path: TXN_DIR.into(),
        source: e,
    })?;
    Ok(())
}

fn roll_back(
    root: &HostRoot,
    j: &Journal,
    host: &mut dyn Host,
) -> Result<RollbackReport, JournalError> {
    let mut dirty = BTreeSet::new();
    for e in &j.entries {
        root.remove_temp(&e.path)?;
        match &e.prior {
            Prior::Absent => root.remove(&e.path, &mut dirty)?,
            Prior::Symlink { target } => {
                root.symlink_atomic(&e.path, Path::new(target), &mut dirty)?
            }
            Prior::File {
                backup,
                mode,
                uid,
                gid,
            } => {
                let data = match root.entry(&backup_path(backup))? {
                    Entry::File { data, .. } => data,
                    _ => {
                        return Err(JournalError::Corrupt(format!(
                            "backup {backup} of {} is missing",
                            e.path
                        )))
                    }
                };
                root.write_atomic(
                    &e.path,
                    &data,
                    *mode,
                    Some((*uid, *gid)),
                    0o755,
                    true,
                    &mut dirty,
                )?;
            }
        }
    }
    // Deepest first, so parents empty out before they are tried.
    let mut dirs = j.created_dirs.clone();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.len()));
    for d in &dirs {
        root.remove_empty_dir(d)?;
        if let Some(parent) = root.resolve(d)?.parent() {
            dirty.insert(parent.to_path_buf());
        }
    }
    sync_dirs(&dirty).map_err(JournalError::Sync)?;
    let mut host_errors = Vec::new();
    if j.host_started {
        for call in &j.host_undo {
            if let Err(e) = call.run(host) {
                host_errors.push(e.to_string());
            }
        }
    }
    finish(root)?;
    Ok(RollbackReport {
        old: j.old.clone(),
        new: j.new.clone(),
        restored: j.entries.len(),
        host_errors,
    })
}

/// Startup recovery: rolls back an interrupted transaction (see the module docs), clears a
/// transaction directory left without a journal and the temp file of an interrupted state
/// file write. `None` when there was nothing to recover.
pub fn recover(
    root: &HostRoot,
    host: &mut dyn Host,
) -> Result<Option<RollbackReport>, JournalError> {
    // A temp journal from an interrupted journal write means the journal never existed.
    root.remove_temp(JOURNAL)?;
    // The state file is written outside transactions: drop the temp file of a write the
    // crash interrupted (the file itself is whole, old or new).
    root.remove_temp(crate::state::STATE_FILE)?;
    match read_journal(root)? {
        Some(j) => roll_back(root, &j, host).map(Some),
        None => {
            let txn = root.resolve(TXN_DIR)?;
            if txn.exists() {
                fs::remove_dir_all(&txn).map_err(|e| RootError::Io {
                    path: TXN_DIR.into(),
                    source: e,
                })?;
            }
            Ok(None)
        }
    }
}
