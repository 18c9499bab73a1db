// A check tool only: renders conversations with a model directory's
// chat_template (tokenizer_config.json) in @huggingface/jinja (npm, pinned,
// installed into the data cache by train_chat.sh) - the Jinja implementation
// Hugging Face's JavaScript libraries use - so chat_check.py can compare it
// with the ChatML rendering the training data used (chat_data.render).
//
//   node chat_template.mjs NODEDIR tokenizer_config.json IN.json OUT.json
//
// NODEDIR holds node_modules/@huggingface/jinja.  IN.json: [{"messages":
// [...], "add_generation_prompt": bool}, ...]; OUT.json: [rendered, ...].
// Rendered with no other variables (no bos_token / eos_token defined).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [nodeDir, cfgPath, inPath, outPath] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(nodeDir), "package.json"));
const { Template } = require("@huggingface/jinja");

const cfg = JSON.parse(fs.readFileSync(cfgPath, "utf8"));
if (typeof cfg.chat_template !== "string") throw new Error(`${cfgPath}: no chat_template string`);
const tpl = new Template(cfg.chat_template);
const items = JSON.parse(fs.readFileSync(inPath, "utf8"));
const out = items.map((it) => tpl.render({ messages: it.messages,
                                           add_generation_prompt: !!it.add_generation_prompt }));
fs.writeFileSync(outPath, JSON.stringify(out));
