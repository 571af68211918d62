//===- OnnxExport.h - Writing trained weights back into ONNX ----*- C++ -*-===//
//
// Puts trained parameters back into the ONNX model they came from, so that
// the result loads in onnxruntime, PyTorch or trainc again. The runtime does
// not link protobuf or libonnx: OnnxExport.cpp reads and writes the protobuf
// wire format itself and understands only the few fields it must
// (ModelProto.graph, GraphProto.initializer, and TensorProto's dims,
// data_type, name, raw_data, external_data and data_location). Every other
// field is copied byte for byte, so the graph, opset imports, metadata and
// fields newer than this file survive unchanged.
//
// Only the top-level graph's initializers are read or replaced; initializers
// of subgraphs (If/Loop/Scan attributes) are copied untouched, as the
// compiler takes its parameters from the top-level graph only.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_IO_ONNXEXPORT_H
#define TRAINC_RUNTIME_IO_ONNXEXPORT_H

#include "base/Status.h"
#include "io/SafeTensors.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trainc {

/// Writes a copy of the ONNX model at `sourcePath` to `outPath` in which every
/// initializer named in `weights` holds the given values (everything else is
/// copied byte for byte).
///
/// A replaced initializer must have the same element type and dims as its
/// new value; it is rewritten as dims, data_type, name and little-endian
/// raw_data (typed *_data fields, segment, external_data and data_location
/// are dropped; doc_string and unknown fields are kept). Every name in
/// `weights` must name exactly one top-level initializer.
///
/// Initializers that are not replaced are copied verbatim, except those
/// stored as external data when `outPath` is in another directory than
/// `sourcePath`: their relative location would no longer resolve, so their
/// bytes are read (relative to the source's directory) and inlined as
/// raw_data.
///
/// The output goes through `outPath` + ".tmp", renamed at the end; on any
/// failure neither file is left behind. `outPath` must not be the source
/// model or one of its external data files (refused, so that a training run
/// never overwrites the model it started from).
Status exportOnnxWithWeights(const std::string &sourcePath,
                             const std::string &outPath,
                             const std::vector<NamedTensor> &weights);

/// What exportOnnxWithWeights(sourcePath, outPath, weights) checks before it
/// writes, with the same errors, writing nothing: it reads the model file
/// (not its external data: only that each range is in its file) and needs
/// of the weights only their names, dtypes, shapes and byte counts (`data`
/// may be null). The exported model's size, which the 2 GiB limit is
/// checked against, is counted exactly (`size`, when given, gets it). For a
/// training run to find a wrong source model before it trains.
Status checkOnnxExport(const std::string &sourcePath,
                       const std::string &outPath,
                       const std::vector<NamedTensor> &weights,
                       uint64_t *size = nullptr);

/// One top-level initializer of an ONNX file, as stored.
struct OnnxInitializer {
  std::string name;
  int32_t dataType = 0; ///< TensorProto.DataType: 1 FLOAT, 7 INT64, ...
  std::vector<int64_t> dims;
  bool hasRawData = false;
  std::string rawData;   ///< raw_data's bytes when hasRawData.
  bool external = false; ///< data_location == EXTERNAL (bytes not read).
};

/// Reads the top-level initializers of the ONNX model at `path` (for tests
/// and tools; the compiler has its own importer).
Status readOnnxInitializers(const std::string &path,
                            std::vector<OnnxInitializer> &out);

} // namespace trainc

#endif // TRAINC_RUNTIME_IO_ONNXEXPORT_H
