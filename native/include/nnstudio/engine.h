// NN Studio engine: the one C++ API behind every face (addon, C++ tests, bench).
// Two backends share it: "cpu" (always built) and "cuda" (built when nvcc exists).
//
// Conventions (shared with app/core and PyTorch, so model files and fixtures line up):
//   activations are NCHW for images and (N, F) for vectors; flatten keeps C,H,W order;
//   dense weight is (units, inputs), conv2d weight is (filters, C, kh, kw), biases are (units|filters);
//   tensors are named layers.<i>.weight / layers.<i>.bias where <i> indexes spec.layers.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace nnstudio {

// ---- errors ----
// Every error the engine raises is an EngineError whose what() is a one-line message for the user.
struct EngineError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// An invalid model spec; the message names the layer, e.g. "conv2d #2: kernel 5x5 larger than input 4x4".
struct SpecError : EngineError {
  using EngineError::EngineError;
};

// ---- model spec (the JSON of DESIGN §2) ----
// (new kinds go last: the values index per-kind counters)
enum class LayerKind { Dense, Conv2D, MaxPool2D, AvgPool2D, Flatten, Dropout, Activation, BatchNorm, GlobalAvgPool, Residual };
constexpr int kLayerKindCount = 10;
// GELU is the exact erf form (PyTorch's default). Its derivative needs the input, not the output, unlike
// the others'; the backends keep its input (the pre-activation) for the backward pass.
enum class ActivationFn { Linear, ReLU, LeakyReLU, Sigmoid, Tanh, Softplus, Softmax, GELU };
enum class Padding { Valid, Same, Full };
enum class LossKind { SoftmaxCrossEntropy, BinaryCrossEntropy, MSE, MAE, Huber };
// Classification predicts a class per sample from labels; regression predicts the head's outputs as numbers
// from float targets (DatasetView::targets), with loss mse, mae or huber.
enum class TaskKind { Classification, Regression };
enum class OptimizerKind { SGD, Adam, AdamW };

struct LayerSpec {
  LayerKind kind = LayerKind::Dense;
  int units = 0;                                  // dense
  int filters = 0, kernelH = 0, kernelW = 0;      // conv2d
  int stride = 1;                                 // conv2d, pools (pools default to size)
  Padding padding = Padding::Valid;               // conv2d
  int poolSize = 0;                               // pools
  float rate = 0.0f;                              // dropout
  ActivationFn activation = ActivationFn::Linear; // dense, conv2d, activation
  float alpha = 0.01f;                            // leaky_relu slope
  // batchnorm: running = (1 - momentum) running + momentum batch (PyTorch's convention); eps under the
  // square root; affine: learnable gamma and beta (else gamma 1, beta 0)
  float momentum = 0.1f, eps = 1e-5f;
  bool affine = true;
  // residual: the block's layers (none of them a residual block); its output is theirs plus the shortcut
  // of its input (the identity when they keep the shape, else a 1x1 convolution with the block's stride)
  std::vector<LayerSpec> layers;
};

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::Adam;
  float lr = 0.001f;
  float momentum = 0.0f;                                // sgd
  bool nesterov = false;                                // sgd: Nesterov momentum (PyTorch's nesterov=True)
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-7f;       // adam, adamw
  // For the weights of dense and conv2d layers only (biases never decay); 0: none. Coupled L2 (as
  // PyTorch's SGD/Adam weight_decay): gradient += weightDecay * w before the update. Decoupled (adamw
  // always, as torch.optim.AdamW; sgd with decoupledWeightDecay, Loshchilov & Hutter's SGDW):
  // w -= lr * weightDecay * w before the update, lr the step's scheduled learning rate.
  float weightDecay = 0.0f;
  bool decoupledWeightDecay = false;                    // sgd (adamw is always decoupled)
  bool decoupled() const { return kind == OptimizerKind::AdamW || (kind == OptimizerKind::SGD && decoupledWeightDecay); }
};

