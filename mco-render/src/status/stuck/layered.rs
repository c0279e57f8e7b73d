//! A layered pool waiting for the image of its config: the build running, failed or
//! interrupted, or not there yet.

use super::{at, Finding, Kind, PoolFacts, Severity};
use crate::controllers::build::lifecycle::{config_for_pool, job_of, REBUILD_ANNOTATION};
use crate::controllers::build::progress::{progress_of, Progress};
use crate::controllers::layered::{image_build_degraded, Layering};
use crate::controllers::rollout_policy::rfc3339;

/// What a layered pool waits for, while its image is not ready.
pub(super) fn finding(f: &PoolFacts<'_>) -> Option<Finding> {
    let Layering::Waiting { reason, build, .. } = f.layering else {
        return None;
    };
    let c = f.cluster;
    let pool = f.pool.name();
    let mosc = config_for_pool(pool, &c.machine_os_configs);
    let mosc_name = mosc.map(|m| m.metadata.name.as_str()).unwrap_or(pool);
    let b = build
        .as_deref()
        .and_then(|name| c.machine_os_builds.iter().find(|b| b.metadata.name == name));
    let progress = b.and_then(|b| progress_of(b.status.as_ref()));
    let rebuild = format!("oc annotate machineosconfig/{mosc_name} {REBUILD_ANNOTATION}=''");
    let status_time = |t: Option<&String>| t.and_then(|t| at(t));
    match (b, progress) {
        (Some(b), Some(Progress::Failed)) => {
            let mut x = f.finding(Severity::Stuck, Kind::BuildFailed, None);
            let since = status_time(b.status.as_ref().and_then(|s| s.build_end.as_ref()));
            x.since = since.map(rfc3339);
            x.summary = "image build failed".into();
            let why =
                image_build_degraded(f.pool, &c.machine_os_configs, &c.machine_os_builds, &c.jobs)
                    .filter(|(on, _, _)| *on)
                    .map(|(_, _, m)| m)
                    .unwrap_or_else(|| format!("MachineOSBuild {} failed", b.metadata.name));
            x.message = format!("pool {pool} waits for its image{}: {why}", f.for_(since));
            x.action = format!(
                "read the build's log (oc logs -n openshift-machine-config-operator job/build-{}), fix the cause, then rebuild: {rebuild}",
                b.metadata.name
            );
            Some(x)
        }
        (Some(b), Some(Progress::Interrupted)) => {
            let mut x = f.finding(Severity::Stuck, Kind::BuildFailed, None);
            x.summary = "image build interrupted".into();
            x.message = format!(
                "pool {pool} waits for its image: MachineOSBuild {} was interrupted (its Job was deleted)",
                b.metadata.name
            );
            x.action = format!("rebuild: {rebuild}");
            Some(x)
        }
        (Some(b), Some(p)) if p.is_transient() => {
            let mut x = f.finding(Severity::Waiting, Kind::BuildRunning, None);
            let since = status_time(b.status.as_ref().and_then(|s| s.build_start.as_ref()))
                .or_else(|| b.metadata.creation_timestamp.as_deref().and_then(at));
            x.since = since.map(rfc3339);
            x.summary = "waiting for the image build".into();
            let job = job_of(b, &c.jobs)
                .map(|j| {
                    format!(
                        " (Job {}: {} active, {} failed)",
                        j.name, j.active, j.failed
                    )
                })
                .unwrap_or_default();
            let what = if p == Progress::Prepared {
                "pending"
            } else {
                "building"
            };
            x.message = format!(
                "pool {pool} waits for its image: MachineOSBuild {} {what}{}{job}",
                b.metadata.name,
                f.for_(since)
            );
            x.action = "nothing: nodes move to the image once the build succeeds".into();
            Some(x)
        }
        _ => {
            let mut x = f.finding(Severity::Waiting, Kind::BuildRunning, None);
            x.summary = "waiting for the image".into();
            x.message = format!("pool {pool} waits for its image: {reason}");
            x.action = format!(
                "nothing while the build controller makes it; if it does not, check MachineOSConfig {mosc_name} and the machine-config-controller's log"
            );
            Some(x)
        }
    }
}
