//===- Gemm.cpp - GEMM on the CUDA backend, over cuBLASLt -----------------===//
//
// See CudaGemm.h for the row-major-to-column-major mapping and the batching
// rules.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/CudaGemm.h"

#include "dsc/runtime/CudaDevice.h"
#include "dsc/runtime/Error.h"

#include <cublasLt.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

namespace dsc::rt::cuda {

namespace {

/// NVIDIA's recommendation for Hopper; ample for every earlier GPU.
constexpr std::size_t kWorkspaceBytes = std::size_t(32) << 20;

void checkCublas(cublasStatus_t status, const char *call) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return;
  const char *name = cublasLtGetStatusName(status);
  const char *text = cublasLtGetStatusString(status);
  throw Error(std::string("gemm: ") + call + " failed: " +
              (name ? name : "CUBLAS_STATUS_" + std::to_string(int(status))) +
              ": " + (text ? text : "unknown status"));
}

/// Owns one of cuBLASLt's descriptors.
template <typename Handle, cublasStatus_t (*Destroy)(Handle)> struct Owned {
  Handle handle = nullptr;
  Owned() = default;
  Owned(const Owned &) = delete;
  Owned &operator=(const Owned &) = delete;
  ~Owned() {
    if (handle)
      (void)Destroy(handle);
  }
};
using MatmulDesc = Owned<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using Layout = Owned<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using Preference =
    Owned<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;
using TransformDesc =
    Owned<cublasLtMatrixTransformDesc_t, cublasLtMatrixTransformDescDestroy>;

/// The element type of one GEMM's operands and result, and its size.
struct ElementKind {
  cudaDataType_t type;
  std::size_t bytes;
};
constexpr ElementKind kF32{CUDA_R_32F, 4}, kBF16{CUDA_R_16BF, 2},
    kF16{CUDA_R_16F, 2};

/// A column-major rows x cols matrix of `type` with leading dimension `ld`,
/// `count` of them `stride` elements apart.
void makeLayout(Layout &l, cudaDataType_t type, int64_t rows, int64_t cols,
                int64_t ld, int64_t count, int64_t stride) {
  checkCublas(cublasLtMatrixLayoutCreate(&l.handle, type, uint64_t(rows),
                                         uint64_t(cols), ld),
              "cublasLtMatrixLayoutCreate");
  if (count == 1)
    return;
  int32_t batch = int32_t(count);
  checkCublas(
      cublasLtMatrixLayoutSetAttribute(
          l.handle, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch),
      "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
  checkCublas(cublasLtMatrixLayoutSetAttribute(
                  l.handle, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                  &stride, sizeof stride),
              "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
}

/// The largest power of two up to 256 that divides the address of every
/// item: `p` and, for a batch, `stride` elements of `bytes` each.
uint32_t alignmentOf(const void *p, int64_t count, int64_t stride,
                     std::size_t bytes) {
  uintptr_t bits = reinterpret_cast<uintptr_t>(p);
  if (count > 1)
    bits |= uintptr_t(stride) * bytes;
  uint32_t alignment = 256;
  while (alignment > 1 && (bits & (alignment - 1)))
    alignment >>= 1;
  return alignment;
}

/// a * b, or INT64_MAX when that overflows (both non-negative).
int64_t saturatingProduct(int64_t a, int64_t b) {
  if (a != 0 && b > INT64_MAX / a)
    return INT64_MAX;
  return a * b;
}

/// One problem as cuBLASLt sees it, for the algorithm cache: device,
/// element type, transposes, m, n, k, batch count, the three strides, the
/// three alignments, the epilogue and its aux leading dimension.
using ProblemKey =
    std::tuple<int, int, bool, bool, int64_t, int64_t, int64_t, int64_t,
               int64_t, int64_t, int64_t, uint32_t, uint32_t, uint32_t, int,
               int64_t>;

/// cuBLASLt's epilogue for ours (CudaGemm.h: A and B swap places).
cublasLtEpilogue_t ltEpilogue(cpu::GemmEpilogue kind) {
  using K = cpu::GemmEpilogue;
  switch (kind) {
  case K::None:
    return CUBLASLT_EPILOGUE_DEFAULT;
  case K::Bias:
    return CUBLASLT_EPILOGUE_BIAS;
  case K::Gelu:
    return CUBLASLT_EPILOGUE_GELU;
  case K::GeluBias:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  case K::GeluAux:
    return CUBLASLT_EPILOGUE_GELU_AUX;
  case K::GeluAuxBias:
    return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  case K::DGelu:
    return CUBLASLT_EPILOGUE_DGELU;
  case K::DGeluBGrad:
    return CUBLASLT_EPILOGUE_DGELU_BGRAD;
  case K::BGradA:
    return CUBLASLT_EPILOGUE_BGRADB;
  case K::BGradB:
    return CUBLASLT_EPILOGUE_BGRADA;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

/// Sets the epilogue of `op` and the pointers it reads or writes.
void setEpilogue(cublasLtMatmulDesc_t op, const GemmShape &s,
                 const cpu::GemmEpilogueArgs &e) {
  using K = cpu::GemmEpilogue;
  const cublasLtEpilogue_t epilogue = ltEpilogue(e.kind);
  checkCublas(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                             &epilogue, sizeof epilogue),
              "cublasLtMatmulDescSetAttribute(EPILOGUE)");
  // The bias, or the bias gradient's output, for the kinds that have one.
  const bool bias =
      e.kind == K::Bias || e.kind == K::GeluBias || e.kind == K::GeluAuxBias;
  const bool grad = e.kind == K::DGeluBGrad || e.kind == K::BGradA ||
                    e.kind == K::BGradB;
  const void *vector = bias ? e.bias : grad ? e.biasGrad : nullptr;
  if (vector)
    checkCublas(cublasLtMatmulDescSetAttribute(
                    op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &vector,
                    sizeof vector),
                "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  if (e.kind == K::GeluAux || e.kind == K::GeluAuxBias || e.kind == K::DGelu ||
      e.kind == K::DGeluBGrad) {
    // Our row-major [m, auxLd] is cuBLASLt's column-major [n, m], ld auxLd.
    const int64_t ld = e.auxLd ? e.auxLd : s.n;
    checkCublas(cublasLtMatmulDescSetAttribute(
                    op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &e.aux,
                    sizeof e.aux),
                "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)");
    checkCublas(cublasLtMatmulDescSetAttribute(
                    op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld),
                "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_LD)");
  }
}

struct Algorithm {
  cublasLtMatmulAlgo_t algo;
  std::size_t workspaceBytes;
};

/// Process-wide cuBLASLt state. Never destroyed (a static destructor would
/// run after the CUDA runtime may have been torn down);
/// releaseGemmResources empties it.
struct GemmCache {
  std::mutex mutex;
  std::map<int, cublasLtHandle_t> handles;
  std::map<std::pair<int, cudaStream_t>, void *> workspaces;
  std::map<ProblemKey, Algorithm> algorithms;
};

GemmCache &cache() {
  static GemmCache *instance = new GemmCache;
  return *instance;
}

cublasLtHandle_t handleFor(GemmCache &c, int device) {
  auto it = c.handles.find(device);
  if (it != c.handles.end())
    return it->second;
  cublasLtHandle_t handle = nullptr;
  checkCublas(cublasLtCreate(&handle), "cublasLtCreate");
  c.handles.emplace(device, handle);
  return handle;
}

void *workspaceFor(GemmCache &c, int device, cudaStream_t stream) {
  auto key = std::make_pair(device, stream);
  auto it = c.workspaces.find(key);
  if (it != c.workspaces.end())
    return it->second;
  void *workspace = nullptr;
  checkCuda(cudaMalloc(&workspace, kWorkspaceBytes),
            "gemm: cudaMalloc of the " + std::to_string(kWorkspaceBytes) +
                "-byte cuBLASLt workspace");
  c.workspaces.emplace(key, workspace);
  return workspace;
}

/// Calls f(first, count) for groups of batch items that one cuBLASLt call
/// can do: all of them (in chunks that fit its int32 batch count) when
/// `strided`, else one at a time, in order.
template <typename F> void forEachGroup(int64_t batch, bool strided, F &&f) {
  const int64_t most = strided ? INT32_MAX : 1;
  for (int64_t first = 0; first < batch; first += most)
    f(first, std::min(most, batch - first));
}

/// C = beta * C for a product with k == 0.
void scaleOutput(const GemmShape &s, ElementKind kind, char *c, float beta,
                 bool strided, cudaStream_t stream) {
  if (beta == 1.0f)
    return;
  // Without a GPU, requireDevice's Error rather than a CUDA call's.
  const int device = Device::current("gemm");
  const int64_t items = s.m * s.n; // fits: C holds them
  const std::size_t itemBytes = std::size_t(items) * kind.bytes;
  if (beta == 0.0f) { // BLAS: zeros, whatever C held (NaN included)
    if (s.batch == 1 || s.strideC == items) {
      checkCuda(cudaMemsetAsync(c, 0, itemBytes * std::size_t(s.batch), stream),
                "gemm: cudaMemsetAsync");
      return;
    }
    for (int64_t i = 0; i < s.batch; ++i)
      checkCuda(cudaMemsetAsync(c + i * s.strideC * kind.bytes, 0, itemBytes,
                                stream),
                "gemm: cudaMemsetAsync");
    return;
  }
  GemmCache &cc = cache();
  std::lock_guard<std::mutex> lock(cc.mutex);
  cublasLtHandle_t handle = handleFor(cc, device);
  TransformDesc desc;
  checkCublas(cublasLtMatrixTransformDescCreate(&desc.handle, CUDA_R_32F),
              "cublasLtMatrixTransformDescCreate");
  const float zero = 0.0f;
  forEachGroup(s.batch, strided, [&](int64_t first, int64_t count) {
    Layout layout;
    makeLayout(layout, kind.type, s.n, s.m, s.n, count, s.strideC);
    char *item = c + first * s.strideC * kind.bytes;
    // In place, element by element: C = beta * C + 0.
    checkCublas(cublasLtMatrixTransform(handle, desc.handle, &beta, item,
                                        layout.handle, &zero, nullptr, nullptr,
                                        item, layout.handle, stream),
                "cublasLtMatrixTransform");
  });
}

/// The product over elements of `kind`; a, b and c are byte addresses.
void gemm(const GemmShape &s, ElementKind kind, const char *a, const char *b,
          char *c, float alpha, float beta, cudaStream_t stream,
          const cpu::GemmEpilogueArgs &epilogue = {}) {
  // The CPU version's checks and messages, before any CUDA call.
  cpu::checkGemmEpilogue(s, epilogue);
  if (s.batch == 0 || s.m == 0 || s.n == 0)
    return;

  // One strided-batch call computes the items in any order, which is the
  // CPU loop's result unless output items overlap; cuBLASLt's batch offset
  // must also be non-negative.
  const bool strided =
      s.batch == 1 || (s.strideA >= 0 && s.strideB >= 0 &&
                       s.strideC >= saturatingProduct(s.m, s.n));
  if (s.k == 0) {
    scaleOutput(s, kind, c, beta, strided, stream);
    return;
  }

  GemmCache &cc = cache();
  std::lock_guard<std::mutex> lock(cc.mutex);
  const int device = Device::current("gemm");
  cublasLtHandle_t handle = handleFor(cc, device);
  void *workspace = workspaceFor(cc, device, stream);

  MatmulDesc op;
  checkCublas(
      cublasLtMatmulDescCreate(&op.handle, CUBLAS_COMPUTE_32F, CUDA_R_32F),
      "cublasLtMatmulDescCreate");
  // cuBLASLt's A is our B, its B our A (CudaGemm.h).
  cublasOperation_t opA = s.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = s.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  checkCublas(cublasLtMatmulDescSetAttribute(
                  op.handle, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA),
              "cublasLtMatmulDescSetAttribute(TRANSA)");
  checkCublas(cublasLtMatmulDescSetAttribute(
                  op.handle, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB),
              "cublasLtMatmulDescSetAttribute(TRANSB)");
  if (epilogue.kind != cpu::GemmEpilogue::None)
    setEpilogue(op.handle, s, epilogue);

  forEachGroup(s.batch, strided, [&](int64_t first, int64_t count) {
    const char *itemA = a + first * s.strideA * kind.bytes;
    const char *itemB = b + first * s.strideB * kind.bytes;
    char *itemC = c + first * s.strideC * kind.bytes;
    // Row-major B [k, n] (or [n, k] transposed) is column-major [n, k]
    // (or [k, n]); row-major A [m, k] (or [k, m]) is column-major [k, m]
    // (or [m, k]); row-major C [m, n] is column-major [n, m].
    Layout layoutB, layoutA, layoutC;
    const int64_t rowsB = s.transB ? s.k : s.n;
    const int64_t rowsA = s.transA ? s.m : s.k;
    makeLayout(layoutB, kind.type, rowsB, s.transB ? s.n : s.k, rowsB, count,
               s.strideB);
    makeLayout(layoutA, kind.type, rowsA, s.transA ? s.k : s.m, rowsA, count,
               s.strideA);
    makeLayout(layoutC, kind.type, s.n, s.m, s.n, count, s.strideC);

    const uint32_t alignA = alignmentOf(itemA, count, s.strideA, kind.bytes);
    const uint32_t alignB = alignmentOf(itemB, count, s.strideB, kind.bytes);
    const uint32_t alignC = alignmentOf(itemC, count, s.strideC, kind.bytes);
    ProblemKey key{device,
                   int(kind.type),
                   s.transA,
                   s.transB,
                   s.m,
                   s.n,
                   s.k,
                   count,
                   count > 1 ? s.strideA : 0,
                   count > 1 ? s.strideB : 0,
                   count > 1 ? s.strideC : 0,
                   alignA,
                   alignB,
                   alignC,
                   int(epilogue.kind),
                   epilogue.auxLd};
    auto found = cc.algorithms.find(key);
    if (found == cc.algorithms.end()) {
      Preference preference;
      checkCublas(cublasLtMatmulPreferenceCreate(&preference.handle),
                  "cublasLtMatmulPreferenceCreate");
      const uint64_t maxWorkspace = kWorkspaceBytes;
      checkCublas(cublasLtMatmulPreferenceSetAttribute(
                      preference.handle,
                      CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &maxWorkspace,
                      sizeof maxWorkspace),
                  "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
      // Lt's A, B, C, D are our B, A, C, C.
      const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t>
          alignments[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignB},
                          {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignA},
                          {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignC},
                          {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignC}};
      for (const auto &[attribute, value] : alignments)
        checkCublas(cublasLtMatmulPreferenceSetAttribute(
                        preference.handle, attribute, &value, sizeof value),
                    "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)");
      cublasLtMatmulHeuristicResult_t result{};
      int returned = 0;
      checkCublas(cublasLtMatmulAlgoGetHeuristic(
                      handle, op.handle, layoutB.handle, layoutA.handle,
                      layoutC.handle, layoutC.handle, preference.handle, 1,
                      &result, &returned),
                  "cublasLtMatmulAlgoGetHeuristic");
      check(returned > 0,
            "gemm: cuBLASLt has no algorithm for " + std::to_string(count) +
                "x" + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                std::to_string(s.k) + " (transA=" + std::to_string(s.transA) +
                ", transB=" + std::to_string(s.transB) + ")");
      found = cc.algorithms
                  .emplace(key, Algorithm{result.algo, result.workspaceSize})
                  .first;
    }
    checkCublas(cublasLtMatmul(handle, op.handle, &alpha, itemB, layoutB.handle,
                               itemA, layoutA.handle, &beta, itemC,
                               layoutC.handle, itemC, layoutC.handle,
                               &found->second.algo, workspace,
                               found->second.workspaceBytes, stream),
                "cublasLtMatmul");
  });
}

} // namespace

void gemmF32(const GemmShape &s, const float *a, const float *b, float *c,
             float alpha, float beta, cudaStream_t stream) {
  gemm(s, kF32, reinterpret_cast<const char *>(a),
       reinterpret_cast<const char *>(b), reinterpret_cast<char *>(c), alpha,
       beta, stream);
}

void gemmBF16(const GemmShape &s, const std::uint16_t *a,
              const std::uint16_t *b, std::uint16_t *c, float alpha,
              float beta, cudaStream_t stream) {
  gemm(s, kBF16, reinterpret_cast<const char *>(a),
       reinterpret_cast<const char *>(b), reinterpret_cast<char *>(c), alpha,
       beta, stream);
}

void gemmF16(const GemmShape &s, const std::uint16_t *a, const std::uint16_t *b,
             std::uint16_t *c, float alpha, float beta, cudaStream_t stream) {
  gemm(s, kF16, reinterpret_cast<const char *>(a),
       reinterpret_cast<const char *>(b), reinterpret_cast<char *>(c), alpha,
       beta, stream);
}

void gemmEpilogueF32(const GemmShape &s, const float *a, const float *b,
                     float *c, const cpu::GemmEpilogueArgs &epilogue,
                     float alpha, float beta, cudaStream_t stream) {
  gemm(s, kF32, reinterpret_cast<const char *>(a),
       reinterpret_cast<const char *>(b), reinterpret_cast<char *>(c), alpha,
       beta, stream, epilogue);
}

void gemmEpilogueBF16(const GemmShape &s, const std::uint16_t *a,
                      const std::uint16_t *b, std::uint16_t *c,
                      const cpu::GemmEpilogueArgs &epilogue, float alpha,
                      float beta, cudaStream_t stream) {
  gemm(s, kBF16, reinterpret_cast<const char *>(a),
       reinterpret_cast<const char *>(b), reinterpret_cast<char *>(c), alpha,
       beta, stream, epilogue);
}

void gemmEpilogueF16(const GemmShape &s, const std::uint16_t *a,
                     const std::uint16_t *b, std::uint16_t *c,
                     const cpu::GemmEpilogueArgs &epilogue, float alpha,
                     float beta, cudaStream_t stream) {
  gemm(s, kF16, reinterpret_cast<const char *>(a),
       reinterpret_cast<const char *>(b), reinterpret_cast<char *>(c), alpha,
       beta, stream, epilogue);
}

void releaseGemmResources() {
  GemmCache &cc = cache();
  std::lock_guard<std::mutex> lock(cc.mutex);
  int previous = -1;
  bool restore = cudaGetDevice(&previous) == cudaSuccess;
  for (auto &[key, workspace] : cc.workspaces) {
    (void)cudaSetDevice(key.first);
    (void)cudaFree(workspace);
  }
  for (auto &[device, handle] : cc.handles) {
    (void)cudaSetDevice(device);
    (void)cublasLtDestroy(handle);
  }
  if (restore)
    (void)cudaSetDevice(previous);
  (void)cudaGetLastError();
  cc.workspaces.clear();
  cc.handles.clear();
  cc.algorithms.clear();
}

} // namespace dsc::rt::cuda
