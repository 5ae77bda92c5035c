// The emitted tables and calls of a tensor-parallel step: a slice names the
// tensor group and, for a row-parallel weight, its blocks (one per row);
// ArtifactInfo ends with the tensor-parallel size; the forward sums run
// over the tensor group, the loss's over the data group.
// RUN: dsc-opt %S/../../Transforms/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=4 tensor-parallel=2" --dsc-tensor-parallel --dsc-autodiff --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory -o %t.mlir
// RUN: dsc-translate --dscrt-to-cpp %t.mlir | FileCheck %s
// CHECK: const dsc::rt::StateDesc kStates[] = {
// CHECK-NEXT: {{[{][{]}}"h.0.mlp.c_fc.weight", ElementType::F32, 2, kShape{{[0-9]+}}}, dsc::rt::StateRole::Parameter, 2, kShape{{[0-9]+}}, int32_t(dsc::rt::CommGroup::Tensor)},
// CHECK: {{[{][{]}}"h.0.mlp.c_proj.weight", ElementType::F32, 2, kShape{{[0-9]+}}}, dsc::rt::StateRole::Parameter, 2, kShape{{[0-9]+}}, int32_t(dsc::rt::CommGroup::Tensor), nullptr, 0.00000000000000000e+00, 0ull, dsc::rt::MemoryTier::Device, 4},
// CHECK-NEXT: {{[{][{]}}"h.0.mlp.c_proj.bias", ElementType::F32, 1, kShape{{[0-9]+}}}, dsc::rt::StateRole::Parameter},
// CHECK: const dsc::rt::ArtifactInfo kInfo = {dsc::rt::kArtifactAbiVersion, "cpu", "", 4, 1, {{.*}}, kStreams, 1, 0, 2, 1, 0};
// CHECK: ctx->allReduceSum({{.*}}, 32, ElementType::F32, 0, {{.*}}, dsc::rt::CommGroup::Tensor);
// CHECK: ctx->allReduceSum({{.*}}, 1, ElementType::F32, {{[0-9]+}}, {{.*}}, dsc::rt::CommGroup::Data);
