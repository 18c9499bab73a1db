# The committed default models against their cards and recorded outputs.
at_unit_test(test_models_reference tests/unit/test_models_reference.c)
target_link_libraries(test_models_reference PRIVATE PkgConfig::JANSSON m)
