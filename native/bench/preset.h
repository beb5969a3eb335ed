// The bench's view of resources/presets/*.json: the model spec (as JSON text for parseModelSpec) and the
// preset's training recipe (batch size, epochs, schedule, augmentation, weight average).
#pragma once

#include <nnstudio/engine.h>

#include <filesystem>
#include <string>
#include <vector>

namespace nnstudio_bench {

struct Preset {
  std::string name;
  std::string specJson;  // the "spec" member, raw
  int batchSize = 32;
  int epochs = 1;        // the recipe's ("training.epochs"), used by --recipe
  bool gpuOnly = false;
  nnstudio::LrSchedule lrSchedule;  // "training.lrSchedule"; default constant
  nnstudio::Augmentation augment;   // "training.augment"; default none
  double ema = 0;                   // "training.ema"; default no weight average
};

Preset loadPreset(const std::filesystem::path& path);

// The DESIGN §8 configs first, in the table's order, then any other preset by name; on the CPU, only
// the presets not marked gpuOnly.
std::vector<std::string> defaultConfigs(const std::filesystem::path& presetDir, bool cuda);

}  // namespace nnstudio_bench
