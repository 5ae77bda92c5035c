// RUN: dsc-opt %s --dsc-data-parallel=world-size=0 -verify-diagnostics

// expected-error @+1 {{world-size must be >= 1, got 0}}
module {
}
