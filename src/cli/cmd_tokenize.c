/* src/cli/cmd_tokenize.c — `anytime tokenize`: run a tokenizer (tokenizer.json,
 * vocab.txt or a model directory) over texts and print ids and tokens, or
 * JSON with ids, type ids, masks, offsets and tokens. With --input it reads
 * JSON Lines (a string, or {"text":..., "pair":...} per line) and writes one
 * JSON object per line: the form the parity tests compare against Hugging
 * Face tokenizers. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: anytime tokenize --tokenizer PATH [options] [TEXT ...]\n\n"
          "PATH is a tokenizer.json, a BERT vocab.txt, or a model directory holding one.\n\n"
          "options:\n"
          "  --json            one JSON object per text: ids, type_ids, attention_mask,\n"
          "                    special_tokens_mask, offsets, tokens\n"
          "  --input FILE      read texts from JSON Lines (\"-\" = stdin); each line is a JSON\n"
          "                    string or {\"text\": ..., \"pair\": ...}; implies --json\n"
          "  --offsets UNIT    bytes (default) or chars (code points, as HF's bindings report)\n"
          "  --no-special      do not add the post-processor's special tokens\n"
          "  --max-length N    truncate to N tokens (0 = off; default: as tokenizer.json says)\n"
          "  --pad-to N        pad to N tokens (0 = off; default: as tokenizer.json says)\n"
          "  --decode          also decode the ids back to text (special tokens skipped)\n");
}

typedef struct opts {
  bool json, decode;
  at_encode_params ep;
} opts;

static int emit(const at_tokenizer *t, at_tok_workspace *ws, const opts *o, const char *text,
                size_t len, const char *pair, size_t pair_len) {
  at_encoding e;
  at_status st = at_tokenizer_encode(t, ws, text, len, pair, pair_len, &o->ep, &e);
  if (st != AT_OK) {
    if (o->json) {
      json_t *err = json_pack("{s:s,s:s}", "error", at_strerror(st), "detail", at_last_error());
      char *s = json_dumps(err, JSON_COMPACT);
      printf("%s\n", s ? s : "{}");
      free(s);
      json_decref(err);
      return 1;
    }
    fprintf(stderr, "anytime tokenize: %s: %s\n", at_strerror(st), at_last_error());
    return 1;
  }
  if (!o->json) {
    printf("text:   %.*s\nids:   ", (int)len, text);
    for (size_t i = 0; i < e.n; i++) printf(" %d", e.ids[i]);
    printf("\ntokens:");
    for (size_t i = 0; i < e.n; i++) printf(" %s", e.tokens[i]);
    printf("\n");
    if (o->decode) {
      const char *d;
      if (at_tokenizer_decode(t, ws, e.ids, e.n, true, &d, NULL) == AT_OK) printf("decoded: %s\n", d);
    }
    return 0;
  }
  json_t *obj = json_object(), *ids = json_array(), *ty = json_array(), *am = json_array(),
         *sm = json_array(), *off = json_array(), *toks = json_array();
  for (size_t i = 0; i < e.n; i++) {
    json_array_append_new(ids, json_integer(e.ids[i]));
    json_array_append_new(ty, json_integer(e.type_ids[i]));
    json_array_append_new(am, json_integer(e.attention_mask[i]));
    json_array_append_new(sm, json_integer(e.special_tokens_mask[i]));
    json_array_append_new(off, json_pack("[i,i]", (json_int_t)e.offsets[i][0], (json_int_t)e.offsets[i][1]));
    json_array_append_new(toks, json_stringn(e.tokens[i], e.token_lens[i]));
  }
  json_object_set_new(obj, "ids", ids);
  json_object_set_new(obj, "type_ids", ty);
  json_object_set_new(obj, "attention_mask", am);
  json_object_set_new(obj, "special_tokens_mask", sm);
  json_object_set_new(obj, "offsets", off);
  json_object_set_new(obj, "tokens", toks);
  if (o->decode) {
    /* decoding reuses the workspace: copy what the encoding still needs first */
    int32_t *copy = malloc((e.n ? e.n : 1) * sizeof *copy);
    if (copy) {
      memcpy(copy, e.ids, e.n * sizeof *copy);
      const char *d;
      size_t dl;
      if (at_tokenizer_decode(t, ws, copy, e.n, true, &d, &dl) == AT_OK)
        json_object_set_new(obj, "decoded", json_stringn(d, dl));
      free(copy);
    }
  }
  char *s = json_dumps(obj, JSON_COMPACT | JSON_ENSURE_ASCII);
  printf("%s\n", s ? s : "{}");
  free(s);
  json_decref(obj);
  return 0;
}

