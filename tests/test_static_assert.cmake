# A configuration that makes no sense must fail to compile with a message naming the parameter.
# Run as: cmake -DCXX=... -DINC=... -DCASE=... -DEXPECT=... -P test_static_assert.cmake
file(WRITE "${OUT}/bad_config_${CASE}.cpp"
     "#include \"microattn/microattn.hpp\"\nusing Bad = microattn::Config<${CASE}>;\nint main() { return static_cast<int>(Bad::kGroup); }\n")
execute_process(COMMAND ${CXX} -std=c++17 -fsyntax-only -I${INC} -DMICROATTN_FORCE_SCALAR=1 "${OUT}/bad_config_${CASE}.cpp"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "Config<${CASE}> compiled, but it must not")
endif()
string(FIND "${err}" "${EXPECT}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "Config<${CASE}> failed without the message '${EXPECT}':\n${err}")
endif()
message(STATUS "Config<${CASE}>: rejected with '${EXPECT}'")
