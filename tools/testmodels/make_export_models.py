#!/usr/bin/python3
"""Build random-weight stand-ins for users' own exports (tests/data/models/export/).

Each directory has the file layout and ONNX signature of a real Hugging Face
export, small enough to commit, and a reference.json with the answers an
independent implementation (numpy, below, on the same weights) gives for a
fixed set of texts. The C test suite checks `anytime run` and the server's
routes against those answers (tests/integration/serve_export.sh).

  st-cls/        sentence-transformers BERT embedder: modules.json
                 (Transformer, Pooling, Normalize), 1_Pooling/config.json with CLS
                 pooling, sentence_bert_config.json max_seq_length 8,
                 tokenizer_config.json model_max_length 1e30 (the tokenizers
                 library's "no limit"), onnx/model.onnx -> last_hidden_state
  st-max/        the same graph, max pooling, modules.json absent (1_Pooling only)
  st-weighted/   the same graph, weighted-mean pooling
  roberta-pos/   XLM-R-style embedder: positions start at pad_token_id + 1 = 2, a
                 12-row position table, so 10 tokens fit; no token_type_ids
  st-dense/      graph already pools and applies the Dense layer: outputs
                 token_embeddings and sentence_embedding [batch, 8]; modules.json
                 has 2_Dense
  st-dense-missing/  modules.json has 2_Dense but the graph outputs only
                 last_hidden_state: anytime must refuse it, naming the Dense module
  multilabel/    BertForSequenceClassification with problem_type
                 multi_label_classification: scores are sigmoids, not a softmax
  reranker/      a cross-encoder (one logit) over text pairs, with
                 token_type_ids: /rerank and pairs on /predict
  st-prompts/    a mean-pooling embedder with config_sentence_transformers.json
                 prompts ("query", default, and "doc") and 1_Pooling's
                 include_prompt false: the prompt goes before the text and
                 its tokens ([CLS] and the prompt's) are left out of pooling

The encoder: token + position (+ type) embeddings, plus the masked mean of
those over the text (so every token depends on its context and padding is
visible if a pooling forgets to exclude it), through tanh(x W). Padding rows
are NOT zeroed in last_hidden_state, as in real encoders.

Deterministic (fixed seed); run with Debian's python3-onnx:
  /usr/bin/python3 tools/testmodels/make_export_models.py
"""
import json
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT = os.path.join(ROOT, "tests", "data", "models", "export")
VOCAB = os.path.join(ROOT, "tests", "data", "models", "tiny", "vocab.txt")
HID, VOCAB_N = 16, 100

