// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-variants="curriculum-schedule=fixed_cubic" 2>&1 | FileCheck %s --check-prefix=TYPE
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-variants="curriculum-schedule=fixed_linear curriculum-min=2 curriculum-max=16 curriculum-total-steps=4" 2>&1 | FileCheck %s --check-prefix=LONG
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-variants="curriculum-schedule=fixed_discrete curriculum-min=2 curriculum-max=8 curriculum-difficulty=2,8" 2>&1 | FileCheck %s --check-prefix=DISCRETE
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-variants="ltd-min=4 ltd-max=2" 2>&1 | FileCheck %s --check-prefix=LTDRANGE
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-variants="ltd-min=2 ltd-max=16" 2>&1 | FileCheck %s --check-prefix=LTDLONG
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-variants="ltd-min=2 ltd-max=8 budget=-1" 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-variants="ltd-min=2 ltd-max=8 output=%t/no/such/dir/v.json" 2>&1 | FileCheck %s --check-prefix=OUTPUT
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-variants="kd-stop-step=-2" 2>&1 | FileCheck %s --check-prefix=KDSTOP
// KDSTOP: error: --dsc-data-variants: kd-stop-step must be at least 0, got -2
// TYPE: error: --dsc-data-variants: curriculum-schedule must be none, fixed_linear, fixed_root or fixed_discrete, got 'fixed_cubic'
// LONG: error: --dsc-data-variants: curriculum max_difficulty 16 exceeds the graph's sequence length 8
// DISCRETE: error: --dsc-data-variants: curriculum: fixed_discrete needs one more 'difficulty' than 'max_step'
// LTDRANGE: error: --dsc-data-variants: random-LTD: max_value must be at least min_value
// LTDLONG: error: --dsc-data-variants: random-LTD max_value 16 exceeds the graph's sequence length 8
// BUDGET: error: --dsc-data-variants: budget must be at least 0, got -1
// OUTPUT: error: --dsc-data-variants: cannot write '{{.*}}v.json'
