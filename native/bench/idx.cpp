#include "idx.h"

#include <fstream>
#include <stdexcept>

namespace nnstudio_bench {
namespace {

// ---- raw bytes and the header ----
std::vector<uint8_t> readWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot open IDX file " + path);
  const std::streamoff size = in.tellg();
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.seekg(0);
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), size))
    throw std::runtime_error("cannot read IDX file " + path);
  return bytes;
}

uint32_t bigEndian32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

// Validates magic (type 0x08 = unsigned byte, `dims` dimensions) and the exact file size; returns the dims.
std::vector<uint32_t> checkHeader(const std::vector<uint8_t>& bytes, const std::string& path, int dims) {
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b)
    throw std::runtime_error(path + ": gzip-compressed IDX is not supported here; gunzip it first");
  const size_t headerSize = 4 + 4 * size_t(dims);
  if (bytes.size() < headerSize)
    throw std::runtime_error(path + ": too short for an IDX header (" + std::to_string(bytes.size()) + " bytes)");
  if (bytes[0] != 0 || bytes[1] != 0) throw std::runtime_error(path + ": not an IDX file (bad magic)");
  if (bytes[2] != 0x08)
    throw std::runtime_error(path + ": IDX element type " + std::to_string(bytes[2]) + " is not unsigned byte (8)");
  if (bytes[3] != dims)
    throw std::runtime_error(path + ": IDX file has " + std::to_string(bytes[3]) + " dimensions, expected " +
                             std::to_string(dims));
  std::vector<uint32_t> sizes(static_cast<size_t>(dims));
  uint64_t elements = 1;
  for (int d = 0; d < dims; ++d) {
    sizes[size_t(d)] = bigEndian32(&bytes[4 + 4 * size_t(d)]);
    elements *= sizes[size_t(d)];
  }
  if (bytes.size() != headerSize + elements)
    throw std::runtime_error(path + ": size " + std::to_string(bytes.size()) + " bytes does not match its header (" +
                             std::to_string(headerSize + elements) + " expected)");
  return sizes;
}

}  // namespace

IdxImages readIdxImages(const std::string& path) {
  const std::vector<uint8_t> bytes = readWholeFile(path);
  const std::vector<uint32_t> sizes = checkHeader(bytes, path, 3);
  IdxImages images;
  images.count = sizes[0];
  images.rows = int(sizes[1]);
  images.cols = int(sizes[2]);
  const uint8_t* data = bytes.data() + 16;
  const size_t n = size_t(images.count) * size_t(images.rows) * size_t(images.cols);
  images.pixels.resize(n);
  for (size_t i = 0; i < n; ++i) images.pixels[i] = float(data[i]) / 255.0f;
  return images;
}

std::vector<int32_t> readIdxLabels(const std::string& path) {
  const std::vector<uint8_t> bytes = readWholeFile(path);
  const std::vector<uint32_t> sizes = checkHeader(bytes, path, 1);
  std::vector<int32_t> labels(sizes[0]);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = bytes[8 + i];
  return labels;
}

}  // namespace nnstudio_bench
