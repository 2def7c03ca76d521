// The braid CLI: one file per subcommand. Each `add_*` registers its subcommand on the app and
// sets the callback that runs it; errors travel as braid::Error to main(), which maps them to
// exit codes (2 bad input, 1 internal).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "models/loader.h"
#include "sched/registry.h"

namespace braid::cli {

// A command that ran to the end but whose result is a failure (braid load: requests the server
// failed) sets 1; main() returns it. Errors that stop a command travel as braid::Error.
inline int exit_status = 0;

// --name, --batch, --image-size, --layers, --seq-len, --weight-seed, --shape, --dim and the
// limits: shared by every command that loads a model.
struct ModelFlags {
  std::string spec;
  models::LoadOptions options;
};
void add_model_flags(CLI::App& cmd, ModelFlags& flags);
// --max-tensor-elements, --max-activation-bytes (models::LoadOptions).
void add_limit_flags(CLI::App& cmd, models::LoadOptions& options);
// --shape NAME=1x3x320x320 and --dim NAME=VALUE (repeatable): an ONNX model's dynamic input dims
// (models/input_shapes.h); bad text exits 2 with a sentence.
void add_shape_flags(CLI::App& cmd, models::InputShapes& inputs);

// Flag ranges: beyond them a model is absurd (or bert's build runs for minutes), and the error
// says so in a sentence instead of CLI11's "not in range 0 to 1.79e308".
// `text` cut at every `sep`, empty items kept ("a,,b" -> a, "", b); `nonempty` drops them.
std::vector<std::string> split(const std::string& text, char sep);
std::vector<std::string> nonempty(std::vector<std::string> items);

inline constexpr int64_t kMaxBatch = 65536;
inline constexpr int64_t kMaxImageSize = 16384;
inline constexpr int64_t kMaxLayers = 128;
inline constexpr int64_t kMaxSeqLen = 65536;
inline constexpr int64_t kMaxRandwireNodes = 4096;
// Limits on the other numbers a user gives (issue 27: no input that crashes or exhausts
// memory). Each is checked before anything is allocated; none is near what a real run uses.
inline constexpr int64_t kMaxIters = 1'000'000;   // --iters, --warmup, --runs, --number, rounds
inline constexpr int64_t kMaxStreams = 256;       // --streams: a thread pool each
inline constexpr int64_t kMaxThreads = 1024;      // --threads-per-stream, --threads, --http-threads
inline constexpr int64_t kMaxSpinUs = 1'000'000;  // --spin-us: a second
inline constexpr int64_t kMaxDevices = 64;        // --devices (HIOS)
inline constexpr int64_t kMaxGroupLimit = 4096;   // --max-group-size, --max-groups, --window
inline constexpr int64_t kMaxSeeds = 1000;        // top --seeds
inline constexpr int64_t kMaxPort = 65535;
inline constexpr int64_t kMaxRequestBytes = int64_t{4} << 30;  // serve --max-request-bytes
inline constexpr double kMinDurationS = 0.001;                 // top/load --duration (upper: a day)
inline constexpr double kMaxTimeoutS = 86400;                  // serve --exit-timeout-secs

// A whole number from `min` to `max`: "--batch: 0 is out of range: the batch size must be from
// 1 to 65536" (base/parse.h's parse_int, which says the same for text in patterns and names).
CLI::Validator whole_number_in(std::string what, int64_t min, int64_t max, std::string note = "");
// A decimal number (1.5, 1e3) from `min` to `max`: "--duration: 1e9 is out of range: the
// duration in seconds must be from 0.001 to 86400" (base/parse.h's parse_double).
CLI::Validator number_in(std::string what, double min, double max, std::string note = "");
// Counts held in an int, up to INT_MAX; prefer whole_number_in with a stated limit.
CLI::Validator positive_int();
CLI::Validator non_negative_int();

// --ios-search auto|dp|best-first and --ios-tolerance: shared by schedule and bench.
void add_ios_search_flags(CLI::App& cmd, sched::ScheduleOptions& options);
// --devices M and --window w (HIOS), and --threads N (the cores of an allotment).
void add_multi_device_flags(CLI::App& cmd, sched::ScheduleOptions& options);

void add_models_command(CLI::App& app);
void add_ops_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_schedule_command(CLI::App& app);
void add_validate_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_profile_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_transfers_command(CLI::App& app);
void add_top_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_load_command(CLI::App& app);
void add_train_command(CLI::App& app);

}  // namespace braid::cli
