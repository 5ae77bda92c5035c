// Shape inference through the C++ builders, the way passes create ops.

#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/InitAll.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {
class ShapeInference : public ::testing::Test {
protected:
  ShapeInference() : builder(&ctx), loc(builder.getUnknownLoc()) {
    DialectRegistry registry;
    dsc::registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }

  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder.getF32Type());
  }
  RankedTensorType i64(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder.getI64Type());
  }
  /// A value of `type` to feed ops (a constant; its content is irrelevant).
  Value value(RankedTensorType type) {
    Attribute zero = type.getElementType().isInteger()
                         ? Attribute(builder.getIntegerAttr(type.getElementType(), 0))
                         : Attribute(builder.getFloatAttr(type.getElementType(), 0));
    return dsc::ConstantOp::create(builder, loc,
                                   DenseElementsAttr::get(type, zero));
  }

  MLIRContext ctx;
  OpBuilder builder;
  Location loc;
};
} // namespace

TEST_F(ShapeInference, BroadcastingAdd) {
  Value a = value(f32({2, 1, 32})), b = value(f32({8, 1}));
  auto add = dsc::AddOp::create(builder, loc, a, b);
  EXPECT_EQ(add.getType(), f32({2, 8, 32}));
}

TEST_F(ShapeInference, MatmulWithTransposeAndBatchBroadcast) {
  Value q = value(f32({2, 4, 8, 16})), k = value(f32({4, 8, 16}));
  auto scores = dsc::MatmulOp::create(builder, loc, q, k,
                                      /*transpose_lhs=*/false,
                                      /*transpose_rhs=*/true);
  EXPECT_EQ(scores.getType(), f32({2, 4, 8, 8}));
}

TEST_F(ShapeInference, LinearAndEmbedding) {
  Value x = value(f32({2, 8, 32})), w = value(f32({128, 32}));
  EXPECT_EQ(dsc::LinearOp::create(builder, loc, x, w, Value()).getType(),
            f32({2, 8, 128}));
  Value table = value(f32({256, 32})), tokens = value(i64({2, 8}));
  EXPECT_EQ(dsc::EmbeddingOp::create(builder, loc, table, tokens, IntegerAttr())
                .getType(),
            f32({2, 8, 32}));
}

TEST_F(ShapeInference, TopKGivesValuesAndI64Indices) {
  Value logits = value(f32({16, 4}));
  auto topk = dsc::TopKOp::create(builder, loc, logits, 2, 1);
  EXPECT_EQ(topk.getValues().getType(), f32({16, 2}));
  EXPECT_EQ(topk.getIndices().getType(), i64({16, 2}));
}

TEST_F(ShapeInference, ReductionsKeepOrDropDims) {
  Value x = value(f32({2, 8, 32}));
  EXPECT_EQ(dsc::ReduceMeanOp::create(builder, loc, x,
                                      ArrayRef<int64_t>{2}, true)
                .getType(),
            f32({2, 8, 1}));
  EXPECT_EQ(dsc::ReduceSumOp::create(builder, loc, x,
                                     ArrayRef<int64_t>{0, 1, 2}, false)
                .getType(),
            f32({}));
}

TEST_F(ShapeInference, CrossEntropyReductions) {
  Value logits = value(f32({2, 8, 256})), targets = value(i64({2, 8}));
  EXPECT_EQ(dsc::CrossEntropyOp::create(builder, loc, logits, targets)
                .getType(),
            f32({}));
  EXPECT_EQ(dsc::CrossEntropyOp::create(builder, loc, logits, targets, -100,
                                        dsc::LossReduction::none)
                .getType(),
            f32({2, 8}));
}

TEST_F(ShapeInference, InvalidOperandsFailWithALocatedDiagnostic) {
  std::string message;
  ScopedDiagnosticHandler capture(&ctx, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  SmallVector<Type> inferred;
  Type lhs = f32({2, 3}), rhs = f32({4, 3});
  EXPECT_TRUE(failed(dsc::inferBroadcastResult(
      loc, {lhs, rhs}, Type(), inferred)));
  EXPECT_NE(message.find("do not broadcast"), std::string::npos);
  // Without a location inference still fails, silently.
  message.clear();
  EXPECT_TRUE(failed(dsc::inferBroadcastResult(std::nullopt, {lhs, rhs},
                                               Type(), inferred)));
  EXPECT_TRUE(message.empty());
}
