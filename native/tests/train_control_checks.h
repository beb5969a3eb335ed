// Training-control checks run on any backend (test_train_control on the CPU, test_cuda_training on
// the GPU): exact resume from a TrainState (2 + 2 epochs == 4, with shuffle, dropout and Adam; SGD with
// momentum; a one-cycle schedule), early stopping on a run whose validation loss rises (the stopping
// epoch, the best epoch and its weights), a learning rate changed mid-run (the same bits as resuming
// with that rate), and resume states that do not fit the run.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "nnstudio/engine.h"
#include "spec/rng.h"
#include "test_util.h"

namespace nnstudio_test {

using namespace nnstudio;

struct ControlData {
  std::vector<float> x;
  std::vector<int32_t> y;
  int64_t featureSize = 0;
  DatasetView view() const { return DatasetView{x.data(), y.data(), int64_t(y.size()), featureSize}; }
};

// 1x8x8 images: a horizontal (class 0) or vertical (class 1) bar at a random place, plus noise
inline ControlData controlBars(int count, uint64_t seed) {
  ControlData d;
  d.featureSize = 64;
  nnstudio::Rng rng(seed);
  for (int i = 0; i < count; ++i) {
    const int c = int(rng.below(2)), at = int(rng.below(8));
    for (int r = 0; r < 8; ++r)
      for (int k = 0; k < 8; ++k) {
        const bool on = c == 0 ? r == at : k == at;
        d.x.push_back((on ? 1.0f : 0.0f) + 0.2f * (rng.uniform() - 0.5f));
      }
    d.y.push_back(c);
  }
  return d;
}

inline std::string controlSpec(const char* optimizer, double labelSmoothing = 0) {
  const std::string smoothing =
      labelSmoothing > 0 ? ",\"labelSmoothing\":" + std::to_string(labelSmoothing) : std::string();
  return std::string(
             "{\"input\":[1,8,8],\"layers\":[{\"kind\":\"conv2d\",\"filters\":4,\"kernel\":[3,3],\"padding\":\"same\","
             "\"activation\":\"relu\"},{\"kind\":\"maxpool2d\",\"size\":2},{\"kind\":\"flatten\"},"
             "{\"kind\":\"dense\",\"units\":16,\"activation\":\"relu\"},{\"kind\":\"dropout\",\"rate\":0.2},"
             "{\"kind\":\"dense\",\"units\":2}],\"loss\":\"softmax_cross_entropy\",\"optimizer\":") +
         optimizer + smoothing + ",\"seed\":3}";
}

// Keeps every checkpoint handed out.
struct CheckpointRecorder : ProgressSink {
  std::vector<TrainState> states;
  std::vector<StepProgress> steps;
  std::function<void(const EpochStats&)> onEachEpoch;
  std::function<void(const StepProgress&)> onEachStep;
  bool wantsCheckpoints() const override { return true; }
  void onCheckpoint(const TrainState& state) override { states.push_back(state); }
  void onEpoch(const EpochStats& stats) override {
    if (onEachEpoch) onEachEpoch(stats);
  }
  void onStep(const StepProgress& step) override {
    steps.push_back(step);
    if (onEachStep) onEachStep(step);
  }
};

inline TrainOptions controlOptions(int epochs) {
  TrainOptions o;
  o.epochs = epochs;
  o.batchSize = 24;  // 500 samples: 20 full steps and one of 20
  o.threads = 2;
  o.seed = 11;
  o.progressIntervalSeconds = 0;
  return o;
}

// (two empty vectors are equal: memcmp may not be given their null data, UBSan says)
inline bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0);
}

inline bool sameHistory(const std::vector<EpochStats>& a, const std::vector<EpochStats>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].epoch != b[i].epoch || a[i].trainLoss != b[i].trainLoss || a[i].trainAccuracy != b[i].trainAccuracy ||
        a[i].validationLoss != b[i].validationLoss || a[i].validationAccuracy != b[i].validationAccuracy ||
        a[i].learningRate != b[i].learningRate)
      return false;
  return true;
}

