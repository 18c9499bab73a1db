# cmake/Grpc.cmake — the KServe V2 gRPC front (src/serve/grpc_server.c):
# grpc core's C API (Debian libgrpc-dev, pkg-config `grpc`) and protobuf-c
# (libprotobuf-c-dev). protoc-c turns src/serve/grpc_inference.proto into C
# in the build tree at build time; nothing generated is committed.
pkg_check_modules(GRPC REQUIRED IMPORTED_TARGET grpc)
pkg_check_modules(PROTOBUFC REQUIRED IMPORTED_TARGET libprotobuf-c)
find_program(PROTOC_C protoc-c REQUIRED)
set(AT_GRPC_GEN "${CMAKE_BINARY_DIR}/gen/serve")
file(MAKE_DIRECTORY "${AT_GRPC_GEN}")
add_custom_command(
  OUTPUT "${AT_GRPC_GEN}/grpc_inference.pb-c.c" "${AT_GRPC_GEN}/grpc_inference.pb-c.h"
  COMMAND "${PROTOC_C}" "--c_out=${AT_GRPC_GEN}" -I "${PROJECT_SOURCE_DIR}/src/serve"
          "${PROJECT_SOURCE_DIR}/src/serve/grpc_inference.proto"
  DEPENDS "${PROJECT_SOURCE_DIR}/src/serve/grpc_inference.proto"
  COMMENT "protoc-c grpc_inference.proto")
target_sources(anytime PRIVATE "${AT_GRPC_GEN}/grpc_inference.pb-c.c")
# generated code: our warning flags are not its author's
set_source_files_properties("${AT_GRPC_GEN}/grpc_inference.pb-c.c" PROPERTIES COMPILE_OPTIONS "-w")
target_include_directories(anytime PRIVATE "${AT_GRPC_GEN}")
target_link_libraries(anytime PUBLIC PkgConfig::GRPC PkgConfig::PROTOBUFC)
