#!/usr/bin/env bash
# tests/integration/serve_grpc.sh — the KServe V2 gRPC service
# (src/serve/grpc_server.c) against @grpc/grpc-js + @grpc/proto-loader
# (tests/clients/grpc_v2.mjs) and python3-grpcio (grpc_v2_python.py): every RPC, ModelInfer bit for bit against
# HTTP V2 JSON, NOT_FOUND / INVALID_ARGUMENT; then with an API key and an
# in-flight limit of 12 texts: UNAUTHENTICATED, and an overload burst that gets
# RESOURCE_EXHAUSTED with retry-after-ms, and 13 texts FAILED_PRECONDITION
# with none; an embedder's default prompt; TLS with the HTTPS certificate. Each server must drain and exit 0
# on SIGTERM with gRPC calls behind it.
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
dir="$ANYTIME_SOURCE_DIR/tests/clients"
need_clients
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
GP=$(free_port)
start_server "$ANYTIME_TEST_DATA/serve/tiny.yaml" --grpc-port "$GP"
node "$dir/grpc_v2.mjs" rpcs "$BASE" "127.0.0.1:$GP" tiny-classifier || fail "grpc rpcs"
# python3-grpcio with messages protoc generates from the same .proto
if command -v protoc >/dev/null && /usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null; then
  protoc --python_out="$SERVE_TMP" -I "$ANYTIME_SOURCE_DIR/src/serve" grpc_inference.proto || fail "protoc"
  /usr/bin/python3 "$dir/grpc_v2_python.py" "$SERVE_TMP" "$BASE" "127.0.0.1:$GP" tiny-classifier \
    || fail "python3-grpcio ModelInfer"
else
  fail "python3-grpcio / protobuf-compiler missing (scripts/install-deps.sh test)"
fi
# the calls are in the request metrics under the same names, with
# protocol="grpc" and the method's path as the route; refusals by status
req GET /metrics
grep -q '^anytime_requests_total{route="/inference.GRPCInferenceService/ModelInfer",model="tiny-classifier",variant="a",status="200",protocol="grpc"} [1-9]' <<<"$BODY" \
  || fail "no gRPC ModelInfer series with protocol=\"grpc\" in /metrics"
grep -q '^anytime_requests_total{route="/inference.GRPCInferenceService/ModelInfer",model="[^"]*",variant="",status="404",protocol="grpc"} [1-9]' <<<"$BODY" \
  || fail "the gRPC NOT_FOUND is not counted as status 404 in /metrics"
grep -q '^anytime_requests_total{route="/v2/[^"]*",.*status="200",protocol="http"} [1-9]' <<<"$BODY" \
  || fail "the HTTP V2 calls are not counted with protocol=\"http\""
stop_server
GP=$(free_port)
KEY=grpc-test-key-123
start_server "$ANYTIME_TEST_DATA/serve/tiny.yaml" --grpc-port "$GP" --api-key "$KEY" \
  --policy limit --inflight-limit 12
node "$dir/grpc_v2.mjs" auth "127.0.0.1:$GP" tiny-classifier "$KEY" || fail "grpc auth"
node "$dir/grpc_v2.mjs" overload "127.0.0.1:$GP" tiny-classifier "$KEY" || fail "grpc overload"
stop_server
# an embedder with a default prompt: the prompt goes before each text, as
# HTTP V2 puts it
GP=$(free_port)
start_server "$ANYTIME_TEST_DATA/serve/export.yaml" --grpc-port "$GP"
node "$dir/grpc_v2.mjs" prompt "$BASE" "127.0.0.1:$GP" st-prompts \
  "$ANYTIME_TEST_DATA/models/export/st-prompts/reference.json" || fail "grpc default prompt"
stop_server
# TLS: the HTTPS certificate and key serve gRPC too
if command -v openssl >/dev/null; then
  W=$(mktemp -d)
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$W/key.pem" -out "$W/cert.pem" -days 2 \
    -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" >/dev/null 2>&1 || fail "openssl"
  GP=$(free_port)
  start_server "$ANYTIME_TEST_DATA/serve/tiny.yaml" --grpc-port "$GP" --tls-cert "$W/cert.pem" \
    --tls-key "$W/key.pem"
  node "$dir/grpc_v2.mjs" tls "$BASE" "127.0.0.1:$GP" tiny-classifier "$W/cert.pem" || fail "grpc tls"
  stop_server
  rm -rf "$W"
fi
# drain: SIGTERM with calls in flight; they end answered (or UNAVAILABLE
# once stopping), the server exits 0
GP=$(free_port)
start_server "$ANYTIME_TEST_DATA/serve/tiny.yaml" --grpc-port "$GP"
node "$dir/grpc_v2.mjs" drain "127.0.0.1:$GP" tiny-classifier >"$SERVE_TMP/drain" 2>&1 &
NODE_PID=$!
for _ in $(seq 1 100); do grep -q READY "$SERVE_TMP/drain" && break; sleep 0.05; done
kill -TERM "$SERVER_PID"
wait "$NODE_PID" || fail "grpc drain: $(cat "$SERVE_TMP/drain")"
cat "$SERVE_TMP/drain"
wait_server_exit
# off by default: the port is closed again, and a server without
# server.grpc_port / --grpc-port opens none
start_server "$ANYTIME_TEST_DATA/serve/tiny.yaml"
if (exec 3<>"/dev/tcp/127.0.0.1/$GP") 2>/dev/null; then fail "gRPC port $GP still open"; fi
stop_server
