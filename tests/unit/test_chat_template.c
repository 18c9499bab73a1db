/* tests/unit/test_chat_template.c — the chat-template engine (anytime/chat.h)
 * case by case: whitespace control and the trim_blocks/lstrip_blocks defaults,
 * statements, expressions, filters, tests, methods, undefined values, the
 * errors (line:column of syntax errors, raise_exception, the limits), loading
 * from a model directory (string and list chat_template, chat_template.jinja,
 * AddedToken bos/eos) and renders from several threads at once. Expected
 * strings are written from Jinja's semantics as @huggingface/jinja implements
 * them; tests/parity/chat_templates.sh checks real templates against it. */
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "anytime/chat.h"
#include "testutil.h"

#define MSGS                                                                                       \
  "\"messages\":[{\"role\":\"system\",\"content\":\"sys\"},{\"role\":\"user\",\"content\":\"hi\"}" \
  "]"

/* Render tpl with ctx (a JSON object); returns the malloc'd output or NULL
 * with *st set. */
static char *render_st(const char *tpl, const char *ctx, size_t max, at_status *st) {
  at_chat_template *t = NULL;
  *st = at_chat_template_compile(tpl, strlen(tpl), &t);
  if (*st != AT_OK) return NULL;
  char *out = NULL;
  size_t n = 0;
  *st = at_chat_template_render(t, ctx, strlen(ctx), max, &out, &n);
  if (*st == AT_OK) assert_int_equal(n, strlen(out));
  at_chat_template_destroy(t);
  return out;
}

static void expect(const char *tpl, const char *ctx, const char *want) {
  at_status st;
  char *out = render_st(tpl, ctx, 1 << 20, &st);
  if (st != AT_OK) fail_msg("template %s: %s: %s", tpl, at_status_name(st), at_last_error());
  if (strcmp(out, want) != 0) fail_msg("template %s\n  got  [%s]\n  want [%s]", tpl, out, want);
  free(out);
}

static void expect_fail(const char *tpl, const char *ctx, at_status want, const char *msg_part) {
  at_status st;
  char *out = render_st(tpl, ctx, 1 << 20, &st);
  if (st != want)
    fail_msg("template %s: got %s (%s), want %s", tpl, at_status_name(st), at_last_error(),
             at_status_name(want));
  assert_null(out);
  if (msg_part && !strstr(at_last_error(), msg_part))
    fail_msg("template %s: error [%s] lacks [%s]", tpl, at_last_error(), msg_part);
}

static void test_text_and_whitespace(void **state) {
  (void)state;
  expect("plain text", "{}", "plain text");
  expect("a\n", "{}", "a");     /* one trailing newline dropped */
  expect("a\n\n", "{}", "a\n"); /* only one */
  expect("{{ 'x' }}  {{- 'y' }}", "{}", "xy");
  expect("{{ 'x' -}}  \n {{ 'y' }}", "{}", "xy");
  expect("a {%- if true %} b {% endif -%} c", "{}", "a b c");
  expect("{# comment #}x{#- c -#}  y", "{}", "xy");
  /* trim_blocks: the newline after a block tag goes; lstrip_blocks: the
   * indentation before one goes */
  expect("{% if true %}\n  yes\n{% endif %}\nend", "{}", "  yes\nend");
  expect("line\n    {% if true %}x{% endif %}", "{}", "line\nx");
  expect("{{ 'a' }}\nb", "{}", "a\nb"); /* not after }} */
  expect("x\n\t{# c #}\ny", "{}", "x\ny");
  expect("{% generation %}g{% endgeneration %}", "{}", "g");
}

