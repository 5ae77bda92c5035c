//===- BlockSubset.cpp - a shallower model's weights from a deeper one ----===//

#include "dsc/runtime/BlockSubset.h"

#include "dsc/runtime/Error.h"

#include <algorithm>
#include <map>
#include <set>

namespace dsc::rt {

namespace {

/// The block index of `name` under `prefix` ("h.3.attn.w" under "h": 3),
/// and the rest after it; -1 when `name` is no block's.
int64_t blockIndex(const std::string &name, const std::string &prefix,
                   std::string &rest) {
  std::string head = prefix + ".";
  if (name.compare(0, head.size(), head) != 0)
    return -1;
  size_t begin = head.size(), end = begin;
  while (end < name.size() && name[end] >= '0' && name[end] <= '9')
    ++end;
  // Digits, then a dot; no leading zero, so that each index has one
  // spelling, and short enough to fit.
  if (end == begin || end >= name.size() || name[end] != '.' ||
      (name[begin] == '0' && end - begin > 1) || end - begin > 15)
    return -1;
  rest = name.substr(end);
  return std::stoll(name.substr(begin, end - begin));
}

} // namespace

std::vector<RenamedTensor> planBlockSubset(const std::vector<std::string> &names,
                                           const std::string &prefix,
                                           const std::vector<int64_t> &keep) {
  check(!keep.empty(), "no block to keep");
  std::map<int64_t, size_t> position;
  for (size_t j = 0; j < keep.size(); ++j) {
    check(keep[j] >= 0, "block " + std::to_string(keep[j]) +
                            " does not exist: blocks count from 0");
    check(position.emplace(keep[j], j).second,
          "block " + std::to_string(keep[j]) + " is kept twice");
  }
  std::vector<RenamedTensor> plan;
  std::set<int64_t> blocks, found;
  for (const std::string &name : names) {
    std::string rest;
    int64_t block = blockIndex(name, prefix, rest);
    if (block < 0) {
      plan.push_back({name, name});
      continue;
    }
    blocks.insert(block);
    auto kept = position.find(block);
    if (kept == position.end())
      continue;
    found.insert(block);
    plan.push_back(
        {prefix + "." + std::to_string(kept->second) + rest, name});
  }
  check(!blocks.empty(), "no tensor is named '" + prefix +
                             ".<block>.<...>': give the prefix of the blocks' "
                             "names (transformer.h for the zoo's GPT-2)");
  for (int64_t block : keep)
    check(found.count(block) != 0,
          "block " + std::to_string(block) + " has no tensor; the file's "
          "blocks are " + std::to_string(*blocks.begin()) + ".." +
          std::to_string(*blocks.rbegin()));
  std::sort(plan.begin(), plan.end(),
            [](const RenamedTensor &a, const RenamedTensor &b) {
              return a.name < b.name;
            });
  return plan;
}

std::vector<RenamedTensor> writeBlockSubset(const SafeTensorsFile &weights,
                                            const std::string &prefix,
                                            const std::vector<int64_t> &keep,
                                            const std::string &path) {
  std::vector<RenamedTensor> plan;
  try {
    plan = planBlockSubset(weights.names(), prefix, keep);
  } catch (const Error &error) {
    throw Error(weights.path() + ": " + error.what());
  }
  std::vector<std::vector<char>> data(plan.size());
  std::vector<TensorView> views;
  for (size_t i = 0; i < plan.size(); ++i) {
    const TensorInfo &info = weights.info(plan[i].source);
    data[i].resize(info.bytes);
    weights.read(plan[i].source, data[i].data(), info.bytes);
    views.push_back({plan[i].name, info.dtype, info.shape, data[i].data()});
  }
  writeSafeTensors(path, views, weights.metadata());
  return plan;
}

} // namespace dsc::rt
