//===- dsc-translate.cpp - dsc's emitters ----------------------------------===//
//
// mlir-translate with dsc's translations: --dscrt-to-cpp prints a lowered
// module as the C++ source of an artifact.
//
//===----------------------------------------------------------------------===//

#include "dsc/Target/Cpp.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::dsc::registerToCppTranslation();
  return mlir::failed(mlir::mlirTranslateMain(argc, argv, "dsc translation driver"));
}