TEXTS = [
    "the movie was good",
    "this film is not very funny but the music is great",
    "i love it",
    "the acting was awful and the plot was dull and the ending was the worst of it",
    "a",
    "we hate the story , the script and the director !",
]
# past every stand-in's token limit: the reference cuts it as HF does
LONG = " ".join(["the best film of the time and the music"] * 4)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def encoder(rng, roberta=False, n_pos=64, dense=False, cls_head=0):
    """Graph and weights. roberta: positions from the mask, offset pad+1 = 2,
    no token_type_ids. dense: also pool (mean) and apply tanh(x D) inside.
    cls_head: a classifier head on the first token with that many labels."""
    w = {
        "emb": rng.normal(0, 1, (VOCAB_N, HID)).astype(np.float32),
        "pos": rng.normal(0, 0.5, (n_pos, HID)).astype(np.float32),
        "typ": rng.normal(0, 0.5, (2, HID)).astype(np.float32),
        "w": rng.normal(0, 0.4, (HID, HID)).astype(np.float32),
        "dense": rng.normal(0, 0.4, (HID, 8)).astype(np.float32),
        "wc": rng.normal(0, 0.8, (HID, max(cls_head, 1))).astype(np.float32),
    }
    inits = [const(k, v) for k, v in w.items()] + [
        const("ax1", np.array([1], dtype=np.int64)),
        const("ax2", np.array([2], dtype=np.int64)),
        const("one_i", np.array(1, dtype=np.int64)),
        const("zero_i", np.array(0, dtype=np.int64)),
        const("two_i", np.array(2, dtype=np.int64)),
        const("eps", np.array(1e-9, dtype=np.float32)),
    ]
    nodes = [helper.make_node("Gather", ["emb", "input_ids"], ["tok"], axis=0)]
    if roberta:  # position id = cumsum(mask) * mask + padding_idx (1)
        nodes += [
            helper.make_node("CumSum", ["attention_mask", "one_i"], ["cum"]),
            helper.make_node("Mul", ["cum", "attention_mask"], ["cm"]),
            helper.make_node("Add", ["cm", "one_i"], ["pos_ids"]),
            helper.make_node("Gather", ["pos", "pos_ids"], ["pe"], axis=0),
            helper.make_node("Add", ["tok", "pe"], ["x"]),
        ]
    else:  # position id = 0..seq-1; token types
        nodes += [
            helper.make_node("Shape", ["input_ids"], ["shp"]),
            helper.make_node("Gather", ["shp", "one_i"], ["seqlen"], axis=0),
            helper.make_node("Range", ["zero_i", "seqlen", "one_i"], ["pos_ids"]),
            helper.make_node("Gather", ["pos", "pos_ids"], ["pe"], axis=0),
            helper.make_node("Gather", ["typ", "token_type_ids"], ["te"], axis=0),
            helper.make_node("Add", ["tok", "pe"], ["x0"]),
            helper.make_node("Add", ["x0", "te"], ["x"]),
        ]
    nodes += [  # context: the masked mean of x over the text, added to every token
        helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["maskf", "ax2"], ["mask3"]),
        helper.make_node("Mul", ["x", "mask3"], ["xm"]),
        helper.make_node("ReduceSum", ["xm", "ax1"], ["xs"], keepdims=1),
        helper.make_node("ReduceSum", ["mask3", "ax1"], ["cnt"], keepdims=1),
        helper.make_node("Max", ["cnt", "eps"], ["cnt1"]),
        helper.make_node("Div", ["xs", "cnt1"], ["ctx"]),
        helper.make_node("Add", ["x", "ctx"], ["xc"]),
        helper.make_node("MatMul", ["xc", "w"], ["h"]),
        helper.make_node("Tanh", ["h"], ["hidden"]),
    ]
    ids = helper.make_tensor_value_info
    inputs = [ids("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
              ids("attention_mask", TensorProto.INT64, ["batch_size", "sequence_length"])]
    if not roberta:
        inputs.append(ids("token_type_ids", TensorProto.INT64, ["batch_size", "sequence_length"]))
    if dense:
        nodes += [
            helper.make_node("Identity", ["hidden"], ["token_embeddings"]),
            helper.make_node("Mul", ["hidden", "mask3"], ["hm"]),
            helper.make_node("ReduceSum", ["hm", "ax1"], ["hs"], keepdims=0),
            helper.make_node("ReduceSum", ["maskf", "ax1"], ["hc"], keepdims=1),
            helper.make_node("Div", ["hs", "hc"], ["mean"]),
            helper.make_node("MatMul", ["mean", "dense"], ["dl"]),
            helper.make_node("Tanh", ["dl"], ["sentence_embedding"]),
        ]
        outputs = [ids("token_embeddings", TensorProto.FLOAT, ["batch_size", "sequence_length", HID]),
                   ids("sentence_embedding", TensorProto.FLOAT, ["batch_size", 8])]
    elif cls_head:
        nodes += [
            helper.make_node("Gather", ["hidden", "zero_i"], ["first"], axis=1),
            helper.make_node("MatMul", ["first", "wc"], ["logits"]),
        ]
        outputs = [ids("logits", TensorProto.FLOAT, ["batch_size", cls_head])]
    else:
        nodes.append(helper.make_node("Identity", ["hidden"], ["last_hidden_state"]))
        outputs = [ids("last_hidden_state", TensorProto.FLOAT,
                       ["batch_size", "sequence_length", HID])]
    used = {i for n in nodes for i in n.input}
    graph = helper.make_graph(nodes, "export_standin", inputs, outputs,
                              [t for t in inits if t.name in used])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="anytime-testmodels", producer_version="1")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model, w


def reference_hidden(w, ids, roberta, types=None):
    """numpy: the graph's per-token output for one text or pair (no padding)."""
    ids = np.asarray(ids)
    n = len(ids)
    pos = np.arange(n) + (2 if roberta else 0)
    x = w["emb"][ids] + w["pos"][pos]
    if not roberta:
        x = x + w["typ"][np.zeros(n, dtype=np.int64) if types is None else np.asarray(types)]
    ctx = x.mean(axis=0, keepdims=True)
    return np.tanh((x + ctx) @ w["w"])


def pool(h, mode):
    n = h.shape[0]
    if mode == "cls":
        return h[0]
    if mode == "max":
        return h.max(axis=0)
    if mode == "weightedmean":
        wts = np.arange(1, n + 1, dtype=np.float64)[:, None]
        return (h * wts).sum(axis=0) / wts.sum()
    if mode == "lasttoken":
        return h[-1]
    return h.mean(axis=0)


