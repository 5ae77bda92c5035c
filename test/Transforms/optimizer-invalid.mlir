// RUN: dsc-opt %s --dsc-optimizer="optimizer=lamb" -verify-diagnostics -split-input-file
// RUN: not dsc-opt %s --dsc-optimizer="betas=0.9" 2>&1 | FileCheck %s --check-prefix=BETAS
// RUN: not dsc-opt %s --dsc-optimizer="lr=-1" 2>&1 | FileCheck %s --check-prefix=LR
// RUN: not dsc-opt %s --dsc-optimizer="optimizer=adam betas=0.9,1.0" 2>&1 | FileCheck %s --check-prefix=BETA2

// expected-error @below {{unknown optimizer 'lamb'; expected adamw, adam or sgd}}
module {
}
// BETAS: error: betas takes two values (beta1,beta2), got 1
// LR: error: lr -1.000000e+00 is out of range
// BETA2: error: beta2 1.000000e+00 is out of range
