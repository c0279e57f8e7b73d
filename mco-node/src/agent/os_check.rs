//! Is the host booted into the OS image its config names? Checked, as upstream's daemon
//! checks it when it validates the on-disk state (`checkOS` and `validateOnDiskStateImpl` in
//! `pkg/daemon/daemon.go`), before the node is uncordoned and marked Done on its desired
//! config: a node that came back from its reboot on another image is Degraded instead,
//! with a reason naming both images.
//!
//! Pure: the parsed `rpm-ostree status --json` and the config in, the verdict out.

use mco_render::api::node::{REASON, STATE, STATE_DEGRADED};
use mco_render::api::Node;
use mco_render::gocompat::quote::go_quote;

use super::{cap_reason, Step};
use crate::desired_config::DesiredConfig;
use crate::rpm_ostree::Status;

/// `Ok` when the booted deployment runs `config`'s `osImageURL` (or the config names none),
/// else the Degraded reason naming the expected and the booted image.
pub fn check(status: &Status, config: &DesiredConfig) -> Result<(), String> {
    let want = &config.input.os_image_url;
    if want.is_empty() {
        return Ok(());
    }
    let fail = |why: String| {
        format!(
            "unexpected on-disk state validating against {}: {why}",
            config.name()
        )
    };
    let booted = status.booted().map_err(fail)?;
    let have = booted
        .image()
        .map_err(|e| fail(format!("reading the booted image: {e}")))?;
    match have {
        Some(have) if have == *want => Ok(()),
        Some(have) => Err(fail(format!(
            "expected target osImageURL {}, booted into {}",
            go_quote(want),
            go_quote(&have)
        ))),
        None => Err(fail(format!(
            "expected target osImageURL {}, booted into a deployment with no image (ostree origin {})",
            go_quote(want),
            go_quote(booted.origin.as_deref().unwrap_or(""))
        ))),
    }
}

