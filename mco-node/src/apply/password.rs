//! The password hash of the configured users, written into the root's `/etc/shadow`.
//!
//! Upstream's daemon runs `usermod -p` for every user of the new config (`*`, a locked
//! password, when the hash is unset or empty) and clears the hash of a user the old config had
//! and the new one drops; a user missing from the host is skipped. The agent makes the same
//! change as one edit of `/etc/shadow` inside the update's journaled transaction, so it is
//! undone with the rest of the update when the update fails or the node crashes midway.

use mco_ignition::model::{Config, PasswdUser};

use super::ApplyError;
use crate::journal::FsOp;
use crate::root::{Entry, HostRoot};

/// The shadow database.
pub const SHADOW: &str = "/etc/shadow";

/// The hash a user of the new config gets: theirs, or `*` (no password login).
fn wanted_hash(u: &PasswdUser) -> &str {
    match u.password_hash.as_deref() {
        Some(h) if !h.is_empty() => h,
        _ => "*",
    }
}

/// The hash each user should end with: new users' hashes, and an empty hash for users the
/// old config configured and the new one does not.
fn wanted(old: &Config, new: &Config) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = new
        .passwd
        .users
        .iter()
        .map(|u| (u.name.clone(), wanted_hash(u).to_string()))
        .collect();
    for u in &old.passwd.users {
        if !new.passwd.users.iter().any(|n| n.name == u.name) {
            out.push((u.name.clone(), String::new()));
        }
    }
    out
}

/// `shadow` with each listed user's hash replaced, or `None` when nothing changes. Users
/// without a line are left alone; every other byte is kept.
pub fn edit_shadow(shadow: &str, hashes: &[(String, String)]) -> Option<String> {
    let mut changed = false;
    let mut out = String::with_capacity(shadow.len() + 64);
    for line in shadow.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let mut fields = body.splitn(3, ':');
        let (name, hash, rest) = (fields.next(), fields.next(), fields.next());
        let want = name.and_then(|n| hashes.iter().rev().find(|(u, _)| u == n));
        match (want, hash) {
            (Some((user, h)), Some(cur)) if cur != h => {
                changed = true;
                out.push_str(user);
                out.push(':');
                out.push_str(h);
                if let Some(rest) = rest {
                    out.push(':');
                    out.push_str(rest);
                }
                out.push_str(end);
            }
            _ => out.push_str(line),
        }
    }
    changed.then_some(out)
}

/// Changes rewriting `/etc/shadow` when a configured user's hash differs. The file keeps its
/// mode and owner; a root without one (or without the users) needs no change.
pub fn plan(
    root: &HostRoot,
    old: &Config,
    new: &Config,
    ops: &mut Vec<FsOp>,
) -> Result<(), ApplyError> {
    let hashes = wanted(old, new);
    if hashes.is_empty() {
        return Ok(());
    }
    let Entry::File {
        data,
        mode,
        uid,
        gid,
    } = root.entry(SHADOW)?
    else {
        return Ok(());
    };
    let text = String::from_utf8(data).map_err(|_| ApplyError::File {
        path: SHADOW.into(),
        cause: "not valid UTF-8".into(),
    })?;
    if let Some(edited) = edit_shadow(&text, &hashes) {
        ops.push(FsOp::Write {
            path: SHADOW.into(),
            data: edited.into_bytes(),
            mode,
            owner: Some((uid, gid)),
            dir_mode: 0o755,
            replace_link: false,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHADOW_TEXT: &str = "root:!locked::0:99999:7:::\ncore:*:19000:0:99999:7:::\n";

    fn user(name: &str, hash: Option<&str>) -> PasswdUser {
        PasswdUser {
            name: name.into(),
            password_hash: hash.map(str::to_string),
            ..Default::default()
        }
    }

    fn config(users: Vec<PasswdUser>) -> Config {
        let mut c = Config::default();
        c.passwd.users = users;
        c
    }

    #[test]
    fn sets_clears_and_locks_as_upstream() {
        let old = config(vec![]);
        let new = config(vec![user("core", Some("$6$salt$hash"))]);
        let set = edit_shadow(SHADOW_TEXT, &wanted(&old, &new));
        assert_eq!(
            set.as_deref(),
            Some("root:!locked::0:99999:7:::\ncore:$6$salt$hash:19000:0:99999:7:::\n")
        );
        // An unset or empty hash locks the password.
        let locked = config(vec![user("core", Some(""))]);
        assert_eq!(wanted(&new, &locked), [("core".into(), "*".into())]);
        // A user the new config drops gets an empty hash.
        assert_eq!(wanted(&new, &old), [("core".into(), String::new())]);
        let cleared = edit_shadow(set.as_deref().unwrap_or(""), &wanted(&new, &old));
        assert_eq!(
            cleared.as_deref(),
            Some("root:!locked::0:99999:7:::\ncore::19000:0:99999:7:::\n")
        );
    }

    #[test]
    fn no_change_when_equal_or_user_absent() {
        let hashes = vec![("core".to_string(), "*".to_string())];
        assert_eq!(edit_shadow(SHADOW_TEXT, &hashes), None);
        let other = vec![("nobody".to_string(), "x".to_string())];
        assert_eq!(edit_shadow(SHADOW_TEXT, &other), None);
        // A last line without a newline keeps having none.
        let edited = edit_shadow("core:*:1::::::", &[("core".into(), "h".into())]);
        assert_eq!(edited.as_deref(), Some("core:h:1::::::"));
    }
}
