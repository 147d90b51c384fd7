// The geometry of a conv2d node. checked_conv_geometry validates a node's shapes and attributes and reports what is
// wrong (the portable conv2d and qconv2d kernels); conv_geometry is how the optimized conv2d kernels (kernels/x86,
// kernels/avx2, kernels/avx512) read it after the kernel they fall back to has accepted the node in infer: shapes
// and attributes are valid, so it only reads them.
#pragma once

#include <cstdint>

#include "kernels/common/activation.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

struct ConvGeometry {
  int64_t n, c, h, w;        // input N, C, H, W
  int64_t o, kh, kw;         // weight O, kh, kw (weight dim 1 is cg)
  int64_t sh, sw, dh, dw;    // stride, dilation
  int64_t pt, pb, pl, pr;    // padding: top, bottom, left, right
  int64_t oh, ow;            // output H, W
  int64_t groups, cg, og;    // groups, input channels per group, output channels per group
  bool pointwise;            // 1x1, stride 1, no padding: the input plane is the column matrix
  Activation act;            // the fused activation
};

// Reads the geometry of conv2d inputs `in` (x, w) with output shape `out`.
inline Status conv_geometry(const char* op, const Attrs& attrs, const TensorView* in, const Shape& out,
                            ConvGeometry* g) {
  int64_t stride[2] = {}, pad[4] = {}, dil[2] = {};
  DTORCH_RETURN_IF_ERROR(get_ints_exact(op, attrs, "stride", 2, stride, nullptr));
  DTORCH_RETURN_IF_ERROR(get_ints_exact(op, attrs, "padding", 4, pad, nullptr));
  DTORCH_RETURN_IF_ERROR(get_ints_exact(op, attrs, "dilation", 2, dil, nullptr));
  DTORCH_RETURN_IF_ERROR(parse_activation(op, attrs, &g->act));
  g->n = in[0].shape.dims[0];
  g->c = in[0].shape.dims[1];
  g->h = in[0].shape.dims[2];
  g->w = in[0].shape.dims[3];
  g->o = in[1].shape.dims[0];
  g->kh = in[1].shape.dims[2];
  g->kw = in[1].shape.dims[3];
  g->groups = attrs.get_int("groups");
  g->cg = g->groups > 0 ? g->c / g->groups : 0;
  g->og = g->groups > 0 ? g->o / g->groups : 0;
  g->sh = stride[0];
  g->sw = stride[1];
  g->dh = dil[0];
  g->dw = dil[1];
  g->pt = pad[0];
  g->pb = pad[1];
  g->pl = pad[2];
  g->pr = pad[3];
  g->oh = out.dims[2];
  g->ow = out.dims[3];
  g->pointwise = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && pad[0] == 0 && pad[1] == 0 &&
                 pad[2] == 0 && pad[3] == 0;
  return Status::Ok();
}

