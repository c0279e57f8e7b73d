#!/usr/bin/env bash
# Seeds the fuzz corpora from the conformance corpus: every MachineConfig's Ignition config for
# ignition_parse, and every case as one JSON list of manifests for manifests; the generate
# fixtures for custom_resources, and the project's templates for template_engine.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/../testdata/conformance"
mkdir -p "$here/corpus/ignition_parse" "$here/corpus/manifests" \
  "$here/corpus/custom_resources" "$here/corpus/template_engine"
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
fixtures="$here/../mco-render/tests/generate_fixtures"
cp "$fixtures"/*/*.yaml "$here/corpus/custom_resources/"
cat "$fixtures"/cluster/*.yaml > "$here/corpus/custom_resources/cluster-all.yaml"
find "$here/../templates" -name '*.yaml' | while IFS= read -r t; do
  cp "$t" "$here/corpus/template_engine/$(echo "${t#"$here/../templates/"}" | tr '/' '_')"
done
echo "custom_resources: $(ls "$here/corpus/custom_resources" | wc -l) seeds, template_engine: $(ls "$here/corpus/template_engine" | wc -l) seeds"
echo "ignition_parse: $(ls "$here/corpus/ignition_parse" | wc -l) seeds, manifests: $(ls "$here/corpus/manifests" | wc -l) seeds"