struct ModelSpec {
  std::vector<int> input;                 // [C,H,W] or [F]
  std::vector<LayerSpec> layers;
  TaskKind task = TaskKind::Classification;
  LossKind loss = LossKind::SoftmaxCrossEntropy;
  float huberDelta = 1.0f;                // huber: quadratic below delta, linear above (> 0)
  // softmax_cross_entropy: the target is (1 - s) one-hot + s / K (PyTorch's label_smoothing), in [0, 0.5]
  float labelSmoothing = 0.0f;
  OptimizerSpec optimizer;
  uint64_t seed = 0;
};

// Parses the JSON model spec, e.g.
// {"input":[1,28,28],"layers":[{"kind":"conv2d","filters":4,"kernel":[2,2],"stride":1,"padding":"same",
//   "activation":"relu"},{"kind":"maxpool2d","size":4},{"kind":"flatten"},{"kind":"dense","units":10}],
//  "loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":0}
// Activation names: relu, leaky_relu (with "alpha"), sigmoid, tanh, softplus, softmax, gelu, linear.
// Layer kinds beyond those: "batchnorm" (optional "momentum" in [0, 1], default 0.1; "eps" > 0, default
// 1e-5; "affine", default true) normalises each channel of an image [C,H,W] over the batch and the pixels,
// or each feature of a flat input over the batch: batch statistics in training (and the running
// statistics' update), the running statistics in evaluation; "global_avgpool" averages each channel of
// an image: [C,H,W] -> [C]; "residual" {"layers": [...], "shortcut"?: "auto"} runs its layers and adds
// the shortcut of its input: the identity when the layers keep the shape, else a 1x1 convolution (with
// bias) whose stride s is the smallest with ceil(in / s) = out on both axes (an image input and output;
// a flat block must keep its width). Blocks do not nest. A block's layers are named in errors as
// "layer 3 (residual), its layer 2 (conv2d): ...".
// Optional fields: "task" ("classification", the default, or "regression"), "huberDelta" (loss huber,
// default 1), "labelSmoothing" (softmax_cross_entropy, 0..0.5, default 0), optimizer "weightDecay" (>= 0,
// default 0); optimizer kinds sgd {lr, momentum?, nesterov?, weightDecay?, decoupledWeightDecay?}, adam and
// adamw {lr, beta1?, beta2?, eps?, weightDecay?}. A regression spec needs loss mse, mae or huber.
// Losses (all reduced by the mean over every element, as PyTorch's defaults):
//   softmax_cross_entropy: the head outputs logits; a trailing softmax (layer or dense activation) is
//     folded into the loss. binary_cross_entropy: logits, a trailing sigmoid is folded in; one output
//     unit takes the label 0/1 as target, K units take the one-hot label. mse / mae / huber: on the head's
//     outputs after their activation, target the label (one output) or its one-hot (K outputs); in a
//     regression, the sample's targets (K of them). huber is PyTorch's HuberLoss(delta):
//     0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta).
//   Class weights (TrainOptions::classWeights, classification) weigh each sample by its label's class:
//     the batch loss is sum(w_y * l) / sum(w_y), l the sample's loss (its mean over K outputs for the
//     element-wise losses), as PyTorch's CrossEntropyLoss(weight).
// Predictions: argmax over K outputs; a single output predicts 1 when sigmoid(logit) (or the output for
//   mse/mae) >= 0.5, and its probabilities are [1-p, p].
// Throws SpecError on malformed JSON, unknown fields' values or missing required fields.
ModelSpec parseModelSpec(const std::string& json);

// ---- shape inference (must agree with app/core) ----
struct LayerInfo {
  std::string label;               // "conv2d #1" (1-based, as shown to the user)
  std::vector<int> outputShape;    // per sample: [C,H,W] or [F]
  int64_t parameters = 0;
  int64_t multiplyAdds = 0;        // per sample, forward
};
// Throws SpecError naming the layer at fault.
std::vector<LayerInfo> inferShapes(const ModelSpec& spec);
// Number of classes the head predicts: the last layer's width, or 2 for a single output unit; 0 for a
// regression (its head predicts numbers).
int classCount(const ModelSpec& spec);

