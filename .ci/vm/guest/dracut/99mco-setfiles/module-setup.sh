#!/bin/bash
# A stand-in for SELinux's setfiles in the initramfs: Debian's Ignition relabels the files it
# wrote at the end of its files stage, and fails when setfiles is missing. The guest runs
# with SELinux disabled, so there is nothing to label.
check() { return 0; }
depends() { echo ignition; }
install() {
    inst_simple "$moddir/setfiles" /usr/sbin/setfiles
}