// The recipe options a resume must carry: augmentation (drawn from the seed and the global step) and the
// weight average (kept in the TrainState).
struct Recipe {
  Augmentation augment;
  double ema = 0;
};

inline void checkResumeExact(Backend& backend, const char* label, const std::string& specJson, LrSchedule schedule,
                             Recipe recipe = {}) {
  const ModelSpec spec = parseModelSpec(specJson);
  const ControlData train = controlBars(500, 21), val = controlBars(120, 22);
  const DatasetView tv = train.view(), vv = val.view();
  TrainOptions four = controlOptions(4);
  four.lrSchedule = schedule;
  four.augment = recipe.augment;
  four.ema = recipe.ema;
  CheckpointRecorder whole;
  const TrainResult full = backend.train(spec, tv, &vv, four, &whole, nullptr);
  CHECK_MSG(full.status == TrainStatus::Completed && whole.states.size() == 4,
            std::string(label) + ": 4 epochs hand out 4 checkpoints");
  if (whole.states.size() != 4) return;
  CHECK_MSG(whole.states[1].epoch == 2 && whole.states[1].step == 2 * 21 && whole.states[1].history.size() == 2 &&
                whole.states[1].seed == 11,
            std::string(label) + ": the epoch-2 checkpoint counts 2 epochs, 42 steps, the run's seed");
  CHECK_MSG(sameBits(recipe.ema > 0 ? whole.states[3].emaParameters : whole.states[3].parameters, full.parameters),
            std::string(label) + ": the last checkpoint holds the final weights (the average with ema)");
  CHECK_MSG((recipe.ema > 0) == !whole.states[3].emaParameters.empty() &&
                (recipe.ema == 0 || !sameBits(whole.states[3].emaParameters, whole.states[3].parameters)),
            std::string(label) + ": a checkpoint holds a weight average exactly when the run keeps one, unlike the weights");

  // a stop after epoch 2 (a run of 2 epochs when the schedule does not depend on the total, else the
  // 4-epoch run's own epoch-2 checkpoint), then a resumed run to 4 epochs
  TrainState afterTwo = whole.states[1];
  if (schedule.kind == LrScheduleKind::Constant || schedule.kind == LrScheduleKind::Step) {
    TrainOptions two = controlOptions(2);
    two.lrSchedule = schedule;
    two.augment = recipe.augment;
    two.ema = recipe.ema;
    CheckpointRecorder first;
    const TrainResult half = backend.train(spec, tv, &vv, two, &first, nullptr);
    CHECK_MSG(first.states.size() == 2 && sameBits(first.states[1].parameters, afterTwo.parameters) &&
                  sameBits(first.states[1].optimizerState, afterTwo.optimizerState) &&
                  sameBits(first.states[1].emaParameters, afterTwo.emaParameters) &&
                  sameBits(half.parameters, recipe.ema > 0 ? afterTwo.emaParameters : afterTwo.parameters),
              std::string(label) + ": a 2-epoch run ends in the 4-epoch run's epoch-2 state");
    if (first.states.size() == 2) afterTwo = first.states[1];
  }
  TrainOptions resumed = four;
  resumed.resume = &afterTwo;
  CheckpointRecorder rest;
  const TrainResult second = backend.train(spec, tv, &vv, resumed, &rest, nullptr);
  CHECK_MSG(second.status == TrainStatus::Completed && sameBits(second.parameters, full.parameters),
            std::string(label) + ": 2 + 2 epochs give the 4-epoch weights bit for bit");
  CHECK_MSG(sameHistory(second.history, full.history),
            std::string(label) + ": and the same history (losses, accuracies, learning rates of all 4 epochs)");
  CHECK_MSG(rest.states.size() == 2 && rest.states.back().epoch == 4 && rest.states.back().step == 84 &&
                sameBits(rest.states.back().optimizerState, whole.states[3].optimizerState) &&
                sameBits(rest.states.back().emaParameters, whole.states[3].emaParameters),
            std::string(label) + ": the resumed run's checkpoints continue the count, optimizer state equal");
  CHECK_MSG(second.steps == full.steps, std::string(label) + ": the step count continues (" +
                                            std::to_string(second.steps) + ")");
}

