// The oneDNN plumbing the kernel files share: shapes to oneDNN dims and memory descriptors,
// primitive attributes (user scratchpad), DnnlKernel (oneDNN calls run back to back on a lane's
// stream and scratchpad) and build-time weight reorders. Declared in cpu_kernels_impl.h.
// oneDNN 3.x API: primitive_desc(engine, ..., attr) -> primitive (ecosystem.md §2).
#include <algorithm>
#include <string_view>

#include "base/error.h"
#include "exec/cpu/cpu_kernels_impl.h"
#include "exec/cpu/layout.h"

namespace braid::exec::cpu::detail {

using dt = memory::data_type;

Dims to_dims(const ir::Shape& shape) {
  if (shape.empty()) return {1};
  return Dims(shape.begin(), shape.end());
}

Dims pad_front(Dims dims, size_t rank) {
  if (dims.size() < rank) dims.insert(dims.begin(), rank - dims.size(), 1);
  return dims;
}

Dims row_major_strides(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

memory::desc plain_md(const Dims& dims) {
  return memory::desc(dims, dt::f32, row_major_strides(dims));
}

memory::desc layout_md(const Dims& dims, TensorLayout layout) {
  using tag = memory::format_tag;
  BRAID_ASSERT(layout == TensorLayout::kPlain || dims.size() == 4, "a ", dims.size(),
               "-D tensor cannot be blocked");
  switch (layout) {
    case TensorLayout::kPlain:
      return plain_md(dims);
    case TensorLayout::kNhwc:
      return memory::desc(dims, dt::f32, tag::nhwc);
    case TensorLayout::kNChw8c:
      return memory::desc(dims, dt::f32, tag::nChw8c);
    case TensorLayout::kNChw16c:
      return memory::desc(dims, dt::f32, tag::nChw16c);
  }
  BRAID_ASSERT(false, "unhandled layout");
}

memory::desc arena_md(const TensorRef& ref) {
  return layout_md(to_dims(ref.type.shape), ref.layout);
}

bool is_reference(const dnnl::primitive_desc_base& pd) {
  return is_reference_implementation(pd.impl_info_str());
}

dnnl::primitive_attr make_attr(const dnnl::post_ops& post_ops) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_post_ops(post_ops);
  return attr;
}

constexpr Bytes kScratchAlignment = 64;

memory DnnlKernel::bind(const memory::desc& md, const TensorRef& ref) {
  if (!ref.in_arena()) return memory(md, engine_, const_cast<float*>(ref.fixed));
  memory m(md, engine_, DNNL_MEMORY_NONE);
  arena_.emplace_back(m, ref);
  return m;
}

memory DnnlKernel::view_of_last_temporary(const memory::desc& md) {
  BRAID_ASSERT(!temporaries_.empty(), "a view of no temporary");
  memory view(md, engine_, DNNL_MEMORY_NONE);
  temporaries_.emplace_back(view, temporaries_.back().second);
  return view;
}

memory DnnlKernel::temporary(const memory::desc& md) {
  memory m(md, engine_, DNNL_MEMORY_NONE);
  temporaries_.emplace_back(m, temporary_bytes_);
  temporary_bytes_ += (static_cast<Bytes>(md.get_size()) + kScratchAlignment - 1) /
                      kScratchAlignment * kScratchAlignment;
  return m;
}

void DnnlKernel::add(const dnnl::primitive_desc_base& pd, const dnnl::primitive& primitive,
                     Args args) {
  const memory::desc scratch = pd.scratchpad_desc();
  if (scratch.get_size() > 0) {
    memory m(scratch, engine_, DNNL_MEMORY_NONE);
    scratchpads_.push_back(m);
    args[DNNL_ARG_SCRATCHPAD] = m;
    call_scratchpad_bytes_ =
        std::max<Bytes>(call_scratchpad_bytes_, static_cast<Bytes>(scratch.get_size()));
  }
  calls_.push_back({primitive, std::move(args)});
  implementations_.emplace_back(pd.impl_info_str());
  auto pending = std::move(pending_outputs_);
  pending_outputs_.clear();
  for (const auto& [temporary, tensor] : pending) add_reorder(temporary, tensor);
}

memory DnnlKernel::input(const memory::desc& wanted, const TensorRef& ref) {
  // A plain tensor seen as plain, with any dims of the same size (a view): no copy.
  if (ref.layout == TensorLayout::kPlain && wanted == plain_md(wanted.get_dims()))
    return bind(wanted, ref);
  const memory stored = bind(arena_md(ref), ref);
  if (stored.get_desc() == wanted) return stored;
  const memory t = temporary(wanted);
  add_reorder(stored, t);
  return t;
}

memory DnnlKernel::output(const memory::desc& wanted, const TensorRef& ref) {
  // A plain tensor seen as plain, with any dims of the same size (a view): no copy.
  if (ref.layout == TensorLayout::kPlain && wanted == plain_md(wanted.get_dims()))
    return bind(wanted, ref);
  const memory stored = bind(arena_md(ref), ref);
  if (stored.get_desc() == wanted) return stored;
  const memory t = temporary(wanted);
  pending_outputs_.emplace_back(t, stored);
  return t;
}

memory DnnlKernel::flat_input(TensorLayout layout, const TensorRef& ref) {
  const memory::desc flat = plain_md({ref.type.elements()});
  if (ref.layout == layout) return bind(flat, ref);
  const memory t = temporary(layout_md(to_dims(ref.type.shape), layout));
  add_reorder(bind(arena_md(ref), ref), t);
  memory view(flat, engine_, DNNL_MEMORY_NONE);  // the same bytes as `t`
  temporaries_.emplace_back(view, temporaries_.back().second);
  return view;
}

void DnnlKernel::add_reorder(const memory& from, const memory& to) {
  dnnl::reorder::primitive_desc pd(engine_, from.get_desc(), engine_, to.get_desc(), make_attr());
  add(pd, dnnl::reorder(pd), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

void DnnlKernel::execute(const KernelContext& context) const {
  auto& lane = *static_cast<LaneState*>(context.lane_state);
  for (const auto& [m, ref] : arena_) m.set_data_handle(ref.bytes(context));
  for (const auto& [m, offset] : temporaries_) m.set_data_handle(lane.scratchpad + offset);
  for (const memory& m : scratchpads_) m.set_data_handle(lane.scratchpad + temporary_bytes_);
  for (const Call& call : calls_) call.primitive.execute(lane.stream, call.args);
  lane.stream.wait();  // a no-op for the OpenMP CPU runtime, where execute() is synchronous
  if (epilogue_) epilogue_(context);
}

memory prepare_weights(const BuildContext& c, const memory& user, const memory::desc& wanted,
                       bool user_is_stable) {
  if (user_is_stable && user.get_desc() == wanted) return user;
  memory owned(wanted, c.engine);
  dnnl::stream stream = c.stream;  // a handle: copying it is how to call non-const wait()
  dnnl::reorder(user, owned).execute(stream, const_cast<memory&>(user), owned);
  stream.wait();
  return owned;
}

int64_t normalize_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

int64_t product(const ir::Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

}  // namespace braid::exec::cpu::detail