static void test_loops(void **state) {
  (void)state;
  const char *ctx = "{\"xs\":[\"a\",\"b\",\"c\"]}";
  expect("{% for x in xs %}{{ loop.index }}{{ x }}{{ loop.index0 }}{% endfor %}", ctx, "1a02b13c2");
  expect(
      "{% for x in xs %}{% if loop.first %}[{% endif %}{{ x }}{% if not loop.last %},{% else %}]{% "
      "endif %}{% endfor %}",
      ctx, "[a,b,c]");
  expect("{% for x in xs %}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }} {% endfor %}",
         ctx, "332 321 310 ");
  expect("{% for x in xs if x != 'b' %}{{ x }}{{ loop.index }}{% endfor %}", ctx, "a1c2");
  expect("{% for x in [] %}no{% else %}empty{% endfor %}", "{}", "empty");
  expect("{% for x in xs %}{% if x == 'b' %}{% break %}{% endif %}{{ x }}{% endfor %}", ctx, "a");
  expect("{% for x in xs %}{% if x == 'b' %}{% continue %}{% endif %}{{ x }}{% endfor %}", ctx,
         "ac");
  expect("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}", "{}",
         "a=1;b=2;");
  expect("{% for k in {'a': 1, 'b': 2} %}{{ k }}{% endfor %}", "{}", "ab");
  expect(
      "{% for i in range(3) %}{{ i }}{% endfor %}{% for i in range(1, 7, 2) %}{{ i }}{% endfor %}",
      "{}", "012135");
  expect("{% for x in xs %}{{ loop.previtem }}{{ loop.nextitem }}|{% endfor %}", ctx, "b|ac|b|");
  /* a set inside a loop does not leak out; a namespace does */
  expect("{% set n = 0 %}{% for x in xs %}{% set n = n + 1 %}{% endfor %}{{ n }}", ctx, "0");
  expect(
      "{% set ns = namespace(n=0) %}{% for x in xs %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n "
      "}}",
      ctx, "3");
}

static void test_statements(void **state) {
  (void)state;
  expect("{% if 0 %}a{% elif '' %}b{% elif [1] %}c{% else %}d{% endif %}", "{}", "c");
  expect("{% if none %}a{% else %}b{% endif %}", "{}", "b");
  expect("{% set a, b = [1, 2] %}{{ b }}{{ a }}", "{}", "21");
  expect("{% set x %}in {{ 'block' }}{% endset %}[{{ x }}]", "{}", "[in block]");
  expect(
      "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
      "{{ greet('Ann') }} {{ greet('Bo', punct='?') }} {{ greet(name='Cy') }}",
      "{}", "Hi Ann! Hi Bo? Hi Cy!");
  /* {% call %}: the block is caller(), with its own parameters, seeing the
   * variables where it stands (not the macro's) */
  expect(
      "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}"
      "{% call wrap('b') %}bold{% endcall %}",
      "{}", "<b>bold</b>");
  expect(
      "{% macro each(items) %}{% for i in items %}{{ caller(i, loop.index) }};{% endfor %}"
      "{% endmacro %}{% call(item, n) each([1, 2, 3]) %}{{ n }}={{ item * 10 }}{% endcall %}",
      "{}", "1=10;2=20;3=30;");
  expect(
      "{% set x = 'outer' %}{% macro m() %}{% set x = 'inner' %}[{{ caller() }}]{% endmacro %}"
      "{% call m() %}{{ x }}{% endcall %}",
      "{}", "[outer]");
  expect("{% set ns = namespace(a=1, b='x') %}{% set ns.a = ns.a * 10 %}{{ ns.a }}{{ ns.b }}", "{}",
         "10x");
}

static void test_expressions(void **state) {
  (void)state;
  expect("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ 7 % 3 }} {{ 2 ** 10 }} {{ -3 + 1 }}",
         "{}", "7 9 3 1 1024 -2");
  expect("{{ 3 / 2 }} {{ 4 / 2 }} {{ 1.5 + 1 }} {{ 0.1 + 0.2 }} {{ 1.0 }}", "{}",
         "1.5 2.0 2.5 0.30000000000000004 1.0");
  expect("{{ 'a' ~ 1 ~ true }} {{ 'a' + 'b' }} {{ 'n' + 2 }}", "{}", "a1true ab n2");
  expect("{{ 1 == 1.0 }} {{ 'a' != 'b' }} {{ 2 < 3 }} {{ 3 >= 4 }}", "{}", "true true true false");
  expect("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }}", "{}",
         "true true true true");
  expect("{{ true and 'x' }}|{{ false or 'y' }}|{{ not 0 }}|{{ '' or [] }}", "{}", "x|y|true|[]");
  expect("{{ 'yes' if 1 > 0 else 'no' }} {{ 'yes' if 0 else 'no' }}[{{ 'x' if false }}]", "{}",
         "yes no[]");
  expect("{{ [1, 'a', none, true, 2.5] }} {{ {'k': [1, {'n': none}]} }}", "{}",
         "[1, \"a\", null, true, 2.5] {\"k\": [1, {\"n\": null}]}");
  expect("{{ none }}[{{ undefined_thing }}]{{ True }}{{ False }}", "{}", "[]truefalse");
  expect("{{ 'it''s' }} {{ \"a\\nb\\t\\\"q\\\"\" }} {{ 'x' 'y' }}", "{}", "its a\nb\t\"q\" xy");
}

