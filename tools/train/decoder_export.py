"""Export a trained decoder checkpoint into a Hugging Face style directory:
onnx/model.onnx (fp32, opset 17), onnx/model_quantized.onnx (int8,
decoder_quantize.py), tokenizer.json, tokenizer_config.json, config.json,
generation_config.json.  The model card and reference outputs come from
decoder_check.py.

Run:  /usr/bin/python3 tools/train/decoder_export.py --ckpt CKPT.pt
          --tokenizer tokenizer.json --out models/decoder
"""
import argparse
import json
import os
import shutil
import sys
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import decoder_model as dm  # noqa: E402
import decoder_quantize  # noqa: E402

OPSET = 17
EOT_ID = 0
EOT = "<|endoftext|>"


def load(ckpt_path):
    ck = torch.load(ckpt_path)
    cfg = dm.Config(**ck["config"])
    model = dm.Decoder(cfg)
    model.load_state_dict(ck["state_dict"])
    model.eval()
    return model, ck


def config_json(cfg, ck):
    t = ck["train"]
    return {
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "vocab_size": cfg.vocab_size,
        "n_positions": cfg.n_positions,
        "n_ctx": cfg.n_positions,
        "n_embd": cfg.n_embd,
        "n_layer": cfg.n_layer,
        "n_head": cfg.n_head,
        "n_inner": cfg.n_inner,
        "activation_function": "gelu",
        "layer_norm_epsilon": cfg.layer_norm_epsilon,
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attn_pdrop": 0.0,
        "initializer_range": 0.02,
        "tie_word_embeddings": True,
        "scale_attn_weights": True,
        "bos_token_id": EOT_ID,
        "eos_token_id": EOT_ID,
        "use_cache": True,
        "torch_dtype": "float32",
        "anytime": {
            "family": "anytime decoder (trained in tools/train, see README.md)",
            "head_dim": cfg.head_dim,
            "onnx_opset": OPSET,
            "onnx_inputs": "input_ids int64 [batch, seq]; attention_mask int64 "
                           "[batch, past_seq + seq]; position_ids int64 [batch, seq]; "
                           "past_key_values.{i}.key / .value float32 "
                           "[batch, n_head, past_seq, head_dim] for i < n_layer "
                           "(past_seq may be 0)",
            "onnx_outputs": "logits float32 [batch, seq, vocab_size]; present.{i}.key / "
                            ".value float32 [batch, n_head, past_seq + seq, head_dim]",
            "attention": "query q sees key k iff k <= past_seq + q and attention_mask[b, k] "
                         "== 1; past_seq = attention_mask length - seq; positions come only "
                         "from position_ids (must be < n_positions); masked scores are "
                         "float32 min / 2",
            "bos_prepended": "training text is <|endoftext|> before every review; prompts "
                             "start with id 0 (the tokenizer does not add it)",
            "int8": "onnx/model_quantized.onnx: tools/train/quantize.py MatMulInteger "
                    "rewrite of all 17 weight MatMuls (incl. the tied LM head) + the token "
                    "embedding gathered from the head's int8 table",
            "training": {k: v for k, v in t.items() if k not in ("log", "wall_s")},
        },
    }


def write_dir(model, ck, tokenizer, out):
    cfg = model.cfg
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    fp32 = os.path.join(out, "onnx", "model.onnx")
    int8 = os.path.join(out, "onnx", "model_quantized.onnx")
    dm.export_onnx(model, fp32, opset=OPSET)
    n, e = decoder_quantize.quantize_file(fp32, int8)
    shutil.copyfile(tokenizer, os.path.join(out, "tokenizer.json"))
    docs = {
        "config.json": config_json(cfg, ck),
        "generation_config.json": {
            "bos_token_id": EOT_ID, "eos_token_id": EOT_ID, "pad_token_id": EOT_ID,
            "do_sample": False, "max_length": cfg.n_positions,
        },
        "tokenizer_config.json": {
            "tokenizer_class": "GPT2Tokenizer",
            "model_max_length": cfg.n_positions,
            "bos_token": EOT, "eos_token": EOT, "unk_token": EOT, "pad_token": EOT,
            "add_bos_token": True, "add_prefix_space": False,
            "clean_up_tokenization_spaces": False,
            "added_tokens_decoder": {"0": {"content": EOT, "lstrip": False, "normalized": False,
                                           "rstrip": False, "single_word": False,
                                           "special": True}},
        },
        "special_tokens_map.json": {"bos_token": EOT, "eos_token": EOT, "unk_token": EOT,
                                    "pad_token": EOT},
    }
    for name, doc in docs.items():
        with open(os.path.join(out, name), "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    return n, e


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    # The tracer warns that shape-derived values become constants; every
    # shape here is traced from tensors (checked by decoder_check.py).
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    model, ck = load(a.ckpt)
    n, e = write_dir(model, ck, a.tokenizer, a.out)
    print("decoder: exported %s (int8: %d MatMuls, %d embedding Gather)" % (a.out, n, e))


if __name__ == "__main__":
    sys.exit(main())
