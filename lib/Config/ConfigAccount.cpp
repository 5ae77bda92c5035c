//===- ConfigAccount.cpp - what dsc did with each ds_config key -----------===//
//
// Printed by dsc-opt after reading a config: every key with
// --config-report, otherwise a short summary of the keys that did not
// simply set an option (the "auto" ones and those without effect), so that
// no key of a config is ignored without a word.
//
//===----------------------------------------------------------------------===//

#include "dsc/Config/DeepSpeedConfig.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::dsc;

void mlir::dsc::printConfigAccount(llvm::raw_ostream &os,
                                   const ConfigAccount &account,
                                   bool everyKey) {
  if (everyKey) {
    for (const KeyAccount &key : account) {
      os << key.file << ":" << key.line << ":" << key.column << ": " << key.key
         << ": " << dispositionName(key.disposition);
      if (!key.detail.empty())
        os << ": " << key.detail;
      os << "\n";
    }
    return;
  }
  for (KeyDisposition shown :
       {KeyDisposition::Defaulted, KeyDisposition::NoEffect}) {
    SmallVector<const KeyAccount *> keys;
    for (const KeyAccount &key : account)
      if (key.disposition == shown)
        keys.push_back(&key);
    if (keys.empty())
      continue;
    os << keys.front()->file << ": "
       << (shown == KeyDisposition::Defaulted ? "\"auto\" keys"
                                              : "keys without effect")
       << " (" << keys.size() << "):";
    for (const KeyAccount *key : keys) {
      os << " " << key->key;
      // The value chosen for an "auto" key is what the user wants to see.
      if (shown == KeyDisposition::Defaulted)
        os << " (" << key->detail << ")";
      os << (key == keys.back() ? "" : ",");
    }
    os << "; --config-report lists every key\n";
  }
}