static void test_subscripts(void **state) {
  (void)state;
  const char *ctx = "{" MSGS ",\"s\":\"h\xc3\xa9llo\"}";
  expect("{{ messages[0]['content'] }} {{ messages[1].content }} {{ messages[-1].role }}", ctx,
         "sys hi user");
  expect(
      "{{ messages[1:] | length }} {{ messages[:1][0].role }} {{ (messages | list)[::-1][0].role "
      "}}",
      ctx, "1 system user");
  expect("{{ s[1] }}{{ s[::-1] }} {{ s[1:3] }} {{ s[-2:] }} {{ [1, 2, 3, 4][1::2] }}", ctx,
         "\xc3\xa9oll\xc3\xa9h \xc3\xa9l lo [2, 4]");
  expect("[{{ messages[5] }}][{{ messages[0].nope }}][{{ nope.deeper.still }}]", ctx, "[][][]");
  /* keys of the JSON context in JavaScript's order: array indices first, ascending */
  expect("{{ d }}", "{\"d\":{\"b\":1,\"10\":2,\"2\":3,\"01\":4,\"a\":5,\"0\":6}}",
         "{\"0\": 6, \"2\": 3, \"10\": 2, \"b\": 1, \"01\": 4, \"a\": 5}");
}

/* maps of 16 keys and more are hashed: lookups, replacement, insertion order */
static void test_big_maps(void **state) {
  (void)state;
  char ctx[8192];
  size_t n = (size_t)snprintf(ctx, sizeof ctx, "{\"d\":{");
  for (int i = 0; i < 300; i++)
    n += (size_t)snprintf(ctx + n, sizeof ctx - n, "%s\"k%d\":%d", i ? "," : "", i, i);
  snprintf(ctx + n, sizeof ctx - n, "}}");
  expect(
      "{% set ns = namespace(s=0) %}{% for k in d %}{% set ns.s = ns.s + d[k] %}{% endfor %}"
      "{{ ns.s }} {{ d.k0 }} {{ d['k299'] }} {{ d.k17 }} [{{ d.k300 }}] {{ 'k150' in d }} {{ "
      "d.keys()[:3] }}"
      "{{ (d.keys() | list)[299] }}",
      ctx, "44850 0 299 17 [] true [\"k0\", \"k1\", \"k2\"]k299");
  /* a namespace growing past the index threshold, attributes overwritten */
  expect(
      "{% set ns = namespace() %}{% for i in range(40) %}{% set ns.x = i %}{% endfor %}{{ ns.x }}"
      "{% set d = {} %}{% set ns2 = "
      "namespace(a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9,j=10,k=11,l=12,m=13,n=14,"
      "o=15,p=16,q=17,r=18) %}{% set ns2.q = 'Q' %}{% set ns2.z = 'Z' %}{{ ns2.q }}{{ ns2.r }}{{ "
      "ns2.z }}{{ ns2.a }}",
      "{}", "39Q18Z1");
}

static void test_tests(void **state) {
  (void)state;
  const char *ctx =
      "{\"d\":{\"a\":1},\"l\":[1],\"s\":\"x\",\"n\":null,\"t\":true,\"i\":3,\"f\":1.5}";
  expect(
      "{{ d is mapping }}{{ l is mapping }}{{ l is iterable }}{{ s is iterable }}{{ i is iterable "
      "}}",
      ctx, "truefalsetruetruefalse");
  expect(
      "{{ s is string }}{{ i is number }}{{ f is number }}{{ s is number }}{{ n is none }}{{ i is "
      "none }}",
      ctx, "truetruetruefalsetruefalse");
  expect("{{ x is defined }}{{ x is not defined }}{{ s is defined }}{{ x is undefined }}", ctx,
         "falsetruetruetrue");
  expect("{{ t is true }}{{ t is false }}{{ i is odd }}{{ i is even }}{{ t is boolean }}", ctx,
         "truefalsetruefalsetrue");
}

