// npy: what numpy writes we read, what we write numpy reads (the venv's numpy is the oracle),
// and every malformed or unsupported file is refused with a message naming the problem.
#include "base/npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "base/error.h"
#include "base/float16.h"
#include "test_env.h"

namespace braid::npy {
namespace {

template <typename T>
std::vector<T> values_of(const Array& a) {
  std::vector<T> v(a.data.size() / sizeof(T));
  std::memcpy(v.data(), a.data.data(), a.data.size());
  return v;
}

// The float16 bit pattern of `v`, which float16 must hold exactly.
uint16_t float16_bits(float v) {
  for (uint32_t h = 0; h <= 0xffff; ++h)
    if (float16_to_float(static_cast<uint16_t>(h)) == v) return static_cast<uint16_t>(h);
  ADD_FAILURE() << v << " is not a float16 value";
  return 0;
}

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}

TEST(Npy, RoundTripsEveryDTypeAndRank) {
  const std::vector<float> f = {1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, -7.0f};
  const std::vector<int64_t> shape = {2, 3};
  Array a = parse(serialize(DType::kFloat32, shape, bytes_of(f)), "f");
  EXPECT_EQ(a.dtype, DType::kFloat32);
  EXPECT_EQ(a.shape, shape);
  EXPECT_EQ(values_of<float>(a), f);

  const std::vector<int64_t> i = {-1, 1LL << 40};
  a = parse(serialize(DType::kInt64, std::vector<int64_t>{2}, bytes_of(i)), "i");
  EXPECT_EQ(a.shape, std::vector<int64_t>{2});
  EXPECT_EQ(values_of<int64_t>(a), i);

  const std::vector<double> scalar = {2.5};
  a = parse(serialize(DType::kFloat64, {}, bytes_of(scalar)), "s");
  EXPECT_TRUE(a.shape.empty());
  EXPECT_EQ(a.elements(), 1);
  EXPECT_EQ(values_of<double>(a), scalar);
}

TEST(Npy, DataStartsOnA64ByteBoundaryAsNumpyWritesIt) {
  const std::vector<float> f(5, 1.0f);
  const std::string bytes = serialize(DType::kFloat32, std::vector<int64_t>{5}, bytes_of(f));
  EXPECT_EQ((bytes.size() - f.size() * sizeof(float)) % 64, 0u);
  EXPECT_NE(bytes.find("'shape': (5,)"), std::string::npos) << bytes;
}

void expect_refused(const std::string& bytes, const std::string& expected) {
  try {
    parse(bytes, "x.npy");
    ADD_FAILURE() << "accepted; expected an error with '" << expected << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("x.npy"), std::string::npos) << e.what();
  }
}

std::string with_header(const std::string& dict, size_t data_bytes) {
  std::string header = dict + "\n";
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + std::string(data_bytes, '\0');
}

TEST(Npy, RefusesMalformedAndUnsupportedFilesWithAMessage) {
  expect_refused("PK\x03\x04 a zip", "not a .npy file");
  expect_refused("\x93NUMPY\x04", "not a .npy file");  // too short for a version
  std::string v4 = with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 4);
  v4[6] = 4;
  expect_refused(v4, "version 4.0 is not supported");
  expect_refused(with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24),
                 "Fortran-order");
  expect_refused(with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8),
                 "big-endian");
  expect_refused(with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16),
                 "dtype '<c8' is not supported");
  expect_refused(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20),
                 "needs 24 bytes of data, the file has 20");
  expect_refused(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 28),
                 "the file has 28");
  expect_refused(with_header("{'descr': '<f4', 'shape': (2,), }", 8), "lacks");
  expect_refused(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8),
                 "expected a dimension");
  expect_refused(
      with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
                  0),
      "too large");
  expect_refused(
      with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }",
                  0),
      "shape too large");
  std::string truncated =
      with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 4);
  expect_refused(truncated.substr(0, 20), "truncated");
}

