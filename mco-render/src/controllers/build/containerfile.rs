//! The Containerfile a build runs: the rendered MachineConfig applied onto the base OS
//! image with Ignition, extensions and a kernel swap from the extensions image, the
//! MCO's labels, then the MachineOSConfig's own `NoArch` instructions.
//!
//! The instructions are upstream's (`assets/Containerfile.on-cluster-build-template`);
//! the comments are ours.

use super::error::BuildError;
use super::syntax;
use crate::api::machine_os::NO_ARCH;
use crate::api::{MachineConfig, MachineOSBuild, MachineOSConfig};
use crate::render::SUPPORTED_EXTENSIONS;
use std::fmt::Write as _;

/// The kernel flavours and the packages each one is made of.
const KERNEL_PACKAGES: [(&str, &[&str]); 3] = [
    (
        "default",
        &[
            "kernel",
            "kernel-core",
            "kernel-modules",
            "kernel-modules-core",
            "kernel-modules-extra",
        ],
    ),
    (
        "realtime",
        &[
            "kernel-rt-core",
            "kernel-rt-modules",
            "kernel-rt-modules-extra",
            "kernel-rt-kvm",
        ],
    ),
    (
        "64k-pages",
        &[
            "kernel-64k-core",
            "kernel-64k-modules",
            "kernel-64k-modules-core",
            "kernel-64k-modules-extra",
        ],
    ),
];

fn kernel_packages(kind: &str) -> String {
    KERNEL_PACKAGES
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, p)| p.join(" "))
        .unwrap_or_default()
}

/// The packages of `extensions`, or the unknown ones as an error.
pub fn extension_packages(extensions: &[String]) -> Result<Vec<&'static str>, BuildError> {
    let find = |e: &str| SUPPORTED_EXTENSIONS.iter().find(|(name, _)| *name == e);
    let invalid: Vec<String> = extensions
        .iter()
        .filter(|e| find(e).is_none())
        .cloned()
        .collect();
    if !invalid.is_empty() {
        return Err(BuildError::InvalidExtensions(invalid));
    }
    Ok(extensions
        .iter()
        .filter_map(|e| find(e))
        .flat_map(|(_, pkgs)| pkgs.iter().copied())
        .collect())
}

/// The kernel to swap to: `None` for the default kernel (nothing to do). Unknown kernel
/// types are the default; `64k-pages` needs aarch64 and the build controller runs on amd64.
fn kernel_swap(kernel_type: &str) -> Result<Option<&'static str>, BuildError> {
    match kernel_type {
        "realtime" => Ok(Some("realtime")),
        "64k-pages" => Err(BuildError::Kernel64kPages),
        _ => Ok(None),
    }
}

/// The MachineOSConfig's `NoArch` Containerfile, if any.
pub fn user_containerfile(mosc: &MachineOSConfig) -> &str {
    mosc.spec
        .container_file
        .iter()
        .flatten()
        .find(|c| c.containerfile_arch == NO_ARCH)
        .map_or("", |c| c.content.as_str())
}