// Validates x (N, C, H, W) and w (O, C/groups, kh, kw) with the node's stride, padding, dilation and groups and fills
// g but its activation, the output size included; dtypes, the bias and the activation are the caller's.
inline Status checked_conv_geometry(const char* op, const Attrs& attrs, const TensorView* in, ConvGeometry* g) {
  const TensorView& x = in[0];
  const TensorView& w = in[1];
  DTORCH_RETURN_IF_ERROR(check_rank(op, "input (N, C, H, W)", x, 4));
  DTORCH_RETURN_IF_ERROR(check_rank(op, "weight (O, C/groups, kh, kw)", w, 4));
  int64_t stride[2] = {}, pad[4] = {}, dil[2] = {};
  DTORCH_RETURN_IF_ERROR(get_ints_exact(op, attrs, "stride", 2, stride, nullptr));
  DTORCH_RETURN_IF_ERROR(get_ints_exact(op, attrs, "padding", 4, pad, nullptr));
  DTORCH_RETURN_IF_ERROR(get_ints_exact(op, attrs, "dilation", 2, dil, nullptr));
  const int64_t groups = attrs.get_int("groups");
  DTORCH_RETURN_IF_ERROR(check_attr_max(op, "stride", stride, 2, kMaxAttrValue));
  DTORCH_RETURN_IF_ERROR(check_attr_max(op, "dilation", dil, 2, kMaxAttrValue));
  DTORCH_RETURN_IF_ERROR(check_attr_max(op, "padding", pad, 4, kMaxAttrValue));
  if (groups > kMaxAttrValue)
    return op_error(StatusCode::kInvalidModel, op, "groups %lld is out of range", (long long)groups);
  if (stride[0] < 1 || stride[1] < 1)
    return op_error(StatusCode::kInvalidModel, op, "stride must be >= 1, got %s", ints_str(stride, 2).c_str());
  if (dil[0] < 1 || dil[1] < 1)
    return op_error(StatusCode::kInvalidModel, op, "dilation must be >= 1, got %s", ints_str(dil, 2).c_str());
  for (int i = 0; i < 4; ++i)
    if (pad[i] < 0)
      return op_error(StatusCode::kInvalidModel, op, "padding (top, bottom, left, right) must be >= 0, got %s",
                      ints_str(pad, 4).c_str());
  if (groups < 1) return op_error(StatusCode::kInvalidModel, op, "groups must be >= 1, got %lld", (long long)groups);
  g->n = x.shape.dims[0];
  g->c = x.shape.dims[1];
  g->h = x.shape.dims[2];
  g->w = x.shape.dims[3];
  g->o = w.shape.dims[0];
  g->kh = w.shape.dims[2];
  g->kw = w.shape.dims[3];
  g->sh = stride[0];
  g->sw = stride[1];
  g->pt = pad[0];
  g->pb = pad[1];
  g->pl = pad[2];
  g->pr = pad[3];
  g->dh = dil[0];
  g->dw = dil[1];
  g->groups = groups;
  if (g->c % groups != 0)
    return op_error(StatusCode::kInvalidArgument, op, "input has %lld channels, which groups=%lld does not divide",
                    (long long)g->c, (long long)groups);
  if (g->o % groups != 0)
    return op_error(StatusCode::kInvalidModel, op, "weight has %lld output channels, which groups=%lld does not divide",
                    (long long)g->o, (long long)groups);
  g->cg = g->c / groups;
  g->og = g->o / groups;
  if (w.shape.dims[1] != g->cg)
    return op_error(StatusCode::kInvalidArgument, op,
                    "input has %lld channels but the weight expects %lld (weight %s, groups=%lld)", (long long)g->c,
                    (long long)(w.shape.dims[1] * groups), ::dtorch::shape_str(w.shape).c_str(), (long long)groups);
  if (g->kh < 1 || g->kw < 1)
    return op_error(StatusCode::kInvalidModel, op, "weight has an empty kernel: %s",
                    ::dtorch::shape_str(w.shape).c_str());
  const int64_t eh = g->h + g->pt + g->pb - g->dh * (g->kh - 1) - 1;
  const int64_t ew = g->w + g->pl + g->pr - g->dw * (g->kw - 1) - 1;
  if (eh < 0 || ew < 0)
    return op_error(StatusCode::kInvalidArgument, op,
                    "input %s (padded to %lldx%lld) is smaller than the dilated kernel %lldx%lld",
                    ::dtorch::shape_str(x.shape).c_str(), (long long)(g->h + g->pt + g->pb),
                    (long long)(g->w + g->pl + g->pr), (long long)(g->dh * (g->kh - 1) + 1),
                    (long long)(g->dw * (g->kw - 1) + 1));
  g->oh = eh / g->sh + 1;
  g->ow = ew / g->sw + 1;
  g->pointwise = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pb == 0 && g->pl == 0 &&
                 g->pr == 0;
  return Status::Ok();
}

// Whether the output and weight shapes agree with the geometry (what infer accepted; run re-checks before it
// trusts the shapes it is given).
inline bool conv_shapes_agree(const ConvGeometry& g, const TensorView* in, const TensorView& out) {
  return g.groups >= 1 && g.c % g.groups == 0 && g.o % g.groups == 0 && in[1].shape.dims[1] == g.cg &&
         out.shape.dims[0] == g.n && out.shape.dims[1] == g.o;
}

