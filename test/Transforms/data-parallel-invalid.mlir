// RUN: dsc-opt %s --dsc-data-parallel=world-size=0 -verify-diagnostics
// RUN: not dsc-opt %s --dsc-data-parallel=grad-accum=0 2>&1 | FileCheck %s --check-prefix=ACCUM
// ACCUM: error: grad-accum must be at least 1, got 0

// expected-error @+1 {{world-size must be >= 1, got 0}}
module {
}
