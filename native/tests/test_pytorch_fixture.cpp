// Whole-network check against PyTorch (micrograd / llm.c style): fixtures written by
// scripts/make_torch_fixture.py hold a spec, its weights, a batch, and PyTorch's float64 outputs, mean loss
// and parameter gradients. We run nnstudio::forwardBackwardCpu (float32, training=false) on the same
// numbers and compare every tensor.
//
// Tolerance, per tensor: max |ours - torch| <= 1e-4 * max(max |torch|, 1e-2).
// That is 1e-4 relative to the tensor's largest magnitude (float32 arithmetic over these small sums stays
// around 1e-6), floored at an absolute 1e-6 for tensors that are all near zero. Layout or padding mistakes
// give errors of the order of the values themselves.
#include <nnstudio/engine.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "fixture_json.h"

#ifndef NNSTUDIO_SOURCE_DIR
#define NNSTUDIO_SOURCE_DIR "native"
#endif

namespace {

constexpr double kRelativeTolerance = 1e-4;
constexpr double kMagnitudeFloor = 1e-2;

const char* const kFixtures[] = {"torch_cnn", "torch_bce", "torch_mse", "torch_mae_softmax"};

int passed = 0, failed = 0;

void report(bool ok, const std::string& what, const std::string& detail) {
  std::printf("  %s  %-34s %s\n", ok ? "ok  " : "FAIL", what.c_str(), detail.c_str());
  ++(ok ? passed : failed);
}

// Compares `ours` (any float type) with `reference` under the per-tensor tolerance.
template <typename T>
void compareTensor(const std::string& what, const T* ours, size_t oursSize, const std::vector<double>& reference) {
  if (oursSize != reference.size()) {
    report(false, what, "size " + std::to_string(oursSize) + ", fixture " + std::to_string(reference.size()));
    return;
  }
  double maxError = 0, magnitude = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    const double error = std::fabs(double(ours[i]) - reference[i]);
    maxError = std::isnan(error) ? INFINITY : std::max(maxError, error);
    magnitude = std::max(magnitude, std::fabs(reference[i]));
  }
  const double allowed = kRelativeTolerance * std::max(magnitude, kMagnitudeFloor);
  char detail[160];
  std::snprintf(detail, sizeof detail, "max err %.3g (allowed %.3g, max |torch| %.3g, %zu values)", maxError, allowed,
                magnitude, reference.size());
  report(maxError <= allowed, what, detail);
}

void checkFixture(const std::string& name) {
  const std::string path = std::string(NNSTUDIO_SOURCE_DIR) + "/tests/fixtures/" + name + ".json";
  std::printf("%s (%s)\n", name.c_str(), path.c_str());
  try {
    using fixture_json::at;
    using fixture_json::numbers;
    const fixture_json::Value fixture = nnstudio::json::parse(fixture_json::readFile(path));
    const nnstudio::ModelSpec spec = nnstudio::parseModelSpec(nnstudio::json::serialize(at(fixture, "spec")));

    // ---- the flat parameter vector, laid out by the engine's own table ----
    const std::vector<nnstudio::ParamTensor> table = nnstudio::parameterTable(spec);
    std::vector<float> parameters(nnstudio::parameterCount(spec), NAN);
    const fixture_json::Value& fixtureParameters = at(fixture, "parameters");
    if (table.size() != fixtureParameters.object.size())
      report(false, "parameter tensors", std::to_string(table.size()) + " in the engine's table, " +
                                             std::to_string(fixtureParameters.object.size()) + " in the fixture");
    for (const nnstudio::ParamTensor& tensor : table) {
      if (!fixtureParameters.find(tensor.name)) {
        report(false, tensor.name, "not in the fixture");
        continue;
      }
      const fixture_json::Value& entry = at(fixtureParameters, tensor.name);
      std::vector<int> shape;
      for (const double d : numbers(at(entry, "shape"))) shape.push_back(int(d));
      const std::vector<double> data = numbers(at(entry, "data"));
      if (shape != tensor.shape || data.size() != tensor.size) {
        report(false, tensor.name + " shape", "engine and fixture disagree");
        continue;
      }
      std::copy(data.begin(), data.end(), parameters.begin() + std::ptrdiff_t(tensor.offset));
    }

    // ---- the batch ----
    const std::vector<double> inputs64 = numbers(at(at(fixture, "inputs"), "data"));
    const std::vector<float> inputs(inputs64.begin(), inputs64.end());
    std::vector<int32_t> labels;
    for (const double label : numbers(at(fixture, "labels"))) labels.push_back(int32_t(label));
    const int batch = int(labels.size());

    // ---- forward and backward ----
    std::vector<float> outputs, gradients;
    const double loss = nnstudio::forwardBackwardCpu(spec, parameters, inputs.data(), labels.data(), batch,
                                                     /*training=*/false, outputs, gradients);

    compareTensor("logits", outputs.data(), outputs.size(), numbers(at(at(fixture, "logits"), "data")));
    compareTensor("loss", &loss, 1, {at(fixture, "loss").number});
    if (gradients.size() != parameters.size()) {
      report(false, "gradients", "size " + std::to_string(gradients.size()) + ", expected " +
                                     std::to_string(parameters.size()));
      return;
    }
    const fixture_json::Value& fixtureGradients = at(fixture, "gradients");
    for (const nnstudio::ParamTensor& tensor : table) {
      if (!fixtureGradients.find(tensor.name)) continue;  // reported above
      compareTensor("grad " + tensor.name, gradients.data() + tensor.offset, tensor.size,
                    numbers(at(at(fixtureGradients, tensor.name), "data")));
    }
  } catch (const std::exception& error) {
    report(false, "fixture", error.what());
  }
}

}  // namespace

int main() {
  for (const char* name : kFixtures) checkFixture(name);
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
