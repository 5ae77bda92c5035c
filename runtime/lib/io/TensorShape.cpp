//===- TensorShape.cpp - shape checks shared by reader and writer ---------===//

#include "TensorShape.h"

#include "dsc/runtime/Error.h"

namespace dsc::rt {

int64_t TensorInfo::numel() const {
  int64_t n = 1; // a 0-d tensor has one element
  for (int64_t d : shape)
    n *= d; // validated when the file was opened
  return n;
}

namespace detail {

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

size_t checkedByteCount(const std::vector<int64_t> &shape, DType dtype,
                        const std::string &where) {
  bool empty = false;
  for (int64_t d : shape) {
    check(d >= 0, where + ": shape " + formatShape(shape) +
                      " has a negative dimension");
    empty |= d == 0;
  }
  // A zero dimension makes the count 0 whatever the others are, so only a
  // non-empty shape can overflow.
  int64_t numel = empty ? 0 : 1;
  for (size_t i = 0; !empty && i < shape.size(); ++i)
    check(!__builtin_mul_overflow(numel, shape[i], &numel),
          where + ": shape " + formatShape(shape) +
              " has more elements than int64 holds");
  size_t bytes;
  check(!__builtin_mul_overflow(static_cast<size_t>(numel), dtypeSize(dtype),
                                &bytes),
        where + ": shape " + formatShape(shape) + " of " + dtypeName(dtype) +
            " has more bytes than size_t holds");
  return bytes;
}

} // namespace detail
} // namespace dsc::rt
