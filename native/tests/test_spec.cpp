// Model spec tests: JSON parsing and its errors, shape inference of the presets (output shapes and
// parameter counts worked out by hand, the same numbers PyTorch's sum(p.numel()) gives), errors naming
// the layer, the parameter table and the seeded initial weights.
#include <cmath>
#include <cstdio>
#include <string>

#include "nnstudio/engine.h"
#include "spec/json.h"
#include "spec/model.h"
#include "test_util.h"

using namespace nnstudio;

namespace {

std::string presetSpec(const std::string& name) {
  std::string text = nnstudio_test::readFile(std::string(NNSTUDIO_SOURCE_DIR) + "/../resources/presets/" + name + ".json");
  json::Value root = json::parse(text);
  const json::Value* spec = root.find("spec");
  if (!spec) throw std::runtime_error("preset " + name + " has no spec");
  return json::serialize(*spec);
}

// a spec with the given layers (JSON array body) on the given input
std::string specWith(const std::string& input, const std::string& layers,
                     const std::string& loss = "softmax_cross_entropy") {
  return "{\"input\":" + input + ",\"layers\":[" + layers + "],\"loss\":\"" + loss +
         "\",\"optimizer\":{\"kind\":\"adam\",\"lr\":0.001},\"seed\":0}";
}

int64_t totalParameters(const std::vector<LayerInfo>& infos) {
  int64_t n = 0;
  for (const auto& i : infos) n += i.parameters;
  return n;
}

void checkShape(const LayerInfo& info, std::vector<int> expected) {
  CHECK_MSG(info.outputShape == expected,
            info.label + " output " + shapeText(info.outputShape) + " == " + shapeText(expected));
}

}  // namespace

