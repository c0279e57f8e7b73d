//! The config drift monitor: inotify on the directories of the current config's files and
//! units (and on `/run`, for the force file), so an edit by hand is noticed when it happens,
//! not at the next resync. Like upstream's monitor it watches parent directories, which also
//! sees a file replaced by rename; the check itself is [`crate::drift::check`].

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::drift::{checked_paths, FORCE_FILE};
use crate::root::HostRoot;
use mco_ignition::model::Config;

/// Watches one config's paths; [`DriftWatch::changed`] resolves after a change to one.
pub struct DriftWatch {
    /// The config watched (its name).
    config: Option<String>,
    watcher: Option<notify::RecommendedWatcher>,
    rx: mpsc::UnboundedReceiver<()>,
    tx: mpsc::UnboundedSender<()>,
}

impl Default for DriftWatch {
    fn default() -> Self {
        Self::new()
    }
}

impl DriftWatch {
    /// A monitor watching nothing yet.
    pub fn new() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        DriftWatch {
            config: None,
            watcher: None,
            rx,
            tx,
        }
    }

    /// The config being watched.
    pub fn watching(&self) -> Option<&str> {
        self.config.as_deref()
    }

    /// Watches `config` (named `name`) under `root`, replacing what was watched; a config
    /// already watched is left as it is. Directories that do not exist are skipped (the
    /// missing files are drift the periodic check reports).
    pub fn follow(&mut self, root: &HostRoot, name: &str, config: &Config) {
        if self.config.as_deref() == Some(name) {
            return;
        }
        self.config = Some(name.to_string());
        self.watcher = None;
        let mut wanted: BTreeSet<PathBuf> = checked_paths(config)
            .iter()
            .filter_map(|p| root.resolve(p).ok())
            .collect();
        if let Ok(force) = root.resolve(FORCE_FILE) {
            wanted.insert(force);
        }
        let dirs: BTreeSet<PathBuf> = wanted
            .iter()
            .filter_map(|p| p.parent().map(Path::to_path_buf))
            .collect();
        let tx = self.tx.clone();
        let handler = move |res: notify::Result<notify::Event>| {
            if let Ok(ev) = res {
                // A file opened, read or closed unwritten is no change: the drift check reads
                // every watched file, so waking on those would wake the check on itself, in a
                // loop.
                if matches!(ev.kind, notify::EventKind::Access(_)) {
                    return;
                }
                if ev.paths.iter().any(|p| wanted.contains(p)) {
                    let _ = tx.send(());
                }
            }
        };
        let mut watcher = match notify::recommended_watcher(handler) {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!("config drift monitor not started: {e}");
                return;
            }
        };
        let mut watched = 0usize;
        for d in &dirs {
            match watcher.watch(d, RecursiveMode::NonRecursive) {
                Ok(()) => watched += 1,
                Err(e) => tracing::debug!(dir = %d.display(), "not watched: {e}"),
            }
        }
        tracing::info!(
            config = name,
            dirs = watched,
            "config drift monitor watching"
        );
        self.watcher = Some(watcher);
    }

    /// Resolves after a watched path changed (a burst of changes resolves once).
    pub async fn changed(&mut self) {
        if self.rx.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
        while self.rx.try_recv().is_ok() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn config(path: &str) -> Config {
        let raw = serde_json::json!({
            "ignition": {"version": "3.4.0"},
            "storage": {"files": [{"path": path, "contents": {"source": "data:,1"}}]},
        });
        match mco_render::render::source_config::parse_any(&raw).map(|c| c.into_config().typed()) {
            Ok(Ok(c)) => c,
            other => panic!("test config: {other:?}"),
        }
    }

    /// Whether the monitor wakes, waiting as long as a loaded machine may need.
    async fn fires(w: &mut DriftWatch) -> bool {
        tokio::time::timeout(Duration::from_secs(300), w.changed())
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn an_edit_of_a_watched_file_or_the_force_file_wakes_the_monitor() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(dir.path().join("etc")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(dir.path().join("run")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("etc/foo"), "1").unwrap_or_else(|e| panic!("{e}"));
        let root = HostRoot::new(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let mut w = DriftWatch::new();
        w.follow(&root, "r1", &config("/etc/foo"));
        assert_eq!(w.watching(), Some("r1"));

        // A file of the same directory the config does not hold: not drift.
        std::fs::write(dir.path().join("etc/unrelated"), "x").unwrap_or_else(|e| panic!("{e}"));
        assert!(
            tokio::time::timeout(Duration::from_millis(300), w.changed())
                .await
                .is_err(),
            "woken by an unrelated file"
        );
        // Reading a watched file (as the drift check does) changes nothing.
        for _ in 0..3 {
            std::fs::read(dir.path().join("etc/foo")).unwrap_or_else(|e| panic!("{e}"));
        }
        assert!(
            tokio::time::timeout(Duration::from_millis(300), w.changed())
                .await
                .is_err(),
            "woken by a read of a watched file"
        );
        std::fs::write(dir.path().join("etc/foo"), "edited").unwrap_or_else(|e| panic!("{e}"));
        assert!(fires(&mut w).await, "an edit in place");
        // Replaced by rename, as editors and atomic writers do.
        std::fs::write(dir.path().join("etc/.foo.tmp"), "1").unwrap_or_else(|e| panic!("{e}"));
        std::fs::rename(dir.path().join("etc/.foo.tmp"), dir.path().join("etc/foo"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(fires(&mut w).await, "a rename over the file");
        std::fs::write(dir.path().join("run/machine-config-daemon-force"), "")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(fires(&mut w).await, "the force file");
    }
}
