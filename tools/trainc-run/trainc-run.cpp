//===- trainc-run.cpp - Run a trainc executable ---------------------------===//
//
// See runtime/src/tools/RunTool.cpp; `trainc-run --help` lists every flag.
//
//===----------------------------------------------------------------------===//

#include "tools/RunTool.h"

int main(int argc, char **argv) { return trainc::runRunTool(argc, argv); }
