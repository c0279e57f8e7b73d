//! Butane inputs from disk: a files directory read into a [`FileSet`], and `.bu` files in
//! manifest folders translated into their MachineConfigs (their own folder the files
//! directory).

use super::{io_error, LoadError};
use crate::butane::{self, FileSet, Options};
use std::path::Path;

/// Whether a path names a Butane config (`.bu`).
pub fn is_butane_file(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()) == Some("bu")
}

fn mode_of(meta: &std::fs::Metadata) -> u32 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o7777
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        0o644
    }
}

fn read_into(dir: &Path, rel: &str, set: &mut FileSet) -> Result<(), LoadError> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(io_error(dir))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        let child = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        let meta = std::fs::metadata(&path).map_err(io_error(&path))?;
        if meta.is_dir() {
            set.insert_dir(&child);
            read_into(&path, &child, set)?;
        } else if meta.is_file() {
            let bytes = std::fs::read(&path).map_err(io_error(&path))?;
            set.insert(&child, bytes, mode_of(&meta));
        }
    }
    Ok(())
}

/// Every regular file under `dir` (`--files-dir`), with its mode, and the folders.
pub fn read_files_dir(dir: &Path) -> Result<FileSet, LoadError> {
    if !dir.is_dir() {
        return Err(LoadError::NotAFolder {
            path: dir.display().to_string(),
        });
    }
    let mut set = FileSet::new(dir.display().to_string());
    read_into(dir, "", &mut set)?;
    Ok(set)
}

/// The folder a Butane config's `local:` paths are relative to: its own.
fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The MachineConfig (as JSON text) the Butane config at `path` translates into, its folder
/// the files directory; Butane's messages when it does not translate.
pub fn translate_file(path: &Path) -> Result<String, LoadError> {
    translate_file_with(path, &read_files_dir(folder_of(path))?)
}

/// [`translate_file`] with the folder already read.
fn translate_file_with(path: &Path, files: &FileSet) -> Result<String, LoadError> {
    let data = std::fs::read(path).map_err(io_error(path))?;
    let shown = path.display().to_string();
    match butane::translate(&data, Some(files), Options::default()) {
        Ok(t) => Ok(t.machine_config.to_string()),
        Err(f) => Err(LoadError::Butane {
            path: shown.clone(),
            message: f
                .stderr(&shown, &String::from_utf8_lossy(&data))
                .trim_end()
                .to_string(),
            errors: butane_errors(&f),
        }),
    }
}

/// The errors of a failed translation, each at its line: Butane's located errors, else its
/// message at line 1.
fn butane_errors(f: &butane::Failure) -> Vec<(usize, String)> {
    let errors: Vec<(usize, String)> = f
        .report
        .entries
        .iter()
        .filter(|e| e.severity == butane::report::Severity::Error)
        .map(|e| {
            let line = e.pos.map_or(1, |p| p.line.max(1));
            let at = e.path.strip_prefix("$.").unwrap_or(&e.path);
            if at.is_empty() || at == "$" {
                (line, e.message.clone())
            } else {
                (line, format!("{at}: {}", e.message))
            }
        })
        .collect();
    if errors.is_empty() {
        vec![(1, f.message.clone())]
    } else {
        errors
    }
}

/// Translates Butane configs, reading each folder once for all the configs it holds.
#[derive(Default)]
pub struct ButaneReader {
    folders: std::collections::HashMap<std::path::PathBuf, FileSet>,
}

impl ButaneReader {
    /// [`translate_file`], the folder read on first use.
    pub fn translate(&mut self, path: &Path) -> Result<String, LoadError> {
        let folder = folder_of(path).to_path_buf();
        if !self.folders.contains_key(&folder) {
            let files = read_files_dir(&folder)?;
            self.folders.insert(folder.clone(), files);
        }
        match self.folders.get(&folder) {
            Some(files) => translate_file_with(path, files),
            None => translate_file(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_reads_its_butane_configs_with_their_local_files() {
        let dir = std::env::temp_dir().join(format!("mco-butane-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::create_dir_all(dir.join("conf"));
        let _ = std::fs::write(dir.join("conf/motd"), "hello\n");
        let config = "variant: openshift\nversion: 4.16.0\nmetadata:\n  name: 99-worker-motd\n  labels:\n    machineconfiguration.openshift.io/role: worker\nstorage:\n  files:\n    - path: /etc/motd\n      contents:\n        local: conf/motd\n";
        let _ = std::fs::write(dir.join("99-motd.bu"), config);
        let m = crate::load::read_manifests(&[&dir]);
        let _ = std::fs::remove_dir_all(&dir);
        let Ok(m) = m else {
            panic!("the folder reads: {:?}", m.err());
        };
        assert_eq!(m.machine_configs.len(), 1);
        let (_, mc) = &m.machine_configs[0];
        assert_eq!(mc.metadata.name, "99-worker-motd");
    }

    #[test]
    fn a_butane_error_is_named_by_file() {
        let dir = std::env::temp_dir().join(format!("mco-butane-bad-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(dir.join("x.bu"), "variant: openshift\nversion: 4.16.0\n");
        let e = translate_file(&dir.join("x.bu"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(e.contains("metadata.name is required"), "{e}");
        assert!(
            e.ends_with("Error translating config: source config is invalid"),
            "{e}"
        );
    }
}
