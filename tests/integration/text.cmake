# Tokenizer parity with Hugging Face tokenizers (tests/parity/parity.sh): the
# real library from npm (pinned in tests/node/package.json) against the real
# `anytime tokenize`, over the Pang & Lee corpora and the adversarial set.
# Needs Node and npm; fails (never skips) when the reference cannot run.
at_script_test(text_parity tests/parity/parity.sh)
set_tests_properties(text_parity PROPERTIES TIMEOUT 1200 LABELS "integration;parity")

# src/text/tk_compat.h against the installed utf8proc and the pinned HF
# tokenizers, over every Unicode code point (tests/parity/unicode/check_compat.sh).
at_script_test(text_unicode_compat tests/parity/unicode/check_compat.sh)
set_tests_properties(text_unicode_compat PROPERTIES TIMEOUT 900 LABELS "integration;parity")