static void test_filters(void **state) {
  (void)state;
  expect(
      "[{{ '  a b  ' | trim }}] {{ 'ab' | upper }} {{ 'AB' | lower }} {{ 'hello wORLD' | title }} "
      "{{ 'hello World' | capitalize }}",
      "{}", "[a b] AB ab Hello WORLD Hello World");
  expect(
      "{{ [1, 2, 3] | length }} {{ 'h\xc3\xa9' | length }} {{ {'a': 1} | length }} {{ [3, 4] | "
      "first }} "
      "{{ [3, 4] | last }}",
      "{}", "3 2 1 3 4");
  expect("{{ ['a', 'b'] | join(', ') }} {{ ['a', 1, 2.0] | join }} {{ 'abc' | join('-') }}", "{}",
         "a, b a12 a-b-c");
  expect(
      "{{ x | default('d') }} {{ 'v' | default('d') }} {{ '' | default('d', true) }} {{ none | "
      "default('d') }}",
      "{}", "d v d ");
  expect(
      "{{ 'a-b-a' | replace('a', 'x') }} {{ 42 | string }} {{ '42' | int + 1 }} {{ 'x' | int }} "
      "{{ 3.7 | int }}",
      "{}", "x-b-x 42 43 0 3");
  expect("{% for k, v in {'b': 1, 'a': 2} | items %}{{ k }}{{ v }}{% endfor %} {{ [1, 2] | list }}",
         "{}", "b1a2 [1, 2]");
  expect("{{ '<a href=\"x\">&</a>' | e }} {{ '<b>' | escape }} {{ '<b>' | safe }}", "{}",
         "&lt;a href=&#34;x&#34;&gt;&amp;&lt;/a&gt; &lt;b&gt; <b>");
  expect("{{ {'k': 'v', 'n': [1, 2.5, true, none]} | tojson }}", "{}",
         "{\"k\": \"v\", \"n\": [1, 2.5, true, null]}");
  expect("{{ {'k': [1, 'x'], 'n': {'a': none}} | tojson(separators=(',', ':')) }}", "{}",
         "{\"k\":[1,\"x\"],\"n\":{\"a\":null}}");
  expect("{{ {'k': [1, {}], 'e': []} | tojson(indent=2) }}", "{}",
         "{\n  \"k\": [\n    1,\n    {}\n  ],\n  \"e\": []\n}");
  expect("{{ 'q\"\\\\\n\x01\xc3\xa9' | tojson }}", "{}", "\"q\\\"\\\\\\n\\u0001\xc3\xa9\"");
  const char *tools =
      "{\"ms\":[{\"role\":\"user\",\"c\":\"a\"},{\"role\":\"tool\",\"c\":\"b\"},{\"role\":\"user\","
      "\"c\":\"c\"}]}";
  expect(
      "{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='c') | join }} "
      "{{ ms | rejectattr('role', 'equalto', 'user') | map(attribute='c') | join }}",
      tools, "ac b");
  expect("{{ 'a\nb\n\nc' | indent(2) }}|{{ 'a\nb' | indent(2, true) }}", "{}",
         "a\n  b\n\n  c|  a\n  b");
}

static void test_methods(void **state) {
  (void)state;
  expect("[{{ '  x  '.strip() }}][{{ '  x  '.lstrip() }}][{{ '  x  '.rstrip() }}]", "{}",
         "[x][x  ][  x]");
  expect("{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }}", "{}",
         "[\"a\", \"b\", \"\", \"c\"] [\"a\", \"b\"] [\"a\", \"b c\"]");
  expect("{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith('bc') }}{{ 'abc'.startswith(('x', 'a')) }}",
         "{}", "truetruetrue");
  expect(
      "{{ 'Ab'.upper() }}{{ 'Ab'.lower() }}{{ 'ab cd'.title() }}{{ 'aaa'.replace('a', 'b', 2) }}",
      "{}", "ABabAb Cdbba");
  expect(
      "{{ d.get('a') }} {{ d.get('z', 'dflt') }} [{{ d.get('z') }}] {{ d.keys() }} {{ d.values() "
      "}} "
      "{{ d.items() }}",
      "{\"d\":{\"a\":1,\"b\":\"x\"}}",
      "1 dflt [] [\"a\", \"b\"] [1, \"x\"] [[\"a\", 1], [\"b\", \"x\"]]");
}

