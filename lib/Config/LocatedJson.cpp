//===- LocatedJson.cpp - JSON with comments, duplicate keys and locations -===//

#include "dsc/Config/LocatedJson.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdio>

using namespace mlir;
using namespace mlir::dsc;

llvm::SMLoc LocatedJson::locate(StringRef path) const {
  auto it = keys.find(path);
  return it == keys.end() ? start : it->second;
}

namespace {
/// One object or array being scanned.
struct Container {
  bool isObject;
  std::string path;
  llvm::StringSet<> keys;
  bool expectKey;
  unsigned index = 0;
  std::string lastKey;
};

std::string childPath(const Container &parent) {
  if (!parent.isObject)
    return parent.path + "[" + std::to_string(parent.index) + "]";
  return parent.path.empty() ? parent.lastKey : parent.path + "." + parent.lastKey;
}
} // namespace

FailureOr<LocatedJson> mlir::dsc::parseLocatedJson(llvm::SourceMgr &sourceMgr,
                                                   unsigned bufferId) {
  StringRef text = sourceMgr.getMemoryBuffer(bufferId)->getBuffer();
  auto at = [&](size_t offset) {
    return llvm::SMLoc::getFromPointer(text.data() + offset);
  };
  auto error = [&](size_t offset, const Twine &message) {
    sourceMgr.PrintMessage(at(offset), llvm::SourceMgr::DK_Error, message);
    return failure();
  };

  LocatedJson result;
  result.start = at(0);
  // Same length as the text, so that offsets into it are offsets into the
  // file and llvm::json's error positions stay right.
  std::string clean = text.str();
  SmallVector<Container> stack;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '/' && i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '*')) {
      bool line = text[i + 1] == '/';
      size_t end = line ? text.find('\n', i) : text.find("*/", i + 2);
      if (end == StringRef::npos) {
        if (!line)
          return error(i, "unterminated comment");
        end = text.size();
      } else if (!line) {
        end += 2;
      }
      for (size_t j = i; j < end; ++j)
        if (clean[j] != '\n')
          clean[j] = ' ';
      i = end - 1;
      continue;
    }
    if (c == '"') {
      size_t begin = i + 1, j = begin;
      while (j < text.size() && text[j] != '"' && text[j] != '\n')
        j += text[j] == '\\' ? 2 : 1;
      if (j >= text.size() || text[j] != '"')
        return error(i, "unterminated string");
      if (!stack.empty() && stack.back().isObject && stack.back().expectKey) {
        Container &object = stack.back();
        std::string key = text.slice(begin, j).str();
        if (!object.keys.insert(key).second)
          return error(i, "duplicate key '" + key + "'");
        object.lastKey = key;
        object.expectKey = false;
        result.keys[childPath(object)] = at(i);
      }
      i = j;
      continue;
    }
    if (c == '{' || c == '[') {
      // llvm::json::parse recurses once per level and has no bound of
      // its own; nor would the paths kept here (200 KB of `[` took 690 MB
      // at 20,000 levels).
      if (stack.size() >= kMaxJsonNesting)
        return error(i, "JSON nests deeper than " + Twine(kMaxJsonNesting) +
                            " levels; a DeepSpeed config needs a few");
      std::string path = stack.empty() ? "" : childPath(stack.back());
      stack.push_back({c == '{', path, {}, c == '{', 0, {}});
    } else if ((c == '}' || c == ']') && !stack.empty()) {
      stack.pop_back();
    } else if (c == ',' && !stack.empty()) {
      if (stack.back().isObject)
        stack.back().expectKey = true;
      else
        ++stack.back().index;
    }
  }

  llvm::Expected<llvm::json::Value> value = llvm::json::parse(clean);
  if (!value) {
    std::string message = llvm::toString(value.takeError());
    // llvm::json says "[line:col, byte=N]: message".
    size_t offset = 0;
    size_t byte = message.find("byte=");
    if (byte != std::string::npos)
      std::sscanf(message.c_str() + byte, "byte=%zu", &offset);
    size_t colon = message.find("]: ");
    return error(std::min(offset, text.size()),
                 colon == std::string::npos ? message : message.substr(colon + 3));
  }
  result.value = std::move(*value);
  return result;
}