int main() {
  // ---- sizes that overflow naive int arithmetic: refused with a SpecError, never wrapped (UBSan checks) ----
  std::printf("hostile sizes\n");
  {
    const std::string big = "2147483647";
    CHECK_THROWS(inferShapes(parseModelSpec(specWith("[" + big + "," + big + "," + big + "]", "{\"kind\":\"flatten\"},{\"kind\":\"dense\",\"units\":2}"))),
                 SpecError, "input: 2147483647x2147483647x2147483647 is too large");
    CHECK_THROWS(inferShapes(parseModelSpec(specWith("[1,8,8]", "{\"kind\":\"conv2d\",\"filters\":2,\"kernel\":[" + big + "," + big +
                                                                   "],\"padding\":\"full\"},{\"kind\":\"flatten\"},{\"kind\":\"dense\",\"units\":2}"))),
                 SpecError, "conv2d #1: output is too large");
    CHECK_THROWS(inferShapes(parseModelSpec(specWith("[1,8,8]", "{\"kind\":\"conv2d\",\"filters\":2,\"kernel\":[" + big + ",3],\"stride\":" + big +
                                                                   ",\"padding\":\"same\"},{\"kind\":\"flatten\"},{\"kind\":\"dense\",\"units\":2}"))),
                 SpecError, "conv2d #1: ");
    CHECK_THROWS(inferShapes(parseModelSpec(specWith("[3,8,8]", "{\"kind\":\"conv2d\",\"filters\":65536,\"kernel\":[65536,3],\"padding\":\"same\"},"
                                                                   "{\"kind\":\"flatten\"},{\"kind\":\"dense\",\"units\":2}"))),
                 SpecError, "parameters is too many (2^31 or more in one layer)");
    CHECK_THROWS(parameterCount(parseModelSpec(specWith("[65536]", "{\"kind\":\"dense\",\"units\":65536}"))), SpecError,
                 "dense #1: 4295032832 parameters is too many");
    // 2^31 - 1 values fit; a stride of 2^31 - 1 makes one window
    CHECK(inferShapes(parseModelSpec(specWith("[1," + big + ",1]", "{\"kind\":\"maxpool2d\",\"size\":1,\"stride\":" + big +
                                              "},{\"kind\":\"flatten\"},{\"kind\":\"dense\",\"units\":2}")))[0].outputShape == std::vector<int>({1, 1, 1}));
    // the largest sizes that fit still plan, in 64-bit arithmetic
    const ModelSpec wide = parseModelSpec(specWith("[1,46340,46340]", "{\"kind\":\"conv2d\",\"filters\":1,\"kernel\":[46340,1],\"padding\":\"same\"},"
                                                                      "{\"kind\":\"maxpool2d\",\"size\":46340},{\"kind\":\"flatten\"},{\"kind\":\"dense\",\"units\":2}"));
    CHECK(inferShapes(wide)[0].outputShape == std::vector<int>({1, 46340, 46340}));
    CHECK(inferShapes(wide)[1].outputShape == std::vector<int>({1, 1, 1}));
  }

  // ---- JSON ----
  std::printf("json\n");
  {
    json::Value v = json::parse(" {\"a\": [1, -2.5e1, true, null], \"b\": \"x\\ny\\u00e9\"} ");
    CHECK(v.isObject() && v.find("a") && v.find("a")->array.size() == 4);
    CHECK(v.find("a")->array[1].number == -25.0);
    CHECK(v.find("b")->string == "x\ny\xC3\xA9");
    CHECK(json::serialize(json::parse(json::serialize(v))) == json::serialize(v));
    CHECK_THROWS(json::parse("{\"a\": 1,}"), SpecError, "invalid JSON at line 1, column 9");
    CHECK_THROWS(json::parse("{\"a\":\n  [1 2]}"), SpecError, "invalid JSON at line 2, column 6: expected ']'");
    CHECK_THROWS(json::parse("{\"a\": 01}"), SpecError, "invalid JSON");
    CHECK_THROWS(json::parse("{} x"), SpecError, "after the end of the document");
    CHECK_THROWS(json::parse(""), SpecError, "unexpected end of input");
    CHECK_THROWS(json::parse(std::string(200, '[')), SpecError, "nested too deeply");
  }

  // ---- parseModelSpec errors ----
  std::printf("parseModelSpec errors\n");
  {
    CHECK_THROWS(parseModelSpec("{\"input\": [1,28,28], "), SpecError, "invalid JSON at line 1");
    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"conv3d\",\"filters\":2}")), SpecError,
                 "layer 1: unknown kind \"conv3d\"");
    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"dense\",\"units\":3},{\"kind\":\"dense\"}")), SpecError,
                 "dense #2: missing \"units\"");
    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"dense\",\"unit\":3}")), SpecError,
                 "dense #1: missing \"units\"");
    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"dense\",\"units\":3,\"unit\":3}")), SpecError,
                 "dense #1: unknown field \"unit\"");
    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"dense\",\"units\":0}")), SpecError,
                 "dense #1: \"units\" must be a positive integer, got 0");
    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"dense\",\"units\":2.5}")), SpecError,
                 "must be a positive integer, got 2.5");
    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"dense\",\"units\":3,\"activation\":\"swish\"}")), SpecError,
                 "dense #1: unknown activation \"swish\"");
    CHECK(parseModelSpec(specWith("[4]", "{\"kind\":\"dense\",\"units\":3,\"activation\":\"gelu\"}")).layers[0].activation ==
          ActivationFn::GELU);
    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"batchnorm\",\"momentum\":1.5}")), SpecError,
                 "batchnorm #1: \"momentum\" must be in [0, 1], got 1.5");
    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"batchnorm\",\"eps\":0}")), SpecError,
                 "batchnorm #1: \"eps\" must be a finite number > 0, got 0");
    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"batchnorm\",\"affine\":1}")), SpecError,
                 "batchnorm #1: \"affine\" must be true or false, got a number");
    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"batchnorm\",\"channels\":4}")), SpecError,
                 "batchnorm #1: unknown field \"channels\"");
    CHECK_THROWS(inferShapes(parseModelSpec(specWith("[4]", "{\"kind\":\"global_avgpool\"},{\"kind\":\"dense\",\"units\":2}"))),
                 SpecError, "global_avgpool #1: needs an image input [C,H,W], got 4");
    CHECK_THROWS(parseModelSpec(specWith("[1,8,8]", "{\"kind\":\"conv2d\",\"filters\":2,\"kernel\":[3,3],\"padding\":\"half\"}")),
                 SpecError, "conv2d #1: unknown padding \"half\"");
    CHECK_THROWS(parseModelSpec(specWith("[1,8,8]", "{\"kind\":\"conv2d\",\"filters\":2,\"kernel\":3}")), SpecError,
                 "conv2d #1: \"kernel\" must be [height, width]");
    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"dropout\",\"rate\":1}")), SpecError,
                 "dropout #1: \"rate\" must be in [0, 1), got 1");
    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"activation\"}")), SpecError, "activation #1: missing \"fn\"");
    CHECK_THROWS(parseModelSpec(specWith("[4]", "")), SpecError, "\"layers\" is empty");
    CHECK_THROWS(parseModelSpec(specWith("[4,4]", "{\"kind\":\"flatten\"}")), SpecError,
                 "\"input\" must be [features] or [channels, height, width]");
    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"dense\",\"units\":2}", "hinge")), SpecError,
                 "unknown loss \"hinge\"");
    CHECK_THROWS(parseModelSpec("{\"input\":[4],\"layers\":[{\"kind\":\"dense\",\"units\":2}],\"loss\":\"mse\","
                                "\"optimizer\":{\"kind\":\"rmsprop\",\"lr\":0.1},\"seed\":0}"),
                 SpecError, "optimizer: unknown kind \"rmsprop\"");
    CHECK_THROWS(parseModelSpec("{\"input\":[4],\"layers\":[{\"kind\":\"dense\",\"units\":2}],\"loss\":\"mse\","
                                "\"optimizer\":{\"kind\":\"sgd\",\"lr\":-1},\"seed\":0}"),
                 SpecError, "optimizer: \"lr\" must be a finite number > 0, got -1");
    CHECK_THROWS(parseModelSpec("{\"input\":[4],\"layers\":[{\"kind\":\"dense\",\"units\":2}],\"loss\":\"mse\","
                                "\"optimizer\":{\"kind\":\"sgd\",\"lr\":0.1}}"),
                 SpecError, "spec: missing \"seed\"");
    CHECK_THROWS(parseModelSpec("[1,2]"), SpecError, "spec: expected an object");
  }

  // ---- batchnorm, global_avgpool: shapes, counts, tensors ----
  std::printf("batchnorm, global_avgpool\n");
  {
    ModelSpec s = parseModelSpec(specWith(
        "[3,8,6]", "{\"kind\":\"conv2d\",\"filters\":4,\"kernel\":[3,3],\"padding\":\"same\"},"
                   "{\"kind\":\"batchnorm\",\"momentum\":0.01,\"eps\":0.001},{\"kind\":\"activation\",\"fn\":\"gelu\"},"
                   "{\"kind\":\"global_avgpool\"},{\"kind\":\"batchnorm\",\"affine\":false},{\"kind\":\"dense\",\"units\":2}"));
    CHECK(s.layers[1].kind == LayerKind::BatchNorm && s.layers[1].momentum == 0.01f && s.layers[1].eps == 0.001f &&
          s.layers[1].affine);
    CHECK(!s.layers[4].affine && s.layers[4].momentum == 0.1f && s.layers[4].eps == 1e-5f);
    const auto infos = inferShapes(s);
    CHECK(infos[1].label == "batchnorm #1" && infos[1].outputShape == std::vector<int>({4, 8, 6}) && infos[1].parameters == 16);
    CHECK(infos[3].label == "global_avgpool #1" && infos[3].outputShape == std::vector<int>({4}) && infos[3].parameters == 0);
    CHECK(infos[4].label == "batchnorm #2" && infos[4].parameters == 8);  // running statistics only
    const auto table = parameterTable(s);
    std::string names;
    for (const auto& t : table) names += t.name + "@" + std::to_string(t.offset) + " ";
    CHECK_MSG(names == "layers.0.weight@0 layers.0.bias@108 layers.1.gamma@112 layers.1.beta@116 layers.1.running_mean@120 "
                       "layers.1.running_var@124 layers.4.running_mean@128 layers.4.running_var@132 layers.5.weight@136 "
                       "layers.5.bias@144 ",
              "the tensors in order: " + names);
    CHECK(parameterCount(s) == 146);
    const auto mask = weightDecayMask(s);
    CHECK_MSG(mask[0] == 1 && mask[112] == 0 && mask[120] == 0 && mask[136] == 1, "batchnorm's tensors never decay");
  }

  // ---- residual blocks: parsing, errors named through the block, shapes, counts, tensors ----
  std::printf("residual\n");
  {
    const std::string conv = "{\"kind\":\"conv2d\",\"filters\":8,\"kernel\":[3,3],\"padding\":\"same\"";
    ModelSpec s = parseModelSpec(specWith(
        "[4,9,9]", "{\"kind\":\"residual\",\"layers\":[" + conv + ",\"activation\":\"relu\"}," + conv + "}]},"
                   "{\"kind\":\"residual\",\"shortcut\":\"auto\",\"layers\":[" + conv + ",\"stride\":2},{\"kind\":\"batchnorm\"}]},"
                   "{\"kind\":\"global_avgpool\"},{\"kind\":\"dense\",\"units\":2}"));
    CHECK(s.layers[0].kind == LayerKind::Residual && s.layers[0].layers.size() == 2 &&
          s.layers[0].layers[0].activation == ActivationFn::ReLU);
    const auto infos = inferShapes(s);
    CHECK_MSG(infos.size() == 4, "one shape entry per spec layer (a block is one)");
    // block 1: 4 -> 8 channels, 9x9 kept: projection 8x4 + 8; convs 8*4*9+8 and 8*8*9+8
    CHECK(infos[0].label == "residual #1" && infos[0].outputShape == std::vector<int>({8, 9, 9}));
    CHECK(infos[0].parameters == (8 * 4 * 9 + 8) + (8 * 8 * 9 + 8) + (8 * 4 + 8));
    CHECK(infos[0].multiplyAdds == int64_t(81) * (8 * 4 * 9 + 8 * 8 * 9 + 8 * 4));
    // block 2: stride 2 (9x9 -> 5x5), 8 channels kept: still a projection (the shape changes)
    CHECK(infos[1].label == "residual #2" && infos[1].outputShape == std::vector<int>({8, 5, 5}));
    CHECK(infos[1].parameters == (8 * 8 * 9 + 8) + 4 * 8 + (8 * 8 + 8));
    const NetworkPlan plan = planNetwork(s);
    const LayerPlan& end2 = plan.layers[7];
    CHECK_MSG(end2.blockEnd && end2.projection && end2.stride == 2 && end2.blockBegin == 4, "the second block's end: stride-2 projection");
    const auto mask = weightDecayMask(s);
    CHECK_MSG(mask[end2.weightOffset] == 1 && mask[end2.biasOffset] == 0, "the projection's weight decays, not its bias");
    // identity: no tensors of its own
    ModelSpec id = parseModelSpec(specWith("[6]", "{\"kind\":\"residual\",\"layers\":[{\"kind\":\"dense\",\"units\":6}]},{\"kind\":\"dense\",\"units\":2}"));
    CHECK(parameterTable(id).size() == 4 && parameterTable(id)[0].name == "layers.0.layers.0.weight" && inferShapes(id)[0].parameters == 42);

    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"residual\",\"layers\":[{\"kind\":\"dense\",\"units\":4},{\"kind\":\"dense\"}]}")),
                 SpecError, "layer 1 (residual), its layer 2 (dense): missing \"units\"");
    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"dense\",\"units\":4},{\"kind\":\"residual\",\"layers\":[{\"kind\":\"pool\"}]}")),
                 SpecError, "layer 2 (residual), its layer 1: unknown kind \"pool\"");
    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"residual\",\"layers\":[{\"kind\":\"residual\",\"layers\":[]}]}")),
                 SpecError, "layer 1 (residual), its layer 1: a residual block cannot hold another residual block");
    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"residual\",\"layers\":[]}")), SpecError,
                 "residual #1: \"layers\" is empty");
    CHECK_THROWS(parseModelSpec(specWith("[4]", "{\"kind\":\"residual\",\"layers\":[{\"kind\":\"dense\",\"units\":4}],\"shortcut\":\"conv\"}")),
                 SpecError, "residual #1: unknown shortcut \"conv\" (expected auto)");
    // shape errors through the block
    CHECK_THROWS(inferShapes(parseModelSpec(specWith("[4]", "{\"kind\":\"residual\",\"layers\":[{\"kind\":\"dense\",\"units\":4},{\"kind\":\"maxpool2d\",\"size\":2}]}"))),
                 SpecError, "layer 1 (residual), its layer 2 (maxpool2d): needs an image input");
    CHECK_THROWS(inferShapes(parseModelSpec(specWith("[4]", "{\"kind\":\"residual\",\"layers\":[{\"kind\":\"dense\",\"units\":3}]},{\"kind\":\"dense\",\"units\":2}"))),
                 SpecError, "residual #1: its layers turn 4 into 3: a shortcut that changes the shape needs an image on both sides");
    CHECK_THROWS(inferShapes(parseModelSpec(specWith("[2,4,4]", "{\"kind\":\"residual\",\"layers\":[{\"kind\":\"conv2d\",\"filters\":2,\"kernel\":[2,2]}]},{\"kind\":\"flatten\"},{\"kind\":\"dense\",\"units\":2}"))),
                 SpecError, "residual #1: its layers turn 2x4x4 into 2x3x3: no stride of a 1x1 convolution maps 4x4 to 3x3");
  }

  // ---- parseModelSpec values and defaults ----
  std::printf("parseModelSpec values\n");
  {
    ModelSpec s = parseModelSpec(
        "{\"input\":[3,32,30],\"layers\":[{\"kind\":\"conv2d\",\"filters\":5,\"kernel\":[3,2],\"stride\":2,"
        "\"padding\":\"same\",\"activation\":\"leaky_relu\",\"alpha\":0.2},{\"kind\":\"maxpool2d\",\"size\":3},"
        "{\"kind\":\"avgpool2d\",\"size\":2,\"stride\":1},{\"kind\":\"flatten\"},{\"kind\":\"dropout\",\"rate\":0.25},"
        "{\"kind\":\"dense\",\"units\":7},{\"kind\":\"activation\",\"fn\":\"softmax\"}],"
        "\"loss\":\"softmax_cross_entropy\",\"optimizer\":{\"kind\":\"adam\",\"lr\":0.01,\"beta1\":0.8},\"seed\":42}");
    CHECK(s.input == std::vector<int>({3, 32, 30}));
    CHECK(s.layers.size() == 7);
    CHECK(s.layers[0].kind == LayerKind::Conv2D && s.layers[0].filters == 5 && s.layers[0].kernelH == 3 &&
          s.layers[0].kernelW == 2 && s.layers[0].stride == 2 && s.layers[0].padding == Padding::Same);
    CHECK(s.layers[0].activation == ActivationFn::LeakyReLU && std::fabs(s.layers[0].alpha - 0.2f) < 1e-7f);
    CHECK_MSG(s.layers[1].kind == LayerKind::MaxPool2D && s.layers[1].poolSize == 3 && s.layers[1].stride == 3,
              "pool stride defaults to its size");
    CHECK(s.layers[2].kind == LayerKind::AvgPool2D && s.layers[2].stride == 1);
    CHECK(s.layers[4].kind == LayerKind::Dropout && std::fabs(s.layers[4].rate - 0.25f) < 1e-7f);
    CHECK(s.layers[6].kind == LayerKind::Activation && s.layers[6].activation == ActivationFn::Softmax);
    CHECK(s.optimizer.kind == OptimizerKind::Adam && std::fabs(s.optimizer.lr - 0.01f) < 1e-9f);
    CHECK_MSG(std::fabs(s.optimizer.beta1 - 0.8f) < 1e-7f && std::fabs(s.optimizer.beta2 - 0.999f) < 1e-7f &&
                  std::fabs(s.optimizer.eps - 1e-7f) < 1e-12f,
              "adam: beta1 given, beta2/eps default to 0.999/1e-7");
    CHECK(s.seed == 42);
    // shapes: same with stride 2: ceil(32/2)=16, ceil(30/2)=15; maxpool 3 (floor): 5x5; avgpool 2 stride 1: 4x4
    auto infos = inferShapes(s);
    checkShape(infos[0], {5, 16, 15});
    checkShape(infos[1], {5, 5, 5});
    checkShape(infos[2], {5, 4, 4});
    checkShape(infos[3], {80});
    checkShape(infos[6], {7});
    CHECK(infos[0].label == "conv2d #1" && infos[5].label == "dense #1" && infos[6].label == "activation #1");
    // folding: softmax cross-entropy takes the trailing softmax
    CHECK(planNetwork(s).foldedHeadActivation);
    CHECK(planNetwork(s).layers.back().activation == ActivationFn::Linear);
  }

  // ---- presets: shapes and parameter counts (by hand) ----
  std::printf("presets\n");
  {
    // seed000: conv 2x2x4 same -> 4x28x28 (4*1*2*2+4 = 20), conv 2x2x4 same -> 4x28x28 (4*4*2*2+4 = 68),
    // maxpool 4 -> 4x7x7, flatten 196, dense 128 (196*128+128 = 25216), dense 10 (128*10+10 = 1290): 26594
    ModelSpec s = parseModelSpec(presetSpec("seed000"));
    auto infos = inferShapes(s);
    CHECK(infos.size() == 6);
    checkShape(infos[0], {4, 28, 28});
    checkShape(infos[1], {4, 28, 28});
    checkShape(infos[2], {4, 7, 7});
    checkShape(infos[3], {196});
    checkShape(infos[4], {128});
    checkShape(infos[5], {10});
    CHECK(infos[0].parameters == 20 && infos[1].parameters == 68 && infos[4].parameters == 25216 &&
          infos[5].parameters == 1290);
    CHECK(totalParameters(infos) == 26594);
    CHECK(parameterCount(s) == 26594);
    CHECK_MSG(infos[0].multiplyAdds == 4 * 1 * 2 * 2 * 28 * 28, "conv2d #1 MACs = 4*1*2*2*28*28");
    CHECK(infos[4].multiplyAdds == 196 * 128);
    CHECK(classCount(s) == 10);
    // TensorFlow's 'same' for an even kernel pads 0 before and 1 after
    NetworkPlan plan = planNetwork(s);
    CHECK(plan.layers[0].padTop == 0 && plan.layers[0].padLeft == 0);
  }
  {
    // seed001: conv 3x3x64 valid -> 64x26x26 (640), maxpool 2 -> 64x13x13, flatten 10816, dense 10 (108170)
    ModelSpec s = parseModelSpec(presetSpec("seed001"));
    auto infos = inferShapes(s);
    checkShape(infos[0], {64, 26, 26});
    checkShape(infos[1], {64, 13, 13});
    checkShape(infos[2], {10816});
    CHECK(infos[0].parameters == 640 && infos[3].parameters == 108170);
    CHECK(totalParameters(infos) == 108810);
    CHECK(s.optimizer.kind == OptimizerKind::SGD && std::fabs(s.optimizer.lr - 0.1f) < 1e-9f);
  }
  {
    // seed002: conv 5x5x8 -> 8x24x24 (208), conv 5x5x8 -> 8x20x20 (1608), maxpool 2 -> 8x10x10, 800,
    // dense 128 (102528), dense 10 (1290): 105634
    ModelSpec s = parseModelSpec(presetSpec("seed002"));
    auto infos = inferShapes(s);
    checkShape(infos[0], {8, 24, 24});
    checkShape(infos[1], {8, 20, 20});
    checkShape(infos[2], {8, 10, 10});
    checkShape(infos[3], {800});
    CHECK(totalParameters(infos) == 105634);
    CHECK(std::fabs(s.optimizer.beta1 - 0.95f) < 1e-7f && std::fabs(s.optimizer.beta2 - 0.99f) < 1e-7f);
  }
  {
    // mlp: 784*128+128 = 100480, 128*10+10 = 1290: 101770
    ModelSpec s = parseModelSpec(presetSpec("mlp"));
    auto infos = inferShapes(s);
    checkShape(infos[0], {784});
    CHECK(totalParameters(infos) == 101770);
  }
  {
    // keras_cnn: 320 + 18496 + (9216*128+128 = 1179776) + 1290 = 1199882 (Keras' model.summary() agrees)
    ModelSpec s = parseModelSpec(presetSpec("keras_cnn"));
    auto infos = inferShapes(s);
    checkShape(infos[1], {64, 24, 24});
    checkShape(infos[2], {64, 12, 12});
    CHECK(totalParameters(infos) == 1199882);
  }
  {
    // lenet5: 156 + 2416 + 48120 + 10164 + 850 = 61706 (the classic LeNet-5 count)
    ModelSpec s = parseModelSpec(presetSpec("lenet5"));
    auto infos = inferShapes(s);
    checkShape(infos[0], {6, 28, 28});
    checkShape(infos[1], {6, 14, 14});
    checkShape(infos[2], {16, 10, 10});
    checkShape(infos[3], {16, 5, 5});
    CHECK(totalParameters(infos) == 61706);
    std::string seed001_256 = presetSpec("seed001_256");
    CHECK(totalParameters(inferShapes(parseModelSpec(seed001_256))) == 256 * 9 + 256 + 13 * 13 * 256 * 10 + 10);
  }

  // ---- shape errors name the layer ----
  std::printf("shape errors\n");
  {
    // seed000 without its flatten layer
    ModelSpec s = parseModelSpec(presetSpec("seed000"));
    s.layers.erase(s.layers.begin() + 3);
    CHECK_THROWS(inferShapes(s), SpecError, "dense #1: needs a flat input, got 4x7x7 (add a flatten layer)");
    // parsing accepts it (the fields are fine); shape inference names the layer at fault
    ModelSpec big = parseModelSpec(specWith("[1,8,8]", "{\"kind\":\"conv2d\",\"filters\":2,\"kernel\":[5,5]},"
                                                      "{\"kind\":\"conv2d\",\"filters\":2,\"kernel\":[5,5]}"));
    CHECK_THROWS(inferShapes(big), SpecError, "conv2d #2: kernel 5x5 larger than input 4x4");
    CHECK_THROWS(classCount(big), SpecError, "conv2d #2");
    CHECK_THROWS(initialParameters(big, 0), SpecError, "conv2d #2");
    ModelSpec pool = parseModelSpec(specWith("[2,3,3]", "{\"kind\":\"maxpool2d\",\"size\":4}"));
    CHECK_THROWS(inferShapes(pool), SpecError, "maxpool2d #1: window 4x4 larger than input 3x3");
    ModelSpec flatConv = parseModelSpec(specWith("[16]", "{\"kind\":\"conv2d\",\"filters\":2,\"kernel\":[3,3]}"));
    CHECK_THROWS(inferShapes(flatConv), SpecError, "conv2d #1: needs an image input [C,H,W], got 16");
    ModelSpec softmaxImage = parseModelSpec(specWith("[1,4,4]", "{\"kind\":\"activation\",\"fn\":\"softmax\"}"));
    CHECK_THROWS(inferShapes(softmaxImage), SpecError, "activation #1: softmax needs a flat input, got 1x4x4");
    // the head must be flat and wide enough for its loss
    ModelSpec convHead = parseModelSpec(specWith("[1,5,5]", "{\"kind\":\"conv2d\",\"filters\":1,\"kernel\":[3,3]}", "mse"));
    CHECK_THROWS(inferShapes(convHead), SpecError, "conv2d #1: the network must end with a flat output, got 1x3x3");
    ModelSpec oneClass = parseModelSpec(specWith("[3]", "{\"kind\":\"dense\",\"units\":1}"));
    CHECK_THROWS(inferShapes(oneClass), SpecError, "softmax_cross_entropy needs at least 2 outputs, the last layer dense #1 has 1");
    // same/full never fail for a big kernel: TensorFlow pads as needed
    ModelSpec same = parseModelSpec(specWith("[1,3,3]", "{\"kind\":\"conv2d\",\"filters\":1,\"kernel\":[5,4],\"padding\":\"same\"},{\"kind\":\"flatten\"},{\"kind\":\"dense\",\"units\":2}"));
    checkShape(inferShapes(same)[0], {1, 3, 3});
    ModelSpec full = parseModelSpec(specWith("[1,4,5]", "{\"kind\":\"conv2d\",\"filters\":2,\"kernel\":[3,2],\"padding\":\"full\",\"stride\":2},{\"kind\":\"flatten\"},{\"kind\":\"dense\",\"units\":2}"));
    // full pads k-1 each side: (4+4-3)/2+1 = 3, (5+2-2)/2+1 = 3
    checkShape(inferShapes(full)[0], {2, 3, 3});
  }

  // ---- convolution geometry: TensorFlow 'same' ----
  std::printf("convAxis\n");
  {
    int out = 0, pad = 0;
    convAxis(7, 3, 2, Padding::Same, out, pad);  // out ceil(7/2)=4, total pad (4-1)*2+3-7 = 2, before 1
    CHECK(out == 4 && pad == 1);
    convAxis(8, 3, 2, Padding::Same, out, pad);  // out 4, total (3*2+3-8) = 1, before 0 (after 1)
    CHECK(out == 4 && pad == 0);
    convAxis(28, 5, 1, Padding::Same, out, pad);  // stride 1: total k-1 = 4, before 2
    CHECK(out == 28 && pad == 2);
    convAxis(28, 4, 1, Padding::Same, out, pad);  // even kernel: total 3, before 1, after 2
    CHECK(out == 28 && pad == 1);
    convAxis(5, 3, 1, Padding::Full, out, pad);
    CHECK(out == 7 && pad == 2);
    convAxis(6, 3, 2, Padding::Valid, out, pad);  // floor((6-3)/2)+1 = 2
    CHECK(out == 2 && pad == 0);
  }

  // ---- parameter table ----
  std::printf("parameterTable\n");
  {
    ModelSpec s = parseModelSpec(presetSpec("seed000"));
    auto table = parameterTable(s);
    CHECK(table.size() == 8);
    CHECK(table[0].name == "layers.0.weight" && table[0].shape == std::vector<int>({4, 1, 2, 2}) && table[0].offset == 0 &&
          table[0].size == 16);
    CHECK(table[1].name == "layers.0.bias" && table[1].shape == std::vector<int>({4}) && table[1].offset == 16);
    CHECK(table[2].name == "layers.1.weight" && table[2].shape == std::vector<int>({4, 4, 2, 2}) && table[2].offset == 20);
    CHECK_MSG(table[4].name == "layers.4.weight" && table[4].shape == std::vector<int>({128, 196}) && table[4].offset == 88,
              "dense weight is (units, inputs), named by its index in spec.layers");
    CHECK(table[7].name == "layers.5.bias" && table[7].offset + table[7].size == 26594);
    // single output: two classes
    ModelSpec binary = parseModelSpec(specWith("[3]", "{\"kind\":\"dense\",\"units\":1,\"activation\":\"sigmoid\"}",
                                               "binary_cross_entropy"));
    CHECK(classCount(binary) == 2);
    CHECK(planNetwork(binary).foldedHeadActivation);
    ModelSpec mseSigmoid = parseModelSpec(specWith("[3]", "{\"kind\":\"dense\",\"units\":1,\"activation\":\"sigmoid\"}", "mse"));
    CHECK_MSG(!planNetwork(mseSigmoid).foldedHeadActivation, "mse keeps the head's sigmoid");
  }

  // ---- initial parameters ----
  std::printf("initialParameters\n");
  {
    ModelSpec s = parseModelSpec(presetSpec("seed000"));
    auto a = initialParameters(s, 0), b = initialParameters(s, 0), c = initialParameters(s, 1);
    CHECK_MSG(a == b, "same seed, same weights");
    CHECK_MSG(a != c, "another seed, other weights");
    auto table = parameterTable(s);
    bool biasesZero = true;
    for (size_t t = 1; t < table.size(); t += 2)
      for (size_t i = 0; i < table[t].size; ++i) biasesZero = biasesZero && a[table[t].offset + i] == 0.0f;
    CHECK_MSG(biasesZero, "biases start at zero");
    auto range = [&](const ParamTensor& t, double& lo, double& hi, double& mean) {
      lo = 1e9; hi = -1e9; mean = 0;
      for (size_t i = 0; i < t.size; ++i) {
        double v = a[t.offset + i];
        lo = std::min(lo, v); hi = std::max(hi, v); mean += v;
      }
      mean /= double(t.size);
    };
    double lo, hi, mean;
    // dense 196->128 relu: He-uniform, limit sqrt(6/196) = 0.17496
    range(table[4], lo, hi, mean);
    const double he = std::sqrt(6.0 / 196);
    CHECK_MSG(lo >= -he && hi <= he && hi > 0.98 * he && lo < -0.98 * he,
              "dense #1 (relu): He-uniform within +-" + nnstudio_test::num(he) + ", got [" + nnstudio_test::num(lo) +
                  ", " + nnstudio_test::num(hi) + "]");
    CHECK_MSG(std::fabs(mean) < 0.01, "dense #1: mean near 0, got " + nnstudio_test::num(mean));
    // dense 128->10 linear: Glorot-uniform, limit sqrt(6/138) = 0.20851
    range(table[6], lo, hi, mean);
    const double glorot = std::sqrt(6.0 / (128 + 10));
    CHECK_MSG(lo >= -glorot && hi <= glorot && hi > 0.95 * glorot && lo < -0.95 * glorot,
              "dense #2 (linear): Glorot-uniform within +-" + nnstudio_test::num(glorot));
    // conv 4x4x2x2 relu: fan_in 16 -> He limit sqrt(6/16)
    range(table[2], lo, hi, mean);
    CHECK(lo >= -std::sqrt(6.0 / 16) && hi <= std::sqrt(6.0 / 16));
    // a linear layer followed by a relu activation layer gets He too
    ModelSpec followed = parseModelSpec(specWith("[600]", "{\"kind\":\"dense\",\"units\":300},{\"kind\":\"activation\",\"fn\":\"relu\"}"));
    ModelSpec plain = parseModelSpec(specWith("[600]", "{\"kind\":\"dense\",\"units\":300},{\"kind\":\"activation\",\"fn\":\"tanh\"}"));
    auto pf = initialParameters(followed, 3), pp = initialParameters(plain, 3);
    double maxF = 0, maxP = 0;
    for (size_t i = 0; i < 600 * 300; ++i) { maxF = std::max(maxF, double(std::fabs(pf[i]))); maxP = std::max(maxP, double(std::fabs(pp[i]))); }
    CHECK_MSG(maxF <= std::sqrt(6.0 / 600) && maxF > 0.99 * std::sqrt(6.0 / 600), "dense then relu layer: He limit sqrt(6/600)");
    CHECK_MSG(maxP <= std::sqrt(6.0 / 900) && maxP > 0.99 * std::sqrt(6.0 / 900), "dense then tanh layer: Glorot limit sqrt(6/900)");
    // known values pin the RNG so that every platform starts from the same weights
    CHECK_MSG(a[0] == 0.965490103f && a[1] == 0.591001093f && a[2] == 0.188833117f,
              "seed000 seed 0 starts with the pinned weights 0.965490103 0.591001093 0.188833117, got " +
                  nnstudio_test::num(a[0]) + " " + nnstudio_test::num(a[1]) + " " + nnstudio_test::num(a[2]));
  }
  // ---- task, huber, weight decay ----
  std::printf("task, huber, weightDecay\n");
  {
    const std::string dense2 = "{\"kind\":\"dense\",\"units\":2}";
    auto withTop = [&](const std::string& loss, const std::string& extra, const std::string& optimizer =
                                                                            "{\"kind\":\"adam\",\"lr\":0.001}") {
      return "{\"input\":[3],\"layers\":[" + dense2 + "],\"loss\":\"" + loss + "\",\"optimizer\":" + optimizer +
             ",\"seed\":0" + extra + "}";
    };
    const ModelSpec plain = parseModelSpec(withTop("mse", ""));
    CHECK_MSG(plain.task == TaskKind::Classification && plain.huberDelta == 1.0f && plain.optimizer.weightDecay == 0.0f,
              "defaults: classification, huberDelta 1, no weight decay");
    const ModelSpec reg = parseModelSpec(withTop("huber", ",\"task\":\"regression\",\"huberDelta\":0.25",
                                                 "{\"kind\":\"sgd\",\"lr\":0.1,\"weightDecay\":0.001}"));
    CHECK(reg.task == TaskKind::Regression && reg.loss == LossKind::Huber && reg.huberDelta == 0.25f &&
          reg.optimizer.weightDecay == 0.001f);
    CHECK_MSG(classCount(reg) == 0, "a regression predicts no classes");
    CHECK(parseModelSpec(withTop("mae", ",\"task\":\"regression\"")).loss == LossKind::MAE);
    CHECK(parseModelSpec(withTop("softmax_cross_entropy", ",\"task\":\"classification\"")).task == TaskKind::Classification);
    CHECK(parseModelSpec(withTop("huber", "")).loss == LossKind::Huber);  // huber on one-hot labels, as mse
    CHECK(parseModelSpec(withTop("mse", "", "{\"kind\":\"adam\",\"lr\":0.01,\"weightDecay\":0.0001}")).optimizer.weightDecay ==
          0.0001f);
    CHECK_THROWS(parseModelSpec(withTop("softmax_cross_entropy", ",\"task\":\"regression\"")), SpecError,
                 "spec: a regression needs loss mse, mae or huber, got \"softmax_cross_entropy\"");
    CHECK_THROWS(parseModelSpec(withTop("binary_cross_entropy", ",\"task\":\"regression\"")), SpecError,
                 "a regression needs loss mse, mae or huber");
    CHECK_THROWS(parseModelSpec(withTop("mse", ",\"task\":\"ranking\"")), SpecError,
                 "unknown task \"ranking\" (expected classification or regression)");
    CHECK_THROWS(parseModelSpec(withTop("mse", ",\"task\":1")), SpecError, "\"task\" must be a string");
    CHECK_THROWS(parseModelSpec(withTop("huber", ",\"huberDelta\":0")), SpecError, "\"huberDelta\" must be a finite number > 0");
    CHECK_THROWS(parseModelSpec(withTop("huber", ",\"huberDelta\":-1")), SpecError, "\"huberDelta\" must be a finite number > 0");
    CHECK_THROWS(parseModelSpec(withTop("mse", "", "{\"kind\":\"sgd\",\"lr\":0.1,\"weightDecay\":-0.1}")), SpecError,
                 "optimizer: \"weightDecay\" must be a finite number >= 0");
    CHECK_THROWS(parseModelSpec(withTop("mse", "", "{\"kind\":\"adam\",\"lr\":0.1,\"weightDecay\":\"a\"}")), SpecError,
                 "\"weightDecay\" must be a number");
    CHECK_THROWS(parseModelSpec(withTop("hinge", "")), SpecError, "expected softmax_cross_entropy, binary_cross_entropy, mse, mae or huber");
    // a spec built in C++ is checked by planNetwork too
    ModelSpec built = plain;
    built.task = TaskKind::Regression;
    built.loss = LossKind::SoftmaxCrossEntropy;
    CHECK_THROWS(planNetwork(built), SpecError, "a regression needs loss mse, mae or huber");
    // the decay mask: weights 1, biases 0
    const ModelSpec two = parseModelSpec(specWith("[3]", "{\"kind\":\"dense\",\"units\":4}," + dense2));
    const std::vector<uint8_t> mask = weightDecayMask(two);
    bool maskOk = mask.size() == parameterCount(two);
    for (const ParamTensor& t : parameterTable(two))
      for (size_t i = t.offset; i < t.offset + t.size && maskOk; ++i)
        maskOk = mask[i] == (t.name.find("weight") != std::string::npos ? 1 : 0);
    CHECK_MSG(maskOk, "weightDecayMask marks the weights, not the biases");
  }
  return nnstudio_test::summary();
}