static void test_unicode_passthrough(void **state) {
  (void)state;
  expect("{{ messages[0].content }}|\xe2\x80\x94 literal \xf0\x9f\x98\x80",
         "{\"messages\":[{\"content\":\"\xe6\x97\xa5\xe6\x9c\xac "
         "\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7 e\xcc\x81\"}]}",
         "\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7 "
         "e\xcc\x81|\xe2\x80\x94 literal \xf0\x9f\x98\x80");
  /* JavaScript's \s includes NBSP and the ideographic space */
  expect("[{{ '\xc2\xa0 x \xe3\x80\x80' | trim }}]", "{}", "[x]");
}

static void test_errors(void **state) {
  (void)state;
  at_chat_template *t = NULL;
  const char *bad = "line one\n{% if x %}\n  {{ 1 + }}\n{% endif %}";
  assert_int_equal(at_chat_template_compile(bad, strlen(bad), &t), AT_ERR_PARSE);
  assert_null(t);
  assert_non_null(strstr(at_last_error(), "line 3:"));
  const char *open = "a\n{% for x in y %}never closed";
  assert_int_equal(at_chat_template_compile(open, strlen(open), &t), AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "line 2:1"));
  assert_non_null(strstr(at_last_error(), "endfor"));
  const char *unsup = "{% include 'x' %}";
  assert_int_equal(at_chat_template_compile(unsup, strlen(unsup), &t), AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "not supported"));
  const char *unterminated = "{{ 'abc }}";
  assert_int_equal(at_chat_template_compile(unterminated, strlen(unterminated), &t), AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "line 1:4"));
  assert_int_equal(at_chat_template_compile(NULL, 0, &t), AT_ERR_INVALID_ARG);

  expect_fail("{{ raise_exception('Roles must alternate') }}", "{}", AT_ERR_INVALID_ARG,
              "chat template: Roles must alternate");
  assert_string_equal(at_last_error(), "chat template: Roles must alternate");
  expect_fail("{{ x + 1 }}", "{}", AT_ERR_INVALID_ARG, "undefined");
  expect_fail("line 1\n  {{ messages | nosuchfilter }}", "{}", AT_ERR_INVALID_ARG, "line 2:");
  expect_fail("{{ 'a' | nosuchfilter }}", "{}", AT_ERR_INVALID_ARG, "nosuchfilter");
  expect_fail("{{ 1 is nosuchtest }}", "{}", AT_ERR_INVALID_ARG, "nosuchtest");
  /* found by fuzz_chat_template: the message of a failing odd/even test */
  expect_fail("{{ (x is even).startswith('u') }}", "{}", AT_ERR_INVALID_ARG,
              "cannot test a undefined with even");
  expect_fail("{{ x }}", "[1, 2]", AT_ERR_INVALID_ARG, "JSON object");
  expect_fail("{{ x }}", "{bad json", AT_ERR_INVALID_ARG, "JSON object");
  expect_fail("{{ true }}", "{\"true\": 1}", AT_ERR_INVALID_ARG, "built-in");
  expect_fail("{% break %}", "{}", AT_ERR_INVALID_ARG, "outside a loop");
  /* found by fuzz_chat_template (2026-12-04, UBSan): -0 // 0 made a NaN "integer" that
   * indexed a list (a NaN converted to size_t); division by zero is an error, as in Python */
  expect_fail("j{{[9//0] [ -0//0] [1~-9//0] }}", "{}", AT_ERR_INVALID_ARG, "division by zero");
  expect_fail("{{ [9][-0 // 0] }}", "{}", AT_ERR_INVALID_ARG, "division by zero");
  expect_fail("{{ 1 / 0 }}", "{}", AT_ERR_INVALID_ARG, "division by zero");
  expect_fail("{{ 1.5 // 0.0 }}", "{}", AT_ERR_INVALID_ARG, "division by zero");
  expect_fail("{{ 7 % 0 }}", "{}", AT_ERR_INVALID_ARG, "division by zero");
  /* an integer past a double's range (inf - inf would be a NaN index) */
  expect_fail("{% set x = 10 ** 300 %}{{ [1][x * x - x * x] }}", "{}", AT_ERR_INVALID_ARG,
              "integer result is too large");
}

