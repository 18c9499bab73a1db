#!/usr/bin/python3
"""tests/clients/grpc_v2_python.py — anytime's KServe V2 gRPC ModelInfer
through python3-grpcio (Debian's grpcio, grpc's own Python binding) with
messages protoc generates from src/serve/grpc_inference.proto at test time
(python3-protobuf; nothing generated is committed). Checks ModelInfer with a
BYTES text input and with INT64 raw_input_contents answers what HTTP V2 JSON
answers for the same inputs, bit for bit, and that an unknown model is
NOT_FOUND.
usage: grpc_v2_python.py GENERATED_DIR BASE_URL GRPC_ADDR CLASSIFIER
"""
import json
import struct
import sys
import urllib.request

gen, base, addr, model = sys.argv[1:5]
sys.path.insert(0, gen)
import grpc  # noqa: E402
import grpc_inference_pb2 as pb  # noqa: E402


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def http_infer(body):
    req = urllib.request.Request(f"{base}/v2/models/{model}/infer", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def f32_bits(values):  # float32 bit patterns of JSON numbers (9 digits round-trip)
    return [struct.unpack("<I", struct.pack("<f", v))[0] for v in values]


def raw_bits(buf):
    return list(struct.unpack(f"<{len(buf) // 4}I", buf))


channel = grpc.insecure_channel(addr)
infer = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                            request_serializer=pb.ModelInferRequest.SerializeToString,
                            response_deserializer=pb.ModelInferResponse.FromString)
texts = ["a gripping and funny film", "dull and slow"]
hj = http_infer({"inputs": [{"name": "text", "datatype": "BYTES", "shape": [2], "data": texts}]})
q = pb.ModelInferRequest(model_name=model, id="py")
t = q.inputs.add(name="text", datatype="BYTES", shape=[2])
t.contents.bytes_contents.extend([s.encode() for s in texts])
r = infer(q, timeout=20)
if r.id != "py" or r.outputs[0].name != "logits" or list(r.outputs[0].shape) != hj["outputs"][0]["shape"]:
    fail(f"envelope {r}")
if raw_bits(r.raw_output_contents[0]) != f32_bits(hj["outputs"][0]["data"]):
    fail("BYTES logits differ from HTTP's")

meta = json.load(urllib.request.urlopen(f"{base}/v2/models/{model}"))
onnx = [i["name"] for i in meta["inputs"] if i["datatype"] != "BYTES"]
S = 5
ids = [2, 11, 12, 13, 3, 2, 14, 3, 0, 0]
mask = [1, 1, 1, 1, 1, 1, 1, 1, 0, 0]
vals = {"input_ids": ids, "attention_mask": mask}
ht = http_infer({"inputs": [{"name": n, "datatype": "INT64", "shape": [2, S], "data": vals.get(n, [0] * 10)} for n in onnx],
                 "outputs": [{"name": "logits"}]})
q = pb.ModelInferRequest(model_name=model)
for n in onnx:
    q.inputs.add(name=n, datatype="INT64", shape=[2, S])
    q.raw_input_contents.append(struct.pack("<10q", *vals.get(n, [0] * 10)))
q.outputs.add(name="logits")
r = infer(q, timeout=20)
if raw_bits(r.raw_output_contents[0]) != f32_bits(ht["outputs"][0]["data"]):
    fail("INT64 raw logits differ from HTTP's")
try:
    infer(pb.ModelInferRequest(model_name="nope"), timeout=20)
    fail("unknown model answered")
except grpc.RpcError as e:
    if e.code() != grpc.StatusCode.NOT_FOUND:
        fail(f"unknown model: {e.code()}")
print("grpc_v2_python: ok")
