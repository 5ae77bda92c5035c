//===- CudaTargetStub.cpp - an artifact that says it is for target "cuda" -===//
//
// Plain C++, built without the CUDA toolkit, but linked as a CUDA artifact
// is: it names target "cuda" and calls dsc::rt::cuda::gemmF32, which only a
// dsc-run built with CUDA exports. A dsc-run (or an artifact host) without
// CUDA support must refuse it as a CUDA artifact, not as a library with an
// undefined symbol (RunTargetTest.cpp, RunNoCudaToolTest.cpp). Its step
// throws, so that running it would be seen.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/Artifact.h"
#include "dsc/runtime/CpuGemm.h"

#include <stdexcept>

struct CUstream_st; // cudaStream_t, as CudaGemm.h declares gemmF32

namespace dsc::rt::cuda {
void gemmF32(const cpu::GemmShape &shape, const float *a, const float *b,
             float *c, float alpha, float beta, CUstream_st *stream);
} // namespace dsc::rt::cuda

using namespace dsc::rt;

namespace {

const int64_t kInputShape[] = {4, 4};
const TensorDesc kInputs[] = {{"tokens", ElementType::I64, 2, kInputShape},
                              {"targets", ElementType::I64, 2, kInputShape}};
const TensorDesc kOutputs[] = {{"loss", ElementType::F32, 0, nullptr}};
const ArtifactInfo kInfo = {kArtifactAbiVersion, "cuda", "CudaTargetStub.cpp",
                            1, 1, 0, 0, nullptr, 2, kInputs, 1, kOutputs,
                            0, nullptr, 1, 0, /*tensorParallelSize=*/1};

} // namespace

extern "C" const ArtifactInfo *dsc_artifact_info(void) { return &kInfo; }

extern "C" void dsc_artifact_step(StepContext *context) {
  cuda::gemmF32(cpu::GemmShape(), nullptr, nullptr,
                static_cast<float *>(context->arena()), 1.0f, 0.0f, nullptr);
  throw std::runtime_error("CudaTargetStub: a step ran");
}
