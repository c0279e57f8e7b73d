#!/usr/bin/env bash
# The main container of a MachineOSBuild's Job: once the image is pushed, it records the
# pushed digest in a ConfigMap the build controller reads (machine-os-builder does the API
# call, so no kubectl is needed in the image).
set -xeuo

machine-os-builder \
    create-digest-configmap \
    --configmap-name "${DIGEST_CONFIGMAP_NAME}" \
    --digestfile /tmp/done/digestfile \
    --labels "${DIGEST_CONFIGMAP_LABELS}"
