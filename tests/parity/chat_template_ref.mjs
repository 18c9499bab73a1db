// tests/parity/chat_template_ref.mjs — the Node side of the chat-template
// parity test (tests/parity/chat_templates.sh), with @huggingface/jinja pinned
// in tests/node/package.json as the reference.
//
//   node chat_template_ref.mjs cases DATA_DIR FAMILY OUT.jsonl
//       one context per line: every conversation of DATA_DIR/conversations.json
//       with add_generation_prompt true, then false, and FAMILY's bos/eos tokens
//   node chat_template_ref.mjs render TEMPLATE.jinja CONTEXTS.jsonl OUT.jsonl
//       renders each context with @huggingface/jinja: {"ok":true,"out":...} or
//       {"ok":false,"error":...} per line (the format of chat_template_render.c)
//   node chat_template_ref.mjs pairs PAIRS.jsonl OUT.jsonl
//       the same for lines {"template": ..., "context": {...}} (chat_template_gen.mjs)
//   node chat_template_ref.mjs compare FAMILY CONTEXTS.jsonl REF.jsonl ANYTIME.jsonl
//       byte-for-byte comparison; prints one line per mismatch and a summary
//       "FAMILY: N compared, M raised, K mismatches"; exits 1 on any mismatch
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const [mode, ...args] = process.argv.slice(2);
const readLines = (p) => readFileSync(p, "utf8").split("\n").filter((l) => l.length > 0);

if (mode === "cases") {
  const [dataDir, family, outPath] = args;
  const doc = JSON.parse(readFileSync(join(dataDir, "conversations.json"), "utf8"));
  const tokens = doc.special_tokens[family];
  if (!tokens) throw new Error(`no special_tokens entry for ${family} in conversations.json`);
  const lines = [];
  for (const agp of [true, false]) {
    for (const c of doc.conversations) {
      const ctx = { messages: c.messages, add_generation_prompt: agp, ...tokens };
      if (c.tools) ctx.tools = c.tools;
      lines.push(JSON.stringify({ _case: `${c.name}/agp=${agp}`, ...ctx }));
    }
  }
  writeFileSync(outPath, lines.map((l) => l + "\n").join(""));
} else if (mode === "pairs") {
  const require = createRequire(join(here, "../node/package.json"));
  const { Template } = require("@huggingface/jinja");
  const [inPath, outPath] = args;
  const out = readLines(inPath).map((line) => {
    const { template, context } = JSON.parse(line);
    try {
      return JSON.stringify({ ok: true, out: new Template(template).render(context) });
    } catch (e) {
      return JSON.stringify({ ok: false, error: String(e && e.message ? e.message : e) });
    }
  });
  writeFileSync(outPath, out.map((l) => l + "\n").join(""));
} else if (mode === "render") {
  const require = createRequire(join(here, "../node/package.json"));
  const { Template } = require("@huggingface/jinja");
  const [tplPath, ctxPath, outPath] = args;
  let template = null, compileError = null;
  try {
    template = new Template(readFileSync(tplPath, "utf8"));
  } catch (e) {
    compileError = String(e && e.message ? e.message : e);
  }
  const out = readLines(ctxPath).map((line) => {
    if (!template) return JSON.stringify({ ok: false, error: compileError });
    try {
      return JSON.stringify({ ok: true, out: template.render(JSON.parse(line)) });
    } catch (e) {
      return JSON.stringify({ ok: false, error: String(e && e.message ? e.message : e) });
    }
  });
  writeFileSync(outPath, out.map((l) => l + "\n").join(""));
} else if (mode === "compare") {
  const [family, ctxPath, refPath, atPath] = args;
  const ctx = readLines(ctxPath).map((l, i) => {
    const c = JSON.parse(l);
    return c._case ?? c.name ?? `#${i} ${JSON.stringify(c.template)}`;
  });
  const ref = readLines(refPath).map((l) => JSON.parse(l));
  const at = readLines(atPath).map((l) => JSON.parse(l));
  let bad = 0, raised = 0;
  if (ref.length !== ctx.length || at.length !== ctx.length) {
    console.log(`${family}: ${ctx.length} contexts but ${ref.length} reference and ${at.length} anytime results`);
    process.exit(1);
  }
  ctx.forEach((name, i) => {
    const r = ref[i], a = at[i];
    if (!r.ok) raised++;
    if (r.ok !== a.ok) {
      bad++;
      console.log(`MISMATCH ${family} ${name}: reference ${r.ok ? "rendered" : "raised: " + r.error}; anytime ${a.ok ? "rendered" : "raised: " + a.error}`);
    } else if (r.ok && r.out !== a.out) {
      bad++;
      const rb = Buffer.from(String(r.out)), ab = Buffer.from(String(a.out));
      let k = 0;
      while (k < rb.length && k < ab.length && rb[k] === ab[k]) k++;
      console.log(`MISMATCH ${family} ${name}: first difference at byte ${k}: reference ${JSON.stringify(rb.subarray(k, k + 40).toString())} anytime ${JSON.stringify(ab.subarray(k, k + 40).toString())}`);
    }
  });
  console.log(`${family}: ${ctx.length} compared, ${raised} raised in both, ${bad} mismatches`);
  process.exit(bad ? 1 : 0);
} else {
  console.error("usage: chat_template_ref.mjs cases|render|compare ...");
  process.exit(2);
}