// Validation labels flipped: the better the model fits the training data, the worse its validation loss.
inline void checkEarlyStopping(Backend& backend) {
  const ModelSpec spec = parseModelSpec(controlSpec("{\"kind\":\"adam\",\"lr\":0.01}"));
  const ControlData train = controlBars(500, 31);
  ControlData val = controlBars(120, 32);
  for (int32_t& label : val.y) label = 1 - label;
  const DatasetView tv = train.view(), vv = val.view();
  const int patience = 2;

  CheckpointRecorder plain;
  const TrainResult all = backend.train(spec, tv, &vv, controlOptions(10), &plain, nullptr);
  // the expected stop from the full history, by the rule
  int best = 0, waited = 0, stopAt = 0;
  double bestLoss = 0;
  for (const EpochStats& e : all.history) {
    if (best == 0 || e.validationLoss < bestLoss) {
      best = e.epoch;
      bestLoss = e.validationLoss;
      waited = 0;
    } else if (++waited >= patience) {
      stopAt = e.epoch;
      break;
    }
  }
  CHECK_MSG(stopAt > 0 && stopAt < 10, "the flipped-label validation loss rises: the rule stops at epoch " +
                                           std::to_string(stopAt) + ", best " + std::to_string(best));
  TrainOptions o = controlOptions(10);
  o.earlyStopping.enabled = true;
  o.earlyStopping.monitor = MonitorKind::ValidationLoss;
  o.earlyStopping.patience = patience;
  o.earlyStopping.restoreBest = true;
  CheckpointRecorder rec;
  const TrainResult stopped = backend.train(spec, tv, &vv, o, &rec, nullptr);
  CHECK_MSG(stopped.status == TrainStatus::Completed && stopped.stoppedEarly &&
                int(stopped.history.size()) == stopAt && stopped.bestEpoch == best,
            "early stopping ends the run at epoch " + std::to_string(stopped.history.size()) + ", best epoch " +
                std::to_string(stopped.bestEpoch));
  CHECK_MSG(stopped.restoredBest && best >= 1 && sameBits(stopped.parameters, plain.states[size_t(best - 1)].parameters),
            "restoreBest returns the best epoch's weights bit for bit");
  CHECK_MSG(stopped.message.find("validation loss has not improved") != std::string::npos &&
                stopped.message.find("kept the weights of epoch " + std::to_string(best)) != std::string::npos,
            "the message says why and which weights: " + stopped.message);
  CHECK_MSG(!rec.states.empty() && rec.states.back().bestParameters.size() == stopped.parameters.size(),
            "checkpoints carry the best weights when restoreBest is on");

  // minDelta larger than any change: the first epoch stays best, the run stops after `patience` more
  o.earlyStopping.minDelta = 1e9;
  o.earlyStopping.restoreBest = false;
  const TrainResult flat = backend.train(spec, tv, &vv, o, nullptr, nullptr);
  CHECK_MSG(flat.stoppedEarly && flat.history.size() == 3 && flat.bestEpoch == 1 && !flat.restoredBest,
            "a huge minDelta stops at epoch 1 + patience and keeps the last weights");
  // monitoring validation without validation data
  CHECK_THROWS(backend.train(spec, tv, nullptr, o, nullptr, nullptr), EngineError, "has no validation data");
}