TEST(Npy, MissingFileIsNotFound) {
  try {
    read_file("/nonexistent/x.npy");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

// numpy is the oracle: it writes every dtype in versions 1.0, 2.0 and 3.0; we read them. We write
// every dtype; numpy.load reads them back and checks the values.
TEST(Npy, AgreesWithNumpy) {
  const auto python = testing::venv_python();
  if (python.empty()) GTEST_SKIP() << "no .venv with numpy (make deps)";
  const auto dir = testing::scratch_dir() / "npy";
  std::filesystem::create_directories(dir);
  const std::string script = (dir / "oracle.py").string();
  std::ofstream(script) << R"(
import sys, numpy as np
from numpy.lib import format as fmt
d = sys.argv[2]
def expected(dtype):
    a = (np.arange(24).reshape(2, 3, 4) - 7) * (0.5 if np.dtype(dtype).kind == 'f' else 1)
    return (a % 3 == 0) if dtype == 'bool' else a.astype(dtype)
dtypes = ['float32', 'float64', 'float16', 'int32', 'int64', 'bool']
if sys.argv[1] == 'write':
    for t in dtypes:
        for v in [(1, 0), (2, 0), (3, 0)]:
            with open(f'{d}/{t}_v{v[0]}.npy', 'wb') as f:
                fmt.write_array(f, expected(t), version=v)
    np.save(f'{d}/scalar.npy', np.float32(3.5))
else:
    for t in dtypes:
        a = np.load(f'{d}/braid_{t}.npy')
        assert a.dtype == np.dtype(t) and a.shape == (2, 3, 4), (t, a.dtype, a.shape)
        assert np.array_equal(a, expected(t)), t
    print('ok')
)";
  auto r = testing::run_command(python.string() + " " + script + " write " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;

  // expected(t) in C++: (i - 7) * 0.5 for floats, i - 7 for ints, (i - 7) % 3 == 0 for bool.
  const std::vector<int64_t> shape = {2, 3, 4};
  auto check = [&](DType dtype, const std::string& name) {
    for (int v : {1, 2, 3}) {
      SCOPED_TRACE(name + " v" + std::to_string(v));
      const Array a = read_file((dir / (name + "_v" + std::to_string(v) + ".npy")).string());
      EXPECT_EQ(a.dtype, dtype);
      EXPECT_EQ(a.shape, shape);
      for (int64_t i = 0; i < 24; ++i) {
        const int64_t k = i - 7;
        switch (dtype) {
          case DType::kFloat32:
            EXPECT_EQ(values_of<float>(a)[i], k * 0.5f);
            break;
          case DType::kFloat64:
            EXPECT_EQ(values_of<double>(a)[i], k * 0.5);
            break;
          case DType::kFloat16:  // halves of small integers: exact in float16
            EXPECT_EQ(float16_to_float(values_of<uint16_t>(a)[i]), k * 0.5f);
            break;
          case DType::kInt32:
            EXPECT_EQ(values_of<int32_t>(a)[i], k);
            break;
          case DType::kInt64:
            EXPECT_EQ(values_of<int64_t>(a)[i], k);
            break;
          case DType::kBool:
            EXPECT_EQ(values_of<uint8_t>(a)[i], k % 3 == 0 ? 1 : 0);
            break;
        }
      }
    }
  };
  check(DType::kFloat32, "float32");
  check(DType::kFloat64, "float64");
  check(DType::kFloat16, "float16");
  check(DType::kInt32, "int32");
  check(DType::kInt64, "int64");
  check(DType::kBool, "bool");
  const Array scalar = read_file((dir / "scalar.npy").string());
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(values_of<float>(scalar), std::vector<float>{3.5f});

  std::vector<float> f32;
  std::vector<double> f64;
  std::vector<uint16_t> f16;
  std::vector<int32_t> i32;
  std::vector<int64_t> i64;
  std::vector<uint8_t> b;
  for (int64_t i = 0; i < 24; ++i) {
    f32.push_back((i - 7) * 0.5f);
    f64.push_back((i - 7) * 0.5);
    f16.push_back(float16_bits((i - 7) * 0.5f));
    i32.push_back(static_cast<int32_t>(i - 7));
    i64.push_back(i - 7);
    b.push_back((i - 7) % 3 == 0);
  }
  auto path = [&](const char* t) { return (dir / (std::string("braid_") + t + ".npy")).string(); };
  write_file(path("float32"), DType::kFloat32, shape, bytes_of(f32));
  write_file(path("float64"), DType::kFloat64, shape, bytes_of(f64));
  write_file(path("float16"), DType::kFloat16, shape, bytes_of(f16));
  write_file(path("int32"), DType::kInt32, shape, bytes_of(i32));
  write_file(path("int64"), DType::kInt64, shape, bytes_of(i64));
  write_file(path("bool"), DType::kBool, shape, bytes_of(b));
  r = testing::run_command(python.string() + " " + script + " read " + dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok\n");
}

}  // namespace
}  // namespace braid::npy
