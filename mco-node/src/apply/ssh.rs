//! The `core` user's SSH keys in `/home/core/.ssh/authorized_keys.d/ignition`.

use mco_ignition::model::Config;
use mco_render::plan::reconcile::CORE_USER;

use super::owner::{lookup_gid, lookup_uid};
use super::ApplyError;
use crate::journal::FsOp;
use crate::root::{Entry, HostRoot};

/// The SSH home of `core`.
pub const SSH_DIR: &str = "/home/core/.ssh";
/// The key directory.
pub const KEY_DIR: &str = "/home/core/.ssh/authorized_keys.d";
/// The key file.
pub const KEY_FILE: &str = "/home/core/.ssh/authorized_keys.d/ignition";
/// The user database whose absence marks a root that holds no system.
const PASSWD: &str = "/etc/passwd";

/// The key file's contents for a config: each of `core`'s keys on a line of its own, ending
/// in a newline (empty when the config has no `core` user), as upstream's daemon writes it and
/// as Ignition writes it on the first boot (so the agent's first update does not rewrite it).
pub fn key_file_contents(config: &Config) -> String {
    config
        .passwd
        .users
        .iter()
        .find(|u| u.name == CORE_USER)
        .map(|u| {
            u.ssh_authorized_keys
                .iter()
                .map(|k| format!("{k}\n"))
                .collect()
        })
        .unwrap_or_default()
}

/// Changes writing the key file (0600, directories 0700, owned by `core`) when it differs.
///
/// A root with no `/etc/passwd` at all holds no system (a folder an image or a test is
/// staged in, `once-from --root DIR`): there is no `core` to own the files, so they keep the
/// owner the agent writes them with. A root whose user database lacks `core` fails, as
/// upstream's daemon does.
pub fn plan(root: &HostRoot, new: &Config, ops: &mut Vec<FsOp>) -> Result<(), ApplyError> {
    let keys = key_file_contents(new);
    let fail = |cause: String| ApplyError::File {
        path: KEY_FILE.into(),
        cause,
    };
    let owner = if !root.exists(PASSWD)? {
        None
    } else {
        Some((
            lookup_uid(root, CORE_USER).map_err(fail)?,
            lookup_gid(root, CORE_USER).map_err(fail)?,
        ))
    };
    if matches!(root.entry(KEY_FILE)?, Entry::File { ref data, mode, uid: u, gid: g }
        if data == keys.as_bytes() && mode == 0o600 && owner.is_none_or(|o| o == (u, g)))
    {
        return Ok(());
    }
    for d in [SSH_DIR, KEY_DIR] {
        ops.push(FsOp::Dir {
            path: d.into(),
            mode: 0o700,
            owner,
        });
    }
    ops.push(FsOp::Write {
        path: KEY_FILE.into(),
        data: keys.into_bytes(),
        mode: 0o600,
        owner,
        dir_mode: 0o700,
        replace_link: false,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mco_ignition::model::PasswdUser;

    fn config(keys: &[&str]) -> Config {
        let mut c = Config::default();
        c.passwd.users = vec![PasswdUser {
            name: CORE_USER.into(),
            ssh_authorized_keys: keys.iter().map(|k| k.to_string()).collect(),
            ..Default::default()
        }];
        c
    }

    /// Each key on a line of its own ending in a newline: what upstream's daemon writes, and
    /// what Ignition 2.14 wrote on a real machine's first boot (the agent then left the file
    /// alone; without the last newline its first update rewrote it, and a `cat` of it ran on
    /// into the next line).
    #[test]
    fn each_key_ends_its_line_as_ignition_and_upstream_write_them() {
        assert_eq!(
            key_file_contents(&config(&["ssh-ed25519 A one", "ssh-rsa B two"])),
            "ssh-ed25519 A one\nssh-rsa B two\n"
        );
        assert_eq!(key_file_contents(&config(&[])), "");
        assert_eq!(key_file_contents(&Config::default()), "");
    }

    #[test]
    fn the_file_ignition_wrote_is_left_alone() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("home/core/.ssh/authorized_keys.d");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ignition"), "ssh-ed25519 A one\n").unwrap();
        std::fs::set_permissions(
            dir.join("ignition"),
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .unwrap();
        let root = HostRoot::new(d.path()).unwrap();
        let mut ops = Vec::new();
        plan(&root, &config(&["ssh-ed25519 A one"]), &mut ops).unwrap();
        assert!(ops.is_empty(), "{ops:?}");
    }
}
