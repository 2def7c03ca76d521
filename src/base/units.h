// Physical units carried in types, not names.
#pragma once

#include <chrono>
#include <cstdint>

namespace braid {

using Micros = std::chrono::duration<double, std::micro>;
using Millis = std::chrono::duration<double, std::milli>;
using Bytes = int64_t;

}  // namespace braid
