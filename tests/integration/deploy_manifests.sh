#!/usr/bin/env bash
# tests/integration/deploy_manifests.sh — the Kubernetes and KServe
# manifests in deploy/ (issue #19 item 3), as far as this machine allows
# without a cluster: each file is YAML (libyaml, via yaml2json) with the
# fields its kind requires; names that must match do (InferenceService ->
# ServingRuntime, Service and ScaledObject -> Deployment, selectors ->
# labels, targetPort -> containerPort); and the ServingRuntime's own
# container arguments, run for real with /mnt/models replaced by a model
# directory, start a server whose probes answer 200 on the paths and port
# the manifests name, that answers V2 inference under the
# InferenceService's name, and that exports every metric the ScaledObject
# queries.
# Seen to fail (2026-12-01): with the readiness probe's path set to
# /v2/health/readyz: "readinessProbe path /v2/health/readyz answers 404".
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
: "${YAML2JSON_BIN:?run through ctest}"
command -v jq >/dev/null || fail "jq is not installed (scripts/install-deps.sh test)"
dep="$ANYTIME_SOURCE_DIR/deploy"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
for f in kserve/servingruntime.yaml kserve/inferenceservice.yaml k8s/anytime.yaml; do
  "$YAML2JSON_BIN" "$dep/$f" > "$W/$(basename "$f" .yaml).json" || fail "$f is not YAML"
  jq -e 'all(.[]; (.apiVersion | type) == "string" and (.kind | type) == "string" and
                  (.metadata.name | type) == "string")' "$W/$(basename "$f" .yaml).json" >/dev/null ||
    fail "$f: a document without apiVersion, kind or metadata.name"
done
SR="$W/servingruntime.json" IS="$W/inferenceservice.json" K8="$W/anytime.json"
check() { jq -e "$2" "$1" >/dev/null || fail "$(basename "$1"): $3"; }

# ServingRuntime
check "$SR" '.[0].kind == "ServingRuntime" and .[0].apiVersion == "serving.kserve.io/v1alpha1"' "not a ServingRuntime"
check "$SR" '.[0].spec.protocolVersions | index("v2")' "protocolVersions lacks v2"
check "$SR" '.[0].spec.supportedModelFormats | any(.name == "onnx")' "no onnx model format"
check "$SR" '.[0].spec.containers[0].args | index("/mnt/models")' "the container does not serve /mnt/models"
check "$SR" '.[0].spec.containers[0] as $c | ($c.ports[0].containerPort | tostring) as $p |
             ($c.livenessProbe.httpGet.port | tostring) == $p and ($c.readinessProbe.httpGet.port | tostring) == $p and
             ($c.args | index("--port")) as $i | $c.args[$i + 1] == $p' "probes, port and --port disagree"
# InferenceService -> ServingRuntime
check "$IS" '.[0].kind == "InferenceService" and .[0].apiVersion == "serving.kserve.io/v1beta1"' "not an InferenceService"
rt=$(jq -r '.[0].metadata.name' "$SR")
check "$IS" ".[0].spec.predictor.model.runtime == \"$rt\" and .[0].spec.predictor.model.protocolVersion == \"v2\"" \
  "does not name runtime $rt with protocol v2"
check "$IS" '.[0].spec.predictor.model.modelFormat.name == "onnx" and (.[0].spec.predictor.model.storageUri | length) > 0' \
  "model format or storageUri missing"
# Deployment, Service, ScaledObject
check "$K8" '[.[].kind] == ["Deployment", "Service", "ScaledObject"]' "expected Deployment, Service, ScaledObject"
check "$K8" '.[0] as $d | ($d.spec.selector.matchLabels | to_entries | all(.value == ($d.spec.template.metadata.labels[.key])))' \
  "the Deployment's selector does not match its pod labels"
check "$K8" '.[0] as $d | .[1].spec.selector | to_entries | all(.value == ($d.spec.template.metadata.labels[.key]))' \
  "the Service's selector does not match the Deployment's pods"
check "$K8" '(.[0].spec.template.spec.containers[0].ports[0].containerPort | tostring) == (.[1].spec.ports[0].targetPort | tostring)' \
  "the Service's targetPort is not the container's port"
check "$K8" '.[2].spec.scaleTargetRef.name == .[0].metadata.name' "the ScaledObject scales another Deployment"

# The runtime's container, run for real (port 0 and a model directory in place of KServe's)
isname=$(jq -r '.[0].metadata.name' "$IS")
mapfile -t args < <(jq -r '.[0].spec.containers[0].args[]' "$SR")
run=()
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    serve) ;;
    /mnt/models) run+=("$ANYTIME_SOURCE_DIR/models/sentiment-small") ;;
    "{{.Name}}") run+=("$isname") ;;
    --port|--host) i=$((i + 1)) ;;          # serve_lib binds 127.0.0.1 on a free port
    *) run+=("${args[$i]}") ;;
  esac
done
start_server_args "${run[@]}"
for probe in livenessProbe readinessProbe; do
  path=$(jq -r ".[0].spec.containers[0].$probe.httpGet.path" "$SR")
  st=$(curl -s -o /dev/null -w '%{http_code}' "$BASE$path")
  [ "$st" = 200 ] || fail "$probe path $path answers $st"
  path=$(jq -r ".[0].spec.template.spec.containers[0].$probe.httpGet.path" "$K8")
  st=$(curl -s -o /dev/null -w '%{http_code}' "$BASE$path")
  [ "$st" = 200 ] || fail "Deployment $probe path $path answers $st"
done
st=$(curl -s -o "$W/infer" -w '%{http_code}' "$BASE/v2/models/$isname/infer" \
     -d '{"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1], "data": ["a fine film"]}]}')
[ "$st" = 200 ] || fail "V2 infer under the InferenceService's name '$isname': $st $(cat "$W/infer")"
metrics=$(curl -s "$BASE/metrics")
for q in $(jq -r '.[2].spec.triggers[].metadata.query' "$K8" | grep -o 'anytime_[a-z_]*' | sort -u); do
  grep -q "^$q{" <<<"$metrics" || fail "the ScaledObject queries $q, which /metrics does not export"
done
stop_server
echo "deploy_manifests: ok"
