# Tests of the io component: dsc_runtime_test(Name File.cpp ...) and add_test().
