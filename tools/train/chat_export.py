"""Export the chat checkpoint (chat_train.py) into models/chat: the decoder's
own export (decoder_model.export_onnx, decoder_quantize.quantize_file: fp32
onnx/model.onnx and int8 onnx/model_quantized.onnx) and the Hugging Face
files for a ChatML model: tokenizer.json (the decoder's plus the special
tokens <|im_start|> = 4096, <|im_end|> = 4097), config.json (vocab_size
4098), generation_config.json (eos_token_id [0, 4097]: <|endoftext|> or
<|im_end|> ends a reply), tokenizer_config.json with the ChatML
chat_template, special_tokens_map.json.  The card and reference outputs come
from chat_check.py.

Run:  /usr/bin/python3 tools/train/chat_export.py --ckpt CHAT.pt
          --tokenizer tokenizer.json --out models/chat
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
import decoder_export  # noqa: E402
import decoder_model as dm  # noqa: E402
import decoder_quantize  # noqa: E402

EOT, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
EOT_ID, IM_START_ID, IM_END_ID = 0, 4096, 4097
# The usual ChatML template (no default system prompt, no BOS).  Jinja source:
# the '\n' are Jinja string escapes (backslash, n), as in Hugging Face files.
CHAT_TEMPLATE = ("{% for message in messages %}"
                 "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] "
                 "+ '<|im_end|>' + '\\n'}}"
                 "{% endfor %}"
                 "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def added(tok_id, content):
    return {"content": content, "lstrip": False, "normalized": False, "rstrip": False,
            "single_word": False, "special": True}


def config_json(cfg, ck):
    doc = decoder_export.config_json(cfg, ck)
    doc["bos_token_id"] = EOT_ID
    doc["eos_token_id"] = [EOT_ID, IM_END_ID]
    doc["pad_token_id"] = EOT_ID
    a = doc["anytime"]
    a["family"] = ("anytime chat (the anytime decoder fine-tuned on ChatML conversations in "
                   "tools/train, see README.md)")
    del a["bos_prepended"]
    a["chat_format"] = ("ChatML: <|im_start|>{role}\\n{content}<|im_end|>\\n per message, "
                        "generation prompt <|im_start|>assistant\\n; no BOS is prepended; "
                        "a reply ends with <|im_end|> (id 4097)")
    a["special_tokens"] = {EOT: EOT_ID, IM_START: IM_START_ID, IM_END: IM_END_ID}
    a["int8"] = ("onnx/model_quantized.onnx: tools/train/quantize.py MatMulInteger rewrite of "
                 "all 17 weight MatMuls (incl. the tied LM head) + the token embedding "
                 "gathered from the head's int8 table")
    t = ck["train"]
    a["training"] = {k: v for k, v in t.items() if k not in ("log", "wall_s", "init")}
    a["training"]["init"] = "anytime decoder (models/decoder), embedding grown to 4098 rows"
    return doc


def write_dir(model, ck, tokenizer, out):
    cfg = model.cfg
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    fp32 = os.path.join(out, "onnx", "model.onnx")
    int8 = os.path.join(out, "onnx", "model_quantized.onnx")
    dm.export_onnx(model, fp32, opset=decoder_export.OPSET)
    n, e = decoder_quantize.quantize_file(fp32, int8)
    shutil.copyfile(tokenizer, os.path.join(out, "tokenizer.json"))
    docs = {
        "config.json": config_json(cfg, ck),
        "generation_config.json": {
            "bos_token_id": EOT_ID, "eos_token_id": [EOT_ID, IM_END_ID], "pad_token_id": EOT_ID,
            "do_sample": False, "max_length": cfg.n_positions,
        },
        "tokenizer_config.json": {
            "tokenizer_class": "GPT2Tokenizer",
            "model_max_length": cfg.n_positions,
            "bos_token": None, "eos_token": IM_END, "unk_token": EOT, "pad_token": EOT,
            "add_bos_token": False, "add_prefix_space": False,
            "clean_up_tokenization_spaces": False,
            "additional_special_tokens": [IM_START, IM_END],
            "added_tokens_decoder": {str(i): added(i, c) for i, c in
                                     ((EOT_ID, EOT), (IM_START_ID, IM_START), (IM_END_ID, IM_END))},
            "chat_template": CHAT_TEMPLATE,
        },
        "special_tokens_map.json": {"eos_token": IM_END, "unk_token": EOT, "pad_token": EOT,
                                    "additional_special_tokens": [IM_START, IM_END]},
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
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    model, ck = decoder_export.load(a.ckpt)
    n, e = write_dir(model, ck, a.tokenizer, a.out)
    print("chat: exported %s (int8: %d MatMuls, %d embedding Gather)" % (a.out, n, e))


if __name__ == "__main__":
    sys.exit(main())
