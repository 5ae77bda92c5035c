# Tests of the io component: dsc_runtime_test(Name File.cpp ...) and add_test().
dsc_runtime_test(SafeTensorsTest SafeTensorsTest.cpp)
dsc_runtime_test(TokenDataTest TokenDataTest.cpp)
dsc_runtime_test(SampleDataTest SampleDataTest.cpp)

# Files written by PyTorch through python/dsc/safetensors.py: the fixture
# runs Inputs/make_safetensors.py (Debian's python3-torch, as the exporter
# tests use), then SafeTensorsPythonTest reads its output. The test is added
# by hand rather than discovered, so that it can carry the fixture and the
# directory; run by hand without DSC_SAFETENSORS_FROM_PYTHON it skips.
cmake_path(GET PROJECT_SOURCE_DIR PARENT_PATH dsc_source_dir)
set(safetensors_from_python ${CMAKE_CURRENT_BINARY_DIR}/safetensors-from-python)
add_test(NAME SafeTensorsPythonInputs
  COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${dsc_source_dir}/python
          /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/Inputs/make_safetensors.py
          ${safetensors_from_python})
set_tests_properties(SafeTensorsPythonInputs PROPERTIES
  FIXTURES_SETUP SafeTensorsFromPython)

add_executable(SafeTensorsPythonTest SafeTensorsPythonTest.cpp)
target_link_libraries(SafeTensorsPythonTest PRIVATE dsc_runtime GTest::gtest GTest::gtest_main)
add_test(NAME SafeTensorsPythonTest COMMAND SafeTensorsPythonTest)
set_tests_properties(SafeTensorsPythonTest PROPERTIES
  ENVIRONMENT DSC_SAFETENSORS_FROM_PYTHON=${safetensors_from_python}
  FIXTURES_REQUIRED SafeTensorsFromPython)
dsc_runtime_test(OutputFileTest OutputFileTest.cpp)
dsc_runtime_test(NvmeStoreTest NvmeStoreTest.cpp)