struct ParamTensor {
  std::string name;                // "layers.3.weight"
  std::vector<int> shape;
  size_t offset = 0;               // in floats, into the flat parameter vector
  size_t size = 0;
};
// All tensors of the model in spec order, weight before bias; offsets into one flat vector. A batchnorm
// layer has layers.<i>.gamma and layers.<i>.beta (when affine, trained) and layers.<i>.running_mean and
// layers.<i>.running_var (buffers: updated by training forward passes, their gradient is always 0).
std::vector<ParamTensor> parameterTable(const ModelSpec& spec);
size_t parameterCount(const ModelSpec& spec);
// Seeded init: He-uniform... for the ReLU family, Glorot-uniform otherwise; biases zero; batchnorm's
// gamma 1, beta 0, running mean 0, running variance 1.
std::vector<float> initialParameters(const ModelSpec& spec, uint64_t seed);

// ---- data: views over caller-owned buffers, never copied by the CPU backend ----
struct DatasetView {
  const float* features = nullptr;   // (count, featureSize) contiguous
  const int32_t* labels = nullptr;   // (count), class index in [0, classCount); classification only
  int64_t count = 0;
  int64_t featureSize = 0;
  // Regression: (count, targetWidth) contiguous, finite, targetWidth == the head's width; normalised
  // units as TrainOptions::targetMean/targetStd describe. Null: none (unlabeled data to predict).
  const float* targets = nullptr;
  int targetWidth = 0;
};

// ---- training ----
// Learning-rate schedules, computed per optimizer step t (0-based, counted over the whole run) from the
// base learning rate (spec.optimizer.lr, or the last TrainControl::setLearningRate) and the run's total
// steps (stepsPerEpoch * options.epochs). Every schedule is the base LR times a factor (1 for constant),
// so a new base LR scales the whole schedule from the next step on.
enum class LrScheduleKind { Constant, Step, Cosine, OneCycle };
struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::Constant;
  int everyEpochs = 1;          // step: multiply by gamma every `everyEpochs` epochs
  double gamma = 0.1;           // step
  double minLr = 0;             // cosine: from the base LR at t = 0 down to minLr at t = totalSteps
  // onecycle (PyTorch's OneCycleLR, cos annealing, two phases, momentum not cycled): from maxLr /
  // divFactor up to maxLr at step pctStart * totalSteps - 1, then down to maxLr / divFactor /
  // finalDivFactor at the last step. maxLr 0: the base LR.
  double maxLr = 0;
  double pctStart = 0.3, divFactor = 25, finalDivFactor = 1e4;
};
// The learning rate of step t (0-based) for a base LR of `baseLr`, as both backends compute it.
double scheduledLearningRate(const LrSchedule& schedule, double baseLr, int64_t t, int64_t stepsPerEpoch,
                             int64_t totalSteps);

// Early stopping (after Keras' EarlyStopping): after each epoch the monitored value improves when it
// beats the best so far by more than minDelta (lower loss, higher accuracy; in a regression
// ValidationAccuracy monitors the validation R^2); after `patience` epochs
// without improvement the run ends with status Completed, stoppedEarly and a message. With restoreBest
// the result's weights are the best epoch's (also when all epochs ran).
enum class MonitorKind { ValidationLoss, ValidationAccuracy, TrainLoss };
struct EarlyStopping {
  bool enabled = false;
  MonitorKind monitor = MonitorKind::ValidationLoss;
  int patience = 3;             // epochs
  double minDelta = 0;
  bool restoreBest = false;
};

struct EpochStats {
  int epoch = 0;                      // 1-based
  double trainLoss = 0, trainAccuracy = 0;
  bool hasValidation = false;
  double validationLoss = 0, validationAccuracy = 0;
  double seconds = 0;                 // wall time of this epoch's training steps
  double learningRate = 0;            // of the epoch's last step
  // Regression only (hasRegression; trainAccuracy and validationAccuracy are then 0). trainR2: R^2 of the
  // epoch's training predictions as the steps made them (like trainLoss), pooled over target columns.
  // The validation metrics are in the targets' original units (TrainOptions::targetMean/targetStd),
  // sklearn's definitions averaged uniformly over columns (train/regression_metrics.h); MAPE is a
  // fraction (0.05 = 5 %) and absent (hasValidationMape false) when a validation target is 0.
  bool hasRegression = false;
  double trainR2 = 0;
  double validationMae = 0, validationRmse = 0, validationR2 = 0;
  bool hasValidationMape = false;
  double validationMape = 0;
};

