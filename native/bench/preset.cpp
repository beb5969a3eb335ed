#include "preset.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "spec/json.h"

namespace fs = std::filesystem;
using nnstudio::json::Value;

namespace nnstudio_bench {
namespace {

// A number member, or `fallback` when absent.
double numberOr(const Value& object, const char* key, double fallback) {
  const Value* member = object.find(key);
  return member && member->isNumber() ? member->number : fallback;
}

// A preset's "lrSchedule": constant, or onecycle with maxLr, pctStart, divFactor, finalDivFactor (as the app's presets).
nnstudio::LrSchedule presetSchedule(const Value& value) {
  nnstudio::LrSchedule schedule;
  const Value* kind = value.find("kind");
  const std::string name = kind && kind->isString() ? kind->string : "";
  if (name == "constant") return schedule;
  if (name != "onecycle") throw std::runtime_error("the bench knows lrSchedule kinds constant and onecycle, got '" + name + "'");
  schedule.kind = nnstudio::LrScheduleKind::OneCycle;
  schedule.maxLr = numberOr(value, "maxLr", schedule.maxLr);
  schedule.pctStart = numberOr(value, "pctStart", schedule.pctStart);
  schedule.divFactor = numberOr(value, "divFactor", schedule.divFactor);
  schedule.finalDivFactor = numberOr(value, "finalDivFactor", schedule.finalDivFactor);
  return schedule;
}

// A preset's "augment" (the app's Augmentation: translate, flip, rotate, scale, erase).
nnstudio::Augmentation presetAugment(const Value& value) {
  nnstudio::Augmentation augment;
  augment.translate = int(numberOr(value, "translate", 0));
  const Value* flip = value.find("flip");
  augment.flip = flip && flip->type == Value::Type::Bool && flip->boolean;
  augment.rotate = float(numberOr(value, "rotate", 0));
  augment.scale = float(numberOr(value, "scale", 0));
  augment.erase = float(numberOr(value, "erase", 0));
  return augment;
}

std::string readTextFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void readTraining(const Value& training, Preset& preset) {
  preset.batchSize = int(numberOr(training, "batchSize", preset.batchSize));
  preset.epochs = int(numberOr(training, "epochs", preset.epochs));
  preset.ema = numberOr(training, "ema", 0);
  if (const Value* schedule = training.find("lrSchedule")) preset.lrSchedule = presetSchedule(*schedule);
  if (const Value* augment = training.find("augment")) preset.augment = presetAugment(*augment);
}

}  // namespace

Preset loadPreset(const fs::path& path) {
  const std::string text = readTextFile(path);
  Preset preset;
  preset.name = path.stem().string();
  try {
    // The engine's own JSON reader: the preset's "spec" is handed on as JSON text.
    const Value top = nnstudio::json::parse(text);
    const Value* spec = top.find("spec");
    if (!spec || !spec->isObject()) throw std::runtime_error("no \"spec\" object");
    preset.specJson = nnstudio::json::serialize(*spec);
    const Value* gpuOnly = top.find("gpuOnly");
    preset.gpuOnly = gpuOnly && gpuOnly->type == Value::Type::Bool && gpuOnly->boolean;
    if (const Value* training = top.find("training")) readTraining(*training, preset);
  } catch (const std::exception& error) {
    throw std::runtime_error("preset " + path.string() + ": " + error.what());
  }
  if (preset.batchSize <= 0) throw std::runtime_error("preset " + path.string() + ": batchSize must be positive");
  if (preset.epochs <= 0) throw std::runtime_error("preset " + path.string() + ": epochs must be positive");
  return preset;
}

std::vector<std::string> defaultConfigs(const fs::path& presetDir, bool cuda) {
  static const std::vector<std::string> tableOrder = {"seed000", "seed001", "seed001_256", "seed002", "mlp", "keras_cnn"};
  std::vector<std::string> names;
  if (!fs::is_directory(presetDir)) throw std::runtime_error("presets directory not found: " + presetDir.string());
  for (const auto& entry : fs::directory_iterator(presetDir))
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
    const auto rank = [&](const std::string& n) {
      return size_t(std::find(tableOrder.begin(), tableOrder.end(), n) - tableOrder.begin());
    };
    return rank(a) != rank(b) ? rank(a) < rank(b) : a < b;
  });
  std::vector<std::string> chosen;
  for (const std::string& name : names)
    if (cuda || !loadPreset(presetDir / (name + ".json")).gpuOnly) chosen.push_back(name);
  return chosen;
}

}  // namespace nnstudio_bench
