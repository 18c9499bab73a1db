# Unit tests for src/chat (the chat-template engine behind anytime/chat.h).
# Parity with @huggingface/jinja over real templates: tests/integration/chat.cmake.
at_unit_test(test_chat_template tests/unit/test_chat_template.c)