// A base learning rate set between epochs (at epoch 1's end, as a paused UI would) gives the same bits
// as resuming the epoch-1 state with that rate; set mid-epoch, the next step's event reports it.
// exactSteps: the backend applies a rate set during a step event at the very next step (the CPU; the
// GPU has steps queued ahead, so it applies it to the next step launched).
inline void checkLearningRateChange(Backend& backend, bool exactSteps) {
  const ModelSpec spec = parseModelSpec(controlSpec("{\"kind\":\"sgd\",\"lr\":0.05,\"momentum\":0.9}"));
  const ControlData train = controlBars(500, 41), val = controlBars(120, 42);
  const DatasetView tv = train.view(), vv = val.view();
  TrainControl control;
  CheckpointRecorder changed;
  changed.onEachEpoch = [&](const EpochStats& stats) {
    if (stats.epoch == 1) {
      control.pause.store(true);
      control.setLearningRate(0.01f);
      control.pause.store(false);
    }
  };
  const TrainResult r = backend.train(spec, tv, &vv, controlOptions(3), &changed, &control);
  CHECK_MSG(r.history.size() == 3 && r.history[0].learningRate == 0.05f && r.history[1].learningRate == 0.01f &&
                changed.states.size() == 3 && changed.states[2].learningRate == double(0.01f),
            "a new learning rate applies from the next step, and the checkpoint keeps it");
  CheckpointRecorder first;
  backend.train(spec, tv, &vv, controlOptions(1), &first, nullptr);
  if (first.states.size() != 1) return;
  TrainState state = first.states[0];
  state.learningRate = 0.01f;
  TrainOptions o = controlOptions(3);
  o.resume = &state;
  const TrainResult resumed = backend.train(spec, tv, &vv, o, nullptr, nullptr);
  CHECK_MSG(sameBits(resumed.parameters, r.parameters), "changing the rate mid-run == resuming with that rate (bits)");
  if (!exactSteps) return;

  // mid-epoch: set after global step 5, step 6's event reports it
  TrainControl midControl;
  CheckpointRecorder mid;
  mid.onEachStep = [&](const StepProgress& s) {
    if (s.globalStep == 5) midControl.setLearningRate(0.02f);
  };
  backend.train(spec, tv, &vv, controlOptions(1), &mid, &midControl);
  bool ok = mid.steps.size() >= 8;
  for (const StepProgress& s : mid.steps)
    if (s.globalStep <= 5 ? s.learningRate != 0.05f : s.globalStep >= 8 && s.learningRate != 0.02f) ok = false;
  CHECK_MSG(ok, "set after step 5, the rate changes from the next steps on (events report it)");
}

inline void checkResumeErrors(Backend& backend) {
  const ModelSpec spec = parseModelSpec(controlSpec("{\"kind\":\"adam\",\"lr\":0.01}"));
  const ControlData train = controlBars(500, 21);
  const DatasetView tv = train.view();
  CheckpointRecorder rec;
  backend.train(spec, tv, nullptr, controlOptions(2), &rec, nullptr);
  if (rec.states.size() != 2) return;
  TrainOptions o = controlOptions(2);
  o.resume = &rec.states[1];
  CHECK_THROWS(backend.train(spec, tv, nullptr, o, nullptr, nullptr), EngineError, "already 2 epochs trained");
  o.epochs = 4;
  o.seed = 12;
  CHECK_THROWS(backend.train(spec, tv, nullptr, o, nullptr, nullptr), EngineError, "written with seed 11");
  o.seed = 11;
  o.batchSize = 50;
  CHECK_THROWS(backend.train(spec, tv, nullptr, o, nullptr, nullptr), EngineError, "steps per epoch");
  o.batchSize = 24;
  TrainState cut = rec.states[1];
  cut.optimizerState.resize(cut.parameters.size());
  o.resume = &cut;
  CHECK_THROWS(backend.train(spec, tv, nullptr, o, nullptr, nullptr), EngineError, "Adam needs");
  o.resume = &rec.states[1];
  o.ema = 0.99;
  CHECK_THROWS(backend.train(spec, tv, nullptr, o, nullptr, nullptr), EngineError, "written by a run without ema");
}

