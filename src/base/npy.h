// NumPy's .npy files: the format `numpy.save` writes and `numpy.load` reads, so that users can
// hand braid real inputs (`braid run --input x=x.npy`) and read its outputs.
//
//   npy::Array a = npy::read_file("x.npy");   // a.dtype, a.shape, a.data (raw, C order)
//   npy::write_file("y.npy", npy::DType::kFloat32, {1, 1000}, std::as_bytes(std::span(values)));
//
// Format (numpy.lib.format): "\x93NUMPY", major and minor version bytes, the header length
// (uint16 little-endian in version 1.0, uint32 in 2.0 and 3.0), then a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), } padded with spaces
// and '\n', then the raw data. Read: versions 1.0, 2.0 and 3.0 (3.0 only makes the header
// UTF-8); little-endian (or byte-order-free) float32, float64, float16, int32, int64 and bool,
// C order.
// Fortran order and big-endian data are refused with a message saying how to convert. Written:
// version 1.0, as numpy writes it (2.0 only when the header does not fit 64 KiB).
//
// A small reader and writer of our own rather than a library's: xtensor's xnpy.hpp needs the
// element type at compile time (the dtype-agnostic reader is in xt::detail), reads neither
// version 3.0 nor checks that the data is as long as the shape says, and would add xtensor and
// xtl as dependencies for about 200 lines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace braid::npy {

enum class DType : uint8_t { kFloat32, kFloat64, kInt32, kInt64, kBool, kFloat16 };

std::string_view to_string(DType);  // numpy's names: "float32", "float16", "int64", "bool"
int64_t size_of(DType);

struct Array {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;   // () for a scalar
  std::vector<std::byte> data;  // elements() * size_of(dtype) bytes, C order, little-endian

  int64_t elements() const;
};

// Throws braid::Error: kNotFound for a missing file, kInvalidArgument for anything that is not a
// well-formed .npy of a supported dtype and order (the message names `name` and the problem).
Array read_file(const std::string& path);
Array parse(std::string_view bytes, std::string_view name);

// The bytes of a .npy file (version 1.0, or 2.0 if the header needs it) / the file.
std::string serialize(DType dtype, std::span<const int64_t> shape, std::span<const std::byte> data);
void write_file(const std::string& path, DType dtype, std::span<const int64_t> shape,
                std::span<const std::byte> data);

}  // namespace braid::npy