def wordpiece_ids(text, vocab, limit):
    """The tiny vocabulary holds every word of TEXTS whole: [CLS] words [SEP],
    cut (as HF's longest-first truncation of one sequence) to `limit`."""
    words = text.lower().split()
    ids = [vocab[t] for t in words]
    ids = ids[: max(limit - 2, 0)]
    return [vocab["[CLS]"]] + ids + [vocab["[SEP]"]]


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def pooling_config(mode):
    keys = {"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens",
            "max": "pooling_mode_max_tokens", "weightedmean": "pooling_mode_weightedmean_tokens",
            "lasttoken": "pooling_mode_lasttoken"}
    cfg = {"word_embedding_dimension": HID}
    for m, k in keys.items():
        cfg[k] = m == mode
    cfg["pooling_mode_mean_sqrt_len_tokens"] = False
    return cfg


def build(name, rng, vocab, *, mode="mean", roberta=False, dense=False, cls_head=0,
          modules=None, st_len=None, n_pos=64, limit=None, problem_type=None):
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "onnx"))
    model, w = encoder(rng, roberta=roberta, n_pos=n_pos, dense=dense, cls_head=cls_head)
    onnx.save(model, os.path.join(d, "onnx", "model.onnx"))
    shutil.copy(VOCAB, os.path.join(d, "vocab.txt"))
    cfg = {"architectures": ["BertForSequenceClassification" if cls_head else "BertModel"],
           "model_type": "xlm-roberta" if roberta else "bert",
           "hidden_size": HID, "vocab_size": VOCAB_N, "max_position_embeddings": n_pos,
           "pad_token_id": 1 if roberta else 0, "type_vocab_size": 1 if roberta else 2}
    if cls_head:
        cfg["id2label"] = {str(i): l for i, l in enumerate(["toxic", "obscene", "insult"][:cls_head])}
        cfg["label2id"] = {l: i for i, l in cfg["id2label"].items()}
    if problem_type:
        cfg["problem_type"] = problem_type
    write_json(os.path.join(d, "config.json"), cfg)
    # model_max_length 1e30, as the tokenizers library writes it for "no limit"
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        f.write('{\n  "tokenizer_class": "BertTokenizer",\n  "do_lower_case": true,\n'
                '  "model_max_length": 1000000000000000019884624838656\n}\n')
    if modules is not None:
        write_json(os.path.join(d, "modules.json"), modules)
    if not cls_head:
        os.makedirs(os.path.join(d, "1_Pooling"))
        write_json(os.path.join(d, "1_Pooling", "config.json"), pooling_config(mode))
    if st_len:
        write_json(os.path.join(d, "sentence_bert_config.json"),
                   {"max_seq_length": st_len, "do_lower_case": False})
    if dense:
        os.makedirs(os.path.join(d, "2_Dense"))
        write_json(os.path.join(d, "2_Dense", "config.json"),
                   {"in_features": HID, "out_features": 8, "bias": False,
                    "activation_function": "torch.nn.modules.activation.Tanh"})
    ref = {"limit": limit, "texts": [], "note": "numpy on the graph's weights "
           "(tools/testmodels/make_export_models.py); ids cut at `limit` tokens"}
    for text in TEXTS + [LONG]:
        ids = wordpiece_ids(text, vocab, limit)
        h = reference_hidden(w, ids, roberta)
        row = {"text": text, "ids": ids}
        if cls_head:
            logits = h[0] @ w["wc"]
            row["logits"] = logits.tolist()
            row["scores"] = (1 / (1 + np.exp(-logits))).tolist() if problem_type else \
                (np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()).tolist()
        else:
            v = np.tanh(h.mean(axis=0) @ w["dense"]) if dense else pool(h, mode)
            row["embedding"] = v.tolist()
            row["normalized"] = (v / np.linalg.norm(v)).tolist()
        ref["texts"].append(row)
    write_json(os.path.join(d, "reference.json"), ref)
    print("wrote", os.path.relpath(d, ROOT))


RERANK_QUERY = "is the acting good"
RERANK_TEXTS = ["the acting was great", "the plot was dull", "i love the music",
                "the worst acting of the time", "a", "good good good"]


