#include "dsc/Analysis/ModuleSummary.h"
#include "dsc/InitAll.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

static const char *kModel = R"mlir(
dsc.state parameter @"fc.weight" : tensor<4x8xf32>
dsc.state parameter @"fc.bias" : tensor<4xf32>
dsc.state buffer @"mask" : tensor<8x8xi1>
func.func @forward(%x: tensor<2x8xf32> {dsc.input = "x"},
                   %y: tensor<2xi64> {dsc.input = "y"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @"fc.weight" : tensor<4x8xf32>
  %b = dsc.load @"fc.bias" : tensor<4xf32>
  %h = dsc.linear %x, %w, %b : tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>
  %r = dsc.relu %h : tensor<2x4xf32>
  %s = dsc.relu %r : tensor<2x4xf32>
  %loss = dsc.cross_entropy %s, %y : tensor<2x4xf32>, tensor<2xi64>
  return %loss : tensor<f32>
}
)mlir";

TEST(ModuleSummary, CountsStateGraphsAndOps) {
  DialectRegistry registry;
  dsc::registerAllDialects(registry);
  MLIRContext ctx(registry);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModel, &ctx);
  ASSERT_TRUE(module);
  dsc::ModuleSummary s = dsc::ModuleSummary::compute(*module);

  ASSERT_EQ(s.states.size(), 3u);
  EXPECT_EQ(s.states[0].name, "fc.weight");
  EXPECT_EQ(s.states[2].role, "buffer");
  EXPECT_EQ(s.parameterElements, 36);
  EXPECT_EQ(s.parameterBytes, 144);
  EXPECT_EQ(s.bufferElements, 64);
  EXPECT_EQ(s.bufferBytes, 64); // i1 takes a byte

  ASSERT_EQ(s.graphs.size(), 1u);
  ASSERT_EQ(s.graphs[0].inputs.size(), 2u);
  EXPECT_EQ(s.graphs[0].inputs[1].first, "y");
  EXPECT_EQ(s.graphs[0].outputs[0].first, "loss");

  // 3 states + func + 2 loads + linear + 2 relu + cross_entropy + return.
  EXPECT_EQ(s.totalOps, 11);
  ASSERT_FALSE(s.opCounts.empty());
  EXPECT_EQ(s.opCounts[0], std::make_pair(std::string("dsc.state"), int64_t(3)));
  EXPECT_EQ(s.opCounts[1], std::make_pair(std::string("dsc.load"), int64_t(2)));

  std::string text;
  llvm::raw_string_ostream os(text);
  s.print(os);
  EXPECT_NE(text.find("parameters: 36"), std::string::npos);
  EXPECT_NE(text.find("input  x : tensor<2x8xf32>"), std::string::npos);
}

// Optimizer state, fp32 masters and accumulators are neither parameters nor
// buffers: they are counted, and printed, on their own.
TEST(ModuleSummary, CountsTrainingStateApart) {
  DialectRegistry registry;
  dsc::registerAllDialects(registry);
  MLIRContext ctx(registry);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(R"mlir(
dsc.state parameter @"w" : tensor<4x8xbf16>
dsc.state buffer @"mask" : tensor<8xi1>
dsc.state master @"w.master" : tensor<4x8xf32>
dsc.state optimizer @"w.exp_avg" : tensor<4x8xf32>
dsc.state gradient @"w.grad_acc" : tensor<4x8xbf16>
)mlir",
                                                             &ctx);
  ASSERT_TRUE(module);
  dsc::ModuleSummary s = dsc::ModuleSummary::compute(*module);
  EXPECT_EQ(s.parameterBytes, 64);
  EXPECT_EQ(s.bufferElements, 8);
  EXPECT_EQ(s.trainingStateElements, 96);
  EXPECT_EQ(s.trainingStateBytes, 128 + 128 + 64);
  std::string text;
  llvm::raw_string_ostream os(text);
  s.print(os);
  EXPECT_NE(text.find("buffers: 8 "), std::string::npos);
  EXPECT_NE(text.find("training state (optimizer, master weights, "
                      "accumulators): 96 "),
            std::string::npos);
}
