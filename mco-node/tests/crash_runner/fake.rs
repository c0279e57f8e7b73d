//! Stand-ins for the host's `systemctl` and `rpm-ostree`, put first on the agent's `PATH` so the
//! real ones never run. Each keeps its state in files under `$FAKE_STATE` (outside the host
//! root), written atomically (temp file, then rename), and logs every call.
//!
//! `systemctl`: `enable`/`disable` make or remove `enabled/<unit>`, `preset` disables (the
//! policy of CoreOS's `99-default-disable.preset`); `daemon-reload`, `reload`, `restart` and
//! `reboot` are logged only. `rpm-ostree`: the booted deployment is
//! `booted-image` (set by the runner); `staged` holds the staged deployment (`image=` and
//! `kargs=` lines): `rebase` and `kargs` stage (on top of what is staged), `cleanup -p` drops it,
//! `status --json` prints both as rpm-ostree does. Anything else (`podman`, `chcon`, an unknown
//! verb) fails and is logged as unexpected.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const SYSTEMCTL: &str = r#"#!/bin/sh
S="$FAKE_STATE"
echo "systemctl $*" >> "$S/log"
verb=$1; shift
case "$verb" in
  enable) mkdir -p "$S/enabled"; for u in "$@"; do : > "$S/enabled/$u"; done ;;
  disable) for u in "$@"; do rm -f "$S/enabled/$u"; done ;;
  preset) for u in "$@"; do rm -f "$S/enabled/$u"; done ;;
  daemon-reload|reload|restart|reboot) ;;
  *) echo "unexpected: systemctl $verb $*" >> "$S/log"; exit 1 ;;
esac
"#;

const RPM_OSTREE: &str = r#"#!/bin/sh
S="$FAKE_STATE"
echo "rpm-ostree $*" >> "$S/log"
booted=$(cat "$S/booted-image")
image=$booted
kargs=
if [ -f "$S/staged" ]; then
  image=$(sed -n 's/^image=//p' "$S/staged")
  kargs=$(sed -n 's/^kargs=//p' "$S/staged")
fi
stage() {
  printf 'image=%s\nkargs=%s\n' "$1" "$2" > "$S/staged.tmp.$$" && mv "$S/staged.tmp.$$" "$S/staged"
}
case "$1" in
  status)
    dep() {
      printf '{"id":"rhcos-%s.0","osname":"rhcos","checksum":"%s","booted":%s,"staged":%s,"container-image-reference":"ostree-unverified-registry:%s","requested-packages":[],"requested-base-removals":[]}' "$1" "$1" "$2" "$3" "$4"
    }
    printf '{"deployments":['
    if [ -f "$S/staged" ]; then dep s false true "$image"; printf ','; fi
    dep b true false "$booted"
    printf '],"transaction":null}\n' ;;
  cleanup) rm -f "$S/staged" ;;
  rebase) stage "${3#ostree-unverified-registry:}" "$kargs" ;;
  kargs) shift; stage "$image" "$kargs $*" ;;
  *) echo "unexpected: rpm-ostree $*" >> "$S/log"; exit 1 ;;
esac
"#;

const UNEXPECTED: &str = r#"#!/bin/sh
echo "unexpected: $(basename "$0") $*" >> "$FAKE_STATE/log"
exit 1
"#;

/// Writes the stand-ins into `bin`.
pub fn install(bin: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(bin)?;
    for (name, text) in [
        ("systemctl", SYSTEMCTL),
        ("rpm-ostree", RPM_OSTREE),
        ("podman", UNEXPECTED),
        ("chcon", UNEXPECTED),
        ("nsenter", UNEXPECTED),
    ] {
        let p = bin.join(name);
        std::fs::write(&p, text)?;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

/// Whether a name in the fake's state directory is part of the simulated host (not the log
/// or an unfinished temp file).
pub fn is_state(rel: &str) -> bool {
    rel != "log" && !rel.contains(".tmp.")
}
