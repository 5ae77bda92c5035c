//===- TensorShape.h - shape checks shared by reader and writer -*- C++ -*-===//
//
// Internal to lib/io. Both the safetensors reader and writer must refuse the
// same shapes (negative dimensions, element or byte counts beyond 64 bits)
// and describe them the same way.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_LIB_IO_TENSORSHAPE_H
#define DSC_RUNTIME_LIB_IO_TENSORSHAPE_H

#include "dsc/runtime/SafeTensors.h"

#include <string>
#include <vector>

namespace dsc::rt::detail {

/// "[2, 3]"; "[]" for a 0-d tensor.
std::string formatShape(const std::vector<int64_t> &shape);

/// numel(shape) * dtypeSize(dtype); throws Error "<where>: <problem>" for a
/// negative dimension or a count that does not fit in int64/size_t.
size_t checkedByteCount(const std::vector<int64_t> &shape, DType dtype,
                        const std::string &where);

} // namespace dsc::rt::detail

#endif // DSC_RUNTIME_LIB_IO_TENSORSHAPE_H
