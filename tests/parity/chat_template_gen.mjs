// tests/parity/chat_template_gen.mjs — random templates for the differential
// part of the chat-template parity test (tests/parity/chat_templates.sh).
//
//   node chat_template_gen.mjs SEED COUNT OUT.jsonl
//
// Writes COUNT lines {"template": ..., "context": {...}} built by a seeded
// generator from the Jinja subset chat templates use: text with whitespace
// and newlines (trim_blocks/lstrip_blocks territory), {{ }} with and without
// "-", if/elif/else, for (loop.*, filters, else, break/continue), set,
// namespaces, macros and call blocks, comments; expressions over literals, the messages,
// member access, slices, filters, tests, string and dict methods, operators,
// ternaries. Most templates are valid; the rest must fail in both engines.
import { writeFileSync } from "node:fs";

const [seedArg, countArg, outPath] = process.argv.slice(2);
let state = BigInt(seedArg) ^ 0x9e3779b97f4a7c15n;
function rnd() { // splitmix64 -> [0, 1)
  state = (state + 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn;
  let z = state;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & 0xffffffffffffffffn;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & 0xffffffffffffffffn;
  z = z ^ (z >> 31n);
  return Number(z >> 11n) / 2 ** 53;
}
const pick = (a) => a[Math.floor(rnd() * a.length)];
const chance = (p) => rnd() < p;

const TEXTS = ["", " ", "\n", "  \n", "\n  ", "\t", "x", "Hello ", " world\n", "<|im_start|>", "[INST] ",
  "\n\n", "é ü 😀", "a\n  b", "%}", "}", "{", "-"];
const STRS = ["''", "'a'", "'user'", "'system'", "' pad '", "'\\n'", "\"dq\"", "'a,b,,c'", "'Hello World'",
  "'é€ü'", "'<|eot_id|>'", "'x y  z'", "'tool'"];
const NUMS = ["0", "1", "2", "3", "-1", "10", "1.5", "0.1", "2.0", "-0.0"];
const VARS = ["messages", "m", "x", "s", "n", "f", "t", "d", "empty", "nothing", "add_generation_prompt",
  "bos_token", "loop", "ns"];
const FILTERS = ["trim", "upper", "lower", "length", "tojson", "tojson(indent=2)", "join(', ')", "join",
  "default('d')", "default('d', true)", "first", "last", "list", "string", "int", "items", "title", "capitalize",
  "replace('a', 'b')", "selectattr('role', 'equalto', 'user')", "map(attribute='role')", "safe", "indent(2)",
  "reverse", "abs", "float"];
const TESTS = ["defined", "undefined", "none", "string", "mapping", "number", "iterable", "odd", "even",
  "true", "false", "boolean", "integer", "sequence"];
const METHODS = ["strip()", "lstrip()", "rstrip()", "split()", "split(',')", "startswith('u')",
  "endswith('r')", "upper()", "lower()", "title()", "get('role')", "get('zz', 'dflt')", "items()", "keys()",
  "values()", "replace('a', 'A')", "capitalize()"];
const BINOPS = ["+", "-", "*", "/", "//", "%", "~", "==", "!=", "<", ">", "<=", ">=", "and", "or", "in",
  "not in"];

function primary(depth) {
  const r = rnd();
  if (r < 0.18) return pick(STRS);
  if (r < 0.3) return pick(NUMS);
  if (r < 0.55) return pick(VARS);
  if (r < 0.62) return pick(["true", "false", "none", "True", "None"]);
  if (r < 0.7 && depth > 0) return `[${Array.from({ length: Math.floor(rnd() * 3) }, () => expr(depth - 1)).join(", ")}]`;
  if (r < 0.76 && depth > 0) return `{${pick(["'k'", "'role'", "'a'"])}: ${expr(depth - 1)}}`;
  if (r < 0.84) return pick(["messages[0]", "messages[-1]", "messages[1:]", "messages[::-1]", "m.role",
    "m['content']", "m.content", "s[1:]", "s[::-1]", "s[0]", "loop.index", "loop.index0", "loop.first",
    "loop.last", "loop.length", "ns.n", "d.a", "d['b']", "messages[0].content", "nothing.attr"]);
  if (depth > 0) return `(${expr(depth - 1)})`;
  return pick(VARS);
}

const STR_METHODS = METHODS.filter((x) => !/^(get|items|keys|values)/.test(x));
const DICT_METHODS = METHODS.filter((x) => /^(get|items|keys|values)/.test(x));
// what a primary is known to be, so that most method calls are valid
function kindOf(e) {
  if (/^['"]/.test(e) || ["s", "m.role", "m['content']", "m.content", "bos_token", "messages[0].content"].includes(e))
    return "str";
  if (["d", "m", "messages[0]", "messages[-1]"].includes(e) || e.startsWith("{")) return "dict";
  return "other";
}

function postfix(depth) {
  let e = primary(depth);
  const kind = kindOf(e);
  if (/^-?[0-9]/.test(e)) e = `(${e})`;
  const k = Math.floor(rnd() * 3);
  let bare = true; // false once a filter or test makes e need parentheses
  for (let i = 0; i < k; i++) {
    const r = rnd();
    const base = bare ? e : `(${e})`;
    if (r < 0.45) {
      // first/last of an empty list is a raw JavaScript undefined in @huggingface/jinja
      // (docs/chat_templates.md, known differences): only on a list known to be non-empty
      let f = pick(FILTERS);
      if ((f === "first" || f === "last") && !(i === 0 && e === "messages")) f = "length";
      [e, bare] = [`${e} | ${f}`, false];
    }
    else if (r < 0.75) {
      const list = i === 0 && kind === "str" ? STR_METHODS : i === 0 && kind === "dict" ? DICT_METHODS : METHODS;
      [e, bare] = [`${base}.${pick(list)}`, true];
    }
    else if (r < 0.9) [e, bare] = [`(${e} is ${chance(0.3) ? "not " : ""}${pick(TESTS)})`, true];
    else [e, bare] = [`${base}[${pick(["0", "-1", "1:", ":2", "::-1", "'role'"])}]`, true];
  }
  return e;
}

function expr(depth) {
  const r = rnd();
  if (depth <= 0 || r < 0.45) return postfix(depth);
  if (r < 0.75) return `${postfix(depth - 1)} ${pick(BINOPS)} ${chance(0.5) ? postfix(depth - 1) : `(${expr(depth - 1)})`}`;
  if (r < 0.85) return `not ${expr(depth - 1)}`;
  if (r < 0.93) return `${postfix(depth - 1)} if ${expr(depth - 1)} else ${expr(depth - 1)}`;
  return `${postfix(depth - 1)} if ${expr(depth - 1)}`;
}

const open = (k) => (k === "%" ? "{%" : "{{") + (chance(0.35) ? "-" : "") + " ";
const close = (k) => " " + (chance(0.35) ? "-" : "") + (k === "%" ? "%}" : "}}");
const ind = () => pick(["", "", "  ", "    ", "\t"]);

function block(depth, inLoop) {
  const parts = [];
  const n = 1 + Math.floor(rnd() * 3);
  for (let i = 0; i < n; i++) parts.push(stmt(depth, inLoop));
  return parts.join("");
}

function stmt(depth, inLoop) {
  const r = rnd();
  const nl = () => (chance(0.5) ? "\n" : "");
  if (r < 0.22) return pick(TEXTS);
  if (r < 0.45 || depth <= 0) return `${open("{")}${expr(2)}${close("{")}${nl()}`;
  if (r < 0.58) {
    let s = `${ind()}${open("%")}if ${expr(2)}${close("%")}${nl()}${block(depth - 1, inLoop)}`;
    if (chance(0.4)) s += `${ind()}${open("%")}elif ${expr(2)}${close("%")}${nl()}${block(depth - 1, inLoop)}`;
    if (chance(0.5)) s += `${ind()}${open("%")}else${close("%")}${nl()}${block(depth - 1, inLoop)}`;
    return s + `${ind()}${open("%")}endif${close("%")}${nl()}`;
  }
  if (r < 0.7) {
    const target = pick(["m", "m", "x", "k, v", "i"]);
    const it = target === "k, v" ? pick(["d.items()", "m.items()", "{'a': 1, 'b': 2}.items()"]) :
      target === "i" ? pick(["range(3)", "range(1, 4)", "range(n)"]) : pick(["messages", "messages[1:]", "empty", "s.split()", "[1, 2, 3]", "d", "nothing"]);
    const filt = chance(0.25) ? ` if ${expr(1)}` : "";
    let s = `${ind()}${open("%")}for ${target} in ${it}${filt}${close("%")}${nl()}${block(depth - 1, true)}`;
    if (chance(0.25)) s += `${open("%")}else${close("%")}${block(depth - 1, inLoop)}`;
    return s + `${ind()}${open("%")}endfor${close("%")}${nl()}`;
  }
  if (r < 0.8) {
    const t = pick(["x", "y", "ns.n", "ns.seen", "a, b"]);
    const v = t === "a, b" ? pick(["[1, 2]", "messages[:2]", "'ab'"]) : expr(2);
    const pre = t.startsWith("ns.") && chance(0.7) ? `${open("%")}set ns = namespace(n=0, seen=false)${close("%")}` : "";
    return `${pre}${ind()}${open("%")}set ${t} = ${v}${close("%")}${nl()}`;
  }
  if (r < 0.85) return `${open("%")}set y${close("%")}${block(depth - 1, inLoop)}${open("%")}endset${close("%")}{{ y }}`;
  if (r < 0.9) {
    const def = `${open("%")}macro mk(a, b='B')${close("%")}${block(depth - 1, false)}[{{ a }}{{ b }}]` +
      `${chance(0.4) ? "{{ caller(a) }}" : ""}${open("%")}endmacro${close("%")}`;
    if (chance(0.4)) // a call block: the body is caller() inside the macro
      return def + `${open("%")}call(z) mk(${expr(1)})${close("%")}${block(depth - 1, false)}<{{ z }}>` +
        `${open("%")}endcall${close("%")}`;
    return def + `{{ mk(${expr(1)}) }}{{ mk(1, b=${expr(1)}) }}`;
  }
  if (r < 0.95) return `${ind()}{#${chance(0.3) ? "-" : ""} comment ${chance(0.3) ? "-" : ""}#}${nl()}`;
  if (inLoop) return `${open("%")}${pick(["break", "continue"])}${close("%")}`;
  return `${open("%")}if ${expr(1)}${close("%")}{{ raise_exception('stop: ' ~ ${expr(1)}) }}${open("%")}endif${close("%")}`;
}

const CONTEXTS = [
  { messages: [{ role: "system", content: " Be brief. " }, { role: "user", content: "Hi\n" }, { role: "assistant", content: "Hello a" }],
    m: { role: "user", content: " x " }, s: "Hello World", n: 3, f: 2.5, t: true, d: { a: 1, b: "two", c: [1, 2] },
    empty: [], add_generation_prompt: true, bos_token: "<s>" },
  { messages: [{ role: "user", content: "é😀 ünï" }], m: { role: "tool", content: "" }, s: "", n: 0, f: -1.5,
    t: false, d: {}, empty: [], add_generation_prompt: false, bos_token: "" },
];

const lines = [];
for (let i = 0; i < Number(countArg); i++) {
  const template = block(2, false) + (chance(0.3) ? "\n" : "");
  lines.push(JSON.stringify({ template, context: pick(CONTEXTS) }));
}
writeFileSync(outPath, lines.map((l) => l + "\n").join(""));
