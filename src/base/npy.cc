#include "base/npy.h"

#include <bit>
#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "base/error.h"

namespace braid::npy {
namespace {

static_assert(std::endian::native == std::endian::little, "npy: little-endian hosts only");

constexpr std::string_view kMagic = "\x93NUMPY";

struct DTypeName {
  DType dtype;
  std::string_view name, descr;  // descr without the byte-order character
};
constexpr DTypeName kDTypes[] = {
    {DType::kFloat32, "float32", "f4"}, {DType::kFloat64, "float64", "f8"},
    {DType::kInt32, "int32", "i4"},     {DType::kInt64, "int64", "i8"},
    {DType::kBool, "bool", "b1"},       {DType::kFloat16, "float16", "f2"}};

// The header's Python literal: a dict of str keys to a str, a bool or a tuple of ints.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view name) : text_(text), name_(name) {}

  void parse(std::string& descr, bool& fortran_order, std::vector<int64_t>& shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (!accept('}')) {
      const std::string key = string();
      expect(':');
      if (key == "descr") {
        descr = string();
        have_descr = true;
      } else if (key == "fortran_order") {
        fortran_order = boolean();
        have_order = true;
      } else if (key == "shape") {
        shape = tuple();
        have_shape = true;
      } else {
        fail("unknown key '" + key + "'");
      }
      if (!accept(',')) {
        expect('}');
        break;
      }
    }
    skip_space();
    if (pos_ != text_.size()) fail("text after the header's dict");
    if (!have_descr || !have_order || !have_shape)
      fail("the header lacks 'descr', 'fortran_order' or 'shape'");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    BRAID_THROW(ErrorCode::kInvalidArgument, name_, ": not a valid .npy header (", what, ")");
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  std::string string() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      fail("expected a string");
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  bool boolean() {
    skip_space();
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}})
      if (text_.substr(pos_).starts_with(word)) {
        pos_ += std::strlen(word);
        return value;
      }
    fail("expected True or False");
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> dims;
    expect('(');
    while (!accept(')')) {
      skip_space();
      int64_t d = 0;
      size_t digits = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        const int digit = text_[pos_++] - '0';
        if (d > (std::numeric_limits<int64_t>::max() - digit) / 10) fail("a dimension too large");
        d = d * 10 + digit;
        ++digits;
      }
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 longs
      if (digits == 0) fail("expected a dimension");
      dims.push_back(d);
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }

  std::string_view text_, name_;
  size_t pos_ = 0;
};

uint32_t little_endian(std::string_view bytes) {
  uint32_t v = 0;
  for (size_t i = bytes.size(); i-- > 0;) v = v << 8 | static_cast<unsigned char>(bytes[i]);
  return v;
}

}  // namespace

std::string_view to_string(DType dtype) {
  for (const DTypeName& d : kDTypes)
    if (d.dtype == dtype) return d.name;
  return "?";
}

int64_t size_of(DType dtype) {
  for (const DTypeName& d : kDTypes)
    if (d.dtype == dtype) return d.descr[1] - '0';
  return 0;
}

int64_t Array::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Array parse(std::string_view bytes, std::string_view name) {
  auto fail = [&](const auto&... what) {
    BRAID_THROW(ErrorCode::kInvalidArgument, name, ": ", what...);
  };
  if (!bytes.starts_with(kMagic) || bytes.size() < kMagic.size() + 2)
    fail("not a .npy file (no \\x93NUMPY magic; write it with numpy.save)");
  const int major = static_cast<unsigned char>(bytes[6]),
            minor = static_cast<unsigned char>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    fail(".npy format version ", major, ".", minor, " is not supported (1.0, 2.0, 3.0 are)");
  const size_t length_bytes = major == 1 ? 2 : 4;
  const size_t header_begin = 8 + length_bytes;
  if (bytes.size() < header_begin) fail("truncated .npy header");
  const uint32_t header_length = little_endian(bytes.substr(8, length_bytes));
  if (bytes.size() - header_begin < header_length) fail("truncated .npy header");
  std::string descr;
  bool fortran_order = false;
  Array a;
  HeaderParser(bytes.substr(header_begin, header_length), name)
      .parse(descr, fortran_order, a.shape);

  const char order = descr.empty() ? '?' : descr[0];
  const std::string_view kind = descr.empty() ? "" : std::string_view(descr).substr(1);
  const DTypeName* dtype = nullptr;
  for (const DTypeName& d : kDTypes)
    if (d.descr == kind) dtype = &d;
  if (dtype == nullptr || (order != '<' && order != '|' && order != '='))
    fail(order == '>' ? "big-endian data ('" : "dtype '", descr,
         order == '>'
             ? "') is not supported; save it little-endian (a.astype(a.dtype.newbyteorder('<')))"
             : "' is not supported (float32, float64, float16, int32, int64, bool are)");
  a.dtype = dtype->dtype;
  if (fortran_order && a.shape.size() > 1)
    fail("Fortran-order (column-major) arrays are not supported; save numpy.ascontiguousarray(a)");
  int64_t elements = 1;
  for (int64_t d : a.shape) {
    if (d != 0 && elements > std::numeric_limits<int64_t>::max() / size_of(a.dtype) / d)
      fail("shape too large");
    elements *= d;
  }
  const size_t data_bytes = static_cast<size_t>(elements * size_of(a.dtype));
  const std::string_view data = bytes.substr(header_begin + header_length);
  if (data.size() != data_bytes)
    fail("the shape (", elements, " ", dtype->name, " elements) needs ", data_bytes,
         " bytes of data, the file has ", data.size());
  a.data.resize(data_bytes);
  if (data_bytes > 0)  // an empty array's buffers may be null, which memcpy must not get
    std::memcpy(a.data.data(), data.data(), data_bytes);
  return a;
}

Array read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  BRAID_CHECK(in.good(), ErrorCode::kNotFound, "cannot read '", path, "'");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return parse(bytes.view(), path);
}

std::string serialize(DType dtype, std::span<const int64_t> shape,
                      std::span<const std::byte> data) {
  std::string shape_text = "(";  // numpy's own spelling: (), (3,), (1, 3)
  for (size_t i = 0; i < shape.size(); ++i)
    shape_text += (i ? ", " : "") + std::to_string(shape[i]);
  shape_text += shape.size() == 1 ? ",)" : ")";
  std::string descr;
  for (const DTypeName& d : kDTypes)
    if (d.dtype == dtype) descr = (dtype == DType::kBool ? "|" : "<") + std::string(d.descr);
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_text + ", }";
  // Data aligned to 64 bytes: magic, version, length, header, spaces, '\n'.
  const bool v2 = header.size() + 11 > 65535;
  const size_t prefix = kMagic.size() + 2 + (v2 ? 4 : 2);
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const uint32_t length = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out += static_cast<char>(length >> (8 * i) & 0xff);
  out += header;
  out.append(reinterpret_cast<const char*>(data.data()), data.size());
  return out;
}

void write_file(const std::string& path, DType dtype, std::span<const int64_t> shape,
                std::span<const std::byte> data) {
  std::ofstream out(path, std::ios::binary);
  BRAID_CHECK(out.good(), ErrorCode::kInvalidArgument, "cannot write '", path, "'");
  const std::string bytes = serialize(dtype, shape, data);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  BRAID_CHECK(out.good(), ErrorCode::kInvalidArgument, "cannot write '", path, "'");
}

}  // namespace braid::npy
