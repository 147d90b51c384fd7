// The conv2d kernel of an FMA kernel set (kernels/avx2, kernels/avx512, kernels/neon64) around the set's own GEMM
// and depthwise code: the node checks, the bit-exact fallback for what the set does not take, the weights packed
// once at load (`prepare`) or into scratch at run time when the weight is not a constant, and the loop over images
// and groups. Header-only; each set's conv2d.cc instantiates FmaConv2d<Set> with its traits and registers its
// infer, run and prepare.
//
// Set (a struct of static members):
//   kPanel                   rows of a packed weight panel (pack_panels, kernels/common/fma_gemm.h)
//   work_floats(g)           scratch floats the GEMM needs beyond the packed weights (0 for most sets)
//   takes_depthwise(g)       whether its depthwise kernel takes this geometry (else the fallback runs the node)
//   depthwise(pool, g, x, w, bias, y)
//   gemm_group(pool, g, wg, xg, ep, yg, work): one image and group, wg its packed weights, ep its bias + activation
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/kernel.h"
#include "kernels/common/activation.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/fma_gemm.h"
#include "kernels/common/gemm.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

template <class Set>
struct FmaConv2d {
  static constexpr const char* kOp = "conv2d";
  using Geo = FmaConvGeometry;  // read after the fallback's infer accepted the node

  static const KernelDef* fallback() {
    static const KernelDef* k = find_kernel(kOp, DType::kFloat32, KernelPolicy::kExact);
    return k;
  }

  static int64_t group_floats(const Geo& g) { return packed_panels_floats(g.og, g.cg * g.kh * g.kw, Set::kPanel); }

  // The packed weights of every group (used when they were not prepared at load), then the GEMM's own buffers.
  static size_t gemm_scratch(const Geo& g) {
    return (static_cast<size_t>(group_floats(g) * g.groups) + Set::work_floats(g)) * sizeof(float);
  }

  static Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out,
                      size_t* scratch_bytes) {
    const KernelDef* f = fallback();
    if (f == nullptr) return op_error(StatusCode::kInternal, kOp, "no bit-exact kernel is registered");
    DTORCH_RETURN_IF_ERROR(f->infer(attrs, in, n_in, out, n_out, scratch_bytes));
    Geo g{};
    DTORCH_RETURN_IF_ERROR(fma_conv_geometry(kOp, attrs, in, out[0], &g));
    if (g.gemm) *scratch_bytes = gemm_scratch(g);
    if (g.depthwise && Set::takes_depthwise(g)) *scratch_bytes = 0;
    return Status::Ok();
  }

  // The weights of every group packed (kPanel-row panels, group after group) into ap.
  static void pack_weights(ThreadPool* pool, int64_t groups, int64_t og, int64_t kg, const float* w, float* ap) {
    const int64_t panels = ceil_div(og, Set::kPanel), per_group = packed_panels_floats(og, kg, Set::kPanel);
    parallel_chunks(pool, groups * panels, 1, [&](int64_t b, int64_t e) {
      for (int64_t u = b; u < e; ++u) {
        const int64_t grp = u / panels, t = u % panels;
        pack_panels(w + grp * og * kg, kg, 1, og, kg, Set::kPanel, t, t + 1, ap + grp * per_group);
      }
    });
  }

  // Load time: a constant weight of a dense or grouped convolution is packed once (depthwise weights are used as
  // they are). Nothing is kept when the weight is not a constant or the shapes are not ones infer would accept.
  static Status prepare(const Attrs& attrs, const TensorView* in, int n_in, void* dst, size_t* bytes) {
    *bytes = 0;
    if (n_in < 2 || in[1].data == nullptr || in[1].dtype != DType::kFloat32 || in[1].shape.ndim != 4)
      return Status::Ok();
    const int64_t groups = attrs.get_int("groups");
    const int64_t o = in[1].shape.dims[0], cg = in[1].shape.dims[1], kh = in[1].shape.dims[2];
    const int64_t kw = in[1].shape.dims[3];
    if (groups < 1 || o < 1 || o % groups != 0 || cg < 1 || kh < 1 || kw < 1) return Status::Ok();
    const int64_t og = o / groups;
    if (cg == 1 && og == 1) return Status::Ok();  // depthwise
    int64_t kg = 0, floats = 0;
    if (!checked_mul(cg, kh * kw, &kg) || !checked_mul(packed_panels_floats(og, kg, Set::kPanel), groups, &floats) ||
        floats > (int64_t{1} << 40))
      return Status::Ok();
    *bytes = static_cast<size_t>(floats) * sizeof(float);
    if (dst != nullptr) pack_weights(nullptr, groups, og, kg, in[1].as<const float>(), static_cast<float*>(dst));
    return Status::Ok();
  }

  static void run_gemm(const KernelContext& ctx, const Geo& g, const float* x, const float* w, const float* bias,
                       float* y) {
    const int64_t kg = g.cg * g.kh * g.kw, ohw = g.oh * g.ow, per_group = group_floats(g);
    const size_t packed_bytes = static_cast<size_t>(per_group * g.groups) * sizeof(float);
    float* scratch = static_cast<float*>(ctx.scratch);
    const float* ap = static_cast<const float*>(ctx.prepared);
    if (ap == nullptr || ctx.prepared_bytes != packed_bytes) {  // not prepared at load: pack into scratch now
      pack_weights(ctx.pool, g.groups, g.og, kg, w, scratch);
      ap = scratch;
    }
    float* work = scratch + per_group * g.groups;
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        Epilogue ep;
        ep.bias = bias == nullptr ? nullptr : bias + grp * g.og;
        ep.act = g.act;
        Set::gemm_group(ctx.pool, g, ap + grp * per_group, x + (n * g.c + grp * g.cg) * g.h * g.w, ep,
                        y + (n * g.o + grp * g.og) * ohw, work);
      }
    }
  }

  static Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
    const KernelDef* f = fallback();
    if (f == nullptr) return op_error(StatusCode::kInternal, kOp, "no bit-exact kernel is registered");
    DTORCH_RETURN_IF_ERROR(check_num_outputs(kOp, n_out, 1));
    DTORCH_RETURN_IF_ERROR(check_num_inputs(kOp, n_in, 2, 3));
    if (in[0].shape.ndim != 4 || in[1].shape.ndim != 4 || out[0].shape.ndim != 4)
      return f->run(ctx, in, n_in, out, n_out);  // the fallback reports the error
    Geo g{};
    DTORCH_RETURN_IF_ERROR(fma_conv_geometry(kOp, *ctx.attrs, in, out[0].shape, &g));
    if (!conv_shapes_agree(g, in, out[0]) || (!g.gemm && !g.depthwise) || (g.depthwise && !Set::takes_depthwise(g)))
      return f->run(ctx, in, n_in, out, n_out);  // other cases, or shapes infer did not accept: the fallback decides
    const float* x = in[0].as<const float>();
    const float* w = in[1].as<const float>();
    const float* bias = optional_present(in, n_in, 2) ? in[2].as<const float>() : nullptr;
    float* y = out[0].as<float>();
    if (out[0].shape.numel() == 0) return Status::Ok();
    if (g.depthwise) {
      Set::depthwise(ctx.pool, g, x, w, bias, y);
      return Status::Ok();
    }
    const size_t need = gemm_scratch(g);
    if (ctx.scratch_bytes < need)
      return op_error(StatusCode::kInternal, kOp, "scratch of %zu bytes is smaller than the %zu bytes infer asked for",
                      ctx.scratch_bytes, need);
    run_gemm(ctx, g, x, w, bias, y);
    return Status::Ok();
  }
};

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