static int run_jsonl(const at_tokenizer *t, at_tok_workspace *ws, const opts *o, const char *path) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "anytime tokenize: cannot open %s\n", path);
    return AT_EXIT_FAIL;
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  size_t lineno = 0;
  int bad = 0;
  while ((n = getline(&line, &cap, f)) >= 0) {
    lineno++;
    if (n == 0 || (n == 1 && line[0] == '\n')) continue;
    json_error_t err;
    json_t *v = json_loadb(line, (size_t)n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    if (!v) {
      fprintf(stderr, "anytime tokenize: %s:%zu: %s\n", path, lineno, err.text);
      bad = 1;
      break;
    }
    json_t *tx = json_is_object(v) ? json_object_get(v, "text") : v;
    json_t *pr = json_is_object(v) ? json_object_get(v, "pair") : NULL;
    if (!json_is_string(tx)) {
      fprintf(stderr, "anytime tokenize: %s:%zu: expected a string or {\"text\": string}\n", path, lineno);
      json_decref(v);
      bad = 1;
      break;
    }
    emit(t, ws, o, json_string_value(tx), json_string_length(tx),
         json_is_string(pr) ? json_string_value(pr) : NULL, json_is_string(pr) ? json_string_length(pr) : 0);
    json_decref(v);
  }
  free(line);
  if (f != stdin) fclose(f);
  return bad ? AT_EXIT_FAIL : AT_EXIT_OK;
}

int at_cli_tokenize(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return AT_EXIT_OK;
  }
  const char *path = NULL, *input = NULL;
  opts o = {.json = false, .decode = false, .ep = at_encode_default_params()};
  int first_text = argc;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--tokenizer") && i + 1 < argc) path = argv[++i];
    else if (!strcmp(a, "--input") && i + 1 < argc) { input = argv[++i]; o.json = true; }
    else if (!strcmp(a, "--json")) o.json = true;
    else if (!strcmp(a, "--decode")) o.decode = true;
    else if (!strcmp(a, "--no-special")) o.ep.add_special_tokens = false;
    else if (!strcmp(a, "--offsets") && i + 1 < argc) {
      const char *u = argv[++i];
      if (!strcmp(u, "bytes")) o.ep.offsets = AT_OFFSETS_BYTES;
      else if (!strcmp(u, "chars")) o.ep.offsets = AT_OFFSETS_CHARS;
      else { usage(stderr); return AT_EXIT_USAGE; }
    } else if (!strcmp(a, "--max-length") && i + 1 < argc) o.ep.max_length = atoi(argv[++i]);
    else if (!strcmp(a, "--pad-to") && i + 1 < argc) o.ep.pad_to = atoi(argv[++i]);
    else if (!strcmp(a, "--")) { first_text = i + 1; break; }
    else if (a[0] == '-' && a[1] == '-') { usage(stderr); return AT_EXIT_USAGE; }
    else { first_text = i; break; }
  }
  if (!path || (!input && first_text >= argc)) {
    usage(stderr);
    return AT_EXIT_USAGE;
  }
  at_tokenizer *t = NULL;
  at_tok_workspace *ws = NULL;
  at_status st = at_tokenizer_load(path, &t);
  if (st != AT_OK) return tools_report("tokenize", st);
  if ((st = at_tok_workspace_create(&ws)) != AT_OK) {
    at_tokenizer_destroy(t);
    return tools_report("tokenize", st);
  }
  int rc = AT_EXIT_OK;
  if (input) {
    rc = run_jsonl(t, ws, &o, input);
  } else {
    for (int i = first_text; i < argc; i++)
      if (emit(t, ws, &o, argv[i], strlen(argv[i]), NULL, 0)) rc = AT_EXIT_FAIL;
  }
  at_tok_workspace_destroy(ws);
  at_tokenizer_destroy(t);
  return rc;
}