// batchnorm over channels and over features: the running statistics move during training and resume
// exactly (they are part of the weights); validation and evaluation use them, so an evaluation does not
// depend on its batch size and gives the history's last validation loss.
inline std::string batchnormSpec(const char* optimizer) {
  return std::string(
             "{\"input\":[1,8,8],\"layers\":[{\"kind\":\"conv2d\",\"filters\":4,\"kernel\":[3,3],\"padding\":\"same\"},"
             "{\"kind\":\"batchnorm\",\"momentum\":0.2},{\"kind\":\"activation\",\"fn\":\"relu\"},{\"kind\":\"maxpool2d\",\"size\":2},"
             "{\"kind\":\"flatten\"},{\"kind\":\"dense\",\"units\":16,\"activation\":\"gelu\"},{\"kind\":\"batchnorm\"},"
             "{\"kind\":\"dense\",\"units\":2}],\"loss\":\"softmax_cross_entropy\",\"optimizer\":") +
         optimizer + ",\"seed\":3}";
}

// residual blocks: an identity block and a stride-2 projection block, batchnorm inside, global pooling
inline std::string residualSpec(const char* optimizer) {
  return std::string(
             "{\"input\":[1,8,8],\"layers\":[{\"kind\":\"conv2d\",\"filters\":4,\"kernel\":[3,3],\"padding\":\"same\",\"activation\":\"relu\"},"
             "{\"kind\":\"residual\",\"layers\":[{\"kind\":\"conv2d\",\"filters\":4,\"kernel\":[3,3],\"padding\":\"same\"},"
             "{\"kind\":\"batchnorm\"},{\"kind\":\"activation\",\"fn\":\"relu\"}]},"
             "{\"kind\":\"residual\",\"layers\":[{\"kind\":\"conv2d\",\"filters\":6,\"kernel\":[3,3],\"stride\":2,\"padding\":\"same\",\"activation\":\"relu\"},"
             "{\"kind\":\"conv2d\",\"filters\":6,\"kernel\":[3,3],\"padding\":\"same\"},{\"kind\":\"batchnorm\"}]},"
             "{\"kind\":\"activation\",\"fn\":\"relu\"},{\"kind\":\"global_avgpool\"},{\"kind\":\"dense\",\"units\":2}],"
             "\"loss\":\"softmax_cross_entropy\",\"optimizer\":") +
         optimizer + ",\"seed\":3}";
}

inline void checkResidualRun(Backend& backend) {
  const ModelSpec spec = parseModelSpec(residualSpec("{\"kind\":\"adam\",\"lr\":0.01}"));
  const ControlData train = controlBars(500, 23), val = controlBars(120, 24);
  const DatasetView tv = train.view(), vv = val.view();
  const TrainResult r = backend.train(spec, tv, &vv, controlOptions(3), nullptr, nullptr);
  CHECK_MSG(r.status == TrainStatus::Completed && r.history.size() == 3, "residual: a 3-epoch run completes");
  const EvalResult whole = backend.evaluate(spec, r.parameters, vv, 120);
  const EvalResult single = backend.evaluate(spec, r.parameters, vv, 1);
  CHECK_MSG(std::fabs(whole.loss - single.loss) <= 1e-5 * (1 + std::fabs(whole.loss)),
            "residual: evaluation does not depend on the batch size");
  CHECK_MSG(whole.accuracy > 0.9, "residual: the bars are learnt (validation accuracy " + std::to_string(whole.accuracy) + ")");
}

inline void checkBatchNormRun(Backend& backend) {
  const ModelSpec spec = parseModelSpec(batchnormSpec("{\"kind\":\"adam\",\"lr\":0.01}"));
  const ControlData train = controlBars(500, 21), val = controlBars(120, 22);
  const DatasetView tv = train.view(), vv = val.view();
  const TrainResult r = backend.train(spec, tv, &vv, controlOptions(2), nullptr, nullptr);
  CHECK_MSG(r.status == TrainStatus::Completed && r.history.size() == 2, "batchnorm: a 2-epoch run completes");
  bool moved = true;
  for (const ParamTensor& t : parameterTable(spec)) {
    const bool isMean = t.name.find("running_mean") != std::string::npos;
    const bool isVar = t.name.find("running_var") != std::string::npos;
    if (!isMean && !isVar) continue;
    for (size_t i = 0; i < t.size; ++i) moved = moved && r.parameters[t.offset + i] != (isVar ? 1.0f : 0.0f);
  }
  CHECK_MSG(moved, "batchnorm: training moved every running mean and variance");
  const EvalResult whole = backend.evaluate(spec, r.parameters, vv, 120);
  const EvalResult single = backend.evaluate(spec, r.parameters, vv, 1);
  CHECK_MSG(std::fabs(whole.loss - single.loss) <= 1e-5 * (1 + std::fabs(whole.loss)) && whole.accuracy == single.accuracy,
            "batchnorm: evaluation uses the running statistics (batch size 120 == batch size 1: " +
                std::to_string(whole.loss) + " vs " + std::to_string(single.loss) + ")");
  CHECK_MSG(std::fabs(whole.loss - r.history.back().validationLoss) <= 1e-5 * (1 + std::fabs(whole.loss)),
            "batchnorm: the last epoch's validation loss is the evaluation's");
  CHECK_MSG(whole.accuracy > 0.9, "batchnorm: the bars are learnt (validation accuracy " + std::to_string(whole.accuracy) + ")");
}

