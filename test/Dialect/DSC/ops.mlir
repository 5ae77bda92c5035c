// RUN: dsc-opt %s | FileCheck %s
