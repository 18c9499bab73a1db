# Chat templates (src/chat): byte-for-byte parity with @huggingface/jinja over
# the real templates of eleven model families and
# 42 cases of @huggingface/jinja's end-to-end suite (tests/parity/chat_templates.sh).
# chat_template_render is a test-only driver over the public API. Needs Node
# and npm; fails (never skips) when the reference cannot run.
add_executable(chat_template_render "${PROJECT_SOURCE_DIR}/tests/parity/chat_template_render.c")
target_link_libraries(chat_template_render PRIVATE anytime PkgConfig::JANSSON)
at_script_test(chat_template_parity tests/parity/chat_templates.sh)
set_property(TEST chat_template_parity APPEND PROPERTY ENVIRONMENT
             "ANYTIME_CHAT_RENDER=$<TARGET_FILE:chat_template_render>")
set_tests_properties(chat_template_parity PROPERTIES TIMEOUT 300 LABELS "integration;parity")
