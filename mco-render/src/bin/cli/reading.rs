//! What reading the manifests noticed ([`mco_render::manifests::strict`]: unknown kinds and
//! fields, documents that are no objects, objects defined twice): warnings on stderr, or under
//! `--strict` errors that stop the command (exit 1).

use super::Failure;
use mco_render::manifests::{Manifests, Notice};
use std::sync::atomic::{AtomicBool, Ordering};

/// `--strict`, set once from the command line.
static STRICT: AtomicBool = AtomicBool::new(false);

/// Records `--strict` for the whole run.
pub(crate) fn set_strict(strict: bool) {
    STRICT.store(strict, Ordering::Relaxed);
}

/// Whether `--strict` was given.
pub(crate) fn strict() -> bool {
    STRICT.load(Ordering::Relaxed)
}

/// `FILE:LINE: Kind "name": message`, the line the field's when known.
pub(crate) fn describe(m: &Manifests, n: &Notice) -> String {
    let object = if n.kind.is_empty() {
        String::new()
    } else {
        format!("{} {:?}: ", n.kind, n.name)
    };
    format!("{}:{}: {object}{}", n.file, m.notice_line(n), n.message)
}

/// Prints the notices of `m` as warnings, or fails with them under `--strict`.
pub(crate) fn check(m: &Manifests) -> Result<(), Failure> {
    if strict() && !m.notices.is_empty() {
        let mut lines: Vec<String> = m
            .notices
            .iter()
            .map(|n| format!("error: {}", describe(m, n)))
            .collect();
        lines.push(format!(
            "{} problems reading the manifests (--strict)",
            m.notices.len()
        ));
        return Err(Failure { code: 1, lines });
    }
    for n in &m.notices {
        eprintln!("warning: {}", describe(m, n));
    }
    Ok(())
}
