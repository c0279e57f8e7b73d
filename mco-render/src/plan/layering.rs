//! On-cluster layering on the node: a built image carried through an update as the rendered
//! config's OS image.
//!
//! As upstream's daemon does since its update paths were unified (`pkg/daemon/ocl.go`,
//! `newMachineConfigDiff` and `applyLayeredOSChanges` in `pkg/daemon/update.go`), the node's
//! `desiredImage` is embedded in the desired MachineConfig: `spec.osImageURL` becomes the image,
//! the config's own `osImageURL` and the image are kept in two annotations. The ordinary plan
//! then sees an OS image change (rebase, reboot, drain, by the usual rules); the config's files,
//! units, SSH keys and password are written as for any update; and the config saved on disk
//! names the image the node runs, which the agent reports as `currentImage` once it is Done.
//!
//! Pure: MachineConfigs and rendered inputs in, MachineConfigs and verdicts out.

use crate::api::MachineConfig;
use crate::plan::reconcile::RenderedInput;

/// The annotation keeping a layered config's own `osImageURL` (upstream's key).
pub const ORIGINAL_OS_IMAGE_URL: &str = "machineconfiguration.openshift.io/original-osimageurl";
/// The annotation naming the layered image embedded in a config (upstream's key).
pub const LAYERED_OS_IMAGE_URL: &str = "machineconfiguration.openshift.io/ocl-osimageurl";

/// `mc` with `image` as its OS image (upstream's `embedOCLImageInMachineConfig`): `osImageURL`
/// becomes `image` and both values are kept in annotations. An empty `image` leaves `mc` as it
/// is (the node is not layered).
pub fn embed(image: &str, mc: &MachineConfig) -> MachineConfig {
    let mut out = mc.clone();
    if image.is_empty() {
        return out;
    }
    let a = &mut out.metadata.annotations;
    a.insert(ORIGINAL_OS_IMAGE_URL.into(), mc.spec.os_image_url.clone());
    a.insert(LAYERED_OS_IMAGE_URL.into(), image.into());
    out.spec.os_image_url = image.into();
    out
}

/// `mc` as the cluster holds it and the layered image embedded in it (`""` when none):
/// upstream's `extractOCLImageFromMachineConfig`.
pub fn extract(mc: &MachineConfig) -> (MachineConfig, String) {
    let mut out = mc.clone();
    let a = &mut out.metadata.annotations;
    if !a.contains_key(ORIGINAL_OS_IMAGE_URL) && !a.contains_key(LAYERED_OS_IMAGE_URL) {
        return (out, String::new());
    }
    let original = a.remove(ORIGINAL_OS_IMAGE_URL).unwrap_or_default();
    let image = a.remove(LAYERED_OS_IMAGE_URL).unwrap_or_default();
    out.spec.os_image_url = original;
    (out, image)
}

/// The layered image embedded in `mc`, `""` when none.
pub fn image_of(mc: &MachineConfig) -> &str {
    mc.metadata
        .annotations
        .get(LAYERED_OS_IMAGE_URL)
        .map_or("", String::as_str)
}

/// Whether the change from `old` to `new` is one an image build carries (upstream's
/// `RequiresRebuild`): the OS image, the kernel type, the extensions or the kernel arguments.
/// Compared on the configs as the update sees them, the images embedded.
pub fn requires_rebuild(old: &RenderedInput, new: &RenderedInput) -> bool {
    old.os_image_url != new.os_image_url
        || old.kernel_type != new.kernel_type
        || old.extensions != new.extensions
        || old.kernel_arguments != new.kernel_arguments
}

/// How the OS part of an update treats layering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OsMode {
    /// No layered image on either side, or a layered node whose change needs no new image
    /// (upstream then applies it as a non-layered update): the OS part as for any config.
    Plain,
    /// The node moves to (or between) layered images: rebase and kernel arguments only; the
    /// kernel type and the extensions are built into the image.
    Layered,
    /// The node leaves layering (`desiredImage` removed): rebase back to the config's own
    /// `osImageURL`, and, unlike upstream (which re-bootstraps the node after a second
    /// reboot), the config's kernel type and extensions are applied on top of it, so one
    /// reboot brings the node to the plain config; the agent writes the config's files again
    /// after it.
    Revert,
}

/// The OS mode of the update from `old_image`/`old` to `new_image`/`new` (images as
/// [`image_of`] reads them, inputs with the images embedded): upstream's `oclEnabled` and
/// `revertFromOCL`.
pub fn os_mode(
    old_image: &str,
    new_image: &str,
    old: &RenderedInput,
    new: &RenderedInput,
) -> OsMode {
    if old_image.is_empty() && new_image.is_empty() {
        return OsMode::Plain;
    }
    if new_image.is_empty() {
        return OsMode::Revert;
    }
    if !requires_rebuild(old, new) {
        return OsMode::Plain;
    }
    OsMode::Layered
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:1111";
    const BUILT: &str = "registry.example.com/os/worker@sha256:2222";

    fn mc() -> MachineConfig {
        let mut m = MachineConfig::default();
        m.metadata.name = "rendered-worker-1".into();
        m.spec.os_image_url = BASE.into();
        m
    }

    fn input(os: &str) -> RenderedInput {
        RenderedInput {
            os_image_url: os.into(),
            ..RenderedInput::default()
        }
    }

    #[test]
    fn embedding_keeps_both_images_and_extracting_restores_the_config() {
        let layered = embed(BUILT, &mc());
        assert_eq!(layered.spec.os_image_url, BUILT);
        assert_eq!(image_of(&layered), BUILT);
        assert_eq!(
            layered
                .metadata
                .annotations
                .get(ORIGINAL_OS_IMAGE_URL)
                .map(String::as_str),
            Some(BASE)
        );
        let (plain, image) = extract(&layered);
        assert_eq!(image, BUILT);
        assert_eq!(plain, mc());
        // No image: nothing embedded, nothing extracted.
        assert_eq!(embed("", &mc()), mc());
        assert_eq!(extract(&mc()), (mc(), String::new()));
        assert_eq!(image_of(&mc()), "");
    }

    #[test]
    fn the_os_mode_follows_upstream_ocl_enabled_and_revert() {
        let (base, built) = (input(BASE), input(BUILT));
        assert_eq!(os_mode("", "", &base, &base), OsMode::Plain);
        assert_eq!(os_mode("", BUILT, &base, &built), OsMode::Layered);
        assert_eq!(os_mode(BUILT, "", &built, &base), OsMode::Revert);
        let newer = input("registry.example.com/os/worker@sha256:3333");
        assert_eq!(
            os_mode(BUILT, &newer.os_image_url, &built, &newer),
            OsMode::Layered
        );
        // The same image, a file change only: applied as a plain update.
        assert_eq!(os_mode(BUILT, BUILT, &built, &built), OsMode::Plain);
        let mut kargs = built.clone();
        kargs.kernel_arguments = vec!["nosmt".into()];
        assert_eq!(os_mode(BUILT, BUILT, &built, &kargs), OsMode::Layered);
    }
}