fn extensions_step(out: &mut String, image: &str, packages: &[&str], kernel: Option<&str>) {
    let _ = write!(
        out,
        "# The extensions image is bind-mounted and served as an RPM repository while the\n\
# extension packages and kernel packages are installed.\n\
RUN --mount=type=bind,from={image},source=/,target=/tmp/mco-extensions/os-extensions-content,bind-propagation=rshared,z \\\n    bash <<'EOF'\n\
set -xeuo pipefail\n\n\
cat > /etc/yum.repos.d/coreos-extensions.repo <<REPO\n\
[coreos-extensions]\nenabled=1\nmetadata_expire=1m\n\
baseurl=/tmp/mco-extensions/os-extensions-content/usr/share/rpm-ostree/extensions/\n\
gpgcheck=0\nskip_if_unavailable=False\nREPO\n\n\
chmod 644 /etc/yum.repos.d/coreos-extensions.repo\n\n"
    );
    if !packages.is_empty() {
        let _ = write!(
            out,
            "extensions=\"{}\"\n\
echo \"Installing extension packages: $extensions\"\n\
rpm-ostree install $extensions\n\n",
            packages.join(" ")
        );
    }
    if let Some(k) = kernel {
        let _ = write!(
            out,
            "# Find which kernel the base image has; replace it when it is not the wanted one.\n\
kernelOldPkgs=\"\"\n\
if rpm -q kernel-rt-core > /dev/null 2>&1; then\n\
\tif [[ \"{k}\" != \"realtime\" ]]; then\n\
\t\techo \"Base Image has RT kernel, new KernelType is '{k}'\"\n\
\t\tkernelOldPkgs=\"{rt}\"\n\
\tfi\n\
elif rpm -q kernel-64k-core > /dev/null 2>&1; then\n\
\tif [[ \"{k}\" != \"64k-pages\" ]]; then\n\
\t\techo \"Base Image has 64k-pages kernel, new KernelType is '{k}'\"\n\
\t\tkernelOldPkgs=\"{k64}\"\n\
\tfi\n\
elif rpm -q kernel > /dev/null 2>&1; then\n\
\tif [[ \"{k}\" != \"default\" ]]; then\n\
\t\techo \"Base Image has Default kernel, new KernelType is '{k}'\"\n\
\t\tkernelOldPkgs=\"{def}\"\n\
\tfi\n\
else\n\
\techo \"Error: Unknown base kernel type. Unable to perform the kernel swap to '{k}'\"\n\
\texit 1;\n\
fi\n\n\
if [ -n \"$kernelOldPkgs\" ]; then\n\
\tinstallKernelPkgs=\"{new}\"\n\
\t(echo \"remove $kernelOldPkgs\"; echo \"install $installKernelPkgs\"; echo run) | dnf -y shell\n\
fi\n\n",
            rt = kernel_packages("realtime"),
            k64 = kernel_packages("64k-pages"),
            def = kernel_packages("default"),
            new = kernel_packages(k),
        );
    }
    out.push_str(
        "rm /etc/yum.repos.d/coreos-extensions.repo\nEOF\n\nRUN ostree container commit\n\n",
    );
}

/// The Containerfile for `mosb`, checked as upstream checks it.
pub fn containerfile(
    mosb: &MachineOSBuild,
    mosc: &MachineOSConfig,
    rendered: &MachineConfig,
) -> Result<String, BuildError> {
    let user = user_containerfile(mosc);
    let packages = extension_packages(&rendered.spec.extensions)?;
    let kernel = kernel_swap(&rendered.spec.kernel_type)?;
    let base = &rendered.spec.os_image_url;
    let mut out = String::new();
    let _ = write!(
        out,
        "# Built by the machine-config-operator's build controller for one MachineOSBuild.\n\
#\n\
# Stage one unpacks the rendered MachineConfig from the mounted ConfigMap.\n\
FROM {base} AS extract\n\
COPY ./machineconfig/machineconfig.json.gz /tmp/machineconfig.json.gz\n\
RUN mkdir -p /etc/machine-config-daemon && \\\n\
\tcat /tmp/machineconfig.json.gz | base64 -d | gunzip - > /etc/machine-config-daemon/currentconfig\n\n\
# Stage two applies it to the base OS image with Ignition, as a node would at first boot.\n\
FROM {base} AS configs\n\
COPY --from=extract /etc/machine-config-daemon/currentconfig /etc/machine-config-daemon/currentconfig\n\
RUN container=\"oci\" exec -a ignition-apply /usr/lib/dracut/modules.d/30ignition/ignition --ignore-unsupported <(cat /etc/machine-config-daemon/currentconfig | jq '.spec.config') && \\\n\
\tostree container commit\n\n"
    );
    let extensions_image = &rendered.spec.base_os_extensions_container_image;
    if !extensions_image.is_empty() {
        extensions_step(&mut out, extensions_image, &packages, kernel);
    }
    let _ = write!(
        out,
        "# tmpfiles entries for usbguard and ipsec state directories.\n\
RUN test ! -f /usr/lib/tmpfiles.d/usbguard.conf || rm /usr/lib/tmpfiles.d/usbguard.conf\n\
RUN echo -e \"d /var/log/usbguard 0755 root root -\\nd /var/lib/ipsec 0700 root root -\\nd /var/lib/ipsec/nss 0700 root root -\" > /usr/lib/tmpfiles.d/usbguard_ipsec.conf\n\n\
# The cluster's additional trust bundle.\n\
COPY ./openshift-config-user-ca-bundle.crt /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt\n\
RUN update-ca-trust\n\n\
LABEL machineconfig={mc}\n\
LABEL machineconfigpool={pool}\n\
LABEL baseOSContainerImage={base}\n\n",
        mc = mosb.spec.machine_config.name,
        pool = mosc.spec.machine_config_pool.name,
    );
    if !user.is_empty() {
        out.push_str(user);
        out.push('\n');
    }
    syntax::check(&out).map_err(BuildError::Containerfile)?;
    Ok(out)
}
