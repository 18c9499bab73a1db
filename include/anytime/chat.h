/* anytime/chat.h — Hugging Face chat templates: messages to a prompt string.
 *
 * A chat template is the Jinja program a model ships (tokenizer_config.json
 * "chat_template", or chat_template.jinja) that turns a list of messages
 * into the exact text the model was trained on. anytime compiles and renders
 * it with its own small Jinja engine, which covers what chat templates use
 * and renders byte-identically to @huggingface/jinja (the engine of
 * transformers.js and the Hub), including its defaults: trim_blocks and
 * lstrip_blocks on, one trailing newline of the template dropped, undefined
 * variables rendered as nothing. docs/chat_templates.md lists the subset
 * and what is refused; tests/parity/chat_templates.sh checks the real
 * templates of several model families against @huggingface/jinja.
 *
 * Ownership: at_chat_template_compile/_load return a template the caller
 * frees with at_chat_template_destroy() (NULL is a no-op). Strings returned
 * by _bos/_eos are owned by the template. at_chat_template_render's *out is
 * malloc'd and freed by the caller with free().
 *
 * Thread-safety: a compiled template is immutable; any number of threads may
 * render it (and read its bos/eos) at once. Each render has its own memory.
 *
 * Errors: every failing call returns a status and sets at_last_error() on
 * the calling thread.
 */
#ifndef ANYTIME_CHAT_H
#define ANYTIME_CHAT_H

#include "anytime/api.h"

#include <stddef.h>

#include "anytime/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AT_CHAT_TEMPLATE_MAX_SOURCE ((size_t)1 << 20) /* largest template accepted */

typedef struct at_chat_template at_chat_template;

/* Compile `len` bytes of template source (need not be NUL-terminated).
 * Returns AT_OK; AT_ERR_INVALID_ARG (NULL argument); AT_ERR_PARSE with
 * at_last_error() naming line:column of the problem (a syntax error, or a tag
 * anytime does not support such as {% include %} or {% filter %});
 * AT_ERR_LIMIT (source over AT_CHAT_TEMPLATE_MAX_SOURCE, or nested deeper
 * than the parser's bound); AT_ERR_NOMEM. */
AT_API at_status at_chat_template_compile(const char *src, size_t len, at_chat_template **out);

/* Find a model directory's template: tokenizer_config.json "chat_template"
 * (a string, or a list of {"name", "template"}: the one named "default", else
 * the first), else chat_template.jinja beside it. Also reads bos_token and
 * eos_token (a string or an {"content": ...} object) from
 * tokenizer_config.json when present.
 * Returns AT_OK; AT_ERR_INVALID_ARG (NULL argument); AT_ERR_NOT_FOUND (the
 * directory has no template; the message says which files were looked at);
 * AT_ERR_PARSE (tokenizer_config.json is not JSON, chat_template has the
 * wrong type, or the template does not compile); AT_ERR_IO; AT_ERR_LIMIT;
 * AT_ERR_NOMEM. */
AT_API at_status at_chat_template_load(const char *model_dir, at_chat_template **out);

/* The model's BOS / EOS token text from tokenizer_config.json, "" when
 * unknown (always "" for a template from at_chat_template_compile). Owned by
 * the template. */
AT_API const char *at_chat_template_bos(const at_chat_template *t);
AT_API const char *at_chat_template_eos(const at_chat_template *t);

/* Free a template. NULL is a no-op. */
AT_API void at_chat_template_destroy(at_chat_template *t);

/* Render with a context given as the text of a JSON object, e.g.
 *   {"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":true,
 *    "bos_token":"<s>","eos_token":"</s>"}
 * Keys of the object become top-level variables (they may not redefine the
 * built-ins true, false, none, True, False, None, range, namespace,
 * raise_exception, strftime_now). bos_token/eos_token are NOT added
 * implicitly: pass at_chat_template_bos()/_eos() in the context if the
 * template uses them. On AT_OK *out is a malloc'd NUL-terminated string the
 * caller frees, *out_len (may be NULL) its length (the output holds a NUL byte
 * only if the template source or a context string, "\u0000", does); on
 * failure *out is NULL.
 * Returns AT_OK; AT_ERR_INVALID_ARG (NULL argument; the context is not a JSON
 * object; a runtime error in the template such as an unknown filter or an
 * operator on undefined; raise_exception(msg), with at_last_error() =
 * "chat template: " + msg); AT_ERR_LIMIT (output over max_output bytes, more
 * than a fixed number of loop iterations, macro calls nested too deep, or the
 * render's memory cap reached); AT_ERR_NOMEM.
 * Thread-safe: see above. strftime_now() reads the local clock. */
AT_API at_status at_chat_template_render(const at_chat_template *t, const char *context_json, size_t len,
                                         size_t max_output, char **out, size_t *out_len);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_CHAT_H */
