//===- trainc-run.cpp - Run a trainc executable ---------------------------===//
//
// See RunTool.cpp; `trainc-run --help` lists every flag.
//
//===----------------------------------------------------------------------===//

#include "RunTool.h"

int main(int argc, char **argv) { return trainc::runRunTool(argc, argv); }