static void test_limits(void **state) {
  (void)state;
  at_status st;
  char *out = render_st("{% for i in range(100) %}0123456789{% endfor %}", "{}", 999, &st);
  assert_int_equal(st, AT_ERR_LIMIT);
  assert_null(out);
  assert_non_null(strstr(at_last_error(), "999"));
  out = render_st("{% for i in range(100) %}0123456789{% endfor %}", "{}", 1000, &st);
  assert_int_equal(st, AT_OK);
  assert_int_equal(strlen(out), 1000);
  free(out);
  expect_fail("{% for i in range(2000000) %}{% endfor %}", "{}", AT_ERR_LIMIT, NULL);
  expect_fail(
      "{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(10) %}{% endfor %}"
      "{% endfor %}{% endfor %}",
      "{}", AT_ERR_LIMIT, NULL); /* iterations or memory, whichever first */
  expect_fail("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "{}", AT_ERR_LIMIT,
              "deeper");
  expect_fail("{% set ns = namespace(x=1) %}{% set ns.x = ns %}{{ ns }}", "{}", AT_ERR_LIMIT,
              "nests");
  /* parser nesting is bounded: 500 parentheses */
  char deep[1200];
  size_t n = 0;
  n += (size_t)snprintf(deep + n, sizeof deep - n, "{{ ");
  for (int i = 0; i < 500; i++) deep[n++] = '(';
  deep[n++] = '1';
  for (int i = 0; i < 500; i++) deep[n++] = ')';
  n += (size_t)snprintf(deep + n, sizeof deep - n, " }}");
  at_chat_template *t = NULL;
  assert_int_equal(at_chat_template_compile(deep, n, &t), AT_ERR_LIMIT);
  assert_null(t);
}