// Everything a run needs to continue exactly where it stopped, at an epoch boundary. The random
// streams are counter-based: the data order of epoch e is a function of (seed, e) and the dropout
// masks of step t of (seed, t), so (seed, epoch, step) is the whole RNG state and the data order is
// recomputed, never stored.
struct TrainState {
  int epoch = 0;                      // completed epochs
  int64_t step = 0;                   // optimizer steps done (Adam's t of the last update)
  uint64_t seed = 0;                  // TrainOptions::seed of the run
  double learningRate = 0;            // the base learning rate in force
  std::vector<float> parameters;      // (parameterCount)
  std::vector<float> optimizerState;  // SGD: velocity (P); Adam: m (P) then v (P)
  std::vector<EpochStats> history;    // epochs 1..epoch
  std::vector<float> bestParameters;  // early stopping with restoreBest: the best epoch's weights, else empty
  std::vector<float> emaParameters;   // TrainOptions::ema > 0: the weight average (P), else empty
};

// Augmentation of image inputs ([C,H,W]) on the training batches, on the device that trains. Each sample
// of global step t draws its transform from (TrainOptions::seed, t, its row in the batch) alone, so a
// resumed run sees the same batches (spec/augment.h). The transform maps each output pixel back into the
// input: flip (probability 1/2), rotation by up to +-rotate degrees and scaling by 1 +- scale about the
// centre (bilinear), then a whole-pixel shift of up to +-translate in each axis; what falls outside the
// input reads 0 (pad and crop). Erasing (probability `erase`) then zeroes one rectangle of 2 % to 33 %
// of the image with an aspect ratio in [0.3, 3.3] (torchvision's RandomErasing defaults, one try).
struct Augmentation {
  int translate = 0;      // pixels, 0..H/2
  bool flip = false;      // horizontal; off for digits and text
  float rotate = 0;       // degrees, 0..180
  float scale = 0;        // fraction, 0..0.5
  float erase = 0;        // probability, 0..1
  bool enabled() const { return translate > 0 || flip || rotate > 0 || scale > 0 || erase > 0; }
};

// The arithmetic of the CUDA backend's tensor-core products: the convolutions that run there and the fused MLP
// step's two (the SIMT kernels, dense layers included, are FP32 either way; the CPU computes in FP32 whatever is asked):
// Fp32: FP32 accuracy (the tensor-core passes as 3xTF32, each operand split into two TF32 halves);
// Tf32: one TF32 product per multiply (a 10-bit mantissa, as PyTorch's default for cuDNN convolutions);
// Mixed: one BF16 product per multiply (a 7-bit mantissa, m16n8k16) in the convolutions, TF32 in the fused MLP
// step. In all three the sums, the activations and gradients between layers, the weights (the master copy), the
// optimizer state, batchnorm statistics, softmax and the losses stay FP32 (docs/PRECISION.md).
enum class Precision { Fp32, Tf32, Mixed };

