// braid top's --model NAME[:FPS[:ir|stages]], parsed apart from the command so that a fuzzer
// (cli_flags_fuzz.cc) can reach it without the runtime behind it.
//
//   ModelRate m = parse_model_rate("squeezenet:240:stages");  // {"squeezenet", 240, true}
//   parse_model_rate("squeezenet:1e9");  // throws: "--model 'squeezenet:1e9': 1e9 is out of
//                                        // range: the rate (FPS) must be from 0 to 100000"
#pragma once

#include <string>

namespace braid::cli {

struct ModelRate {
  std::string model;
  double fps = 0;       // 0: no arrivals of its own
  bool stages = false;  // blocks: the schedule's stages (true) or the IR's blocks
};

// Throws braid::Error(kInvalidArgument) naming the flag for anything else, a rate beyond
// runtime::kMaxFps included; never anything but braid::Error.
ModelRate parse_model_rate(const std::string& flag);

}  // namespace braid::cli