/* ---- loading --------------------------------------------------------------------- */
static void write_file(const char *dir, const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void remove_dir(const char *dir) {
  const char *names[] = {"tokenizer_config.json", "chat_template.jinja"};
  char path[512];
  for (size_t i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
}

static char *render_loaded(at_chat_template *t, const char *ctx) {
  char *out = NULL;
  assert_int_equal(at_chat_template_render(t, ctx, strlen(ctx), 4096, &out, NULL), AT_OK);
  return out;
}

static void test_load(void **state) {
  (void)state;
  char dir[] = "/tmp/anytime-chat-XXXXXX";
  assert_non_null(mkdtemp(dir));
  at_chat_template *t = NULL;

  /* nothing there */
  assert_int_equal(at_chat_template_load(dir, &t), AT_ERR_NOT_FOUND);
  assert_non_null(strstr(at_last_error(), "no chat template"));
  write_file(dir, "tokenizer_config.json", "{\"bos_token\": \"<s>\"}");
  assert_int_equal(at_chat_template_load(dir, &t), AT_ERR_NOT_FOUND);

  /* a string template, AddedToken objects for bos/eos */
  write_file(
      dir, "tokenizer_config.json",
      "{\"chat_template\": \"{{ bos_token }}{{ messages[0].content }}{{ eos_token }}\","
      " \"bos_token\": {\"__type\": \"AddedToken\", \"content\": \"<s>\", \"lstrip\": false},"
      " \"eos_token\": \"</s>\"}");
  assert_int_equal(at_chat_template_load(dir, &t), AT_OK);
  assert_string_equal(at_chat_template_bos(t), "<s>");
  assert_string_equal(at_chat_template_eos(t), "</s>");
  char *out = render_loaded(
      t, "{\"messages\":[{\"content\":\"x\"}],\"bos_token\":\"<s>\",\"eos_token\":\"</s>\"}");
  assert_string_equal(out, "<s>x</s>");
  free(out);
  at_chat_template_destroy(t);

  /* the list form: "default" wins, wherever it is */
  write_file(dir, "tokenizer_config.json",
             "{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"TOOLS\"},"
             " {\"name\": \"default\", \"template\": \"DEFAULT\"}]}");
  assert_int_equal(at_chat_template_load(dir, &t), AT_OK);
  out = render_loaded(t, "{}");
  assert_string_equal(out, "DEFAULT");
  free(out);
  assert_string_equal(at_chat_template_bos(t), "");
  at_chat_template_destroy(t);
  /* ... else the first */
  write_file(dir, "tokenizer_config.json",
             "{\"chat_template\": [{\"name\": \"a\", \"template\": \"FIRST\"}, {\"name\": \"b\", "
             "\"template\": \"B\"}]}");
  assert_int_equal(at_chat_template_load(dir, &t), AT_OK);
  out = render_loaded(t, "{}");
  assert_string_equal(out, "FIRST");
  free(out);
  at_chat_template_destroy(t);

  /* chat_template.jinja beside a config without one */
  write_file(dir, "tokenizer_config.json", "{\"eos_token\": {\"content\": \"<|im_end|>\"}}");
  write_file(dir, "chat_template.jinja", "{% for m in messages %}<{{ m.role }}>{% endfor %}\n");
  assert_int_equal(at_chat_template_load(dir, &t), AT_OK);
  assert_string_equal(at_chat_template_eos(t), "<|im_end|>");
  out = render_loaded(t, "{\"messages\":[{\"role\":\"user\"},{\"role\":\"assistant\"}]}");
  assert_string_equal(out, "<user><assistant>");
  free(out);
  at_chat_template_destroy(t);

  /* a wrong type and a template that does not compile are parse errors */
  write_file(dir, "tokenizer_config.json", "{\"chat_template\": 42}");
  assert_int_equal(at_chat_template_load(dir, &t), AT_ERR_PARSE);
  write_file(dir, "tokenizer_config.json", "{\"chat_template\": \"{% if %}\"}");
  assert_int_equal(at_chat_template_load(dir, &t), AT_ERR_PARSE);
  write_file(dir, "tokenizer_config.json", "not json");
  assert_int_equal(at_chat_template_load(dir, &t), AT_ERR_PARSE);
  assert_null(t);
  assert_int_equal(at_chat_template_load(NULL, &t), AT_ERR_INVALID_ARG);
  at_chat_template_destroy(NULL);
  remove_dir(dir);
}

/* ---- threads ------------------------------------------------------------------------ */
typedef struct job {
  const at_chat_template *t;
  int id, bad;
} job;

static void *render_many(void *arg) {
  job *j = arg;
  for (int i = 0; i < 200; i++) {
    char ctx[128], want[128];
    snprintf(ctx, sizeof ctx, "{\"messages\":[{\"role\":\"user\",\"content\":\"t%d-%d\"}]}", j->id,
             i);
    snprintf(want, sizeof want, "<|im_start|>user\nt%d-%d<|im_end|>\n", j->id, i);
    char *out = NULL;
    if (at_chat_template_render(j->t, ctx, strlen(ctx), 1024, &out, NULL) != AT_OK ||
        strcmp(out, want) != 0)
      j->bad++;
    free(out);
  }
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  const char *src =
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}";
  at_chat_template *t = NULL;
  assert_int_equal(at_chat_template_compile(src, strlen(src), &t), AT_OK);
  pthread_t th[4];
  job jobs[4];
  for (int i = 0; i < 4; i++) {
    jobs[i] = (job){t, i, 0};
    assert_int_equal(pthread_create(&th[i], NULL, render_many, &jobs[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    assert_int_equal(jobs[i].bad, 0);
  }
  at_chat_template_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_text_and_whitespace),
      cmocka_unit_test(test_loops),
      cmocka_unit_test(test_statements),
      cmocka_unit_test(test_expressions),
      cmocka_unit_test(test_subscripts),
      cmocka_unit_test(test_big_maps),
      cmocka_unit_test(test_tests),
      cmocka_unit_test(test_filters),
      cmocka_unit_test(test_methods),
      cmocka_unit_test(test_unicode_passthrough),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_limits),
      cmocka_unit_test(test_load),
      cmocka_unit_test(test_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
