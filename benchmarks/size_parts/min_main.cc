// The smallest useful program on the DTorch runtime (benchmarks/bench_size.py): load a model, run its bundled
// test vector once and print the first output value. Linked with a pruned build's core objects, with and without
// its kernels, it separates what the core costs from what the kernels and dtorch-run's CLI cost.
#include <cstdio>
#include <memory>
#include <vector>

#include "dtorch/runtime.h"

int main(int argc, char** argv) {
  using namespace dtorch;
  if (argc < 2) return 2;
  std::unique_ptr<Session> s;
  Status st = Session::Create(argv[1], SessionOptions(), &s);
  std::vector<std::vector<uint8_t>> in, out;
  std::vector<Shape> in_shapes, out_shapes;
  if (st.ok()) st = s->TestVector(&in, &in_shapes, &out, &out_shapes);
  std::vector<TensorView> views;
  for (size_t k = 0; st.ok() && k < in.size(); ++k) {
    TensorView v;
    v.data = in[k].data();
    v.dtype = s->inputs()[k].dtype;
    v.shape = in_shapes[k];
    views.push_back(v);
  }
  RunResult result;
  if (st.ok()) st = s->Run(views.data(), views.size(), &result);
  if (!st.ok()) {
    print_to(stderr, "%s\n", st.message().c_str());
    return 1;
  }
  const TensorView y = result.output(0);
  print_to(stdout, "%g\n", y.dtype == DType::kFloat32 ? static_cast<double>(*static_cast<const float*>(y.data)) : 0.0);
  return 0;
}