inline void checkTrainControl(Backend& backend, bool exactSteps) {
  std::printf("resume\n");
  checkResumeExact(backend, "Adam, shuffle, dropout", controlSpec("{\"kind\":\"adam\",\"lr\":0.005}"), LrSchedule{});
  checkResumeExact(backend, "SGD with momentum", controlSpec("{\"kind\":\"sgd\",\"lr\":0.05,\"momentum\":0.9}"),
                   LrSchedule{});
  LrSchedule oneCycle;
  oneCycle.kind = LrScheduleKind::OneCycle;
  oneCycle.maxLr = 0.02;
  checkResumeExact(backend, "Adam, one-cycle", controlSpec("{\"kind\":\"adam\",\"lr\":0.005}"), oneCycle);
  LrSchedule step;
  step.kind = LrScheduleKind::Step;
  step.everyEpochs = 1;
  step.gamma = 0.5;
  checkResumeExact(backend, "SGD, step decay", controlSpec("{\"kind\":\"sgd\",\"lr\":0.05,\"momentum\":0.9}"), step);
  Recipe recipe;
  recipe.augment.translate = 1;
  recipe.augment.flip = true;
  recipe.augment.rotate = 10;
  recipe.augment.scale = 0.1f;
  recipe.augment.erase = 0.25f;
  recipe.ema = 0.9;
  checkResumeExact(backend, "AdamW, label smoothing, augmentation, EMA",
                   controlSpec("{\"kind\":\"adamw\",\"lr\":0.005,\"weightDecay\":0.05}", 0.1), LrSchedule{}, recipe);
  Recipe shifts;
  shifts.augment.translate = 2;
  shifts.ema = 0.99;
  checkResumeExact(backend, "SGD Nesterov, decoupled decay, shifts, EMA",
                   controlSpec("{\"kind\":\"sgd\",\"lr\":0.05,\"momentum\":0.9,\"nesterov\":true,"
                               "\"weightDecay\":0.01,\"decoupledWeightDecay\":true}"),
                   step, shifts);
  checkResumeExact(backend, "batchnorm (running statistics), gelu, Adam", batchnormSpec("{\"kind\":\"adam\",\"lr\":0.005}"),
                   LrSchedule{});
  checkResumeExact(backend, "batchnorm, SGD with momentum", batchnormSpec("{\"kind\":\"sgd\",\"lr\":0.05,\"momentum\":0.9}"),
                   LrSchedule{});
  checkResumeExact(backend, "residual blocks (identity, projection), batchnorm inside, AdamW",
                   residualSpec("{\"kind\":\"adamw\",\"lr\":0.005,\"weightDecay\":0.05}"), oneCycle);
  std::printf("batchnorm\n");
  checkBatchNormRun(backend);
  std::printf("residual\n");
  checkResidualRun(backend);
  checkResumeErrors(backend);
  std::printf("early stopping\n");
  checkEarlyStopping(backend);
  std::printf("learning rate changes\n");
  checkLearningRateChange(backend, exactSteps);
}

}  // namespace nnstudio_test
