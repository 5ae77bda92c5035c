//===- SafeTensorsReader.cpp - open and validate a safetensors file -------===//
//
// Everything in the header is checked once, in open(), against the file's
// real size: a corrupt or hostile checkpoint is one located Error before any
// byte of it reaches a tensor.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/SafeTensors.h"

#include "PosixFile.h"
#include "TensorShape.h"
#include "dsc/runtime/Error.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

namespace dsc::rt {

using detail::PosixFile;
using nlohmann::json;

namespace {

// The parts of a header the reader knows before it looks at the tensors.
struct Layout {
  uint64_t headerBytes; // N
  uint64_t dataBytes;   // file size - 8 - N
};

Layout readLayout(const PosixFile &file) {
  const std::string &path = file.path();
  uint64_t size = file.size();
  check(size >= 8, path + ": " + std::to_string(size) +
                       " bytes is too short for a safetensors file (the "
                       "header length alone takes 8)");
  unsigned char raw[8];
  file.readAt(raw, 8, 0);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) // little-endian whatever the host is
    n = (n << 8) | raw[i];
  check(n <= size - 8, path + ": header length " + std::to_string(n) +
                           " exceeds the file (" + std::to_string(size) +
                           " bytes)");
  return {n, size - 8 - n};
}

json parseHeader(const PosixFile &file, uint64_t headerBytes) {
  const std::string &path = file.path();
  std::string text(headerBytes, '\0');
  file.readAt(text.data(), text.size(), 8);
  json header;
  try {
    header = json::parse(text);
  } catch (const json::exception &e) {
    // nlohmann's messages start with "[json.exception.parse_error.101] ".
    std::string why = e.what();
    auto bracket = why.find("] ");
    if (why.rfind("[json.exception", 0) == 0 && bracket != std::string::npos)
      why = why.substr(bracket + 2);
    throw Error(path + ": header is not valid JSON: " + why);
  }
  check(header.is_object(), path + ": header is not a JSON object");
  // The format's header is the object from its first byte, padded with
  // spaces only (JSON would also allow other whitespace around it).
  check(text[0] == '{' && text[text.find_last_not_of(' ')] == '}',
        path + ": header of " + std::to_string(headerBytes) +
            " bytes is not a JSON object padded with spaces (is the header "
            "length right?)");
  return header;
}

std::map<std::string, std::string> parseMetadata(const json &value,
                                                 const std::string &path) {
  std::map<std::string, std::string> metadata;
  check(value.is_object(), path + ": __metadata__ is not an object of strings");
  for (const auto &[key, text] : value.items()) {
    check(text.is_string(),
          path + ": __metadata__ entry '" + key + "' is not a string");
    metadata[key] = text.get<std::string>();
  }
  return metadata;
}

// A non-negative JSON integer that fits in int64 (and so in size_t).
bool isSize(const json &value) {
  return value.is_number_unsigned() &&
         value.get<uint64_t>() <=
             static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
}

TensorInfo parseTensor(const std::string &name, const json &entry,
                       const Layout &layout, const std::string &path) {
  const std::string where = path + ": tensor '" + name + "'";
  check(entry.is_object(), where + ": entry is not an object");

  auto dtype = entry.find("dtype");
  check(dtype != entry.end() && dtype->is_string(),
        where + ": has no dtype string");
  TensorInfo info;
  info.name = name;
  try {
    info.dtype = parseDType(dtype->get<std::string>());
  } catch (const Error &e) {
    throw Error(where + ": " + e.what());
  }

  auto shape = entry.find("shape");
  check(shape != entry.end() && shape->is_array(),
        where + ": has no shape array");
  for (const json &d : *shape) {
    // Not shape->dump(): a hostile header could nest arrays deep enough to
    // exhaust the stack of the recursive dump.
    check(d.is_number_integer(), where + ": shape is not a list of integers");
    // Unsigned beyond int64 would wrap to a negative dimension below; call
    // it what it is.
    check(!d.is_number_unsigned() || isSize(d),
          where + ": shape has a dimension beyond int64: " + d.dump());
    info.shape.push_back(d.get<int64_t>());
  }
  info.bytes = detail::checkedByteCount(info.shape, info.dtype, where);

  auto offsets = entry.find("data_offsets");
  check(offsets != entry.end() && offsets->is_array() && offsets->size() == 2 &&
            isSize((*offsets)[0]) && isSize((*offsets)[1]),
        where + ": data_offsets is not a pair of non-negative integers");
  uint64_t begin = (*offsets)[0].get<uint64_t>();
  uint64_t end = (*offsets)[1].get<uint64_t>();
  std::string range =
      "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
  check(begin <= end, where + ": data_offsets " + range + " end before begin");
  check(end <= layout.dataBytes,
        where + ": data_offsets " + range + " outside the data section (" +
            std::to_string(layout.dataBytes) + " bytes)");
  check(end - begin == info.bytes,
        where + ": data_offsets " + range + " hold " +
            std::to_string(end - begin) + " bytes, shape " +
            detail::formatShape(info.shape) + " of " + dtypeName(info.dtype) +
            " needs " + std::to_string(info.bytes));
  info.offset = static_cast<size_t>(8 + layout.headerBytes + begin);
  return info;
}

// The format has the tensors tile the data section: no two share a byte,
// none leaves a hole, and the last ends where the file does. Holding a
// file to that is what catches a header length that is a few bytes off:
// the JSON still parses (the header's padding spaces absorb the error),
// but every tensor would be read shifted.
void checkTiling(const std::map<std::string, TensorInfo> &tensors,
                 const Layout &layout, const std::string &path) {
  std::vector<const TensorInfo *> byOffset;
  for (const auto &entry : tensors)
    byOffset.push_back(&entry.second);
  std::sort(byOffset.begin(), byOffset.end(),
            [](const TensorInfo *a, const TensorInfo *b) {
              return a->offset != b->offset ? a->offset < b->offset
                                            : a->bytes < b->bytes;
            });
  const uint64_t base = 8 + layout.headerBytes;
  uint64_t cursor = base;
  const TensorInfo *previous = nullptr;
  for (const TensorInfo *tensor : byOffset) {
    if (tensor->offset < cursor)
      throw Error(path + ": tensors '" + previous->name + "' and '" +
                  tensor->name + "' overlap");
    check(tensor->offset == cursor,
          path + ": " + std::to_string(tensor->offset - cursor) +
              " unused bytes before tensor '" + tensor->name +
              "' (data_offsets begin at " +
              std::to_string(tensor->offset - base) + ", the tensor before "
              "ends at " + std::to_string(cursor - base) +
              "); tensors must fill the data section exactly");
    cursor += tensor->bytes;
    if (tensor->bytes > 0)
      previous = tensor;
  }
  uint64_t end = base + layout.dataBytes;
  check(cursor == end,
        path + ": " + std::to_string(end - cursor) +
            " bytes after the last tensor's data; tensors must end where the "
            "file does (is the header length, " +
            std::to_string(layout.headerBytes) + ", right?)");
}

} // namespace