struct TrainOptions {
  int epochs = 1;                     // total epochs of the run, counting those of `resume`
  int batchSize = 32;
  bool shuffle = true;
  uint64_t seed = 0;                  // data order and dropout; weights use spec.seed
  int threads = 0;                    // 0: one per hardware thread
  double progressIntervalSeconds = 0.05;  // step events at most 20/s
  LrSchedule lrSchedule;
  EarlyStopping earlyStopping;
  // Classification: a weight per class (classCount values, finite and > 0); empty: every class weighs 1.
  // Training and validation losses become sum(w_y * l) / sum(w_y) (see parseModelSpec's losses).
  std::vector<float> classWeights;
  // Regression: the targets the engine sees are (y - targetMean) / targetStd per column; these map the
  // outputs back for the validation metrics. Empty: identity. Else targetWidth values each (std > 0).
  std::vector<float> targetMean, targetStd;
  Augmentation augment;               // the training batches' (none by default)
  // > 0: an exponential moving average of the weights, avg = ema * avg + (1 - ema) * w after every
  // step (from the starting weights), validates the epochs, is kept by early stopping and is the
  // result's weights; in [0, 1).
  double ema = 0;
  // Continue from this state (same spec, data, batch size, shuffle and seed); it replaces `start`.
  const TrainState* resume = nullptr;
  // CUDA: the GPUs to train on (device indices). More than one: data-parallel through NCCL, each GPU a
  // batch of `batchSize` per step, gradients averaged (docs/ARCHITECTURE.md "Several GPUs"); without NCCL
  // the run takes the first and says why in TrainResult::notes. Empty: the backend's own GPU.
  std::vector<int> gpus;
  // Several GPUs only where the run is long enough for them to pay (train/gpu_rule.h); false: every GPU of
  // `gpus` (benchmarks and tests that measure or check data-parallel runs).
  bool onlyWhereGpusPay = true;
  Precision precision = Precision::Fp32;  // CUDA: the tensor-core products' arithmetic (see Precision)
};

struct StepProgress {
  int epoch = 0;                      // 1-based
  int64_t step = 0;                   // 1-based within the epoch
  int64_t stepsPerEpoch = 0;
  int64_t globalStep = 0, totalSteps = 0;
  double loss = 0;                    // mean over the steps since the last event
  double samplesPerSecond = 0;
  double etaSeconds = 0;
  double learningRate = 0;            // of the latest step
};

// Receives events on the training thread; implementations must be cheap and thread-safe.
struct ProgressSink {
  virtual ~ProgressSink() = default;
  virtual void onStep(const StepProgress&) {}
  virtual void onEpoch(const EpochStats&) {}
  // After onEpoch, at every epoch end, when wantsCheckpoints(): the state to write a checkpoint from
  // (the CUDA backend downloads weights and moments for it, so it asks first).
  virtual bool wantsCheckpoints() const { return false; }
  virtual void onCheckpoint(const TrainState&) {}
};

// Read every step: cancel stops the run (status Cancelled, weights as of the last completed step);
// pause blocks the training thread between steps until cleared or cancelled; a learning rate set here
// becomes the base learning rate from the next step launched (while paused: the very next step).
struct TrainControl {
  std::atomic<bool> cancel{false};
  std::atomic<bool> pause{false};
  std::atomic<float> newLearningRate{0.0f};  // > 0: taken (and reset to 0) by the trainer
  void setLearningRate(float lr) { newLearningRate.store(lr); }
};

enum class TrainStatus { Completed, Cancelled, Diverged };

struct TrainResult {
  TrainStatus status = TrainStatus::Completed;
  std::string message;                // why it stopped early, for the user
  std::vector<float> parameters;      // final weights; after divergence, the last weights whose loss was finite
  std::vector<EpochStats> history;    // every epoch of the run, those of a resumed state included
  double seconds = 0;
  int64_t steps = 0;                  // global optimizer steps (a resumed run counts from its state)
  std::string device;                 // "cpu (2 threads)", "NVIDIA H100 80GB HBM3"
  bool stoppedEarly = false;          // early stopping ended the run
  int bestEpoch = 0;                  // with early stopping: the best epoch (1-based), else 0
  bool restoredBest = false;          // `parameters` are the best epoch's
  std::vector<std::string> notes;     // what the run chose for the user (one GPU instead of several, and why)
};

struct EvalResult {
  double loss = 0;                    // unweighted; 0 without labels (targets)
  double accuracy = 0;
  int classes = 0;                    // 0 for a regression
  std::vector<int32_t> predictions;   // (count); empty for a regression
  std::vector<float> probabilities;   // (count, classes); empty for a regression
  std::vector<int64_t> confusion;     // (classes, classes): row = true label, column = prediction; empty without labels
  std::vector<float> outputs;         // regression: the head's outputs (count, width), normalised units; else empty
};

// ---- backends ----
enum class DeviceKind { CPU, CUDA };

