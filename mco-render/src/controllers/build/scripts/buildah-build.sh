#!/usr/bin/env bash
# The image-build init container of a MachineOSBuild's Job (mco-render writes it into
# the Job's command). It runs as root only long enough to refresh the trust store, then
# builds and pushes the image as the unprivileged `build` user.
set -xeuo

DEST=/etc/pki/ca-trust/extracted

# Ignore any per-user p11-kit configuration.
export P11_KIT_NO_USER_CONFIG=1

# Regenerate the extracted trust bundles so the mounted additional CAs are trusted.
/usr/bin/p11-kit extract --format=openssl-bundle --filter=certificates --overwrite --comment $DEST/openssl/ca-bundle.trust.crt
/usr/bin/p11-kit extract --format=pem-bundle --filter=ca-anchors --overwrite --comment --purpose server-auth $DEST/pem/tls-ca-bundle.pem

su -m build << 'EOF'
set -xeuo

build_context="$HOME/context"

# The build context: Containerfile, MachineConfig and trust bundle side by side.
mkdir -p "$build_context/machineconfig"

# Optional mount points, set by the Job only when their objects exist.
ETC_PKI_ENTITLEMENT_MOUNTPOINT="${ETC_PKI_ENTITLEMENT_MOUNTPOINT:-}"
ETC_PKI_RPM_GPG_MOUNTPOINT="${ETC_PKI_RPM_GPG_MOUNTPOINT:-}"
ETC_YUM_REPOS_D_MOUNTPOINT="${ETC_YUM_REPOS_D_MOUNTPOINT:-}"
MAX_RETRIES="${MAX_RETRIES:-3}"

# The cluster proxy, empty when there is none.
export HTTP_PROXY="${HTTP_PROXY:-}"
export HTTPS_PROXY="${HTTPS_PROXY:-}"
export NO_PROXY="${NO_PROXY:-}"

cp /tmp/containerfile/Containerfile "$build_context"
cp /tmp/machineconfig/machineconfig.json.gz "$build_context/machineconfig/"
cp /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt "$build_context"

build_args=(
	--log-level=DEBUG
	--storage-driver vfs
	--authfile="$BASE_IMAGE_PULL_CREDS"
	--tag "$TAG"
	--file="$build_context/Containerfile"
	--build-arg HTTP_PROXY="$HTTP_PROXY"
	--build-arg HTTPS_PROXY="$HTTPS_PROXY"
	--build-arg NO_PROXY="$NO_PROXY"
)

mount_opts="z,rw"

# Each optional directory is copied to a private temporary directory (its SELinux
# labels then suit the build) and handed to buildah as a volume.

# RHSM certificates.
rhsm_path="/var/run/secrets/rhsm"
if [[ -d "$rhsm_path" ]]; then
	rhsm_certs="$(mktemp -d)"
	cp -r -v "$rhsm_path/." "$rhsm_certs"
	chmod -R 0755 "$rhsm_certs"
	build_args+=("--volume=$rhsm_certs:/run/secrets/rhsm:$mount_opts")
fi

# RHEL entitlement certificates.
if [[ -n "$ETC_PKI_ENTITLEMENT_MOUNTPOINT" ]] && [[ -d "$ETC_PKI_ENTITLEMENT_MOUNTPOINT" ]]; then
	configs="$(mktemp -d)"
	cp -r -v "$ETC_PKI_ENTITLEMENT_MOUNTPOINT/." "$configs"
	chmod -R 0755 "$configs"
	build_args+=("--volume=$configs:$ETC_PKI_ENTITLEMENT_MOUNTPOINT:$mount_opts")
fi

# Yum repository definitions (for example from Satellite).
if [[ -n "$ETC_YUM_REPOS_D_MOUNTPOINT" ]] && [[ -d "$ETC_YUM_REPOS_D_MOUNTPOINT" ]]; then
	configs="$(mktemp -d)"
	cp -r -v "$ETC_YUM_REPOS_D_MOUNTPOINT/." "$configs"
	chmod -R 0755 "$configs"
	build_args+=("--volume=$configs:$ETC_YUM_REPOS_D_MOUNTPOINT:$mount_opts")
fi

# RPM signing keys.
if [[ -n "$ETC_PKI_RPM_GPG_MOUNTPOINT" ]] && [[ -d "$ETC_PKI_RPM_GPG_MOUNTPOINT" ]]; then
	configs="$(mktemp -d)"
	cp -r -v "$ETC_PKI_RPM_GPG_MOUNTPOINT/." "$configs"
	chmod -R 0755 "$configs"
	build_args+=("--volume=$configs:$ETC_PKI_RPM_GPG_MOUNTPOINT:$mount_opts")
fi

buildah bud "${build_args[@]}" "$build_context"

# Push, writing the pushed digest where the digest container reads it.
buildah push \
	--storage-driver vfs \
	--authfile="$FINAL_IMAGE_PUSH_CREDS" \
	--digestfile="/tmp/done/digestfile" \
	--cert-dir /var/run/secrets/kubernetes.io/serviceaccount "$TAG"
EOF