SafeTensorsFile SafeTensorsFile::open(const std::string &path) {
  auto file = std::make_shared<PosixFile>(PosixFile::openForReading(path));
  Layout layout = readLayout(*file);
  json header = parseHeader(*file, layout.headerBytes);

  SafeTensorsFile result;
  result.path_ = path;
  for (const auto &[name, entry] : header.items()) {
    if (name == "__metadata__")
      result.metadata_ = parseMetadata(entry, path);
    else
      result.tensors_.emplace(name, parseTensor(name, entry, layout, path));
  }
  checkTiling(result.tensors_, layout, path);
  result.file_ = std::move(file);
  return result;
}

const TensorInfo &SafeTensorsFile::info(const std::string &name) const {
  auto it = tensors_.find(name);
  check(it != tensors_.end(), path_ + ": no tensor '" + name + "'");
  return it->second;
}

bool SafeTensorsFile::contains(const std::string &name) const {
  return tensors_.count(name) != 0;
}

std::vector<std::string> SafeTensorsFile::names() const {
  std::vector<std::string> names;
  names.reserve(tensors_.size());
  for (const auto &entry : tensors_)
    names.push_back(entry.first);
  return names;
}

void SafeTensorsFile::read(const std::string &name, void *dst,
                           size_t dstBytes) const {
  const TensorInfo &tensor = info(name);
  check(dstBytes == tensor.bytes,
        path_ + ": tensor '" + name + "' has " + std::to_string(tensor.bytes) +
            " bytes, the destination " + std::to_string(dstBytes));
  file_->readAt(dst, tensor.bytes, tensor.offset);
}

void SafeTensorsFile::readRange(const std::string &name, size_t offset,
                                void *dst, size_t bytes) const {
  const TensorInfo &tensor = info(name);
  check(offset <= tensor.bytes && bytes <= tensor.bytes - offset,
        path_ + ": tensor '" + name + "' has " + std::to_string(tensor.bytes) +
            " bytes, fewer than the " + std::to_string(bytes) +
            " asked from byte " + std::to_string(offset));
  if (bytes != 0)
    file_->readAt(dst, bytes, tensor.offset + offset);
}

} // namespace dsc::rt
