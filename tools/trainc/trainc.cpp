//===- trainc.cpp - The trainc compiler -----------------------------------===//
//
// See Driver.cpp; `trainc --help` lists every flag.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

int main(int argc, char **argv) { return trainc::runCompilerCli(argc, argv); }
