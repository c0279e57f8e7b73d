//! Standard input as a manifest path: `-`, as `kubectl apply -f -` reads it. Its objects are
//! recorded, and its errors named, as coming from `<stdin>`. Standard input is read once: `-`
//! given twice (in one list of paths, or to two readers of one process) is an error rather
//! than an empty second read.

use super::{io_error, LoadError};
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// The path that names standard input.
pub const PATH: &str = "-";

/// How standard input is named in messages and in the objects' locations.
pub const NAME: &str = "<stdin>";

/// Whether this process has read standard input already.
static TAKEN: AtomicBool = AtomicBool::new(false);

/// Whether `path` names standard input (`-`; `./-` is a file of that name).
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == PATH
}

/// The name a manifest source goes by in messages: `<stdin>` for `-`, else the path as given.
pub fn display_name(path: &Path) -> String {
    if is_stdin(path) {
        NAME.to_string()
    } else {
        path.display().to_string()
    }
}

fn read_twice() -> LoadError {
    LoadError::Invalid {
        path: NAME.to_string(),
        message: format!("standard input can be read once: give `{PATH}` once"),
    }
}

/// Fails when `paths` name standard input more than once.
pub fn at_most_once<P: AsRef<Path>>(paths: &[P]) -> Result<(), LoadError> {
    if paths.iter().filter(|p| is_stdin(p.as_ref())).count() > 1 {
        return Err(read_twice());
    }
    Ok(())
}

/// The text of a manifest source: all of standard input for `-` (once in a process), else
/// the file's.
pub fn read_text(path: &Path) -> Result<String, LoadError> {
    if !is_stdin(path) {
        return std::fs::read_to_string(path).map_err(io_error(path));
    }
    if TAKEN.swap(true, Ordering::SeqCst) {
        return Err(read_twice());
    }
    let mut text = String::new();
    std::io::stdin()
        .lock()
        .read_to_string(&mut text)
        .map_err(io_error(Path::new(NAME)))?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bare_dash_is_standard_input() {
        assert!(is_stdin(Path::new("-")));
        assert!(!is_stdin(Path::new("./-")));
        assert!(!is_stdin(Path::new("--")));
        assert_eq!(display_name(Path::new("-")), "<stdin>");
        assert_eq!(display_name(Path::new("a/b.yaml")), "a/b.yaml");
    }

    #[test]
    fn a_second_dash_is_refused_before_anything_is_read() {
        assert!(at_most_once(&["a.yaml", "-", "b"]).is_ok());
        assert!(at_most_once::<&str>(&[]).is_ok());
        let e = at_most_once(&["-", "a.yaml", "-"])
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("<stdin>: standard input can be read once: give `-` once")
        );
    }

    #[test]
    fn a_named_file_is_read_as_a_file() {
        let e = read_text(Path::new("/nonexistent/x"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("/nonexistent/x: "), "{e}");
    }
}