// Whether every input offset of a plane (and a padded row offset) fits a 32-bit gather index.
inline bool conv_fits_int32_offsets(const ConvGeometry& g) {
  constexpr int64_t k30 = int64_t{1} << 30;
  return g.h < k30 && g.w < k30 && g.h * g.w < k30 && g.w + g.kw * g.dw + g.pl < k30 &&
         g.h + g.kh * g.dh + g.pt < k30;
}

// The geometry as the FMA kernel sets (avx2, avx512) read it: depthwise (one input and one output channel per
// group: their direct kernel) or a GEMM (everything else); neither when a plane's offsets do not fit their 32-bit
// gather indices (the bit-exact kernel runs it).
struct FmaConvGeometry : ConvGeometry {
  bool depthwise, gemm;
};

inline Status fma_conv_geometry(const char* op, const Attrs& attrs, const TensorView* in, const Shape& out,
                                FmaConvGeometry* g) {
  DTORCH_RETURN_IF_ERROR(conv_geometry(op, attrs, in, out, g));
  const bool fits32 = conv_fits_int32_offsets(*g);
  g->depthwise = g->cg == 1 && g->og == 1 && fits32;
  g->gemm = !g->depthwise && fits32;
  return Status::Ok();
}

// Valid output columns [lo, hi) for kernel offset `off`: 0 <= o * stride + off < size, o < out.
inline void conv_valid_range(int64_t off, int64_t stride, int64_t size, int64_t out, int64_t* lo, int64_t* hi) {
  // Stride 1 needs no division: on a 32-bit core each 64-bit one is a library call, and this runs once per tap.
  int64_t l = off >= 0 ? 0 : stride == 1 ? -off : ceil_div(-off, stride);
  int64_t h = (size - 1 - off) < 0 ? 0 : stride == 1 ? size - off : (size - 1 - off) / stride + 1;
  if (h > out) h = out;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

// The im2col fills of the FMA sets read a GEMM column panel (output positions [j0, j0 + nr)) as runs of
// positions that share an output row: for one tap, the part of a run inside the image reads evenly spaced floats
// of one input row, so a vector of it is one (masked) load.
struct ConvRun {
  int64_t oh, ow;  // the output row and column of its first position
  int a, b;        // its panel lanes [a, b)
};

// Splits positions [j0, j0 + nr) into runs; returns how many, or max_runs + 1 when there are more (then only the
// first max_runs are written).
inline int conv_panel_runs(const ConvGeometry& g, int64_t j0, int nr, ConvRun* runs, int max_runs) {
  int n = 0;
  for (int q = 0; q < nr; ++n) {
    if (n == max_runs) return max_runs + 1;
    const int64_t p = j0 + q, oh = p / g.ow, ow = p % g.ow;
    const int len = static_cast<int>(g.ow - ow < nr - q ? g.ow - ow : nr - q);
    runs[n] = ConvRun{oh, ow, q, q + len};
    q += len;
  }
  return n;
}

// The parts of a panel's runs that tap (i, j) reads inside the image, for any strides: lanes [q, q + len) read
// x_c[off + u * sw] for u < len (off within a channel's plane). Writes at most n_runs segments and returns how many;
// *covered = the lanes they write (the others read padding: +0).
struct ConvSeg {
  int q, len;
  int64_t off;
};

inline int conv_tap_segments(const ConvGeometry& g, const ConvRun* runs, int n_runs, int64_t i, int64_t j,
                             ConvSeg* segs, int* covered) {
  int n = 0;
  *covered = 0;
  for (int k = 0; k < n_runs; ++k) {
    const ConvRun& ru = runs[k];
    const int64_t ih = ru.oh * g.sh - g.pt + i * g.dh;
    if (ih < 0 || ih >= g.h) continue;
    const int64_t off0 = ru.ow * g.sw - g.pl + j * g.dw;  // input column of lane ru.a
    int64_t lo = 0, hi = 0;
    conv_valid_range(off0, g.sw, g.w, ru.b - ru.a, &lo, &hi);
    if (lo >= hi) continue;
    segs[n++] = ConvSeg{ru.a + static_cast<int>(lo), static_cast<int>(hi - lo), ih * g.w + off0 + lo * g.sw};
    *covered += static_cast<int>(hi - lo);
  }
  return n;
}

// For tap (i, j) and column stride SW (1 or 2: no division): the lanes [*qa, *qb) of run `ru` whose inputs lie
// inside the image, and where panel lane 0 would read (*lane0, an offset in a channel's plane; lane q reads
// *lane0 + q * SW; *col0: the input column of that offset). False when the run reads nothing (its input row is
// padding, or every column is).
template <int SW>
inline bool conv_run_tap(const ConvGeometry& g, const ConvRun& ru, int64_t i, int64_t j, int* qa, int* qb,
                         int64_t* lane0, int64_t* col0) {
  static_assert(SW == 1 || SW == 2, "column stride 1 or 2");
  const int64_t ih = ru.oh * g.sh - g.pt + i * g.dh;
  if (ih < 0 || ih >= g.h) return false;
  const int64_t iw0 = ru.ow * SW - g.pl + j * g.dw;  // input column of lane a
  // lanes a + u, u in [lo, hi), read columns iw0 + u * SW inside [0, W)
  const int64_t len = ru.b - ru.a;
  const int64_t lo = iw0 >= 0 ? 0 : (SW == 1 ? -iw0 : (1 - iw0) >> 1);
  int64_t hi = g.w - 1 - iw0 < 0 ? 0 : (SW == 1 ? g.w - iw0 : ((g.w - 1 - iw0) >> 1) + 1);
  if (hi > len) hi = len;
  if (lo >= hi) return false;
  *qa = ru.a + static_cast<int>(lo);
  *qb = ru.a + static_cast<int>(hi);
  *col0 = iw0 - ru.a * SW;
  *lane0 = ih * g.w + *col0;
  return true;
}

// How the FMA sets' 3x3 depthwise kernels cover an output plane: blocks of `nv` vectors of a row (as many as fit
// in `chains` accumulators) by `r` rows (as many as fill them), then the rest; vectors [v_lo, v_hi) read only
// inside the input rows (their first input column >= 0 and their last read, `reach` floats further, < W).
struct Dw3x3Plan {
  int64_t row_vecs, v_lo, v_hi, rows_full, vecs_full;
  int nv, r, r_rest, v_rest;
};

inline Dw3x3Plan dw3x3_plan(const ConvGeometry& g, int lanes, int64_t reach, int chains) {
  Dw3x3Plan p{};
  p.row_vecs = ceil_div(g.ow, lanes);
  while (p.v_lo < p.row_vecs && lanes * p.v_lo * g.sw - g.pl < 0) ++p.v_lo;
  for (p.v_hi = p.v_lo; p.v_hi < p.row_vecs && lanes * p.v_hi * g.sw - g.pl + reach < g.w; ++p.v_hi) {
  }
  p.nv = static_cast<int>(p.row_vecs < chains ? p.row_vecs : chains);
  p.r = chains / p.nv;
  p.rows_full = g.oh / p.r * p.r;
  p.vecs_full = p.row_vecs / p.nv * p.nv;
  p.r_rest = static_cast<int>(g.oh - p.rows_full);
  p.v_rest = static_cast<int>(p.row_vecs - p.vecs_full);
  return p;
}

// Calls region(rows, vectors, oh_begin, oh_end, v_begin, v_end) for the (up to four) regions of a plane, each in
// whole blocks of rows x vectors.
template <typename Region>
inline void dw3x3_regions(const Dw3x3Plan& p, int64_t oh, Region&& region) {
  if (p.rows_full > 0) region(p.r, p.nv, int64_t{0}, p.rows_full, int64_t{0}, p.vecs_full);
  if (p.rows_full > 0 && p.v_rest > 0) region(p.r, p.v_rest, int64_t{0}, p.rows_full, p.vecs_full, p.row_vecs);
  if (p.r_rest > 0) region(p.r_rest, p.nv, p.rows_full, oh, int64_t{0}, p.vecs_full);
  if (p.r_rest > 0 && p.v_rest > 0) region(p.r_rest, p.v_rest, p.rows_full, oh, p.vecs_full, p.row_vecs);
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
