# Tests of the comm component: dsc_runtime_test(Name File.cpp ...) and add_test().
