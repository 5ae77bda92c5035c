# Tests of the comm component: dsc_runtime_test(Name File.cpp ...) and add_test().

# One process: rank detection, byte formulas, the watchdog, and the
# Communicator base class over a fake backend.
dsc_runtime_test(RuntimeCommTest
  CommBaseTest.cpp CommGroupsTest.cpp CommRankInfoTest.cpp CommStatsTest.cpp
  WatchdogTest.cpp StartupWatchdogTest.cpp)

# Several ranks under mpirun: its own main() brackets the tests with
# MPI_Init/MPI_Finalize. 3 ranks as well as 2, so that N does not divide the
# counts and the rounding of the byte formulas shows. A failing rank can
# leave the others waiting in a collective, hence the ctest timeouts (the
# collective watchdog's own 600 s default is longer than that).
add_executable(RuntimeCommMpiTest CommMpiTest.cpp)
target_link_libraries(RuntimeCommMpiTest PRIVATE dsc_runtime GTest::gtest)
foreach(ranks 2 3)
  add_test(NAME RuntimeCommMpiTest.np${ranks}
           COMMAND ${DSC_MPIRUN} -np ${ranks} $<TARGET_FILE:RuntimeCommMpiTest>)
  set_tests_properties(RuntimeCommMpiTest.np${ranks} PROPERTIES
                       TIMEOUT 120 PROCESSORS ${ranks})
  dsc_own_mpi_session_dir(RuntimeCommMpiTest.np${ranks})
endforeach()

# The watchdog: rank 1 never joins collective #3, so rank 0 must end the job
# within DSC_COLLECTIVE_TIMEOUT=2 s with `report` and the watchdog's exit
# status; the check fails if the job is still running after 45 s (rank 1
# sleeps for 90, so only the abort ends it sooner). ARGN: the program's.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_executable(RuntimeCommWatchdogTimeout WatchdogTimeoutTest.cpp)
target_link_libraries(RuntimeCommWatchdogTimeout PRIVATE dsc_runtime)
function(dsc_watchdog_timeout_test name ranks report)
  add_test(NAME ${name}
           COMMAND ${Python3_EXECUTABLE}
                   ${CMAKE_CURRENT_SOURCE_DIR}/WatchdogTimeoutCheck.py
                   --within 45 --exit-code 124
                   --expect "${report}" --expect "#2 barrier()"
                   -- ${DSC_MPIRUN} -np ${ranks} -x DSC_COLLECTIVE_TIMEOUT=2
                   $<TARGET_FILE:RuntimeCommWatchdogTimeout> ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT 120 PROCESSORS ${ranks})
  dsc_own_mpi_session_dir(${name})
endfunction()
dsc_watchdog_timeout_test(RuntimeCommWatchdogTimeout 2
  "dsc: rank 0: collective #3 allReduce(count=1, f32, sum) did not complete within 2 s")
# The same on a communicator split from the job's: on 4 ranks, rank 1 never
# joins collective #3 of its Expert group (ranks 0 and 1, expert-parallel
# size 2); rank 0's report names the group, and its abort ends the whole
# job, the other group's ranks too.
dsc_watchdog_timeout_test(RuntimeCommWatchdogTimeoutSubgroup 4
  "dsc: rank 0: collective #3 allReduce(count=1, f32, sum) on the expert group (ranks 0, 1) did not complete within 2 s"
  expert)

# The groups' communicators (CommGroups.h) and the StepContext's
# collectives over them, on 4 ranks: expert-parallel size 2 splits both.
add_executable(RuntimeCommGroupMpiTest CommGroupMpiTest.cpp)
target_link_libraries(RuntimeCommGroupMpiTest PRIVATE dsc_runtime GTest::gtest)
add_test(NAME RuntimeCommGroupMpiTest.np4
         COMMAND ${DSC_MPIRUN} -np 4 $<TARGET_FILE:RuntimeCommGroupMpiTest>)
set_tests_properties(RuntimeCommGroupMpiTest.np4 PROPERTIES
                     TIMEOUT 120 PROCESSORS 4)
dsc_own_mpi_session_dir(RuntimeCommGroupMpiTest.np4)