struct DeviceInfo {
  DeviceKind kind = DeviceKind::CPU;
  int index = 0;
  std::string name;                   // CPU model or GPU name
  int64_t memoryBytes = 0;
  int computeMajor = 0, computeMinor = 0;  // CUDA only
  int threads = 0;                    // CPU only
};

// The engine seam (src/train/session.h): one training run's state on a backend's device.
class TrainingSession;
struct SessionSetup;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceInfo device() const = 0;
  // Trains from initialParameters (or from `start` when given, e.g. fine-tuning; or continues
  // options.resume). Never throws for divergence or cancellation: those are statuses. Throws
  // EngineError for invalid input (a resume state that does not fit the spec, data or options included).
  // One loop for every backend (src/train/driver.cpp), which runs the steps through openSession's session.
  TrainResult train(const ModelSpec& spec, const DatasetView& train, const DatasetView* validation,
                    const TrainOptions& options, ProgressSink* progress, TrainControl* control,
                    const std::vector<float>* start = nullptr);
  virtual EvalResult evaluate(const ModelSpec& spec, const std::vector<float>& parameters,
                              const DatasetView& data, int batchSize = 256) = 0;
  // For train(), once the inputs are checked: allocates what the run needs on the device, or refuses it
  // with an EngineError (too little GPU memory), before the initial weights are built.
  virtual std::unique_ptr<TrainingSession> openSession(const SessionSetup& setup) = 0;
  // How many devices a run with these options trains on (data-parallel when more than one); `why` says why
  // fewer than options.gpus asked for. The default: one.
  virtual int dataParallelRanks(const TrainOptions& options, std::string* why) {
    if (options.gpus.size() > 1 && why) *why = "this device trains alone: several GPUs need the CUDA backend";
    return 1;
  }
};

bool cudaAvailable();                         // built with CUDA and a device is present
std::vector<DeviceInfo> listDevices();        // the CPU first, then each CUDA device
// kind CUDA without CUDA throws EngineError("no CUDA device is available ...").
std::unique_ptr<Backend> createBackend(DeviceKind kind, int threads = 0);

// Test-time augmentation for a classifier of images: the class probabilities averaged over the input, its
// four one-pixel shifts (zero padded) and, with `flip`, its mirror image; predictions, accuracy, confusion
// and loss (the cross-entropy of the averaged probabilities) from the average. Throws EngineError for a
// regression or a flat input.
EvalResult evaluateWithTta(Backend& backend, const ModelSpec& spec, const std::vector<float>& parameters,
                           const DatasetView& data, int batchSize = 256, bool flip = false);

// ---- whole-network forward/backward, for tests and fixtures (CPU) ----
// One batch through the network: returns the mean loss, fills `outputs` (batch, lastWidth) with the
// head's outputs before the loss (logits for softmax/binary cross-entropy) and `gradients`
// (parameterCount) with dLoss/dParameters. training=false disables dropout. A regression spec takes
// `targets` (batch, lastWidth) instead of labels; classWeights (classCount, or null) weigh the labels.
double forwardBackwardCpu(const ModelSpec& spec, const std::vector<float>& parameters, const float* inputs,
                          const int32_t* labels, int batch, bool training, std::vector<float>& outputs,
                          std::vector<float>& gradients, uint64_t dropoutSeed = 0, const float* targets = nullptr,
                          const float* classWeights = nullptr);

// One optimizer step on flat vectors, as the trainer does it (t is the 1-based step for Adam's
// bias correction; state holds momentum or Adam's m and v and is sized by the callee). Weight decay
// (optimizer.weightDecay) applies where decayMask[i] != 0 (weightDecayMask(spec): weights, not biases);
// a null mask decays every parameter, as PyTorch's weight_decay.
void optimizerStepCpu(const OptimizerSpec& optimizer, std::vector<float>& parameters,
                      const std::vector<float>& gradients, std::vector<float>& state, int64_t t,
                      const std::vector<uint8_t>* decayMask = nullptr);
// 1 for each parameter that weight decay applies to (the weights of dense and conv2d layers), 0 for biases.
std::vector<uint8_t> weightDecayMask(const ModelSpec& spec);

}  // namespace nnstudio