def build_reranker(rng, vocab):
    """A cross-encoder (one logit) over text pairs: [CLS] q [SEP] t [SEP] with
    token_type_ids 0 for the query part and 1 for the text part, as BERT's
    pair template gives."""
    name = "reranker"
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "onnx"))
    model, w = encoder(rng, cls_head=1)
    onnx.save(model, os.path.join(d, "onnx", "model.onnx"))
    shutil.copy(VOCAB, os.path.join(d, "vocab.txt"))
    write_json(os.path.join(d, "config.json"), {
        "architectures": ["BertForSequenceClassification"], "model_type": "bert",
        "hidden_size": HID, "vocab_size": VOCAB_N, "max_position_embeddings": 64,
        "pad_token_id": 0, "type_vocab_size": 2, "id2label": {"0": "LABEL_0"}})
    q = [vocab[t] for t in RERANK_QUERY.split()]
    ref = {"query": RERANK_QUERY, "note": "numpy on the graph's weights; score = sigmoid(logit)",
           "pairs": []}
    for text in RERANK_TEXTS:
        t = [vocab[x] for x in text.split()]
        ids = [vocab["[CLS]"]] + q + [vocab["[SEP]"]] + t + [vocab["[SEP]"]]
        types = [0] * (len(q) + 2) + [1] * (len(t) + 1)
        logit = float((reference_hidden(w, ids, False, types)[0] @ w["wc"])[0])
        ref["pairs"].append({"text": text, "ids": ids, "type_ids": types, "logit": logit,
                             "score": 1 / (1 + np.exp(-logit))})
    write_json(os.path.join(d, "reference.json"), ref)
    print("wrote", os.path.relpath(d, ROOT))


PROMPTS = {"query": "i love the ", "doc": "the story , "}


def build_prompts(vocab):
    """As sentence-transformers encodes with a prompt: the prompt's text
    before the input's, then (include_prompt false) pooling that leaves out
    the first len(tokenize(prompt)) - 1 tokens: [CLS] and the prompt's."""
    name = "st-prompts"
    d = os.path.join(OUT, name)
    rng = np.random.default_rng(20261202)  # its own: the others stay as they were
    build(name, rng, vocab, mode="mean", limit=64)
    w_path = os.path.join(d, "onnx", "model.onnx")
    w = {i.name: numpy_helper.to_array(i) for i in onnx.load(w_path).graph.initializer}
    pool_cfg = pooling_config("mean")
    pool_cfg["include_prompt"] = False
    write_json(os.path.join(d, "1_Pooling", "config.json"), pool_cfg)
    write_json(os.path.join(d, "config_sentence_transformers.json"),
               {"prompts": PROMPTS, "default_prompt_name": "query",
                "similarity_fn_name": "cosine"})
    ref = json.load(open(os.path.join(d, "reference.json")))
    ref["note"] = ("numpy on the graph's weights; per text, for each prompt: ids of prompt + "
                   "text, skip = len(ids of the prompt alone) - 1 tokens left out of the mean")
    ref["default_prompt"] = "query"
    for row in ref["texts"]:
        row["prompts"] = {}
        for pname, ptext in PROMPTS.items():
            ids = wordpiece_ids(ptext + row["text"], vocab, 64)
            skip = len(wordpiece_ids(ptext, vocab, 64)) - 1
            v = reference_hidden(w, ids, False)[skip:].mean(axis=0)
            row["prompts"][pname] = {"ids": ids, "skip": skip, "embedding": v.tolist(),
                                     "normalized": (v / np.linalg.norm(v)).tolist()}
    write_json(os.path.join(d, "reference.json"), ref)


def main():
    rng = np.random.default_rng(20261201)
    with open(VOCAB) as f:
        vocab = {t: i for i, t in enumerate(f.read().split("\n")) if t}
    st_modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    dense_modules = st_modules[:2] + [
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}]
    build("st-cls", rng, vocab, mode="cls", modules=st_modules, st_len=8, limit=8)
    build("st-max", rng, vocab, mode="max", limit=64)
    build("st-weighted", rng, vocab, mode="weightedmean", modules=st_modules, limit=64)
    build("roberta-pos", rng, vocab, mode="mean", roberta=True, n_pos=12, limit=10)
    build("st-dense", rng, vocab, dense=True, modules=dense_modules, limit=64)
    build("st-dense-missing", rng, vocab, mode="mean", modules=dense_modules, limit=64)
    shutil.rmtree(os.path.join(OUT, "st-dense-missing", "2_Dense"), ignore_errors=True)
    os.makedirs(os.path.join(OUT, "st-dense-missing", "2_Dense"))
    write_json(os.path.join(OUT, "st-dense-missing", "2_Dense", "config.json"),
               {"in_features": HID, "out_features": 8, "bias": False})
    build("multilabel", rng, vocab, cls_head=3, problem_type="multi_label_classification", limit=64)
    build_reranker(rng, vocab)
    build_prompts(vocab)


if __name__ == "__main__":
    main()
