//===- LocatedJsonTest.cpp - JSON with comments and key locations ---------===//

#include "dsc/Config/LocatedJson.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::dsc;

namespace {
struct Parsed {
  llvm::SourceMgr sourceMgr;
  std::string diagnostics;
  FailureOr<LocatedJson> json = failure();
  std::string text;

  explicit Parsed(StringRef input) : text(input.str()) {
    sourceMgr.setDiagHandler(
        [](const llvm::SMDiagnostic &d, void *context) {
          llvm::raw_string_ostream os(*static_cast<std::string *>(context));
          os << d.getLineNo() << ":" << d.getColumnNo() + 1 << ": " << d.getMessage();
        },
        &diagnostics);
    unsigned id = sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(text, "config.json"), llvm::SMLoc());
    json = parseLocatedJson(sourceMgr, id);
  }

  /// "line:column" of `path`'s key.
  std::string where(StringRef path) {
    auto [line, column] = sourceMgr.getLineAndColumn(json->locate(path));
    return std::to_string(line) + ":" + std::to_string(column);
  }
};
} // namespace

TEST(LocatedJson, CommentsAreBlankAndStringsKeepTheirSlashes) {
  Parsed p("{\n  // a comment\n  \"url\": \"http://x/*y*/\", /* another */\n"
           "  \"n\": 5e8\n}");
  ASSERT_TRUE(succeeded(p.json)) << p.diagnostics;
  const llvm::json::Object &root = *p.json->value.getAsObject();
  EXPECT_EQ(root.getString("url"), "http://x/*y*/");
  EXPECT_EQ(root.getNumber("n"), 5e8);
  EXPECT_EQ(p.where("url"), "3:3");
  EXPECT_EQ(p.where("n"), "4:3");
}

TEST(LocatedJson, NestedAndArrayPaths) {
  Parsed p("{\"a\": {\"b\": [1, {\"c\": 2}, {\"c\": 3, \"d\\\"e\": 4}]}}");
  ASSERT_TRUE(succeeded(p.json)) << p.diagnostics;
  EXPECT_EQ(p.where("a"), "1:2");
  EXPECT_EQ(p.where("a.b"), "1:8");
  EXPECT_EQ(p.where("a.b[1].c"), "1:18");
  EXPECT_EQ(p.where("a.b[2].c"), "1:28");
  // An escaped quote does not end the key.
  EXPECT_EQ(p.where("a.b[2].d\\\"e"), "1:36");
  // Unknown paths point at the start.
  EXPECT_EQ(p.where("zzz"), "1:1");
}

TEST(LocatedJson, DuplicateKeysAreErrorsOnlyWithinOneObject) {
  Parsed ok("{\"x\": {\"k\": 1}, \"y\": {\"k\": 2}}");
  EXPECT_TRUE(succeeded(ok.json)) << ok.diagnostics;
  Parsed dup("{\"x\": {\"k\": 1,\n \"k\": 2}}");
  EXPECT_TRUE(failed(dup.json));
  EXPECT_EQ(dup.diagnostics, "2:2: duplicate key 'k'");
}

TEST(LocatedJson, SyntaxErrorsAreLocated) {
  Parsed bad("{\"a\": 1,\n \"b\": ]}");
  EXPECT_TRUE(failed(bad.json));
  // llvm::json stops one past the offending character.
  EXPECT_EQ(bad.diagnostics.substr(0, 4), "2:8:");
  Parsed comment("{} /* open");
  EXPECT_TRUE(failed(comment.json));
  EXPECT_EQ(comment.diagnostics, "1:4: unterminated comment");
  Parsed string("{\"a\": \"open\n}");
  EXPECT_TRUE(failed(string.json));
  EXPECT_EQ(string.diagnostics, "1:7: unterminated string");
}

TEST(LocatedJson, NestingIsBoundedBeforeParsing) {
  std::string deepest(kMaxJsonNesting, '[');
  deepest += std::string(kMaxJsonNesting, ']');
  Parsed ok(deepest);
  EXPECT_TRUE(succeeded(ok.json)) << ok.diagnostics;
  // One level more is refused at its bracket; brackets in strings and
  // comments do not count.
  Parsed deep("[" + deepest + "]");
  EXPECT_TRUE(failed(deep.json));
  EXPECT_EQ(deep.diagnostics.substr(0, 5), "1:65:");
  Parsed quoted("[\"" + std::string(1000, '[') + "\" /* [[[[ */]");
  EXPECT_TRUE(succeeded(quoted.json)) << quoted.diagnostics;
}
