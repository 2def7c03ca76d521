// A field of a JSON file a user wrote (a scenario, a device file) as a typed value, checked:
//
//   const int batch = json_value<int>(j.at("batch"), where, "batch");
//
// nlohmann's get<T> converts numbers with a plain cast: "batch": 4294967297 becomes 1 as an int
// and 1e30 is undefined behaviour, so a value past the type would run as another one. Here an
// integer must be a JSON integer, or a number with an integral value (1e3), within T's range; a
// floating-point value a finite number. Other types convert as nlohmann converts them. Throws
// kInvalidArgument "WHERE: field "KEY" ...", naming the value's type or the range.
#pragma once

#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace braid {

template <class T>
T json_value(const nlohmann::json& v, std::string_view where, std::string_view key) {
  if constexpr (std::integral<T> && !std::same_as<T, bool>) {
    using Limits = std::numeric_limits<T>;
    bool in_range = false;
    if (v.is_number_unsigned()) {
      in_range = std::in_range<T>(v.get<uint64_t>());
    } else if (v.is_number_integer()) {
      in_range = std::in_range<T>(v.get<int64_t>());
    } else if (v.is_number_float()) {
      const double x = v.get<double>();
      // double(max) + 1 is the first value past T (2^63 for int64, 2^64 for uint64: exact).
      in_range = std::isfinite(x) && std::trunc(x) == x && x >= double(Limits::min()) &&
                 x < double(Limits::max()) + 1.0;
    } else {
      BRAID_THROW(ErrorCode::kInvalidArgument, where, ": field \"", key,
                  "\" must be an integer, got ", v.type_name());
    }
    BRAID_CHECK(in_range, ErrorCode::kInvalidArgument, where, ": field \"", key, "\" is ", v.dump(),
                ", not an integer in ", Limits::min(), " .. ", Limits::max());
    if (v.is_number_float()) return T(v.get<double>());
    return v.is_number_unsigned() ? T(v.get<uint64_t>()) : T(v.get<int64_t>());
  } else if constexpr (std::floating_point<T>) {
    BRAID_CHECK(v.is_number(), ErrorCode::kInvalidArgument, where, ": field \"", key,
                "\" must be a number, got ", v.type_name());
    const double x = v.get<double>();
    BRAID_CHECK(std::isfinite(x) && std::abs(x) <= double(std::numeric_limits<T>::max()),
                ErrorCode::kInvalidArgument, where, ": field \"", key, "\" is ", v.dump(),
                ", beyond a finite ", sizeof(T) == 4 ? "float" : "double");
    return T(x);
  } else {
    try {
      return v.get<T>();
    } catch (const nlohmann::json::exception&) {
      BRAID_THROW(ErrorCode::kInvalidArgument, where, ": field \"", key, "\" has the wrong type (",
                  v.type_name(), ")");
    }
  }
}

}  // namespace braid
