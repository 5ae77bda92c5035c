//===- SafeTensorsWriter.cpp - write a safetensors file atomically --------===//
//
// Byte for byte what python/dsc/safetensors.py's save() writes: the header
// is json.dumps(header, separators=(",", ":")) with Python's defaults
// (ASCII only, \uXXXX escapes in lowercase hex), tensors in sorted name order,
// each entry's keys in the order dtype, shape, data_offsets, then
// "__metadata__" last when there is any; padded with spaces to a multiple of
// 8 bytes. nlohmann's ordered_json with ensure_ascii produces exactly that.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/SafeTensors.h"

#include "PosixFile.h"
#include "TensorShape.h"
#include "dsc/runtime/Error.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <unistd.h>

namespace dsc::rt {

using detail::PosixFile;
using nlohmann::ordered_json;

namespace {

struct PlannedTensor {
  const TensorView *view;
  size_t bytes;
};

// Checks every tensor and returns them in the order they are written.
std::vector<PlannedTensor> plan(const std::string &path,
                                const std::vector<TensorView> &tensors) {
  std::vector<PlannedTensor> planned;
  std::set<std::string> names;
  for (const TensorView &t : tensors) {
    const std::string where = path + ": tensor '" + t.name + "'";
    check(t.name != "__metadata__", where + ": the name is reserved");
    check(names.insert(t.name).second, where + ": written twice");
    size_t bytes = detail::checkedByteCount(t.shape, t.dtype, where);
    check(bytes == 0 || t.data != nullptr, where + ": no data");
    planned.push_back({&t, bytes});
  }
  std::sort(planned.begin(), planned.end(),
            [](const PlannedTensor &a, const PlannedTensor &b) {
              return a.view->name < b.view->name;
            });
  return planned;
}

std::string headerText(const std::string &path,
                       const std::vector<PlannedTensor> &planned,
                       const std::map<std::string, std::string> &metadata) {
  ordered_json header = ordered_json::object();
  size_t offset = 0;
  for (const PlannedTensor &t : planned) {
    ordered_json entry = ordered_json::object();
    entry["dtype"] = dtypeName(t.view->dtype);
    entry["shape"] = t.view->shape;
    entry["data_offsets"] = ordered_json::array({offset, offset + t.bytes});
    header[t.view->name] = std::move(entry);
    offset += t.bytes;
  }
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  std::string text;
  try {
    text = header.dump(/*indent=*/-1, ' ', /*ensure_ascii=*/true);
  } catch (const ordered_json::exception &) {
    throw Error(path + ": a tensor name or metadata string is not UTF-8");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

} // namespace

void writeSafeTensors(const std::string &path,
                      const std::vector<TensorView> &tensors,
                      const std::map<std::string, std::string> &metadata) {
  std::vector<PlannedTensor> planned = plan(path, tensors);
  std::string header = headerText(path, planned, metadata);

  detail::writeOutputFile(path, [&](PosixFile &file) {
    unsigned char length[8];
    for (int i = 0; i < 8; ++i)
      length[i] = static_cast<unsigned char>(
          static_cast<uint64_t>(header.size()) >> (8 * i));
    file.writeAll(length, sizeof length);
    file.writeAll(header.data(), header.size());
    for (const PlannedTensor &t : planned)
      file.writeAll(t.view->data, t.bytes);
  });
}

} // namespace dsc::rt
