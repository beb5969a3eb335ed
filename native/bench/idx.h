// A small reader for raw (uncompressed) IDX files, the format MNIST ships in.
// Checks the magic number, the element type, the dimension count and that the file's size is exactly
// header + data, and throws std::runtime_error with a one-line message naming the file otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nnstudio_bench {

struct IdxImages {
  int64_t count = 0;
  int rows = 0, cols = 0;
  std::vector<float> pixels;  // (count, rows*cols), scaled to [0,1]
};

// An idx3-ubyte images file (magic 0x00000803).
IdxImages readIdxImages(const std::string& path);
// An idx1-ubyte labels file (magic 0x00000801).
std::vector<int32_t> readIdxLabels(const std::string& path);

}  // namespace nnstudio_bench
