//! `--release`: which MCO release to render as, and the controller version that goes with it.

use super::Failure;
use mco_render::manifests::Manifests;
use mco_render::release::Release;

/// The release to render `m` as: `flag`, else the one the manifests say they were rendered
/// by (a cluster dump's ControllerConfig or rendered configs; one newer than the newest known
/// is rendered as the newest, with a warning), else the newest.
pub(crate) fn release_for(flag: Option<Release>, m: &Manifests) -> Result<Release, Failure> {
    match (flag, m.release()) {
        (Some(r), _) => Ok(r),
        (None, Some(Ok(r))) => Ok(r),
        (None, Some(Err(e))) if e.newer => {
            eprintln!(
                "warning: the manifests name release {:?}, newer than {}: rendering as {}",
                e.given,
                Release::NEWEST,
                Release::NEWEST
            );
            Ok(Release::NEWEST)
        }
        (None, Some(Err(e))) => Err(Failure::input(format!(
            "{e} (from the manifests' release-image-version); pass --release"
        ))),
        (None, None) => Ok(Release::NEWEST),
    }
}

/// The controller version to render `m` with: `flag`, unless it is left at this build's
/// default and the manifests' current rendered configs were made by another controller
/// (a cluster dump), whose generated MachineConfigs carry that one.
pub(crate) fn controller_version_for(flag: &str, m: &Manifests) -> String {
    match m.controller_version() {
        Some(v) if flag == mco_render::CONTROLLER_VERSION => v,
        _ => flag.to_string(),
    }
}