/// The step to take instead of `step` when it would uncordon the node or mark it Done on
/// `current` (the config on disk) while the host runs another image. `status` is the host's
/// `rpm-ostree status --json` (`None`: not an rpm-ostree host, nothing to check; an error:
/// it could not be read). `None` lets `step` go ahead; the Degraded step a mismatch gives
/// becomes an idle one once the node already says it.
pub fn before_completing(
    step: &Step,
    node: &Node,
    current: &DesiredConfig,
    status: Option<Result<Status, String>>,
) -> Option<Step> {
    if !matches!(step, Step::Done { .. } | Step::RequestUncordon { .. }) {
        return None;
    }
    if current.input.os_image_url.is_empty() {
        return None;
    }
    let verdict = match status? {
        Ok(s) => check(&s, current),
        Err(e) => Err(format!("reading the booted OS image: {e}")),
    };
    let reason = cap_reason(&verdict.err()?);
    if node.annotation(STATE) == Some(STATE_DEGRADED) && node.annotation(REASON) == Some(&reason) {
        return Some(Step::Idle {
            why: format!("booted OS image does not match {}", current.name()),
        });
    }
    Some(Step::Degraded { reason })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::decide;
    use crate::rpm_ostree::parse_status;
    use mco_render::api::node::{
        CURRENT_CONFIG, DESIRED_CONFIG, DESIRED_DRAIN, LAST_APPLIED_DRAIN,
    };
    use serde_json::json;

    const WANT: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:2222";
    const OTHER: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:1111";

    fn config(name: &str, os_image_url: &str) -> DesiredConfig {
        let v = json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfig",
            "metadata": {"name": name},
            "spec": {"osImageURL": os_image_url, "config": {"ignition": {"version": "3.4.0"}}}
        });
        DesiredConfig::from_bytes(v.to_string().as_bytes(), name).unwrap()
    }

    fn status_booted_on(image: &str) -> Status {
        parse_status(&format!(
            r#"{{"deployments": [
                {{"id": "rhcos-b.0", "osname": "rhcos", "checksum": "b", "booted": true, "staged": false,
                  "container-image-reference": "ostree-unverified-registry:{image}",
                  "requested-packages": [], "requested-base-removals": []}},
                {{"id": "rhcos-a.0", "osname": "rhcos", "checksum": "a", "booted": false, "staged": false,
                  "container-image-reference": "ostree-unverified-registry:{OTHER}"}}
              ], "transaction": null}}"#
        ))
        .unwrap()
    }

    /// A node back from its reboot into r2: on disk r2, the node still says r1, the uncordon
    /// done.
    fn node_after_reboot(extra: serde_json::Value) -> Node {
        let mut annos = json!({
            CURRENT_CONFIG: "r1", DESIRED_CONFIG: "r2", STATE: "Working",
            DESIRED_DRAIN: "uncordon-r2", LAST_APPLIED_DRAIN: "uncordon-r2",
        });
        if let (Some(a), Some(e)) = (annos.as_object_mut(), extra.as_object()) {
            a.extend(e.clone());
        }
        serde_json::from_value(json!({"metadata": {"name": "w1", "annotations": annos}})).unwrap()
    }

    #[test]
    fn a_node_booted_into_another_image_is_degraded_naming_both() {
        let current = config("r2", WANT);
        let node = node_after_reboot(json!({}));
        let step = decide(&node, &current, None, None);
        assert_eq!(
            step,
            Step::Done {
                current: "r2".into(),
                image: String::new(),
            }
        );
        let next = before_completing(&step, &node, &current, Some(Ok(status_booted_on(OTHER))));
        let expected = format!(
            "unexpected on-disk state validating against r2: expected target osImageURL \"{WANT}\", booted into \"{OTHER}\""
        );
        assert_eq!(
            next,
            Some(Step::Degraded {
                reason: expected.clone()
            })
        );
        // The uncordon waits too: upstream validates before it uncordons.
        let before_uncordon =
            node_after_reboot(json!({DESIRED_DRAIN: "drain-r2", LAST_APPLIED_DRAIN: "drain-r2"}));
        let step = decide(&before_uncordon, &current, None, None);
        assert!(matches!(step, Step::RequestUncordon { .. }), "{step:?}");
        assert_eq!(
            before_completing(
                &step,
                &before_uncordon,
                &current,
                Some(Ok(status_booted_on(OTHER)))
            ),
            Some(Step::Degraded {
                reason: expected.clone()
            })
        );
        // Once the node says so, the agent waits instead of writing it again.
        let degraded = node_after_reboot(
            json!({STATE: "Degraded", "machineconfiguration.openshift.io/reason": expected}),
        );
        let step = decide(&degraded, &current, None, None);
        assert!(matches!(
            before_completing(
                &step,
                &degraded,
                &current,
                Some(Ok(status_booted_on(OTHER)))
            ),
            Some(Step::Idle { .. })
        ));
    }

    #[test]
    fn a_node_booted_into_its_image_is_done() {
        let current = config("r2", WANT);
        let node = node_after_reboot(json!({}));
        let step = decide(&node, &current, None, None);
        assert_eq!(
            before_completing(&step, &node, &current, Some(Ok(status_booted_on(WANT)))),
            None
        );
        assert_eq!(check(&status_booted_on(WANT), &current), Ok(()));
    }

    #[test]
    fn no_check_without_an_os_image_or_off_rpm_ostree_hosts() {
        let node = node_after_reboot(json!({}));
        let no_image = config("r2", "");
        let step = decide(&node, &no_image, None, None);
        assert_eq!(
            step,
            Step::Done {
                current: "r2".into(),
                image: String::new(),
            }
        );
        assert_eq!(
            before_completing(&step, &node, &no_image, Some(Ok(status_booted_on(OTHER)))),
            None
        );
        assert_eq!(check(&Status::default(), &no_image), Ok(()));
        let current = config("r2", WANT);
        assert_eq!(before_completing(&step, &node, &current, None), None);
        // Other steps are never held back.
        assert_eq!(
            before_completing(
                &Step::SetWorking,
                &node,
                &current,
                Some(Ok(status_booted_on(OTHER)))
            ),
            None
        );
    }

    #[test]
    fn an_unreadable_status_or_no_booted_deployment_degrades() {
        let node = node_after_reboot(json!({}));
        let current = config("r2", WANT);
        let step = Step::Done {
            current: "r2".into(),
            image: String::new(),
        };
        assert_eq!(
            before_completing(
                &step,
                &node,
                &current,
                Some(Err("rpm-ostree status --json: exit status: 1".into()))
            ),
            Some(Step::Degraded {
                reason: "reading the booted OS image: rpm-ostree status --json: exit status: 1"
                    .into()
            })
        );
        assert_eq!(
            check(&Status::default(), &current),
            Err(
                "unexpected on-disk state validating against r2: no booted deployment found".into()
            )
        );
    }
}
