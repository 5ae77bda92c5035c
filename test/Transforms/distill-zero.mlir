// RUN: dsc-opt %S/Inputs/distill-student.mlir --dsc-data-parallel=world-size=2 --dsc-distill="teacher=%S/Inputs/distill-teacher.mlir" --dsc-autodiff --dsc-optimizer="optimizer=sgd momentum=0.9" --dsc-zero="stage=3 persistence-threshold=0" --dsc-step-report="report=memory" 2>%t.report | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.report
// RUN: dsc-opt %S/Inputs/distill-student.mlir --dsc-data-parallel=world-size=2 --dsc-distill="teacher=%S/Inputs/distill-teacher.mlir" --dsc-autodiff --dsc-optimizer="optimizer=sgd momentum=0.9" --dsc-zero="stage=2" | FileCheck %s --check-prefix=STAGE2
// RUN: dsc-opt %S/Inputs/distill-student.mlir --dsc-data-parallel=world-size=2 --dsc-distill="teacher=%S/Inputs/distill-teacher.mlir" --dsc-autodiff --dsc-optimizer="optimizer=sgd momentum=0.9" --dsc-zero="stage=3 persistence-threshold=0" --dsc-offload="optimizer=cpu param=cpu" --dsc-step-report="report=memory" 2>%t.offload | FileCheck %s --check-prefix=OFFLOAD
// RUN: FileCheck %s --check-prefix=OFFLOAD-REPORT < %t.offload
// RUN: dsc-opt %S/Inputs/distill-student.mlir --dsc-data-parallel=world-size=2 --dsc-distill="teacher=%S/Inputs/distill-teacher.mlir" --dsc-autodiff --dsc-optimizer="optimizer=sgd momentum=0.9" --dsc-zero="stage=3 persistence-threshold=0" --dsc-offload="optimizer=cpu param=nvme" --dsc-step-report="report=memory" 2>%t.nvme | FileCheck %s --check-prefix=NVME
// RUN: FileCheck %s --check-prefix=NVME-REPORT < %t.nvme
// RUN: dsc-opt %S/Inputs/distill-student.mlir --dsc-data-parallel=world-size=2 --dsc-distill="teacher=%S/Inputs/distill-teacher.mlir" --dsc-autodiff --dsc-optimizer="optimizer=sgd momentum=0.9" --dsc-zero="stage=3 persistence-threshold=0" --dsc-offload="optimizer=cpu param=nvme" --dsc-lower-to-runtime | FileCheck %s --check-prefix=NVME-LOWERED

// This file holds only checks; the models are Inputs/distill-student.mlir
// and Inputs/distill-teacher.mlir.

// ZeRO-3 partitions the teacher's weights like parameters: each rank holds
// half of each, gathered whole before the teacher's forward reads it; the
// only reduce-scatters are the student's two gradients.
// CHECK: dsc.state teacher @teacher.wte.weight {partition_of = array<i64: 8, 4>} : tensor<16xf32>
// CHECK: dsc.state teacher @teacher.h.0.scale {partition_of = array<i64: 4>} : tensor<2xf32>
// CHECK-LABEL: func.func @forward
// CHECK: %[[W:.*]] = dsc.load @teacher.wte.weight : tensor<16xf32>
// CHECK-NEXT: dsc.all_gather %[[W]] : tensor<16xf32> -> tensor<32xf32>
// CHECK: %[[S:.*]] = dsc.load @teacher.h.0.scale : tensor<2xf32>
// CHECK-NEXT: dsc.all_gather %[[S]] : tensor<2xf32> -> tensor<4xf32>
// CHECK-COUNT-2: dsc.reduce_scatter
// CHECK-NOT: dsc.reduce_scatter
// CHECK-NOT: dsc.store %{{.*}} to @teacher.

// The report: the teacher's bytes per rank, (16 + 8 + 2 + 16) x 4, and
// the FLOPs its forward adds.
// REPORT: teacher weights 168 {{.*}} its forward: 576 FLOPs of matrix products per micro-batch

// Stages 1-2 keep the teacher whole on every rank.
// STAGE2: dsc.state teacher @teacher.wte.weight : tensor<8x4xf32>
// STAGE2-NEXT: dsc.state teacher @teacher.h.0.mlp.c_fc.weight : tensor<4x4xf32>
// STAGE2-NEXT: dsc.state teacher @teacher.h.0.scale : tensor<4xf32>
// STAGE2-NEXT: dsc.state teacher @teacher.lm_head.weight : tensor<8x4xf32>

// Parameter offload (offload_param): the teacher's partitions live on the
// host with the student's; each is copied to the device right after its
// load, ahead of its all-gather, and nothing writes it back.
// OFFLOAD: dsc.state teacher @teacher.wte.weight on host {partition_of = array<i64: 8, 4>} : tensor<16xf32>
// OFFLOAD: dsc.state teacher @teacher.h.0.scale on host {partition_of = array<i64: 4>} : tensor<2xf32>
// OFFLOAD-LABEL: func.func @forward
// OFFLOAD: %[[W:.*]] = dsc.load @teacher.wte.weight : tensor<16xf32>
// OFFLOAD-NEXT: %[[WD:.*]] = dsc.transfer %[[W]] to device : tensor<16xf32>
// OFFLOAD-NEXT: dsc.all_gather %[[WD]] : tensor<16xf32> -> tensor<32xf32>
// OFFLOAD-NOT: dsc.store %{{.*}} to @teacher.
// OFFLOAD-REPORT: teacher weights 168
// OFFLOAD-REPORT: on the host (ZeRO-Offload)
// OFFLOAD-REPORT: teacher weights 168 {{.*}}(of the teacher weights above)

// With the parameters on NVMe (offload_param.device: nvme) the teacher's
// partitions are in the rank's file with them: each load is a read ahead
// into a host buffer, copied to the device before its all-gather; nothing
// writes them back (the student's two parameters are written after the
// update).
// NVME: dsc.state teacher @teacher.wte.weight on nvme {partition_of = array<i64: 8, 4>} : tensor<16xf32>
// NVME: dsc.state teacher @teacher.lm_head.weight on nvme {partition_of = array<i64: 8, 4>} : tensor<16xf32>
// NVME-LABEL: func.func @forward
// NVME: %[[W:.*]] = dsc.load @teacher.wte.weight : tensor<16xf32>
// NVME-NEXT: %[[WD:.*]] = dsc.transfer %[[W]] to device : tensor<16xf32>
// NVME-NEXT: dsc.all_gather %[[WD]] : tensor<16xf32> -> tensor<32xf32>
// NVME-NOT: dsc.store %{{.*}} to @teacher.
// NVME-REPORT: on NVMe (ZeRO-Infinity)
// NVME-REPORT: parameters 128
// NVME-REPORT-NEXT: teacher weights 168 {{.*}}(of the teacher weights above)
// NVME-REPORT: NVMe per update: reads 9 (488 bytes), writes 2 (128 bytes)
// NVME-LOWERED-DAG: dscrt.nvme_read {{[0-9]+}} "teacher.wte.weight"
// NVME-LOWERED-DAG: dscrt.nvme_read {{[0-9]+}} "teacher.h.0.mlp.c_fc.weight"
// NVME-LOWERED-DAG: dscrt.nvme_read {{[0-9]+}} "teacher.h.0.scale"
// NVME-LOWERED-DAG: dscrt.nvme_read {{[0-9]+}} "teacher.lm_head.weight"
// NVME-LOWERED-NOT: dscrt.nvme_write {{.*}} "teacher.
