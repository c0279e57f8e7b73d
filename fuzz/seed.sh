#!/usr/bin/env bash
# Seeds the fuzz corpora from the conformance corpus: every MachineConfig's Ignition config for
# ignition_parse, and every case as one JSON list of manifests for manifests.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/../testdata/conformance"
mkdir -p "$here/corpus/ignition_parse" "$here/corpus/manifests"
for f in "$src"/c*.json; do
  n="$(basename "$f" .json)"
  i=0
  while IFS= read -r cfg; do
    printf '%s' "$cfg" > "$here/corpus/ignition_parse/$n-$i.json"
    i=$((i + 1))
  done < <(jq -c '.machineConfigs[]?.spec.config // empty' "$f")
  jq -c '[.pool, .controllerConfig] + .machineConfigs | map(select(. != null))' "$f" \
    > "$here/corpus/manifests/$n.json"
done
echo "ignition_parse: $(ls "$here/corpus/ignition_parse" | wc -l) seeds, manifests: $(ls "$here/corpus/manifests" | wc -l) seeds"
