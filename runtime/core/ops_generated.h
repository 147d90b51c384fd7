// Generated from dtorch/catalogue by `python -m dtorch.catalogue.generate`; do not edit by hand.
// One OpSchema per operator (core/op_schema.h), named op_<name>; kernel registrations point at them.
#pragma once

#include <cstdint>

#include "core/op_schema.h"

namespace dtorch {
namespace ops {

constexpr uint32_t kOpset = 13;

// The values of the fused `activation` attribute, in the order of kernels::ActKind.
inline constexpr const char* const kFusedActivations[] = {"none", "relu", "relu6", "hardtanh", "leaky_relu", "sigmoid", "tanh", "silu", "hardswish", "hardsigmoid", "gelu", "gelu_tanh"};

inline constexpr DType dtypes_86f5a46ec9[] = {DType::kFloat32};
inline constexpr const char* const string_choices_cd948e8ba6[] = {"none", "relu", "relu6", "hardtanh", "leaky_relu", "sigmoid", "tanh", "silu", "hardswish", "hardsigmoid", "gelu", "gelu_tanh"};
inline constexpr DType dtypes_f4bb0a7db0[] = {DType::kFloat32, DType::kFloat32};
inline constexpr DType dtypes_60ee91f605[] = {DType::kInt64, DType::kInt64};
inline constexpr DType dtypes_6417adc7fa[] = {DType::kInt64};
inline constexpr DType dtypes_e0c87cbccc[] = {DType::kInt32, DType::kInt32};
inline constexpr DType dtypes_2c552f0a05[] = {DType::kInt32};
inline constexpr int64_t int_choices_6ac70fdf46[] = {0, 1};
inline constexpr DType dtypes_98fae34187[] = {DType::kFloat32, DType::kInt64};
inline constexpr DType dtypes_3309a1236c[] = {DType::kFloat32, DType::kInt32};
inline constexpr DType dtypes_4ab3a41210[] = {DType::kFloat32, DType::kBool};
inline constexpr DType dtypes_74208c6fdd[] = {DType::kFloat32, DType::kInt8};
inline constexpr DType dtypes_8c41980022[] = {DType::kInt64, DType::kFloat32};
inline constexpr DType dtypes_46f62b39de[] = {DType::kInt64, DType::kInt32};
inline constexpr DType dtypes_9ec4d6e877[] = {DType::kInt64, DType::kBool};
inline constexpr DType dtypes_2462f6e46c[] = {DType::kInt64, DType::kInt8};
inline constexpr DType dtypes_771ff3cbf0[] = {DType::kInt32, DType::kFloat32};
inline constexpr DType dtypes_c01e69a87a[] = {DType::kInt32, DType::kInt64};
inline constexpr DType dtypes_2838c67d46[] = {DType::kInt32, DType::kBool};
inline constexpr DType dtypes_a924421dd6[] = {DType::kInt32, DType::kInt8};
inline constexpr double defaults_0a3f2c23f6[] = {0.0, 0.0};
inline constexpr DType dtypes_b72ddafcb1[] = {DType::kFloat32, DType::kFloat32, DType::kFloat32, DType::kFloat32, DType::kFloat32};
inline constexpr const char* const string_choices_80ae18eaed[] = {"float32", "int64", "int32", "bool"};
inline constexpr DType dtypes_78fcd5eaeb[] = {DType::kBool};
inline constexpr DType dtypes_3f987ad5f2[] = {DType::kInt8};
inline constexpr double defaults_5a731f4601[] = {1.0, 1.0};
inline constexpr double defaults_321047e2f5[] = {0.0, 0.0, 0.0, 0.0};
inline constexpr DType dtypes_3c4bd49986[] = {DType::kFloat32, DType::kFloat32, DType::kFloat32};
inline constexpr DType dtypes_5fcebe6f67[] = {DType::kBool, DType::kFloat32};
inline constexpr DType dtypes_7818c6c7c4[] = {DType::kBool, DType::kInt64};
inline constexpr DType dtypes_0972b955d4[] = {DType::kBool, DType::kInt32};
inline constexpr DType dtypes_7d8f846ad1[] = {DType::kBool, DType::kBool};
inline constexpr DType dtypes_1de2bd9096[] = {DType::kBool, DType::kInt8};
inline constexpr DType dtypes_5ad259da48[] = {DType::kInt8, DType::kFloat32};
inline constexpr DType dtypes_87fdc8c7dd[] = {DType::kInt8, DType::kInt64};
inline constexpr DType dtypes_57e10a4dd4[] = {DType::kInt8, DType::kInt32};
inline constexpr DType dtypes_10181f824b[] = {DType::kInt8, DType::kBool};
inline constexpr DType dtypes_3be575d9c4[] = {DType::kInt8, DType::kInt8};
inline constexpr const char* const string_choices_49484034b7[] = {"none", "tanh"};
inline constexpr const char* const string_choices_b7701c0d2f[] = {"constant", "reflect", "replicate", "circular"};
inline constexpr const char* const string_choices_08665888e6[] = {"none", "relu", "relu6"};
inline constexpr DType dtypes_1ebf402ad4[] = {DType::kInt8, DType::kInt8, DType::kFloat32, DType::kInt32};
inline constexpr const char* const string_choices_2e8b3e1f0d[] = {"relu", "sigmoid", "tanh", "silu", "hardswish", "hardsigmoid", "gelu", "gelu_tanh", "hardtanh", "leaky_relu", "elu", "softplus"};
inline constexpr const char* const string_choices_9c5243582b[] = {"nearest", "linear", "cubic"};
inline constexpr const char* const string_choices_30918c8fb4[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
inline constexpr const char* const string_choices_563d543500[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
inline constexpr DType dtypes_b0699bdded[] = {DType::kBool, DType::kFloat32, DType::kFloat32};
inline constexpr DType dtypes_f22aae3e51[] = {DType::kBool, DType::kInt64, DType::kInt64};
inline constexpr DType dtypes_d5191d98fc[] = {DType::kBool, DType::kInt32, DType::kInt32};
inline constexpr DType dtypes_e4d71ae4bd[] = {DType::kBool, DType::kBool, DType::kBool};
inline constexpr DType dtypes_8efb528137[] = {DType::kBool, DType::kInt8, DType::kInt8};

// abs: |x|
inline constexpr DTypeSignature op_abs_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_abs = {"abs", 1, 1, 0x0, 1, nullptr, 0, op_abs_signatures, 1, InPlace::kAlways, nullptr};

// adaptive_avg_pool2d: mean over windows floor(i*H/oh) .. ceil((i+1)*H/oh)
inline constexpr AttrSpec op_adaptive_avg_pool2d_attrs[] = {
    {"output_size", AttrKind::kInts, true, true, true, 1.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_adaptive_avg_pool2d_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_adaptive_avg_pool2d = {"adaptive_avg_pool2d", 1, 1, 0x0, 1, op_adaptive_avg_pool2d_attrs, 1, op_adaptive_avg_pool2d_signatures, 1, InPlace::kNone, nullptr};

// adaptive_max_pool2d: max over windows floor(i*H/oh) .. ceil((i+1)*H/oh)
inline constexpr AttrSpec op_adaptive_max_pool2d_attrs[] = {
    {"output_size", AttrKind::kInts, true, true, true, 1.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_adaptive_max_pool2d_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_adaptive_max_pool2d = {"adaptive_max_pool2d", 1, 1, 0x0, 1, op_adaptive_max_pool2d_attrs, 1, op_adaptive_max_pool2d_signatures, 1, InPlace::kNone, nullptr};

// add: a + b, then the fused activation
inline constexpr AttrSpec op_add_attrs[] = {
    {"activation", AttrKind::kString, false, false, false, 0.0, 0.0, 0, -1, string_choices_cd948e8ba6, 12, nullptr, 0, true, 0.0, "none", nullptr, 0},
    {"min_val", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, -1.0, nullptr, nullptr, 0},
    {"max_val", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 1.0, nullptr, nullptr, 0},
    {"alpha", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 0.01, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_add_signatures[] = {{dtypes_f4bb0a7db0, 2, dtypes_86f5a46ec9, 1}, {dtypes_60ee91f605, 2, dtypes_6417adc7fa, 1}, {dtypes_e0c87cbccc, 2, dtypes_2c552f0a05, 1}};
inline constexpr OpSchema op_add = {"add", 2, 2, 0x0, 1, op_add_attrs, 4, op_add_signatures, 3, InPlace::kSameShape, nullptr};

// amax: max over `axes` (torch.amax: NaN propagates; a reduced dimension of size 0 is an error)
inline constexpr AttrSpec op_amax_attrs[] = {
    {"axes", AttrKind::kInts, false, true, true, -8.0, 7.0, 0, 8, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"keepdim", AttrKind::kInt, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, int_choices_6ac70fdf46, 2, true, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_amax_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}, {dtypes_6417adc7fa, 1, dtypes_6417adc7fa, 1}};
inline constexpr OpSchema op_amax = {"amax", 1, 1, 0x0, 1, op_amax_attrs, 2, op_amax_signatures, 2, InPlace::kNone, nullptr};

// amin: min over `axes` (torch.amin: NaN propagates; a reduced dimension of size 0 is an error)
inline constexpr AttrSpec op_amin_attrs[] = {
    {"axes", AttrKind::kInts, false, true, true, -8.0, 7.0, 0, 8, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"keepdim", AttrKind::kInt, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, int_choices_6ac70fdf46, 2, true, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_amin_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}, {dtypes_6417adc7fa, 1, dtypes_6417adc7fa, 1}};
inline constexpr OpSchema op_amin = {"amin", 1, 1, 0x0, 1, op_amin_attrs, 2, op_amin_signatures, 2, InPlace::kNone, nullptr};

// arange: start + i * step for i in [0, n): n is `shape`[0], or like.shape[like_dims[0]] at run time (the length of ONNX Range / torch.arange that follows a dynamic dimension, e.g. position ids over the sequence)
inline constexpr AttrSpec op_arange_attrs[] = {
    {"shape", AttrKind::kInts, true, true, false, 0.0, 0.0, 1, 1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"step", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 1.0, nullptr, nullptr, 0},
    {"like_dims", AttrKind::kInts, false, true, true, -1.0, 7.0, 0, 8, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_arange_signatures[] = {{dtypes_f4bb0a7db0, 2, dtypes_86f5a46ec9, 1}, {dtypes_98fae34187, 2, dtypes_86f5a46ec9, 1}, {dtypes_3309a1236c, 2, dtypes_86f5a46ec9, 1}, {dtypes_4ab3a41210, 2, dtypes_86f5a46ec9, 1}, {dtypes_74208c6fdd, 2, dtypes_86f5a46ec9, 1}, {dtypes_8c41980022, 2, dtypes_6417adc7fa, 1}, {dtypes_60ee91f605, 2, dtypes_6417adc7fa, 1}, {dtypes_46f62b39de, 2, dtypes_6417adc7fa, 1}, {dtypes_9ec4d6e877, 2, dtypes_6417adc7fa, 1}, {dtypes_2462f6e46c, 2, dtypes_6417adc7fa, 1}, {dtypes_771ff3cbf0, 2, dtypes_2c552f0a05, 1}, {dtypes_c01e69a87a, 2, dtypes_2c552f0a05, 1}, {dtypes_e0c87cbccc, 2, dtypes_2c552f0a05, 1}, {dtypes_2838c67d46, 2, dtypes_2c552f0a05, 1}, {dtypes_a924421dd6, 2, dtypes_2c552f0a05, 1}};
inline constexpr OpSchema op_arange = {"arange", 1, 2, 0x2, 1, op_arange_attrs, 3, op_arange_signatures, 15, InPlace::kNone, nullptr};

// avg_pool2d: mean over each window (PyTorch's AvgPool2d)
inline constexpr AttrSpec op_avg_pool2d_attrs[] = {
    {"kernel", AttrKind::kInts, true, true, true, 1.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"stride", AttrKind::kInts, false, true, true, 1.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"padding", AttrKind::kInts, false, true, true, 0.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, true, 0.0, nullptr, defaults_0a3f2c23f6, 2},
    {"ceil_mode", AttrKind::kInt, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, int_choices_6ac70fdf46, 2, true, 0.0, nullptr, nullptr, 0},
    {"count_include_pad", AttrKind::kInt, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, int_choices_6ac70fdf46, 2, true, 1.0, nullptr, nullptr, 0},
    {"divisor_override", AttrKind::kInt, false, true, true, 0.0, 16777216.0, 0, -1, nullptr, 0, nullptr, 0, true, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_avg_pool2d_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_avg_pool2d = {"avg_pool2d", 1, 1, 0x0, 1, op_avg_pool2d_attrs, 6, op_avg_pool2d_signatures, 1, InPlace::kNone, nullptr};

// batch_norm: (x - mean) / sqrt(var + eps) * w + b per channel (export folds it into a preceding conv2d/linear when it can)
inline constexpr AttrSpec op_batch_norm_attrs[] = {
    {"eps", AttrKind::kFloat, false, true, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 1e-05, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_batch_norm_signatures[] = {{dtypes_b72ddafcb1, 5, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_batch_norm = {"batch_norm", 3, 5, 0x18, 1, op_batch_norm_attrs, 1, op_batch_norm_signatures, 1, InPlace::kNone, nullptr};

// cast: x converted to the dtype `to` (numpy astype, ONNX Cast): float -> integer truncates toward zero and saturates (NaN -> 0, +inf and values above the integer's range -> its max, -inf and values below -> its min); int64 -> int32 keeps the low 32 bits (wraps, as torch and numpy do); integer -> float32 rounds to nearest even; anything -> bool is x != 0 (NaN -> true); bool -> number is 0 / 1
inline constexpr AttrSpec op_cast_attrs[] = {
    {"to", AttrKind::kString, true, false, false, 0.0, 0.0, 0, -1, string_choices_80ae18eaed, 4, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_cast_signatures[] = {{dtypes_6417adc7fa, 1, dtypes_86f5a46ec9, 1}, {dtypes_2c552f0a05, 1, dtypes_86f5a46ec9, 1}, {dtypes_78fcd5eaeb, 1, dtypes_86f5a46ec9, 1}, {dtypes_86f5a46ec9, 1, dtypes_6417adc7fa, 1}, {dtypes_2c552f0a05, 1, dtypes_6417adc7fa, 1}, {dtypes_78fcd5eaeb, 1, dtypes_6417adc7fa, 1}, {dtypes_86f5a46ec9, 1, dtypes_2c552f0a05, 1}, {dtypes_6417adc7fa, 1, dtypes_2c552f0a05, 1}, {dtypes_78fcd5eaeb, 1, dtypes_2c552f0a05, 1}, {dtypes_86f5a46ec9, 1, dtypes_78fcd5eaeb, 1}, {dtypes_6417adc7fa, 1, dtypes_78fcd5eaeb, 1}, {dtypes_2c552f0a05, 1, dtypes_78fcd5eaeb, 1}};
inline constexpr OpSchema op_cast = {"cast", 1, 1, 0x0, 1, op_cast_attrs, 1, op_cast_signatures, 12, InPlace::kNone, "to"};

// clamp: x clamped to [min, max] (each bound only when its has_ flag is 1)
inline constexpr AttrSpec op_clamp_attrs[] = {
    {"min", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 0.0, nullptr, nullptr, 0},
    {"max", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 0.0, nullptr, nullptr, 0},
    {"has_min", AttrKind::kInt, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, int_choices_6ac70fdf46, 2, true, 0.0, nullptr, nullptr, 0},
    {"has_max", AttrKind::kInt, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, int_choices_6ac70fdf46, 2, true, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_clamp_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_clamp = {"clamp", 1, 1, 0x0, 1, op_clamp_attrs, 4, op_clamp_signatures, 1, InPlace::kAlways, nullptr};

// concat: concatenation along `axis`
inline constexpr AttrSpec op_concat_attrs[] = {
    {"axis", AttrKind::kInt, false, true, true, 0.0, 7.0, 0, -1, nullptr, 0, nullptr, 0, true, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_concat_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}, {dtypes_6417adc7fa, 1, dtypes_6417adc7fa, 1}, {dtypes_2c552f0a05, 1, dtypes_2c552f0a05, 1}, {dtypes_78fcd5eaeb, 1, dtypes_78fcd5eaeb, 1}, {dtypes_3f987ad5f2, 1, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_concat = {"concat", 1, -1, 0x0, 1, op_concat_attrs, 1, op_concat_signatures, 5, InPlace::kNone, nullptr};

// conv2d: 2-D convolution (cross-correlation), groups and dilation, then the fused activation
inline constexpr AttrSpec op_conv2d_attrs[] = {
    {"stride", AttrKind::kInts, false, true, true, 1.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, true, 0.0, nullptr, defaults_5a731f4601, 2},
    {"padding", AttrKind::kInts, false, true, true, 0.0, 16777216.0, 4, 4, nullptr, 0, nullptr, 0, true, 0.0, nullptr, defaults_321047e2f5, 4},
    {"dilation", AttrKind::kInts, false, true, true, 1.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, true, 0.0, nullptr, defaults_5a731f4601, 2},
    {"groups", AttrKind::kInt, false, true, true, 1.0, 16777216.0, 0, -1, nullptr, 0, nullptr, 0, true, 1.0, nullptr, nullptr, 0},
    {"activation", AttrKind::kString, false, false, false, 0.0, 0.0, 0, -1, string_choices_cd948e8ba6, 12, nullptr, 0, true, 0.0, "none", nullptr, 0},
    {"min_val", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, -1.0, nullptr, nullptr, 0},
    {"max_val", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 1.0, nullptr, nullptr, 0},
    {"alpha", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 0.01, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_conv2d_signatures[] = {{dtypes_3c4bd49986, 3, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_conv2d = {"conv2d", 2, 3, 0x4, 1, op_conv2d_attrs, 8, op_conv2d_signatures, 1, InPlace::kNone, nullptr};

// conv_transpose2d: 2-D transposed convolution, then the fused activation
inline constexpr AttrSpec op_conv_transpose2d_attrs[] = {
    {"stride", AttrKind::kInts, false, true, true, 1.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, true, 0.0, nullptr, defaults_5a731f4601, 2},
    {"padding", AttrKind::kInts, false, true, true, 0.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, true, 0.0, nullptr, defaults_0a3f2c23f6, 2},
    {"output_padding", AttrKind::kInts, false, true, true, 0.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, true, 0.0, nullptr, defaults_0a3f2c23f6, 2},
    {"dilation", AttrKind::kInts, false, true, true, 1.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, true, 0.0, nullptr, defaults_5a731f4601, 2},
    {"groups", AttrKind::kInt, false, true, true, 1.0, 16777216.0, 0, -1, nullptr, 0, nullptr, 0, true, 1.0, nullptr, nullptr, 0},
    {"activation", AttrKind::kString, false, false, false, 0.0, 0.0, 0, -1, string_choices_cd948e8ba6, 12, nullptr, 0, true, 0.0, "none", nullptr, 0},
    {"min_val", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, -1.0, nullptr, nullptr, 0},
    {"max_val", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 1.0, nullptr, nullptr, 0},
    {"alpha", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 0.01, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_conv_transpose2d_signatures[] = {{dtypes_3c4bd49986, 3, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_conv_transpose2d = {"conv_transpose2d", 2, 3, 0x4, 1, op_conv_transpose2d_attrs, 9, op_conv_transpose2d_signatures, 1, InPlace::kNone, nullptr};

// cos: cosine
inline constexpr DTypeSignature op_cos_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_cos = {"cos", 1, 1, 0x0, 1, nullptr, 0, op_cos_signatures, 1, InPlace::kAlways, nullptr};

// cumsum: running sums along `axis` (torch.cumsum, ONNX CumSum): y[..i..] = x[..0..] + .. + x[..i..], or with `exclusive` the sum of the elements before i (0 at the first), with `reverse` from the end; float32 adds in float32 one element at a time in that order, integers wrap around on overflow
inline constexpr AttrSpec op_cumsum_attrs[] = {
    {"axis", AttrKind::kInt, true, true, true, 0.0, 7.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"exclusive", AttrKind::kInt, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, int_choices_6ac70fdf46, 2, true, 0.0, nullptr, nullptr, 0},
    {"reverse", AttrKind::kInt, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, int_choices_6ac70fdf46, 2, true, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_cumsum_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}, {dtypes_6417adc7fa, 1, dtypes_6417adc7fa, 1}, {dtypes_2c552f0a05, 1, dtypes_2c552f0a05, 1}};
inline constexpr OpSchema op_cumsum = {"cumsum", 1, 1, 0x0, 1, op_cumsum_attrs, 3, op_cumsum_signatures, 3, InPlace::kNone, nullptr};

// dequantize: int8 -> float32: (q - zero_point) * scale
inline constexpr AttrSpec op_dequantize_attrs[] = {
    {"scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_dequantize_signatures[] = {{dtypes_3f987ad5f2, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_dequantize = {"dequantize", 1, 1, 0x0, 1, op_dequantize_attrs, 2, op_dequantize_signatures, 1, InPlace::kNone, nullptr};

// div: a / b (integers: truncated toward zero; a division by zero gives 0, as NumPy)
inline constexpr DTypeSignature op_div_signatures[] = {{dtypes_f4bb0a7db0, 2, dtypes_86f5a46ec9, 1}, {dtypes_60ee91f605, 2, dtypes_6417adc7fa, 1}, {dtypes_e0c87cbccc, 2, dtypes_2c552f0a05, 1}};
inline constexpr OpSchema op_div = {"div", 2, 2, 0x0, 1, nullptr, 0, op_div_signatures, 3, InPlace::kSameShape, nullptr};

// elu: x if x > 0 else alpha * (exp(x) - 1)
inline constexpr AttrSpec op_elu_attrs[] = {
    {"alpha", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 1.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_elu_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_elu = {"elu", 1, 1, 0x0, 1, op_elu_attrs, 1, op_elu_signatures, 1, InPlace::kAlways, nullptr};

// embedding: rows of `weight` picked by integer indices
inline constexpr AttrSpec op_embedding_attrs[] = {
    {"padding_idx", AttrKind::kInt, false, true, false, -1.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, -1.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_embedding_signatures[] = {{dtypes_8c41980022, 2, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_embedding = {"embedding", 2, 2, 0x0, 1, op_embedding_attrs, 1, op_embedding_signatures, 1, InPlace::kNone, nullptr};

// equal: a == b elementwise (torch.eq; NaN == NaN is false)
inline constexpr DTypeSignature op_equal_signatures[] = {{dtypes_f4bb0a7db0, 2, dtypes_78fcd5eaeb, 1}, {dtypes_60ee91f605, 2, dtypes_78fcd5eaeb, 1}, {dtypes_e0c87cbccc, 2, dtypes_78fcd5eaeb, 1}};
inline constexpr OpSchema op_equal = {"equal", 2, 2, 0x0, 1, nullptr, 0, op_equal_signatures, 3, InPlace::kNone, nullptr};

// erf: the error function
inline constexpr DTypeSignature op_erf_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_erf = {"erf", 1, 1, 0x0, 1, nullptr, 0, op_erf_signatures, 1, InPlace::kAlways, nullptr};

// exp: e^x
inline constexpr DTypeSignature op_exp_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_exp = {"exp", 1, 1, 0x0, 1, nullptr, 0, op_exp_signatures, 1, InPlace::kAlways, nullptr};

// expand: broadcast to `shape`
inline constexpr AttrSpec op_expand_attrs[] = {
    {"shape", AttrKind::kInts, true, true, false, 0.0, 0.0, 0, 8, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"like_dims", AttrKind::kInts, false, true, true, -1.0, 7.0, 0, 8, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_expand_signatures[] = {{dtypes_f4bb0a7db0, 2, dtypes_86f5a46ec9, 1}, {dtypes_98fae34187, 2, dtypes_86f5a46ec9, 1}, {dtypes_3309a1236c, 2, dtypes_86f5a46ec9, 1}, {dtypes_4ab3a41210, 2, dtypes_86f5a46ec9, 1}, {dtypes_74208c6fdd, 2, dtypes_86f5a46ec9, 1}, {dtypes_8c41980022, 2, dtypes_6417adc7fa, 1}, {dtypes_60ee91f605, 2, dtypes_6417adc7fa, 1}, {dtypes_46f62b39de, 2, dtypes_6417adc7fa, 1}, {dtypes_9ec4d6e877, 2, dtypes_6417adc7fa, 1}, {dtypes_2462f6e46c, 2, dtypes_6417adc7fa, 1}, {dtypes_771ff3cbf0, 2, dtypes_2c552f0a05, 1}, {dtypes_c01e69a87a, 2, dtypes_2c552f0a05, 1}, {dtypes_e0c87cbccc, 2, dtypes_2c552f0a05, 1}, {dtypes_2838c67d46, 2, dtypes_2c552f0a05, 1}, {dtypes_a924421dd6, 2, dtypes_2c552f0a05, 1}, {dtypes_5fcebe6f67, 2, dtypes_78fcd5eaeb, 1}, {dtypes_7818c6c7c4, 2, dtypes_78fcd5eaeb, 1}, {dtypes_0972b955d4, 2, dtypes_78fcd5eaeb, 1}, {dtypes_7d8f846ad1, 2, dtypes_78fcd5eaeb, 1}, {dtypes_1de2bd9096, 2, dtypes_78fcd5eaeb, 1}, {dtypes_5ad259da48, 2, dtypes_3f987ad5f2, 1}, {dtypes_87fdc8c7dd, 2, dtypes_3f987ad5f2, 1}, {dtypes_57e10a4dd4, 2, dtypes_3f987ad5f2, 1}, {dtypes_10181f824b, 2, dtypes_3f987ad5f2, 1}, {dtypes_3be575d9c4, 2, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_expand = {"expand", 1, 2, 0x2, 1, op_expand_attrs, 2, op_expand_signatures, 25, InPlace::kNone, nullptr};

// gather_elements: data[i0, .., index[i0, .., ik, ..], ..] along `axis` (torch.gather, ONNX GatherElements): one element per entry of index; a negative index counts from the end; an index outside [-size, size) is a run-time error
inline constexpr AttrSpec op_gather_elements_attrs[] = {
    {"axis", AttrKind::kInt, false, true, true, 0.0, 7.0, 0, -1, nullptr, 0, nullptr, 0, true, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_gather_elements_signatures[] = {{dtypes_98fae34187, 2, dtypes_86f5a46ec9, 1}, {dtypes_3309a1236c, 2, dtypes_86f5a46ec9, 1}, {dtypes_60ee91f605, 2, dtypes_6417adc7fa, 1}, {dtypes_46f62b39de, 2, dtypes_6417adc7fa, 1}, {dtypes_c01e69a87a, 2, dtypes_2c552f0a05, 1}, {dtypes_e0c87cbccc, 2, dtypes_2c552f0a05, 1}, {dtypes_7818c6c7c4, 2, dtypes_78fcd5eaeb, 1}, {dtypes_0972b955d4, 2, dtypes_78fcd5eaeb, 1}, {dtypes_87fdc8c7dd, 2, dtypes_3f987ad5f2, 1}, {dtypes_57e10a4dd4, 2, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_gather_elements = {"gather_elements", 2, 2, 0x0, 1, op_gather_elements_attrs, 1, op_gather_elements_signatures, 10, InPlace::kNone, nullptr};

// gather_nd: slices of data picked by index tuples (ONNX GatherND): out[b.., i..] = data[b.., *indices[b.., i.., :]] with b the first `batch_dims` dims, which data and indices share; a negative index counts from the end; an index outside [-size, size) is a run-time error
inline constexpr AttrSpec op_gather_nd_attrs[] = {
    {"batch_dims", AttrKind::kInt, false, true, true, 0.0, 7.0, 0, -1, nullptr, 0, nullptr, 0, true, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_gather_nd_signatures[] = {{dtypes_98fae34187, 2, dtypes_86f5a46ec9, 1}, {dtypes_60ee91f605, 2, dtypes_6417adc7fa, 1}, {dtypes_c01e69a87a, 2, dtypes_2c552f0a05, 1}, {dtypes_7818c6c7c4, 2, dtypes_78fcd5eaeb, 1}, {dtypes_87fdc8c7dd, 2, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_gather_nd = {"gather_nd", 2, 2, 0x0, 1, op_gather_nd_attrs, 1, op_gather_nd_signatures, 5, InPlace::kNone, nullptr};

// gelu: x * Phi(x): erf form, or the tanh approximation
inline constexpr AttrSpec op_gelu_attrs[] = {
    {"approximate", AttrKind::kString, false, false, false, 0.0, 0.0, 0, -1, string_choices_49484034b7, 2, nullptr, 0, true, 0.0, "none", nullptr, 0},
};
inline constexpr DTypeSignature op_gelu_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_gelu = {"gelu", 1, 1, 0x0, 1, op_gelu_attrs, 1, op_gelu_signatures, 1, InPlace::kAlways, nullptr};

// greater: a > b elementwise (torch.gt; false where either is NaN)
inline constexpr DTypeSignature op_greater_signatures[] = {{dtypes_f4bb0a7db0, 2, dtypes_78fcd5eaeb, 1}, {dtypes_60ee91f605, 2, dtypes_78fcd5eaeb, 1}, {dtypes_e0c87cbccc, 2, dtypes_78fcd5eaeb, 1}};
inline constexpr OpSchema op_greater = {"greater", 2, 2, 0x0, 1, nullptr, 0, op_greater_signatures, 3, InPlace::kNone, nullptr};

// group_norm: normalize each of `groups` channel groups, then * w + b per channel
inline constexpr AttrSpec op_group_norm_attrs[] = {
    {"groups", AttrKind::kInt, true, true, true, 1.0, 16777216.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"eps", AttrKind::kFloat, false, true, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 1e-05, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_group_norm_signatures[] = {{dtypes_3c4bd49986, 3, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_group_norm = {"group_norm", 1, 3, 0x6, 1, op_group_norm_attrs, 2, op_group_norm_signatures, 1, InPlace::kNone, nullptr};

// hardsigmoid: hardtanh(x + 3, 0, 6) / 6
inline constexpr DTypeSignature op_hardsigmoid_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_hardsigmoid = {"hardsigmoid", 1, 1, 0x0, 1, nullptr, 0, op_hardsigmoid_signatures, 1, InPlace::kAlways, nullptr};

// hardswish: x * hardtanh(x + 3, 0, 6) / 6
inline constexpr DTypeSignature op_hardswish_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_hardswish = {"hardswish", 1, 1, 0x0, 1, nullptr, 0, op_hardswish_signatures, 1, InPlace::kAlways, nullptr};

// hardtanh: clamp(x, min_val, max_val) (relu6 = hardtanh 0..6)
inline constexpr AttrSpec op_hardtanh_attrs[] = {
    {"min_val", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, -1.0, nullptr, nullptr, 0},
    {"max_val", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 1.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_hardtanh_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_hardtanh = {"hardtanh", 1, 1, 0x0, 1, op_hardtanh_attrs, 2, op_hardtanh_signatures, 1, InPlace::kAlways, nullptr};

// index_select: the entries `indices` (1-D) of x along `axis` (torch.index_select; not torch.gather)
inline constexpr AttrSpec op_index_select_attrs[] = {
    {"axis", AttrKind::kInt, false, true, true, 0.0, 7.0, 0, -1, nullptr, 0, nullptr, 0, true, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_index_select_signatures[] = {{dtypes_98fae34187, 2, dtypes_86f5a46ec9, 1}, {dtypes_60ee91f605, 2, dtypes_6417adc7fa, 1}, {dtypes_c01e69a87a, 2, dtypes_2c552f0a05, 1}, {dtypes_7818c6c7c4, 2, dtypes_78fcd5eaeb, 1}, {dtypes_87fdc8c7dd, 2, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_index_select = {"index_select", 2, 2, 0x0, 1, op_index_select_attrs, 1, op_index_select_signatures, 5, InPlace::kNone, nullptr};

// layer_norm: normalize over the last normalized_ndim dimensions, then * w + b
inline constexpr AttrSpec op_layer_norm_attrs[] = {
    {"normalized_ndim", AttrKind::kInt, false, true, true, 0.0, 8.0, 0, -1, nullptr, 0, nullptr, 0, true, 1.0, nullptr, nullptr, 0},
    {"eps", AttrKind::kFloat, false, true, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 1e-05, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_layer_norm_signatures[] = {{dtypes_3c4bd49986, 3, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_layer_norm = {"layer_norm", 1, 3, 0x6, 1, op_layer_norm_attrs, 2, op_layer_norm_signatures, 1, InPlace::kNone, nullptr};

// leaky_relu: x if x > 0 else alpha * x
inline constexpr AttrSpec op_leaky_relu_attrs[] = {
    {"alpha", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 0.01, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_leaky_relu_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_leaky_relu = {"leaky_relu", 1, 1, 0x0, 1, op_leaky_relu_attrs, 1, op_leaky_relu_signatures, 1, InPlace::kAlways, nullptr};

// less: a < b elementwise (torch.lt; false where either is NaN)
inline constexpr DTypeSignature op_less_signatures[] = {{dtypes_f4bb0a7db0, 2, dtypes_78fcd5eaeb, 1}, {dtypes_60ee91f605, 2, dtypes_78fcd5eaeb, 1}, {dtypes_e0c87cbccc, 2, dtypes_78fcd5eaeb, 1}};
inline constexpr OpSchema op_less = {"less", 2, 2, 0x0, 1, nullptr, 0, op_less_signatures, 3, InPlace::kNone, nullptr};

// linear: x @ w.T + b, then the fused activation
inline constexpr AttrSpec op_linear_attrs[] = {
    {"activation", AttrKind::kString, false, false, false, 0.0, 0.0, 0, -1, string_choices_cd948e8ba6, 12, nullptr, 0, true, 0.0, "none", nullptr, 0},
    {"min_val", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, -1.0, nullptr, nullptr, 0},
    {"max_val", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 1.0, nullptr, nullptr, 0},
    {"alpha", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 0.01, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_linear_signatures[] = {{dtypes_3c4bd49986, 3, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_linear = {"linear", 2, 3, 0x4, 1, op_linear_attrs, 4, op_linear_signatures, 1, InPlace::kNone, nullptr};

// log: natural logarithm
inline constexpr DTypeSignature op_log_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_log = {"log", 1, 1, 0x0, 1, nullptr, 0, op_log_signatures, 1, InPlace::kAlways, nullptr};

// log_softmax: log of softmax along `dim`
inline constexpr AttrSpec op_log_softmax_attrs[] = {
    {"dim", AttrKind::kInt, false, true, true, -8.0, 7.0, 0, -1, nullptr, 0, nullptr, 0, true, -1.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_log_softmax_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_log_softmax = {"log_softmax", 1, 1, 0x0, 1, op_log_softmax_attrs, 1, op_log_softmax_signatures, 1, InPlace::kNone, nullptr};

// matmul: torch.matmul (1-D promotion, batch broadcasting)
inline constexpr DTypeSignature op_matmul_signatures[] = {{dtypes_f4bb0a7db0, 2, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_matmul = {"matmul", 2, 2, 0x0, 1, nullptr, 0, op_matmul_signatures, 1, InPlace::kNone, nullptr};

// max_pool2d: max over each window (PyTorch's MaxPool2d)
inline constexpr AttrSpec op_max_pool2d_attrs[] = {
    {"kernel", AttrKind::kInts, true, true, true, 1.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"stride", AttrKind::kInts, false, true, true, 1.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"padding", AttrKind::kInts, false, true, true, 0.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, true, 0.0, nullptr, defaults_0a3f2c23f6, 2},
    {"dilation", AttrKind::kInts, false, true, true, 1.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, true, 0.0, nullptr, defaults_5a731f4601, 2},
    {"ceil_mode", AttrKind::kInt, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, int_choices_6ac70fdf46, 2, true, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_max_pool2d_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}, {dtypes_3f987ad5f2, 1, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_max_pool2d = {"max_pool2d", 1, 1, 0x0, 1, op_max_pool2d_attrs, 5, op_max_pool2d_signatures, 2, InPlace::kNone, nullptr};

// maximum: elementwise max (NaN propagates)
inline constexpr DTypeSignature op_maximum_signatures[] = {{dtypes_f4bb0a7db0, 2, dtypes_86f5a46ec9, 1}, {dtypes_60ee91f605, 2, dtypes_6417adc7fa, 1}, {dtypes_e0c87cbccc, 2, dtypes_2c552f0a05, 1}};
inline constexpr OpSchema op_maximum = {"maximum", 2, 2, 0x0, 1, nullptr, 0, op_maximum_signatures, 3, InPlace::kNone, nullptr};

// mean: mean over `axes`
inline constexpr AttrSpec op_mean_attrs[] = {
    {"axes", AttrKind::kInts, false, true, true, -8.0, 7.0, 0, 8, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"keepdim", AttrKind::kInt, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, int_choices_6ac70fdf46, 2, true, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_mean_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_mean = {"mean", 1, 1, 0x0, 1, op_mean_attrs, 2, op_mean_signatures, 1, InPlace::kNone, nullptr};

// minimum: elementwise min (NaN propagates)
inline constexpr DTypeSignature op_minimum_signatures[] = {{dtypes_f4bb0a7db0, 2, dtypes_86f5a46ec9, 1}, {dtypes_60ee91f605, 2, dtypes_6417adc7fa, 1}, {dtypes_e0c87cbccc, 2, dtypes_2c552f0a05, 1}};
inline constexpr OpSchema op_minimum = {"minimum", 2, 2, 0x0, 1, nullptr, 0, op_minimum_signatures, 3, InPlace::kNone, nullptr};

// mul: a * b
inline constexpr DTypeSignature op_mul_signatures[] = {{dtypes_f4bb0a7db0, 2, dtypes_86f5a46ec9, 1}, {dtypes_60ee91f605, 2, dtypes_6417adc7fa, 1}, {dtypes_e0c87cbccc, 2, dtypes_2c552f0a05, 1}};
inline constexpr OpSchema op_mul = {"mul", 2, 2, 0x0, 1, nullptr, 0, op_mul_signatures, 3, InPlace::kSameShape, nullptr};

// neg: -x
inline constexpr DTypeSignature op_neg_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_neg = {"neg", 1, 1, 0x0, 1, nullptr, 0, op_neg_signatures, 1, InPlace::kAlways, nullptr};

// pad: padding as torch.nn.functional.pad, of any rank (the pads apply to the last len(pads) / 2 dims): "constant" fills with `value`; "reflect" mirrors about the edge element without repeating it (each pad must be smaller than its dimension, else the node is refused); "replicate" repeats the edge element (a padded dimension must not be empty); reflect and replicate index the uncropped input when the other side crops, as torch does; "circular" wraps around the input cropped first by the negative pads, as often as needed (each pad at most the dimension, as torch checks; nothing left to wrap is refused)
inline constexpr AttrSpec op_pad_attrs[] = {
    {"pads", AttrKind::kInts, true, false, false, 0.0, 0.0, 0, 16, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"mode", AttrKind::kString, false, false, false, 0.0, 0.0, 0, -1, string_choices_b7701c0d2f, 4, nullptr, 0, true, 0.0, "constant", nullptr, 0},
    {"value", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_pad_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}, {dtypes_6417adc7fa, 1, dtypes_6417adc7fa, 1}, {dtypes_2c552f0a05, 1, dtypes_2c552f0a05, 1}, {dtypes_78fcd5eaeb, 1, dtypes_78fcd5eaeb, 1}, {dtypes_3f987ad5f2, 1, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_pad = {"pad", 1, 1, 0x0, 1, op_pad_attrs, 3, op_pad_signatures, 5, InPlace::kNone, nullptr};

// permute: dimensions reordered
inline constexpr AttrSpec op_permute_attrs[] = {
    {"perm", AttrKind::kInts, true, true, true, 0.0, 7.0, 0, 8, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_permute_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}, {dtypes_6417adc7fa, 1, dtypes_6417adc7fa, 1}, {dtypes_2c552f0a05, 1, dtypes_2c552f0a05, 1}, {dtypes_78fcd5eaeb, 1, dtypes_78fcd5eaeb, 1}, {dtypes_3f987ad5f2, 1, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_permute = {"permute", 1, 1, 0x0, 1, op_permute_attrs, 1, op_permute_signatures, 5, InPlace::kNone, nullptr};

// pow: a ** b (an integer base: exact for integer exponents >= 0, float32 exponents truncate toward zero, 0 ** -n = 0)
inline constexpr DTypeSignature op_pow_signatures[] = {{dtypes_f4bb0a7db0, 2, dtypes_86f5a46ec9, 1}, {dtypes_60ee91f605, 2, dtypes_6417adc7fa, 1}, {dtypes_e0c87cbccc, 2, dtypes_2c552f0a05, 1}, {dtypes_8c41980022, 2, dtypes_6417adc7fa, 1}, {dtypes_771ff3cbf0, 2, dtypes_2c552f0a05, 1}};
inline constexpr OpSchema op_pow = {"pow", 2, 2, 0x0, 1, nullptr, 0, op_pow_signatures, 5, InPlace::kNone, nullptr};

// prelu: x if x > 0 else w[c] * x, c the channel (dim 1); one slope for every channel when w has one element
inline constexpr DTypeSignature op_prelu_signatures[] = {{dtypes_f4bb0a7db0, 2, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_prelu = {"prelu", 2, 2, 0x0, 1, nullptr, 0, op_prelu_signatures, 1, InPlace::kAlways, nullptr};

// qadd: int8 a + b (NumPy broadcasting) as TFLite's ADD: each input shifted left 20 bits and rescaled to twice the larger input scale, summed, requantized to the output; then the fused clamp
inline constexpr AttrSpec op_qadd_attrs[] = {
    {"a_scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"a_zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"b_scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"b_zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"y_scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"y_zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"activation", AttrKind::kString, false, false, false, 0.0, 0.0, 0, -1, string_choices_08665888e6, 3, nullptr, 0, true, 0.0, "none", nullptr, 0},
};
inline constexpr DTypeSignature op_qadd_signatures[] = {{dtypes_3be575d9c4, 2, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_qadd = {"qadd", 2, 2, 0x0, 1, op_qadd_attrs, 7, op_qadd_signatures, 1, InPlace::kNone, nullptr};

// qavg_pool2d: int8 avg_pool2d (PyTorch's windows, padding, ceil_mode, count_include_pad, divisor_override) as TFLite's AVERAGE_POOL_2D: output and input share one scale and zero point; the window's int32 sum (a counted padding tap holds the zero point, the real 0) divided by the divisor, rounded half away from zero
inline constexpr AttrSpec op_qavg_pool2d_attrs[] = {
    {"kernel", AttrKind::kInts, true, true, true, 1.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"stride", AttrKind::kInts, false, true, true, 1.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"padding", AttrKind::kInts, false, true, true, 0.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, true, 0.0, nullptr, defaults_0a3f2c23f6, 2},
    {"ceil_mode", AttrKind::kInt, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, int_choices_6ac70fdf46, 2, true, 0.0, nullptr, nullptr, 0},
    {"count_include_pad", AttrKind::kInt, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, int_choices_6ac70fdf46, 2, true, 1.0, nullptr, nullptr, 0},
    {"divisor_override", AttrKind::kInt, false, true, true, 0.0, 16777216.0, 0, -1, nullptr, 0, nullptr, 0, true, 0.0, nullptr, nullptr, 0},
    {"scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_qavg_pool2d_signatures[] = {{dtypes_3f987ad5f2, 1, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_qavg_pool2d = {"qavg_pool2d", 1, 1, 0x0, 1, op_qavg_pool2d_attrs, 8, op_qavg_pool2d_signatures, 1, InPlace::kNone, nullptr};

// qconcat: int8 concatenation along `axis`: input i with x_scales[i] and x_zero_points[i] is copied where they equal the output's, else requantized: (x - x_zero_points[i]) times x_scales[i] / y_scale, + y_zero_point, saturated
inline constexpr AttrSpec op_qconcat_attrs[] = {
    {"axis", AttrKind::kInt, false, true, true, 0.0, 7.0, 0, -1, nullptr, 0, nullptr, 0, true, 0.0, nullptr, nullptr, 0},
    {"x_scales", AttrKind::kFloats, true, true, true, 0.0, 1e+30, 1, 64, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"x_zero_points", AttrKind::kInts, true, true, true, -128.0, 127.0, 1, 64, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"y_scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"y_zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_qconcat_signatures[] = {{dtypes_3f987ad5f2, 1, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_qconcat = {"qconcat", 1, -1, 0x0, 1, op_qconcat_attrs, 5, op_qconcat_signatures, 1, InPlace::kNone, nullptr};

// qconv2d: int8 2-D convolution (groups, dilation; depthwise when groups = C): int32 accumulation of (x - x_zero_point) * w from the bias, requantized per output channel
inline constexpr AttrSpec op_qconv2d_attrs[] = {
    {"stride", AttrKind::kInts, false, true, true, 1.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, true, 0.0, nullptr, defaults_5a731f4601, 2},
    {"padding", AttrKind::kInts, false, true, true, 0.0, 16777216.0, 4, 4, nullptr, 0, nullptr, 0, true, 0.0, nullptr, defaults_321047e2f5, 4},
    {"dilation", AttrKind::kInts, false, true, true, 1.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, true, 0.0, nullptr, defaults_5a731f4601, 2},
    {"groups", AttrKind::kInt, false, true, true, 1.0, 16777216.0, 0, -1, nullptr, 0, nullptr, 0, true, 1.0, nullptr, nullptr, 0},
    {"x_scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"x_zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"y_scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"y_zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"activation", AttrKind::kString, false, false, false, 0.0, 0.0, 0, -1, string_choices_08665888e6, 3, nullptr, 0, true, 0.0, "none", nullptr, 0},
};
inline constexpr DTypeSignature op_qconv2d_signatures[] = {{dtypes_1ebf402ad4, 4, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_qconv2d = {"qconv2d", 3, 4, 0x8, 1, op_qconv2d_attrs, 9, op_qconv2d_signatures, 1, InPlace::kNone, nullptr};

// qlinear: int8 x @ w.T + b: int32 accumulation from the bias, requantized per output feature
inline constexpr AttrSpec op_qlinear_attrs[] = {
    {"x_scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"x_zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"y_scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"y_zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"activation", AttrKind::kString, false, false, false, 0.0, 0.0, 0, -1, string_choices_08665888e6, 3, nullptr, 0, true, 0.0, "none", nullptr, 0},
};
inline constexpr DTypeSignature op_qlinear_signatures[] = {{dtypes_1ebf402ad4, 4, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_qlinear = {"qlinear", 3, 4, 0x8, 1, op_qlinear_attrs, 5, op_qlinear_signatures, 1, InPlace::kNone, nullptr};

// qlut: int8 elementwise function by table: y = table[x + 128]. The table holds quantize(f(dequantize(q))) for each of the 256 inputs q, f the float `function`, computed when the model is quantized
inline constexpr AttrSpec op_qlut_attrs[] = {
    {"function", AttrKind::kString, true, false, false, 0.0, 0.0, 0, -1, string_choices_2e8b3e1f0d, 12, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"alpha", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 0.01, nullptr, nullptr, 0},
    {"min_val", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, -1.0, nullptr, nullptr, 0},
    {"max_val", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 1.0, nullptr, nullptr, 0},
    {"beta", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 1.0, nullptr, nullptr, 0},
    {"threshold", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 20.0, nullptr, nullptr, 0},
    {"x_scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"x_zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"y_scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"y_zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_qlut_signatures[] = {{dtypes_3be575d9c4, 2, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_qlut = {"qlut", 2, 2, 0x0, 1, op_qlut_attrs, 10, op_qlut_signatures, 1, InPlace::kAlways, nullptr};

// qmatmul: int8 torch.matmul of two int8 tensors (1-D promotion, batch broadcasting): the int32 sum of (a - a_zero_point) * (b - b_zero_point) over k (wrapping modulo 2^32), requantized once with a_scale * b_scale / y_scale; then the fused clamp
inline constexpr AttrSpec op_qmatmul_attrs[] = {
    {"a_scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"a_zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"b_scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"b_zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"y_scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"y_zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"activation", AttrKind::kString, false, false, false, 0.0, 0.0, 0, -1, string_choices_08665888e6, 3, nullptr, 0, true, 0.0, "none", nullptr, 0},
};
inline constexpr DTypeSignature op_qmatmul_signatures[] = {{dtypes_3be575d9c4, 2, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_qmatmul = {"qmatmul", 2, 2, 0x0, 1, op_qmatmul_attrs, 7, op_qmatmul_signatures, 1, InPlace::kNone, nullptr};

// qmean: int8 mean over `axes`: the int32 sum of (x - x_zero_point) requantized with x_scale / (y_scale * count) (at most 2^23 values per output)
inline constexpr AttrSpec op_qmean_attrs[] = {
    {"axes", AttrKind::kInts, false, true, true, -8.0, 7.0, 0, 8, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"keepdim", AttrKind::kInt, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, int_choices_6ac70fdf46, 2, true, 0.0, nullptr, nullptr, 0},
    {"x_scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"x_zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"y_scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"y_zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_qmean_signatures[] = {{dtypes_3f987ad5f2, 1, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_qmean = {"qmean", 1, 1, 0x0, 1, op_qmean_attrs, 6, op_qmean_signatures, 1, InPlace::kNone, nullptr};

// qmul: int8 a * b (NumPy broadcasting) as TFLite's MUL: (a - a_zero_point) * (b - b_zero_point) in int32, requantized once with a_scale * b_scale / y_scale; then the fused clamp
inline constexpr AttrSpec op_qmul_attrs[] = {
    {"a_scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"a_zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"b_scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"b_zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"y_scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"y_zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"activation", AttrKind::kString, false, false, false, 0.0, 0.0, 0, -1, string_choices_08665888e6, 3, nullptr, 0, true, 0.0, "none", nullptr, 0},
};
inline constexpr DTypeSignature op_qmul_signatures[] = {{dtypes_3be575d9c4, 2, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_qmul = {"qmul", 2, 2, 0x0, 1, op_qmul_attrs, 7, op_qmul_signatures, 1, InPlace::kNone, nullptr};

// quantize: float32 -> int8 as ONNX QuantizeLinear: saturate(round_half_even(x / scale) + zero_point); NaN -> zero_point
inline constexpr AttrSpec op_quantize_attrs[] = {
    {"scale", AttrKind::kFloat, true, true, true, 0.0, 1e+30, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"zero_point", AttrKind::kInt, true, true, true, -128.0, 127.0, 0, -1, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_quantize_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_quantize = {"quantize", 1, 1, 0x0, 1, op_quantize_attrs, 2, op_quantize_signatures, 1, InPlace::kNone, nullptr};

// reciprocal: 1 / x
inline constexpr DTypeSignature op_reciprocal_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_reciprocal = {"reciprocal", 1, 1, 0x0, 1, nullptr, 0, op_reciprocal_signatures, 1, InPlace::kAlways, nullptr};

// relu: max(x, 0)
inline constexpr DTypeSignature op_relu_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_relu = {"relu", 1, 1, 0x0, 1, nullptr, 0, op_relu_signatures, 1, InPlace::kAlways, nullptr};

// reshape: the same elements in a new shape
inline constexpr AttrSpec op_reshape_attrs[] = {
    {"shape", AttrKind::kInts, true, true, false, -1.0, 0.0, 0, 8, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"like_dims", AttrKind::kInts, false, true, true, -1.0, 7.0, 0, 8, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_reshape_signatures[] = {{dtypes_f4bb0a7db0, 2, dtypes_86f5a46ec9, 1}, {dtypes_98fae34187, 2, dtypes_86f5a46ec9, 1}, {dtypes_3309a1236c, 2, dtypes_86f5a46ec9, 1}, {dtypes_4ab3a41210, 2, dtypes_86f5a46ec9, 1}, {dtypes_74208c6fdd, 2, dtypes_86f5a46ec9, 1}, {dtypes_8c41980022, 2, dtypes_6417adc7fa, 1}, {dtypes_60ee91f605, 2, dtypes_6417adc7fa, 1}, {dtypes_46f62b39de, 2, dtypes_6417adc7fa, 1}, {dtypes_9ec4d6e877, 2, dtypes_6417adc7fa, 1}, {dtypes_2462f6e46c, 2, dtypes_6417adc7fa, 1}, {dtypes_771ff3cbf0, 2, dtypes_2c552f0a05, 1}, {dtypes_c01e69a87a, 2, dtypes_2c552f0a05, 1}, {dtypes_e0c87cbccc, 2, dtypes_2c552f0a05, 1}, {dtypes_2838c67d46, 2, dtypes_2c552f0a05, 1}, {dtypes_a924421dd6, 2, dtypes_2c552f0a05, 1}, {dtypes_5fcebe6f67, 2, dtypes_78fcd5eaeb, 1}, {dtypes_7818c6c7c4, 2, dtypes_78fcd5eaeb, 1}, {dtypes_0972b955d4, 2, dtypes_78fcd5eaeb, 1}, {dtypes_7d8f846ad1, 2, dtypes_78fcd5eaeb, 1}, {dtypes_1de2bd9096, 2, dtypes_78fcd5eaeb, 1}, {dtypes_5ad259da48, 2, dtypes_3f987ad5f2, 1}, {dtypes_87fdc8c7dd, 2, dtypes_3f987ad5f2, 1}, {dtypes_57e10a4dd4, 2, dtypes_3f987ad5f2, 1}, {dtypes_10181f824b, 2, dtypes_3f987ad5f2, 1}, {dtypes_3be575d9c4, 2, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_reshape = {"reshape", 1, 2, 0x2, 1, op_reshape_attrs, 2, op_reshape_signatures, 25, InPlace::kNone, nullptr};

// resize: ONNX Resize (opsets 11-19): each output coordinate is mapped to the input by `coordinate_transformation_mode`, then nearest, N-linear or N-cubic interpolation over every dimension
inline constexpr AttrSpec op_resize_attrs[] = {
    {"sizes", AttrKind::kInts, true, true, true, 0.0, 16777216.0, 1, 8, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"scales", AttrKind::kFloats, true, true, false, 0.0, 0.0, 1, 8, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"mode", AttrKind::kString, false, false, false, 0.0, 0.0, 0, -1, string_choices_9c5243582b, 3, nullptr, 0, true, 0.0, "nearest", nullptr, 0},
    {"coordinate_transformation_mode", AttrKind::kString, false, false, false, 0.0, 0.0, 0, -1, string_choices_30918c8fb4, 7, nullptr, 0, true, 0.0, "half_pixel", nullptr, 0},
    {"roi", AttrKind::kFloats, false, false, false, 0.0, 0.0, 0, 16, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"extrapolation_value", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 0.0, nullptr, nullptr, 0},
    {"nearest_mode", AttrKind::kString, false, false, false, 0.0, 0.0, 0, -1, string_choices_563d543500, 4, nullptr, 0, true, 0.0, "round_prefer_floor", nullptr, 0},
    {"cubic_coeff_a", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, -0.75, nullptr, nullptr, 0},
    {"exclude_outside", AttrKind::kInt, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, int_choices_6ac70fdf46, 2, true, 0.0, nullptr, nullptr, 0},
    {"antialias", AttrKind::kInt, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, int_choices_6ac70fdf46, 2, true, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_resize_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_resize = {"resize", 1, 1, 0x0, 1, op_resize_attrs, 10, op_resize_signatures, 1, InPlace::kNone, nullptr};

// rsqrt: 1 / sqrt(x)
inline constexpr DTypeSignature op_rsqrt_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_rsqrt = {"rsqrt", 1, 1, 0x0, 1, nullptr, 0, op_rsqrt_signatures, 1, InPlace::kAlways, nullptr};

// shape: x's dimensions as data, x.shape[start:end] (ONNX Shape: a size that follows a dynamic dimension and is used in arithmetic, e.g. flat indices batch_idx * seq + pos)
inline constexpr AttrSpec op_shape_attrs[] = {
    {"start", AttrKind::kInt, false, true, true, -8.0, 8.0, 0, -1, nullptr, 0, nullptr, 0, true, 0.0, nullptr, nullptr, 0},
    {"end", AttrKind::kInt, false, true, true, -8.0, 8.0, 0, -1, nullptr, 0, nullptr, 0, true, 8.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_shape_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_6417adc7fa, 1}, {dtypes_6417adc7fa, 1, dtypes_6417adc7fa, 1}, {dtypes_2c552f0a05, 1, dtypes_6417adc7fa, 1}, {dtypes_78fcd5eaeb, 1, dtypes_6417adc7fa, 1}, {dtypes_3f987ad5f2, 1, dtypes_6417adc7fa, 1}};
inline constexpr OpSchema op_shape = {"shape", 1, 1, 0x0, 1, op_shape_attrs, 2, op_shape_signatures, 5, InPlace::kNone, nullptr};

// sigmoid: 1 / (1 + exp(-x))
inline constexpr DTypeSignature op_sigmoid_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_sigmoid = {"sigmoid", 1, 1, 0x0, 1, nullptr, 0, op_sigmoid_signatures, 1, InPlace::kAlways, nullptr};

// silu: x * sigmoid(x)
inline constexpr DTypeSignature op_silu_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_silu = {"silu", 1, 1, 0x0, 1, nullptr, 0, op_silu_signatures, 1, InPlace::kAlways, nullptr};

// sin: sine
inline constexpr DTypeSignature op_sin_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_sin = {"sin", 1, 1, 0x0, 1, nullptr, 0, op_sin_signatures, 1, InPlace::kAlways, nullptr};

// slice: x[starts:ends:steps] along `axes` (Python clamping of starts/ends)
inline constexpr AttrSpec op_slice_attrs[] = {
    {"axes", AttrKind::kInts, true, true, true, 0.0, 7.0, 0, 8, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"starts", AttrKind::kInts, true, false, false, 0.0, 0.0, 0, 8, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"ends", AttrKind::kInts, true, false, false, 0.0, 0.0, 0, 8, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"steps", AttrKind::kInts, false, true, false, 1.0, 0.0, 0, 8, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_slice_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}, {dtypes_6417adc7fa, 1, dtypes_6417adc7fa, 1}, {dtypes_2c552f0a05, 1, dtypes_2c552f0a05, 1}, {dtypes_78fcd5eaeb, 1, dtypes_78fcd5eaeb, 1}, {dtypes_3f987ad5f2, 1, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_slice = {"slice", 1, 1, 0x0, 1, op_slice_attrs, 4, op_slice_signatures, 5, InPlace::kNone, nullptr};

// softmax: exp(x - max) / sum along `dim`
inline constexpr AttrSpec op_softmax_attrs[] = {
    {"dim", AttrKind::kInt, false, true, true, -8.0, 7.0, 0, -1, nullptr, 0, nullptr, 0, true, -1.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_softmax_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_softmax = {"softmax", 1, 1, 0x0, 1, op_softmax_attrs, 1, op_softmax_signatures, 1, InPlace::kNone, nullptr};

// softplus: log(1 + exp(beta x)) / beta, or x where beta x > threshold
inline constexpr AttrSpec op_softplus_attrs[] = {
    {"beta", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 1.0, nullptr, nullptr, 0},
    {"threshold", AttrKind::kFloat, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, nullptr, 0, true, 20.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_softplus_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_softplus = {"softplus", 1, 1, 0x0, 1, op_softplus_attrs, 2, op_softplus_signatures, 1, InPlace::kAlways, nullptr};

// sqrt: square root
inline constexpr DTypeSignature op_sqrt_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_sqrt = {"sqrt", 1, 1, 0x0, 1, nullptr, 0, op_sqrt_signatures, 1, InPlace::kAlways, nullptr};

// sub: a - b
inline constexpr DTypeSignature op_sub_signatures[] = {{dtypes_f4bb0a7db0, 2, dtypes_86f5a46ec9, 1}, {dtypes_60ee91f605, 2, dtypes_6417adc7fa, 1}, {dtypes_e0c87cbccc, 2, dtypes_2c552f0a05, 1}};
inline constexpr OpSchema op_sub = {"sub", 2, 2, 0x0, 1, nullptr, 0, op_sub_signatures, 3, InPlace::kSameShape, nullptr};

// sum: sum over `axes`
inline constexpr AttrSpec op_sum_attrs[] = {
    {"axes", AttrKind::kInts, false, true, true, -8.0, 7.0, 0, 8, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"keepdim", AttrKind::kInt, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, int_choices_6ac70fdf46, 2, true, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_sum_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_sum = {"sum", 1, 1, 0x0, 1, op_sum_attrs, 2, op_sum_signatures, 1, InPlace::kNone, nullptr};

// tanh: tanh(x)
inline constexpr DTypeSignature op_tanh_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_tanh = {"tanh", 1, 1, 0x0, 1, nullptr, 0, op_tanh_signatures, 1, InPlace::kAlways, nullptr};

// upsample_bilinear2d: F.interpolate(mode="bilinear") to `size`, or by `scales`
inline constexpr AttrSpec op_upsample_bilinear2d_attrs[] = {
    {"size", AttrKind::kInts, false, true, true, 1.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"scales", AttrKind::kFloats, false, true, false, 0.0, 0.0, 2, 2, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"align_corners", AttrKind::kInt, false, false, false, 0.0, 0.0, 0, -1, nullptr, 0, int_choices_6ac70fdf46, 2, true, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_upsample_bilinear2d_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_upsample_bilinear2d = {"upsample_bilinear2d", 1, 1, 0x0, 1, op_upsample_bilinear2d_attrs, 3, op_upsample_bilinear2d_signatures, 1, InPlace::kNone, nullptr};

// upsample_nearest2d: F.interpolate(mode="nearest") to `size`, or by `scales`
inline constexpr AttrSpec op_upsample_nearest2d_attrs[] = {
    {"size", AttrKind::kInts, false, true, true, 1.0, 16777216.0, 2, 2, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
    {"scales", AttrKind::kFloats, false, true, false, 0.0, 0.0, 2, 2, nullptr, 0, nullptr, 0, false, 0.0, nullptr, nullptr, 0},
};
inline constexpr DTypeSignature op_upsample_nearest2d_signatures[] = {{dtypes_86f5a46ec9, 1, dtypes_86f5a46ec9, 1}};
inline constexpr OpSchema op_upsample_nearest2d = {"upsample_nearest2d", 1, 1, 0x0, 1, op_upsample_nearest2d_attrs, 2, op_upsample_nearest2d_signatures, 1, InPlace::kNone, nullptr};

// where: x where cond else y, elementwise (torch.where)
inline constexpr DTypeSignature op_where_signatures[] = {{dtypes_b0699bdded, 3, dtypes_86f5a46ec9, 1}, {dtypes_f22aae3e51, 3, dtypes_6417adc7fa, 1}, {dtypes_d5191d98fc, 3, dtypes_2c552f0a05, 1}, {dtypes_e4d71ae4bd, 3, dtypes_78fcd5eaeb, 1}, {dtypes_8efb528137, 3, dtypes_3f987ad5f2, 1}};
inline constexpr OpSchema op_where = {"where", 3, 3, 0x0, 1, nullptr, 0, op_where_signatures, 5, InPlace::kNone, nullptr};

}  // namespace ops
}  // namespace dtorch
