# Integration tests for the measurement commands: `anytime profile` and
# `anytime sweep` against the real binary and server.
at_script_test(profile tests/integration/profile.sh)
at_script_test(sweep tests/integration/sweep.sh)
